/**
 * The person's terminal when the command runs without hallpass's pty (stdin or stdout a pipe, another of fds
 * 0-2 the terminal: `hallpass -- cmd | tee log`, `echo x | hallpass -- cmd`; docs/terminal.md, docs/threat-model.md
 * "The terminal"). The command must not write that terminal raw (OSC 52 to the clipboard, kitty's remote
 * control, DECUDK keys), so:
 *
 * - fds 1 and 2, when they are the terminal, become the slave of an output-only pty (isatty stays true, the
 *   size is the terminal's and follows SIGWINCH); hallpass reads its master through the same output filter as
 *   the pty mode (lib/ui/output_filter.ts) and writes the rest to the terminal. Nothing is ever typed into it.
 * - fd 0, when it is the terminal, becomes a read-only reopen of it: keys are read and modes set (`stty`, raw
 *   mode for a prompt) as without hallpass, but nothing is written through it.
 * - `/dev/tty` and the terminal's own path are not writable (their write-opens are decided like any write
 *   outside: denied without an ask program). Reads are not trapped.
 *
 * The command stays in the person's session and process group: Ctrl-C, Ctrl-Z, a background reader's SIGTTIN
 * and `| less` behave as without hallpass, and `/dev/tty` still names the person's terminal (read-only here).
 * The terminal's modes are put back at exit when the command changed them and hallpass is in the foreground.
 *
 * @module
 */
import {
  closeFd,
  getTermios,
  getWinSize,
  inForeground,
  isatty,
  openPty,
  openSlave,
  readMaster,
  readMasterNow,
  reopenReadOnly,
  sameTermios,
  setTermios,
  setWinSize,
  type TermiosState,
  waitWaker,
  wakeWaits,
  withoutOutputProcessing,
} from "../../ffi/pty.ts";
import { OutputFilter } from "../ui/output_filter.ts";
import { stdioCharDevices } from "../util/stdio_devices.ts";
import { isTerminalPath } from "../supervisor/other_terminals.ts";
import type { Plan } from "./plan.ts";

/**
 * The plan without `/dev/tty` and the person's terminal as writable devices (lib/sandbox/plan.ts DEVICES and
 * its terminal of fds 0-2): their write-opens are then decided like any write outside.
 */
export function withoutTerminalWrites(plan: Plan, terminals: readonly string[]): void {
  const gone = new Set(["/dev/tty", ...terminals]);
  plan.floor = plan.floor.filter((f) => !(f.kind === "exact" && gone.has(f.path)));
  plan.rules = plan.rules.filter((r) => !(r.op === "write" && r.effect === "allow" && gone.has(r.target)));
}

/** The launcher's configuration bits for the replaced fds (helper/launcher/launcher.c CFG_STDIN…). */
export const CFG_STDIO = [64, 128, 256] as const;

export class TtyGuard {
  /** The fds to hand the launcher for 0, 1, 2 (-1: unchanged). */
  readonly stdio: [number, number, number];
  /** The output pty's slave path (writable by the sandbox: it is its own), or null without one. */
  readonly slavePath: string | null;
  /** The person's terminal(s) among fds 0-2, by path: readable, never writable by path. */
  readonly terminals: string[];
  readonly #master: number;
  readonly #out: 1 | 2;
  readonly #saved: TermiosState | null;
  readonly #modesFd: number;
  #pump: Promise<void> | null = null;
  readonly #filter = new OutputFilter();
  readonly #stop = new AbortController();
  readonly #waker: number;
  readonly #winch = () => this.#resize();

  private constructor(
    stdio: [number, number, number],
    slavePath: string | null,
    master: number,
    out: 1 | 2,
    modesFd: number,
  ) {
    this.stdio = stdio;
    this.slavePath = slavePath;
    this.#master = master;
    this.#out = out;
    this.#modesFd = modesFd;
    // Every terminal of fds 0-2, whatever its name (`/dev/hvc0`, a VM's serial console, too: lib/sandbox/plan.ts
    // made it writable), and the ones isTerminalPath knows.
    const ttys = new Set<string>();
    for (const fd of [0, 1, 2]) {
      try {
        if (isatty(fd)) ttys.add(Deno.readLinkSync(`/proc/self/fd/${fd}`));
      } catch {
        // closed meanwhile
      }
    }
    this.terminals = stdioCharDevices((t) =>
      t.startsWith("/dev/") && t !== "/dev/tty" && (ttys.has(t) || isTerminalPath(t))
    );
    let saved: TermiosState | null = null;
    try {
      saved = getTermios(modesFd);
    } catch {
      // not readable: nothing to put back
    }
    this.#saved = saved;
    this.#waker = master >= 0 ? waitWaker() : -1;
  }

  /** The guard when one of fds 0-2 is a terminal (call only when hallpass does not use its pty), else null. */
  static open(): TtyGuard | null {
    const tty = [0, 1, 2].map((fd) => isatty(fd));
    if (!tty.some(Boolean)) return null;
    const stdio: [number, number, number] = [-1, -1, -1];
    if (tty[0]) stdio[0] = reopenReadOnly(0);
    const out: 1 | 2 = tty[1] ? 1 : 2;
    let master = -1, slavePath: string | null = null;
    if (tty[1] || tty[2]) {
      const p = openPty();
      master = p.master;
      slavePath = p.slavePath;
      const slave = openSlave(p.slavePath);
      try {
        setTermios(slave, withoutOutputProcessing(getTermios(out)));
      } catch {
        // the pty's own modes then (output processing on: a newline may reach the terminal as CR LF)
      }
      const size = getWinSize(out);
      if (size) setWinSize(master, size);
      if (tty[1]) stdio[1] = slave;
      if (tty[2]) stdio[2] = slave;
    }
    return new TtyGuard(stdio, slavePath, master, out, tty[0] ? 0 : out);
  }

  /** The sandbox's own writable terminal: the output pty, when there is one. */
  get writable(): string[] {
    return this.slavePath ? [this.slavePath] : [];
  }

  /**
   * Takes `/dev/tty` and the person's terminal out of the plan's writable devices; returns the terminals the
   * sandbox may read by path (the person's, and the output pty).
   */
  applyTo(plan: Plan): string[] {
    withoutTerminalWrites(plan, this.terminals);
    return [...this.terminals, ...this.writable];
  }

  /** The launcher's configuration bits and the fds, in its order (0, 1, 2; a shared slave sent twice). */
  sent(): { flags: number; fds: number[] } {
    let flags = 0;
    const fds: number[] = [];
    this.stdio.forEach((fd, i) => {
      if (fd < 0) return;
      flags |= CFG_STDIO[i];
      fds.push(fd);
    });
    return { flags, fds };
  }

  /** After the launcher has them: hallpass keeps none (EOF on the master means the sandbox is gone). */
  closeSent(): void {
    for (const fd of new Set(this.stdio)) if (fd >= 0) closeFd(fd);
  }

  /** Copies the pty's output to the terminal through the output filter, and follows the terminal's size. */
  start(): void {
    if (this.#master < 0) return;
    Deno.addSignalListener("SIGWINCH", this.#winch);
    const w = this.#out === 1 ? Deno.stdout : Deno.stderr;
    this.#pump = (async () => {
      try {
        for (;;) {
          const chunk = await readMaster(this.#master, { signal: this.#stop.signal, waker: this.#waker });
          if (!chunk) break;
          let out = this.#filter.filter(chunk);
          while (out.length > 0) out = out.subarray(await w.write(out));
        }
      } catch {
        // the terminal is gone: nothing more to show
      }
    })();
  }

  #resize(): void {
    const size = getWinSize(this.#out);
    if (size) {
      try {
        setWinSize(this.#master, size);
      } catch {
        // closed meanwhile
      }
    }
  }

  /**
   * Puts the terminal's modes back when they changed, only in the foreground (else tcsetattr would stop
   * hallpass) and only when no other program of the pipeline reads the terminal: a pager (`| less`) set them and
   * they are its own.
   */
  restore(): void {
    if (!this.#saved) return;
    try {
      if (
        !sameTermios(getTermios(this.#modesFd), this.#saved) && inForeground(this.#modesFd) &&
        !otherReader([...this.terminals, "/dev/tty"])
      ) {
        setTermios(this.#modesFd, this.#saved);
      }
    } catch {
      // the terminal is gone
    }
  }

  /**
   * Once every sandboxed process is gone: the rest of the output, then the modes. The pump is stopped and the
   * master drained here without waiting: every slave fd is closed (the launcher killed and reaped the sandbox),
   * so it reads what is left and then EIO; a slave somehow still open elsewhere cannot hang the exit.
   */
  async finish(): Promise<void> {
    if (this.#pump) {
      this.#stop.abort();
      wakeWaits(this.#waker);
      await this.#pump;
      Deno.removeSignalListener("SIGWINCH", this.#winch);
      const w = this.#out === 1 ? Deno.stdout : Deno.stderr;
      try {
        for (let chunk = readMasterNow(this.#master); chunk.length > 0; chunk = readMasterNow(this.#master)) {
          writeAllSync(w, this.#filter.filter(chunk));
        }
        writeAllSync(w, this.#filter.flush());
      } catch {
        // the terminal is gone
      }
      closeFd(this.#master);
      closeFd(this.#waker);
    }
    this.restore();
  }
}

function writeAllSync(w: typeof Deno.stdout, bytes: Uint8Array): void {
  while (bytes.length > 0) bytes = bytes.subarray(w.writeSync(bytes));
}

/** /proc/PID/stat's fields after the command name: [state, ppid, pgrp, ...]. */
function statFields(pid: number | "self"): string[] | null {
  try {
    const st = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return st.slice(st.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/**
 * Whether a process of hallpass's process group, other than hallpass and its ancestors (the shell), has one of
 * `terminals` open for reading as its stdin or above fd 2 (`less` reads keys from `/dev/tty`): the program
 * that owns the terminal's modes now.
 */
export function otherReader(terminals: readonly string[]): boolean {
  const self = statFields("self");
  if (!self) return false;
  const pgrp = self[2];
  const ancestors = new Set<number>([Deno.pid]);
  for (let p = Number(self[1]); p > 1 && !ancestors.has(p);) {
    ancestors.add(p);
    p = Number(statFields(p)?.[1] ?? 0);
  }
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid) || pid <= 0 || ancestors.has(pid) || statFields(pid)?.[2] !== pgrp) continue;
    let fds: Deno.DirEntry[];
    try {
      fds = [...Deno.readDirSync(`/proc/${pid}/fd`)];
    } catch {
      continue;
    }
    for (const f of fds) {
      const n = Number(f.name);
      if (n === 1 || n === 2) continue;
      try {
        if (!terminals.includes(Deno.readLinkSync(`/proc/${pid}/fd/${n}`))) continue;
        const flags = /^flags:\s*([0-7]+)$/m.exec(Deno.readTextFileSync(`/proc/${pid}/fdinfo/${n}`));
        if (flags && (parseInt(flags[1], 8) & 3) !== 1 /* not O_WRONLY */) return true;
      } catch {
        // gone
      }
    }
  }
  return false;
}
