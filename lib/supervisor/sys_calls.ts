/**
 * The supervisor's decisions on the calls lib/filter/filter_sys.ts traps that are neither writes, execs nor connects:
 * calls aimed at another process, keyring calls, and ioctls that change a file. docs/threat-model.md ("Other
 * processes, keyrings, ioctls and system-wide calls") says what they promise.
 *
 * - Another process (prlimit64 with a new limit, setpriority, ioprio_set, sched_set*, pidfd_open): continued
 *   only when the target is a sandbox process, i.e. a descendant of the launcher. The launcher is a child
 *   subreaper that forks only the command, so every sandbox process descends from it (orphans are re-parented
 *   to it, never out of it) and nothing else does. Any other target: EPERM; no target: ESRCH, as the kernel.
 * - Keyrings: EPERM unless the session allows them (`--allow-keyring`).
 * - File ioctls: decided on the file the fd holds, like a write of it, on the supervisor's own copy of the fd:
 *   allowed when the rules allow writing that file (the project, an allowed path, an answer), EPERM otherwise,
 *   without a question. An allowed one is performed on that copy (so another thread's dup2 over the fd number
 *   cannot redirect it), or continued where the kernel itself requires an fd open for writing; the rest of
 *   the trapped ones are refused outright (see ioctlHandling).
 */
import { getRemoteFd, type Notification, type NotifyFd } from "../../ffi/notify.ts";
import { resolveSyscall } from "../../ffi/seccomp.ts";
import { close, readlink } from "../../ffi/libc.ts";
import { ioctlBuffer } from "../../ffi/file_ioctl.ts";
import {
  FICLONE,
  FICLONERANGE,
  FIDEDUPERANGE,
  FILE_IOCTLS,
  KEYRING_CALLS,
  PROCESS_CALLS,
} from "../filter/filter_sys.ts";
import type { Policy } from "../policy/policy.ts";
import type { Respond } from "./respond.ts";
import { Errno } from "../../ffi/errors.ts";

const { EPERM, ESRCH } = Errno;

type Kind = "process" | "keyring" | "ioctl";

export interface SysCallContext {
  /** Reads the caller's memory. */
  nfd: NotifyFd;
  /** Answers the kernel and counts the answers (lib/supervisor/respond.ts). */
  respond: Respond;
  policy: Policy;
  launcherPid: number;
  /** `hallpass agent`: pids are the container's; its pid namespace is the boundary (see below). */
  container: boolean;
  allowKeyring: boolean;
  /** Reports a refusal (the denial line, the summary, the log). */
  denied: (n: Notification, syscall: string, op: string, target: string, suggest: string) => void;
  /** The process (thread group) of a thread. */
  tgid: (tid: number) => number;
  /** Runs `fn` with the caller's ids, groups and capabilities (lib/supervisor/emulate.ts asCaller). */
  asCaller: <T>(tid: number, fn: () => T) => T;
}

/** The parent and thread-group ids of a task, from /proc (null when there is no such task). */
export type TaskIds = (tid: number) => { tgid: number; ppid: number } | null;

export const procTaskIds: TaskIds = (tid) => {
  let s: string;
  try {
    s = Deno.readTextFileSync(`/proc/${tid}/status`);
  } catch {
    return null;
  }
  const tgid = /^Tgid:\s*(\d+)$/m.exec(s), ppid = /^PPid:\s*(\d+)$/m.exec(s);
  return tgid && ppid ? { tgid: Number(tgid[1]), ppid: Number(ppid[1]) } : null;
};

/**
 * Whether task `tid` belongs to the sandbox: it descends from the launcher (which itself is outside). "none"
 * when there is no such task. Race left (docs/threat-model.md): the pid may be reused by an outside process
 * between this check and the kernel's own lookup, which needs the target to exit and pids to wrap around in
 * that window.
 */
export function inSandbox(tid: number, launcherPid: number, ids: TaskIds = procTaskIds): boolean | "none" {
  const first = ids(tid);
  if (first === null) return "none";
  let pid = first.tgid, parent = first.ppid;
  for (let depth = 0; depth < 4096; depth++) {
    if (pid === launcherPid || pid <= 1) return false;
    if (parent === launcherPid) return true;
    const next = ids(parent);
    if (next === null) return false;
    pid = next.tgid;
    parent = next.ppid;
  }
  return false;
}

/**
 * Whether `path` (canonical, /proc/self already made /proc/PID) lies below /proc/PID of a process outside the
 * sandbox (its oom_score_adj, comm, timerslack_ns, ...): writing there changes that process, which no rule can
 * allow (docs/threat-model.md, "Other processes").
 */
export function otherProcessPath(path: string, launcherPid: number): boolean {
  const m = /^\/proc\/(\d+)(?:\/|$)/.exec(path);
  return m !== null && inSandbox(Number(m[1]), launcherPid) !== true;
}

export class SysCalls {
  readonly #byNr = new Map<number, { name: string; kind: Kind }>();
  readonly #c: SysCallContext;

  constructor(c: SysCallContext) {
    this.#c = c;
    const add = (name: string, kind: Kind) => {
      const nr = resolveSyscall(name);
      if (nr >= 0) this.#byNr.set(nr, { name, kind });
    };
    for (const p of PROCESS_CALLS) add(p.name, "process");
    for (const k of KEYRING_CALLS) add(k, "keyring");
    add("ioctl", "ioctl");
  }

  /** The syscall numbers this handles. */
  numbers(): number[] {
    return [...this.#byNr.keys()];
  }

  handle(n: Notification): boolean {
    const h = this.#byNr.get(n.nr);
    if (!h) return false;
    if (h.kind === "keyring") {
      if (this.#c.allowKeyring) this.#continue(n);
      else this.#refuse(n, h.name, "keyring", h.name, "--allow-keyring", EPERM);
    } else if (h.kind === "process") this.#process(n, h.name);
    else this.#ioctl(n);
    return true;
  }

  #continue(n: Notification): void {
    this.#c.respond.continue(n, true);
  }

  #refuse(
    n: Notification,
    syscall: string,
    op: string,
    target: string,
    suggest: string,
    errno: number,
  ): void {
    if (!this.#c.respond.valid(n)) return;
    this.#c.denied(n, syscall, op, target, suggest);
    this.#c.respond.deny(n, errno);
  }

  #process(n: Notification, name: string): void {
    const call = PROCESS_CALLS.find((p) => p.name === name)!;
    // pid_t: the kernel reads the low 32 bits.
    const target = Number(BigInt.asIntN(32, n.args[call.pid]));
    // In a container the pid is the container's own, and every process it can name is in its pid namespace,
    // which is the sandbox there (the agent has no launcher).
    if (this.#c.container || target === 0) return this.#continue(n);
    if (target < 0) return this.#refuse(n, name, "process", `pid ${target}`, "", EPERM);
    const inside = inSandbox(target, this.#c.launcherPid);
    if (inside === true) return this.#continue(n);
    if (inside === "none") {
      this.#c.respond.error(n, ESRCH);
      return;
    }
    this.#refuse(n, name, "process", `pid ${target} (outside the sandbox)`, "", EPERM);
  }

  #ioctl(n: Notification): void {
    const req = n.args[1] & 0xffffffffn;
    const fd = Number(BigInt.asIntN(32, n.args[0]));
    const name = ioctlName(req);
    const what = `ioctl ${name} on fd ${fd}`;
    const how = ioctlHandling(req);
    // In a container the file's path as the agent sees it is not the container's: not decided, refused.
    if (how === "refuse" || this.#c.container) return this.#refuse(n, "ioctl", "write", what, "", EPERM);
    // Decided (and, for "perform", done) on our own copy of the program's fd: another thread's dup2 over that
    // fd number after the decision cannot change which file is changed.
    const pid = this.#c.tgid(n.tid);
    const copy = getRemoteFd(pid, fd);
    if (copy < 0) {
      this.#c.respond.error(n, copy === -9 ? 9 : EPERM);
      return;
    }
    try {
      const path = fdPath(copy);
      if (path === null || this.#c.policy.decide("write", path, Date.now()).effect !== "allow") {
        return this.#refuse(n, "ioctl", "write", path ?? what, path ?? "", EPERM);
      }
      if (how === "continue") return this.#continue(n); // the kernel requires an fd open for writing
      const arg = how.size === 0 ? new Uint8Array(8) : this.#c.nfd.readBytes(n.tid, n.args[2], how.size);
      if (arg === null) {
        this.#c.respond.error(n, 14 /* EFAULT */);
        return;
      }
      if (!this.#c.respond.valid(n)) return;
      const buf = new Uint8Array(Math.max(8, arg.length));
      buf.set(arg);
      // As the caller: root's CAP_LINUX_IMMUTABLE (chattr +i) and ownership are the caller's, not ours.
      const r = this.#c.asCaller(n.tid, () => ioctlBuffer(copy, req, buf));
      this.#c.respond.performed(n, r);
    } finally {
      close(copy);
    }
  }
}

/** What the supervisor does with a trapped ioctl once the fd's file may be written. */
export function ioctlHandling(req: bigint): "refuse" | "continue" | { size: number } {
  switch (req) {
    // Set from an int or a fixed struct without pointers: performed on the supervisor's copy of the fd.
    case FILE_IOCTLS.FS_IOC_SETFLAGS:
    case FILE_IOCTLS.FS_IOC32_SETFLAGS:
    case FILE_IOCTLS.FS_IOC_SETVERSION:
    case FILE_IOCTLS.FS_IOC32_SETVERSION:
    case FILE_IOCTLS.EXT4_IOC_SETVERSION:
    case FILE_IOCTLS.EXT4_IOC32_SETVERSION:
      return { size: 4 };
    case FILE_IOCTLS.FS_IOC_FSSETXATTR:
      return { size: 28 };
    case FILE_IOCTLS.EXT4_IOC_MIGRATE:
    case FILE_IOCTLS.EXT4_IOC_ALLOC_DA_BLKS:
      return { size: 0 };
    // The kernel itself requires the fd to be open for writing (every such open was decided): continued.
    case FICLONE:
    case FICLONERANGE:
    case FILE_IOCTLS.EXT4_IOC_MOVE_EXT:
      return "continue";
    // Everything else trapped: FIDEDUPERANGE (its destinations are in a struct other threads may change),
    // verity and encryption policies (pointers inside; a verity file can never be written again), btrfs's
    // subvolume, snapshot, label and the rest of its ioctls.
    default:
      return "refuse";
  }
}

function ioctlName(req: bigint): string {
  const known = Object.entries(FILE_IOCTLS).find(([, v]) => v === req)?.[0];
  if (known) return known;
  if (req === FICLONE) return "FICLONE";
  if (req === FICLONERANGE) return "FICLONERANGE";
  if (req === FIDEDUPERANGE) return "FIDEDUPERANGE";
  return `0x${req.toString(16)}`;
}

/** The canonical path of the file our fd holds, or null (anonymous, deleted, or /proc naming another file). */
function fdPath(fd: number): string | null {
  const link = readlink(`/proc/self/fd/${fd}`);
  if (typeof link !== "string" || !link.startsWith("/") || link.endsWith(" (deleted)")) return null;
  // The text /proc shows must be this very file (a memfd's name is the program's choice).
  const a = statId(`/proc/self/fd/${fd}`), b = statId(link);
  return a !== null && b !== null && a[0] === b[0] && a[1] === b[1] ? link : null;
}

function statId(p: string): [number, number] | null {
  try {
    const st = Deno.statSync(p);
    return [st.dev, st.ino ?? -1];
  } catch {
    return null;
  }
}
