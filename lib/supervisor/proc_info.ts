/**
 * What /proc says about a sandboxed process: thread group, name, umask, the chain of command lines up to the
 * command hallpass started. Read only when needed (a /proc read costs ~30 µs): for questions, denials,
 * emulated creates and fd forms, never on the hot path of an allowed write in the project.
 */
import type { Notification, NotifyFd } from "../../ffi/notify.ts";

const dec = new TextDecoder();

function readText(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

function field(status: string | null, name: string): string | null {
  if (status === null) return null;
  const i = status.indexOf(`\n${name}:`);
  if (i < 0) return null;
  const end = status.indexOf("\n", i + 1);
  return status.slice(i + name.length + 2, end < 0 ? undefined : end).trim();
}

export class ProcInfo {
  readonly #commandPid: number;
  readonly #tgids = new Map<number, number>();
  #stamp = 0;

  constructor(commandPid: number) {
    this.#commandPid = commandPid;
  }

  /** The thread-group id (process id) of a thread. Cached briefly: a tid is reused only after it died. */
  tgid(tid: number): number {
    const now = Date.now();
    if (now - this.#stamp > 1000) {
      this.#tgids.clear();
      this.#stamp = now;
    }
    const hit = this.#tgids.get(tid);
    if (hit !== undefined) return hit;
    const t = Number(field(readText(`/proc/${tid}/status`), "Tgid") ?? tid);
    this.#tgids.set(tid, t);
    return t;
  }

  /** The process's name as it set it (`comm`, PR_SET_NAME): the program's words. */
  comm(pid: number): string {
    return (readText(`/proc/${pid}/comm`) ?? "?").replace(/\n$/, "");
  }

  /**
   * The executable the kernel runs for the process (/proc/PID/exe): what the kernel vouches for, unlike comm and
   * argv. "?" when gone or unreadable; a deleted or anonymous file reads as the kernel writes it.
   */
  exe(pid: number): string {
    try {
      return Deno.readLinkSync(`/proc/${pid}/exe`);
    } catch {
      return "?";
    }
  }

  umask(tid: number): number {
    const u = field(readText(`/proc/${tid}/status`), "Umask");
    return u === null ? 0o022 : parseInt(u, 8);
  }

  /** A thread's file system ids, groups and effective capabilities (what the kernel checks a write with). */
  fsCreds(
    tid: number | "thread-self",
  ): { uid: number; gid: number; groups: number[]; capEff: bigint } | null {
    const st = readText(tid === "thread-self" ? "/proc/thread-self/status" : `/proc/${tid}/status`);
    const u = field(st, "Uid"), g = field(st, "Gid"), gr = field(st, "Groups"), ce = field(st, "CapEff");
    if (u === null || g === null || ce === null || !/^[0-9a-f]{1,16}$/.test(ce)) return null;
    const fsuid = Number(u.trim().split(/\s+/)[3]), fsgid = Number(g.trim().split(/\s+/)[3]);
    if (!Number.isInteger(fsuid) || !Number.isInteger(fsgid)) return null;
    const groups = (gr ?? "").trim().split(/\s+/).filter(Boolean).map(Number).filter(Number.isInteger);
    return { uid: fsuid, gid: fsgid, groups, capEff: BigInt("0x" + ce) };
  }

  ppid(pid: number): number {
    const stat = readText(`/proc/${pid}/stat`);
    if (stat === null) return 0;
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return Number(rest[1]) || 0;
  }

  cmdline(pid: number): string {
    try {
      const raw = Deno.readFileSync(`/proc/${pid}/cmdline`);
      const parts = dec.decode(raw).split("\0");
      if (parts[parts.length - 1] === "") parts.pop();
      return parts.length ? parts.join(" ") : `[${this.comm(pid)}]`;
    } catch {
      return `[${this.comm(pid)}]`;
    }
  }

  /** Command lines from `pid` up to the command hallpass started (at most 12). */
  chain(pid: number): string[] {
    const out: string[] = [];
    let p = pid;
    for (let i = 0; i < 12 && p > 1; i++) {
      out.push(this.cmdline(p));
      if (p === this.#commandPid) break;
      p = this.ppid(p);
    }
    return out;
  }

  /** The argument vector of an execve/execveat being decided (at most 256 arguments of 4 KiB). */
  argvOf(n: Notification, nfd: NotifyFd, at: boolean): string[] | null {
    const argvPtr = at ? n.args[2] : n.args[1];
    if (argvPtr === 0n) return [];
    const out: string[] = [];
    for (let i = 0; i < 256; i++) {
      const b = nfd.readBytes(n.tid, argvPtr + BigInt(i * 8), 8);
      if (!b) return null;
      const p = new DataView(b.buffer).getBigUint64(0, true);
      if (p === 0n) return out;
      const s = nfd.readCString(n.tid, p, 4096);
      if (s === null) return null;
      out.push(dec.decode(s));
    }
    out.push("…");
    return out;
  }
}
