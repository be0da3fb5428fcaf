/**
 * A read-only open performed for the caller (decide.ts decideRead said "perform"): the canonical path decided is
 * opened here, in the caller's view of the file system (a container's root: lib/supervisor/view.ts), with the
 * caller's credentials (Emulate.asCaller), never following a symlink (a name swapped for one after the decision
 * fails with ELOOP instead of leading elsewhere), and the fd is installed in the caller with ADDFD. Only the
 * Kubernetes agent's protect profile traps read opens (lib/agent/profile.ts).
 *
 * @module
 */
import { cstr } from "../../ffi/libc.ts";
import { type Notification, type NotifyFd, openat2, RESOLVE } from "../../ffi/notify.ts";
import { fs } from "../../ffi/fsops.ts";
import type { Emulate } from "./emulate.ts";
import type { Respond } from "./respond.ts";
import { decodeRead, type End, openFlags, readsOnly } from "./decode.ts";
import { decide } from "./decide.ts";
import type { Resolver } from "./resolve.ts";
import type { Report } from "./report.ts";
import type { ProcInfo } from "./proc_info.ts";
import type { Context } from "./context.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import type { FsView } from "./view.ts";
import { Errno } from "../../ffi/errors.ts";

const { EACCES } = Errno;
const O_NONBLOCK = 0o4000, O_NOCTTY = 0o400, O_DIRECTORY = 0o200000, O_NOFOLLOW = 0o400000;
const O_CLOEXEC = 0o2000000, O_PATH = 0o10000000;
/** The kernel's VALID_OPEN_FLAGS (x86_64 and aarch64 values): openat2 refuses other bits, openat ignores them. */
const VALID_OPEN_FLAGS = 0o37777703;
const NO_SYMLINKS = RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS;

/**
 * Opens what decideRead decided on, for reading; the fd, or -errno. A path: its canonical directory in the
 * caller's view, then the last name, no symlink followed anywhere. The caller's own /proc/PID (its /proc/self, as
 * decode rewrote it) is the agent's /proc. An `anon` end (a pipe through /proc/PID/fd/N): that magic link
 * reopened, as the kernel would.
 */
export function openForRead(view: FsView, end: End, flags: number, ownPids: readonly number[]): number {
  const path = end.anon ? end.via : end.path;
  if (path === undefined) return -EACCES;
  let dir = "/", name = ".";
  if (path !== "/") {
    const i = path.lastIndexOf("/");
    dir = i <= 0 ? "/" : path.slice(0, i);
    name = path.slice(i + 1);
    if (name === "" || name === "." || name === "..") return -EACCES;
  }
  const m = /^\/proc\/(\d+)(?:\/|$)/.exec(dir);
  const own = m !== null && ownPids.includes(Number(m[1]));
  const dirfd = own
    ? openat2(-100, cstr(dir), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, NO_SYMLINKS)
    : view.openDir(dir);
  if (dirfd < 0) return dirfd;
  try {
    const open = (how: number) =>
      end.anon ? fs.openat(dirfd, cstr(name), how, 0) : openat2(dirfd, cstr(name), how, 0, NO_SYMLINKS);
    if (flags & O_PATH) {
      // openat2 refuses O_PATH with anything but these.
      return open((flags & (O_DIRECTORY | O_NOFOLLOW)) | O_PATH | O_CLOEXEC);
    }
    // Never blocks the agent (a FIFO, a device): O_NONBLOCK, cleared again when the program did not ask for it.
    // O_NOCTTY: a terminal opened here never becomes the agent's.
    const fd = open((flags & VALID_OPEN_FLAGS) | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0 && !(flags & O_NONBLOCK)) fs.setNonblocking(fd, false);
    return fd;
  } finally {
    fs.close(dirfd);
  }
}

/** Performs the open as the caller and answers the call (the new fd, or the error the open gave). */
export function performRead(
  view: FsView,
  n: Notification,
  tgid: number,
  end: End,
  flags: number,
  emulate: Emulate,
  respond: Respond,
): void {
  if (!respond.valid(n)) return;
  const fd = emulate.asCaller(n.tid, () => openForRead(view, end, flags, [tgid, n.tid]));
  if (fd < 0) return respond.performed(n, fd);
  try {
    const r = respond.addFd(n, fd, (flags & O_CLOEXEC) !== 0);
    if (r >= 0) respond.performedSent();
    else respond.performed(n, r);
  } finally {
    fs.close(fd);
  }
}

/** The read-only opens of a mediator: decoded, decided (decide.ts decideRead), refused or performed. */
export class ReadOpens {
  constructor(
    readonly nfd: NotifyFd,
    readonly fs: Resolver,
    readonly respond: Respond,
    readonly emulate: Emulate,
    readonly report: Report,
    readonly proc: ProcInfo,
    readonly context: Context,
  ) {}

  /** Answers `n` when it is a read-only open (trapped by a pod's protect profile only); false otherwise. */
  handles(n: Notification, c: WriteCall): boolean {
    if (c.kind !== "open" || !readsOnly(c, openFlags(n, c))) return false;
    const req = decodeRead(this.fs, this.nfd, n, c);
    if (req.op === "error") {
      this.respond.error(n, req.errno);
      return true;
    }
    const d = decide(req, this.context.ctx);
    if (d.answer === "perform") {
      performRead(this.fs.view, n, this.proc.tgid(n.tid), req.end, req.flags, this.emulate, this.respond);
      return true;
    }
    if (!this.respond.valid(n)) return true;
    const shown = d.answer === "deny" ? d.shown : req.end.path;
    this.report.sysDenied(n.tid, c.name, "read", shown, `allow read ${shown}`); // before: it may exit at once
    this.respond.deny(n);
    return true;
  }
}
