/**
 * What the supervisor's watchdog (lib/supervisor/host.ts) needs from the kernel: a signal whose handler does
 * nothing and does not restart system calls (installed by helper/fastpath/fastpath.c's hp_interruptible), the
 * Worker thread's id, and tgkill to that thread. No raw pointer leaves this module.
 */
import { SYS, sys } from "./libc.ts";

/** SIGRTMIN+10 (glibc's SIGRTMIN is 34): used by nothing else in hallpass or Deno. */
export const WATCHDOG_SIGNAL = 44;

let installed: boolean | null = null;

/**
 * Installs the do-nothing, non-restarting handler from the fast path library, once per process (the agent
 * has a host per container); false when unavailable.
 */
export function installWatchdogSignal(libPath: string): boolean {
  if (installed !== null) return installed;
  try {
    const lib = Deno.dlopen(libPath, { hp_interruptible: { parameters: ["i32"], result: "i32" } });
    // The library stays loaded: the handler lives in it.
    installed = lib.symbols.hp_interruptible(WATCHDOG_SIGNAL) === 0;
  } catch {
    installed = false;
  }
  return installed;
}

/** The calling thread's id. */
export function gettid(): number {
  return sys(SYS.gettid);
}

/** Sends the watchdog signal to thread `tid` of this process; 0 or -errno. */
export function interruptThread(tid: number): number {
  return sys(SYS.tgkill, Deno.pid, tid, WATCHDOG_SIGNAL);
}
