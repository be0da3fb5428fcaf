/**
 * What /proc says about a sandboxed process: thread group, name, umask, the chain of command lines up to the
 * command hallpass started. Read only when needed (a /proc read costs ~30 µs): for questions, denials,
 * emulated creates and fd forms, never on the hot path of an allowed write in the project.
 */
import type { Notification, NotifyFd } from "../../ffi/notify.ts";
import { readBounded, TEXT_MAX } from "./bounded_text.ts";

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

  /**
   * The command line, arguments separated by spaces, bounded: at most {@linkcode TEXT_MAX} bytes, then its total
   * length and a hash (a program can give itself megabytes of arguments).
   */
  cmdline(pid: number): string {
    const line = readBounded(`/proc/${pid}/cmdline`, (kept) => {
      const end = kept.length && kept[kept.length - 1] === 0 ? kept.length - 1 : kept.length;
      return new TextDecoder().decode(kept.subarray(0, end), { stream: true }).replaceAll("\0", " ");
    });
    return line ? line : `[${this.comm(pid)}]`;
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

  /**
   * The argument vector of an execve/execveat being decided, bounded like a command line: each argument at most
   * {@linkcode TEXT_MAX} bytes, at most 4 × TEXT_MAX bytes and 256 arguments in all, `…` where it was cut.
   */
  argvOf(n: Notification, nfd: NotifyFd, at: boolean): string[] | null {
    const argvPtr = at ? n.args[2] : n.args[1];
    if (argvPtr === 0n) return [];
    const out: string[] = [];
    let bytes = 0;
    for (let i = 0; i < 256 && bytes < 4 * TEXT_MAX; i++) {
      const b = nfd.readBytes(n.tid, argvPtr + BigInt(i * 8), 8);
      if (!b) return null;
      const p = new DataView(b.buffer).getBigUint64(0, true);
      if (p === 0n) return out;
      const s = nfd.readCString(n.tid, p, TEXT_MAX + 1);
      out.push(s === null ? "…" : dec.decode(s));
      bytes += s === null ? TEXT_MAX : s.length;
    }
    out.push("…");
    return out;
  }
}
