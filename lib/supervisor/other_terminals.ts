/**
 * Other terminals (docs/threat-model.md, "Other terminals"): the sandbox may write its own terminal — the pty
 * hallpass runs it on, or without one the output pty of fds 1/2 (lib/sandbox/tty_guard.ts; plan.ts
 * addTerminal), `/dev/tty` — and the ptys it opens itself through `/dev/ptmx` (tmux, an editor's terminal,
 * `script`). Any other `/dev/pts/N` is a terminal of the person's (another tmux pane, another ssh session) where
 * the sandbox could print a fake prompt or set the clipboard: opening it for writing asks like any write
 * outside, and the bar says it is another terminal.
 *
 * Decided on the device, race-free: the supervisor opens `/dev/pts/N` itself (no symlink followed), and only
 * while it holds that open — so index N cannot be freed and given to another terminal meanwhile — checks that
 * a sandboxed process holds the master of pty N (`tty-index` in /proc/PID/fdinfo). Then it installs its open
 * in the program (ADDFD). A pty is not in the Landlock floor, so the program's own open can never reach one.
 *
 * @module
 */
import { cstr, readlink } from "../../ffi/libc.ts";
import { fs } from "../../ffi/fsops.ts";
import { type Notification, openat2, RESOLVE } from "../../ffi/notify.ts";
import type { Respond } from "./respond.ts";
import type { ReadProtection } from "../policy/secrets.ts";
import { exists } from "../util/exists.ts";
import { stdioCharDevices } from "../util/stdio_devices.ts";

export const ANOTHER_TERMINAL =
  "this is another terminal, not the sandbox's own: what it writes there appears where you did not run it";

const PTY = /^\/dev\/pts\/(\d{1,9})$/;

export function isPtyPath(path: string): boolean {
  return PTY.test(path);
}

/** A terminal device by its name: a pty, a virtual console, the console, a serial line (for the bar's words). */
export function isTerminalPath(path: string): boolean {
  return PTY.test(path) || /^\/dev\/(tty\d{1,3}|console|ttyS\d{1,3}|ttyUSB\d{1,3}|ttyACM\d{1,3})$/.test(path);
}

/** The ptys of fds 0-2 (the terminal hallpass was started on), when the command runs on it directly. */
export function ownTerminals(): string[] {
  return stdioCharDevices((t) => PTY.test(t));
}

/**
 * The read side (lib/floor/read_floor.ts): `/dev/pts` is a read hole, so a read-only open of another terminal
 * (never trapped: reads are not) is refused by Landlock — it would read what is typed there. The sandbox's own
 * terminal and the ptmx node stay readable; a pty it opens itself with O_RDWR is opened by the supervisor.
 */
export function withTerminalReads(r: ReadProtection, own: readonly string[]): ReadProtection {
  const source = { kind: "builtin" as const, what: "other terminals" };
  // The other terminals outside /dev/pts too (root opens them all): virtual consoles and their screen memory
  // (vcs: what the console shows), the console, serial and USB terminals. `/dev/tty` (the caller's own) stays.
  const consoles: string[] = [];
  try {
    for (const e of Deno.readDirSync("/dev")) {
      if (/^(tty\d+|ttyS\d+|ttyUSB\d+|ttyACM\d+|ttyAMA\d+|hvc\d+|console|vcs[au]?\d*)$/.test(e.name)) {
        consoles.push(`/dev/${e.name}`);
      }
    }
  } catch {
    // no /dev to list
  }
  const others = consoles.filter((p) => !own.includes(p)).map((path) => ({ path, source }));
  if (!exists("/dev/pts")) return others.length ? { ...r, protect: [...r.protect, ...others] } : r;
  return {
    ...r,
    protect: [...r.protect, { path: "/dev/pts", source }, ...others],
    readable: [...r.readable, ...[...own, "/dev/pts/ptmx"].filter(exists).map((path) => ({ path, source }))],
  };
}

/** Every process below `root` (the launcher): the sandbox (the launcher is a subreaper: orphans stay below it). */
export function sandboxPids(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let stat: string;
    try {
      stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    } catch {
      continue;
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0 && out.length < 100_000) {
    const p = todo.pop()!;
    for (const c of children.get(p) ?? []) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

/** Whether one of `pids` holds the master of pty `index` (an fd on /dev/ptmx whose fdinfo names it). */
export function holdsMaster(pids: readonly number[], index: number): boolean {
  for (const pid of pids) {
    let fds: Deno.DirEntry[];
    try {
      fds = [...Deno.readDirSync(`/proc/${pid}/fd`)];
    } catch {
      continue;
    }
    for (const f of fds) {
      const t = readlink(`/proc/${pid}/fd/${f.name}`);
      if (t !== "/dev/ptmx" && t !== "/dev/pts/ptmx") continue;
      try {
        const info = Deno.readTextFileSync(`/proc/${pid}/fdinfo/${f.name}`);
        const m = /^tty-index:\s*(\d+)$/m.exec(info);
        if (m && Number(m[1]) === index) return true;
      } catch {
        // gone
      }
    }
  }
  return false;
}

const O_CREAT = 0o100, O_EXCL = 0o200, O_TRUNC = 0o1000, O_NOCTTY = 0o400, O_CLOEXEC = 0o2000000;
const O_TMPFILE = 0o20200000;
const VALID_OPEN_FLAGS = 0o37777703;

/**
 * An open of `/dev/pts/N`: when the sandbox holds pty N's master, performs it and answers (true). false: not
 * the sandbox's pty (or not a pty at all): decide it as any other write.
 */
export function openOwnPty(
  respond: Respond,
  n: Notification,
  flags: number,
  path: string,
  launcherPid: number,
): boolean {
  const m = PTY.exec(path);
  if (!m) return false;
  const dir = fs.openat(
    -100,
    cstr("/dev/pts"),
    0o10000000 /* O_PATH */ | 0o200000 /* O_DIRECTORY */ | O_CLOEXEC,
    0,
  );
  if (dir < 0) return false;
  const how = (flags & VALID_OPEN_FLAGS & ~(O_CREAT | O_EXCL | O_TRUNC | O_TMPFILE)) | O_NOCTTY | O_CLOEXEC;
  const fd = openat2(dir, cstr(m[1]), how, 0, RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS | RESOLVE.NO_XDEV);
  fs.close(dir);
  if (fd < 0) return false;
  try {
    // What we hold is pty N (its name in devpts is its index), and while we hold it N stays this pty.
    const st = Deno.statSync(`/proc/self/fd/${fd}`);
    if (!st.isCharDevice || !holdsMaster(sandboxPids(launcherPid), Number(m[1]))) return false;
    if (!respond.valid(n)) return true;
    const r = respond.addFd(n, fd, (flags & O_CLOEXEC) !== 0);
    if (r < 0) respond.performed(n, r);
    else respond.performedSent();
    return true;
  } finally {
    fs.close(fd);
  }
}
