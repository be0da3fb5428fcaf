/**
 * Dying of a signal, as the command did: a shell stops a loop (`for …; do hallpass -- cmd; done`) on Ctrl-C only
 * when its child was *killed by* SIGINT, not when it exited 130. Used after the terminal was restored.
 *
 * @example
 * ```ts
 * dieOfSignal(2); // does not return (falls back to exit(128 + 2) if the signal does not kill)
 * ```
 */

const SYMBOLS = {
  /** sighandler_t signal(int signum, sighandler_t handler);  NULL = SIG_DFL */
  signal: { parameters: ["i32", "pointer"], result: "pointer" },
  /** int kill(pid_t pid, int sig); */
  kill: { parameters: ["i32", "i32"], result: "i32" },
  /** pid_t getpid(void); */
  getpid: { parameters: [], result: "i32" },
  /** int setrlimit(int resource, const struct rlimit *rlim); */
  setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
  /** int sigprocmask(int how, const sigset_t *set, sigset_t *oldset); */
  sigprocmask: { parameters: ["i32", "buffer", "pointer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

const RLIMIT_CORE = 4;
const SIG_UNBLOCK = 1;

/**
 * Resets `sig` to its default action, unblocks it and sends it to this process; no core file (the command's own
 * crash is not hallpass's). Exits with 128 + `sig` when that does not end the process (a stopping or ignored
 * signal).
 */
export function dieOfSignal(sig: number): never {
  try {
    const lib = Deno.dlopen("libc.so.6", SYMBOLS).symbols;
    lib.setrlimit(RLIMIT_CORE, new Uint8Array(16)); // { rlim_cur = 0, rlim_max = 0 }
    lib.signal(sig, null);
    const set = new Uint8Array(128); // sigset_t
    const bit = sig - 1;
    set[bit >> 3] |= 1 << (bit & 7);
    lib.sigprocmask(SIG_UNBLOCK, set, null);
    lib.kill(lib.getpid(), sig);
    // Delivery is asynchronous for other threads: give it a moment.
    const until = Date.now() + 500;
    while (Date.now() < until) { /* wait for the signal */ }
  } catch { /* fall through */ }
  Deno.exit(128 + sig);
}
