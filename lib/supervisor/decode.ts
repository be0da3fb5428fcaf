/**
 * Decoding a notification, once, into a typed Request: the operation, each path end canonical (resolved as the
 * kernel would walk it, from the caller's cwd or dirfd, in the caller's view of the file system) or marked
 * unreadable (a name that is not UTF-8), our copy of the caller's fd for fd forms, and the flags the decision
 * reads. The caller's memory is read here and never again for the decision (lib/supervisor/decide.ts decides
 * on the Request; lib/supervisor/emulate.ts reads what a performed call needs, once, before acting).
 *
 * @module
 */
import { readlink } from "../../ffi/libc.ts";
import { getRemoteFd, type Notification, type NotifyFd } from "../../ffi/notify.ts";
import { fs } from "../../ffi/fsops.ts";
import { MAGIC_PREFIX } from "../policy/request_protocol.ts";
import {
  AT_EMPTY_PATH,
  AT_SYMLINK_FOLLOW,
  AT_SYMLINK_NOFOLLOW,
  CREDENTIAL_CALLS,
  NEW_SYSCALL_NUMBERS,
  WRITE_CALLS,
  type WriteCall,
} from "../filter/syscall_table.ts";
import { resolveSyscall } from "../../ffi/seccomp.ts";
import type { NetKind } from "./connect.ts";
import type { Resolved, Resolver } from "./resolve.ts";
import type { FsView } from "./view.ts";
import { type Found, tailErrno, tailFollows, tailOf } from "./path_forms.ts";
import { Errno } from "../../ffi/errors.ts";

const { EACCES, EILSEQ } = Errno;
const O_CREAT = 0o100, O_EXCL = 0o200, O_TRUNC = 0o1000, O_NOFOLLOW = 0o400000;

/** One end of a call, as decided: a canonical path, or something with no path (`anon`: a pipe, a memfd). */
export interface End {
  /** Canonical path decided on (or the fd's path for fd forms; `anon:…` for what has none). */
  path: string;
  anon: boolean;
  /** A name that is not UTF-8: it cannot be shown or matched faithfully (decided in decide.ts). */
  unreadable?: boolean;
  /** For `anon`: the /proc/PID/fd/N magic link it was reached through (a performed read reopens that). */
  via?: string;
}

/** A write (lib/filter/syscall_table.ts WRITE_CALLS): every end resolved. */
export interface WriteRequest {
  op: "write";
  n: Notification;
  call: WriteCall;
  /** One end, or two for rename and link (source, destination). The last may be unreadable (decoding stops). */
  ends: End[];
  /** Our copy of the caller's fd for fd forms (fchmod, utimensat(fd, NULL), *at(fd, "", AT_EMPTY_PATH)); else -1. */
  fdCopy: number;
  /** The open flags (opens), else 0. */
  flags: number;
  /** The *at flags argument (AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, RENAME_*), else 0. */
  atFlags: number;
  /** setxattr's attribute name (null when unreadable). */
  xattrName?: Uint8Array | null;
}

/** An exec: the program it runs, canonical, or anonymous (a memfd, a deleted file). */
export interface ExecRequest {
  op: "exec";
  n: Notification;
  /** execveat rather than execve. */
  at: boolean;
  end: End;
  /** ENOENT/ENOTDIR/EACCES when the kernel would refuse to run it (not there, not executable), else 0. */
  runErrno: number;
}

/** bind(2) of a unix socket to a path: a file created there. */
export interface BindRequest {
  op: "bind";
  n: Notification;
  end: End;
  /** Something is at the path already (EADDRINUSE). */
  exists: boolean;
}

/**
 * An open that only reads (no write access, O_CREAT or O_TRUNC): trapped only by the Kubernetes agent's protect
 * profile (lib/agent/profile.ts); the path the open would reach, canonical in the caller's view.
 */
export interface ReadRequest {
  op: "read";
  n: Notification;
  call: WriteCall;
  end: End;
  flags: number;
}

export type Request = WriteRequest | ExecRequest | BindRequest | ReadRequest;

/** An open that cannot write: the filter traps it only when reads are mediated (a pod's protect profile). */
export function readsOnly(c: WriteCall, flags: number): boolean {
  return c.kind === "open" && (flags & (3 | O_CREAT | O_TRUNC)) === 0;
}

/** Decodes a read-only open: the path it would open, following a final symlink unless O_NOFOLLOW. */
export function decodeRead(
  files: Resolver,
  mem: NotifyFd,
  n: Notification,
  c: WriteCall,
): ReadRequest | DecodeError {
  const flags = openFlags(n, c);
  const e = pathEnd(files, mem, n, c.dirfd, c.path, !(flags & O_NOFOLLOW), c.kind);
  if ("op" in e) return e;
  delete e.tail; // a read of "d/" or "d/." reads the directory: the kernel's to refuse
  return { op: "read", n, call: c, end: e, flags };
}

/** What could not become a Request: the error the kernel would give. */
export interface DecodeError {
  op: "error";
  errno: number;
}

/** What a trapped system call is: a write, an exec, a bind, a chdir, a connect or send (else sys_calls.ts's). */
export type Trapped = WriteCall | "execve" | "execveat" | "bind" | "cwd" | NetKind;

/** The trapped system calls by number, on this architecture. */
export function trappedCalls(): Map<number, Trapped> {
  const byNr = new Map<number, Trapped>();
  for (const c of WRITE_CALLS) {
    const nr = NEW_SYSCALL_NUMBERS[c.name] ?? resolveSyscall(c.name);
    if (nr >= 0) byNr.set(nr, c);
  }
  // Seen, never decided (continued): a working directory or credentials change (lib/filter/filter_plan.ts).
  for (const name of ["chdir", "fchdir", ...CREDENTIAL_CALLS]) {
    const nr = resolveSyscall(name);
    if (nr >= 0) byNr.set(nr, "cwd");
  }
  for (
    const name of [
      "execve",
      "execveat",
      "connect",
      "sendto",
      "sendmsg",
      "sendmmsg",
      "listen",
      "bind",
    ] as const
  ) {
    const nr = resolveSyscall(name);
    if (nr >= 0) byNr.set(nr, name);
  }
  return byNr;
}

/** The open flags of an open-family call (openat's argument, or creat's fixed O_CREAT|O_WRONLY|O_TRUNC). */
export function openFlags(n: Notification, c: WriteCall): number {
  return typeof c.openFlags === "number" ? Number(n.args[c.openFlags] & 0xffffffffn) : c.openFlags!.fixed;
}

function fdArg(n: Notification, i: number): number {
  return Number(BigInt.asIntN(32, n.args[i]));
}

function endOf(r: Resolved & { kind: "path" | "anon" }): End {
  if (r.kind === "path") return { path: r.path, anon: false };
  return r.via === undefined
    ? { path: `anon:${r.what}`, anon: true }
    : { path: `anon:${r.what}`, anon: true, via: r.via };
}

/**
 * A path argument resolved from the caller's cwd or dirfd; unreadable when not UTF-8. A last component
 * written with a trailing slash, `.` or `..` (lib/supervisor/path_forms.ts) is followed by the calls that act
 * on what it names, and its form kept in `tail`.
 */
function pathEnd(
  files: Resolver,
  mem: NotifyFd,
  n: Notification,
  dirfdArg: number,
  pathArg: number,
  follow: boolean,
  kind: WriteCall["kind"],
): (End & { tail?: ReturnType<typeof tailOf> }) | DecodeError {
  const p = mem.readPath(n.tid, n.args[pathArg]);
  if (p === -EILSEQ) return { path: "(a file name that is not UTF-8)", anon: false, unreadable: true };
  if (typeof p === "number") return { op: "error", errno: -p };
  let base = "/";
  if (!p.startsWith("/")) {
    const b = files.baseDir(n.tid, dirfdArg < 0 ? -100 : fdArg(n, dirfdArg));
    if (b.kind !== "path") return { op: "error", errno: b.kind === "error" ? b.errno : EACCES };
    base = b.path;
  }
  const tail = tailOf(p);
  const r = files.resolvePath(p, base, follow || (tail !== "plain" && tailFollows(kind)), n.tid, n.tid);
  if (r.kind === "error") return { op: "error", errno: r.errno };
  return tail === "plain" ? endOf(r) : { ...endOf(r), tail };
}

/** What is at a canonical path, its last component not followed, and followed. */
function found(view: FsView, p: string): { at: Found; followed: Found } {
  if (!view.exists(p)) return { at: "none", followed: "none" };
  const followed: Found = typeof view.realpath(p) === "number"
    ? "none"
    : view.isDirectory(p)
    ? "dir"
    : "other";
  const at: Found = typeof view.readlink(p) === "string" ? "link" : followed;
  return { at, followed };
}

/**
 * The kernel's errno for ends written with a trailing slash, `.` or `..`, or 0 (lib/supervisor/path_forms.ts):
 * first a dot naming no directory (the walk's error, either end), then each end's form.
 */
function tailError(
  view: FsView,
  c: WriteCall,
  ends: readonly (End & { tail?: ReturnType<typeof tailOf> })[],
  flags: number,
  atFlags: number,
): number {
  const seen = ends.map((e) => (e.tail && !e.anon ? found(view, e.path) : null));
  for (const [i, e] of ends.entries()) {
    if ((e.tail === "dot" || e.tail === "dotdot") && seen[i]!.followed !== "dir") {
      return seen[i]!.followed === "none" ? 2 /* ENOENT */ : 20; /* ENOTDIR */
    }
  }
  for (const [i, e] of ends.entries()) {
    if (!e.tail || e.anon) continue;
    const err = tailErrno(c.kind, i === 0 ? 0 : 1, e.tail, seen[i]!.at, seen[i]!.followed, {
      rmdir: (atFlags & 0x200) !== 0, // AT_REMOVEDIR
      creat: (flags & O_CREAT) !== 0,
    });
    if (err) return err;
  }
  if (c.kind === "rename" && ends.some((e) => e.tail === "slash")) {
    // A trailing slash on either end: the source must be a directory itself (not a symlink to one).
    const src = seen[0] ?? found(view, ends[0].path);
    if (src.at !== "dir") return src.at === "none" ? 2 : 20;
  }
  return 0;
}

/**
 * Decodes a write call. Fd forms take our own copy of the caller's fd (the kernel's path for it is already
 * canonical); path forms follow a final symlink exactly when the call would.
 */
export function decodeWrite(
  files: Resolver,
  mem: NotifyFd,
  n: Notification,
  c: WriteCall,
  tgid: (tid: number) => number,
): WriteRequest | DecodeError {
  const a = n.args;
  const atFlags = c.atFlags !== undefined ? Number(a[c.atFlags] & 0xffffffffn) : 0;
  const flags = c.kind === "open" ? openFlags(n, c) : 0;
  const req: WriteRequest = { op: "write", n, call: c, ends: [], fdCopy: -1, flags, atFlags };
  // fd forms: fchmod, fchown, fsetxattr, fremovexattr, utimensat(fd, NULL), *at(fd, "", AT_EMPTY_PATH)
  const fdForm = c.path < 0 || (c.kind === "utime" && c.name === "utimensat" && a[1] === 0n);
  const emptyPathForm = !fdForm && (atFlags & AT_EMPTY_PATH) !== 0 && mem.readPath(n.tid, a[c.path]) === "";
  if (fdForm || emptyPathForm) {
    const copy = getRemoteFd(tgid(n.tid), fdArg(n, c.path < 0 ? c.fd! : c.dirfd));
    if (copy < 0) return { op: "error", errno: -copy };
    const link = readlink(`/proc/self/fd/${copy}`);
    if (typeof link === "number") {
      fs.close(copy);
      return { op: "error", errno: -link };
    }
    req.fdCopy = copy;
    // A deleted file keeps its old path + " (deleted)": decided on that (it asks). pipe:[…], socket:[…],
    // anon_inode:…: no file system object.
    req.ends.push(link.startsWith("/") ? { path: link, anon: false } : { path: `anon:${link}`, anon: true });
  } else {
    let follow = c.follow;
    if (c.kind === "open") follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
    else if (c.kind === "link") follow = (atFlags & AT_SYMLINK_FOLLOW) !== 0;
    else if (c.atFlags !== undefined && (atFlags & AT_SYMLINK_NOFOLLOW)) follow = false;
    const e = pathEnd(files, mem, n, c.dirfd, c.path, follow, c.kind);
    if ("op" in e) return e;
    req.ends.push(e);
    if (e.unreadable) return req;
  }
  if (c.path2 !== undefined) {
    // The second end of a rename or link (linkat(fd, "", …, AT_EMPTY_PATH) too): decoded like the first.
    const e = pathEnd(files, mem, n, c.dirfd2 ?? -1, c.path2, false, c.kind);
    if ("op" in e) {
      fs.close(req.fdCopy);
      return e;
    }
    req.ends.push(e);
  }
  const tailErr = req.ends.some((e) => "tail" in e) ? tailError(files.view, c, req.ends, flags, atFlags) : 0;
  if (tailErr) {
    fs.close(req.fdCopy);
    return { op: "error", errno: tailErr };
  }
  for (const e of req.ends) delete (e as { tail?: unknown }).tail;
  if (c.kind === "setxattr") req.xattrName = mem.readCString(n.tid, a[1], 256);
  return req;
}

/** What an exec's path argument is, read once: a hallpass-request request, a path, or unreadable. */
export type ExecPath =
  | { kind: "request"; raw: Uint8Array }
  | { kind: "path"; text: string }
  | { kind: "unreadable" }
  | { kind: "error"; errno: number };

export function readExecPath(mem: NotifyFd, n: Notification, at: boolean): ExecPath {
  // execveat(dirfd, path, argv, envp, flags); execve(path, argv, envp)
  const arg = n.args[at ? 1 : 0];
  const read = mem.readPath(n.tid, arg);
  if (typeof read === "string" ? read.startsWith(MAGIC_PREFIX) : read === -EILSEQ) {
    // A hallpass-request request (a malformed one too: the handler answers EINVAL).
    const raw = typeof read === "string" ? new TextEncoder().encode(read) : mem.readCString(n.tid, arg);
    if (raw !== null && raw.length >= MAGIC_PREFIX.length && startsWithMagic(raw)) {
      return { kind: "request", raw };
    }
  }
  if (read === -EILSEQ) return { kind: "unreadable" };
  if (typeof read === "number") return { kind: "error", errno: -read };
  return { kind: "path", text: read };
}

/** An exec whose program name is not UTF-8: it cannot be shown or matched (decide.ts denies it). */
export function unreadableExec(n: Notification, at: boolean): ExecRequest {
  return {
    op: "exec",
    n,
    at,
    end: { path: "(a program name that is not UTF-8)", anon: false, unreadable: true },
    runErrno: 0,
  };
}

/**
 * Resolves the program an exec runs. Through an fd or /proc/PID/fd the path is only the text /proc shows, and
 * a memfd's name is chosen by the program ("x/../../usr/bin/true" reads as /usr/bin/true): the path is decided
 * on only when it is the very file the kernel will run, else the program is anonymous (asks; no rule can name
 * it).
 */
export function decodeExec(
  files: Resolver,
  n: Notification,
  at: boolean,
  read: ExecPath & { kind: "path" | "unreadable" },
  tgid: (tid: number) => number,
): ExecRequest | DecodeError {
  if (read.kind === "unreadable") return unreadableExec(n, at);
  const path = read.text;
  const view = files.view;
  const flags = at ? Number(n.args[4] & 0xffffffffn) : 0;
  const viaFd = at && path === "" && (flags & AT_EMPTY_PATH) !== 0;
  let r: Resolved;
  if (viaFd) {
    view.noteSelf(n.tid);
    r = files.resolvePath(`/proc/${n.tid}/fd/${fdArg(n, 0)}`, "/", true, n.tid, n.tid);
  } else if (!path.startsWith("/")) {
    const b = files.baseDir(n.tid, at ? fdArg(n, 0) : -100);
    if (b.kind !== "path") return { op: "error", errno: b.kind === "error" ? b.errno : EACCES };
    r = files.resolvePath(path, b.path, true, n.tid, n.tid);
  } else {
    r = files.resolvePath(path, "/", true, n.tid, n.tid);
  }
  if (r.kind === "error") return { op: "error", errno: r.errno };
  const viaProc = viaFd
    ? `/proc/${n.tid}/fd/${fdArg(n, 0)}`
    : procPath(files, path, n.tid, () => tgid(n.tid), at ? fdArg(n, 0) : -100);
  if (viaProc !== null && r.kind === "path" && !sameFile(view, viaProc, r.path)) {
    let what = r.path;
    try {
      what = Deno.readLinkSync(viaProc);
    } catch { /* not a link: keep the resolved text */ }
    r = { kind: "anon", what };
  }
  // A memfd or deleted file has no path a rule can name: it asks, shown as what /proc says.
  const end = endOf(r);
  // Nothing to ask about a program that is not there or cannot run (a shell searching $PATH tries many).
  const runErrno = !end.anon && !end.path.endsWith(" (deleted)") ? notRunnable(view, end.path) : 0;
  return { op: "exec", n, at, end, runErrno };
}

/** What a bind's address is: not a socket file (continued), an abstract name, or a path to decide. */
export type BindAddress =
  | { kind: "other" }
  | { kind: "abstract"; addr: Uint8Array; len: number }
  | { kind: "path"; req: BindRequest }
  | { kind: "error"; errno: number };

const dec = new TextDecoder("utf-8", { fatal: true });

export function decodeBind(files: Resolver, mem: NotifyFd, n: Notification): BindAddress {
  const len = Number(n.args[2] & 0xffffffffn);
  const a = len >= 3 && len <= 110 ? mem.readBytes(n.tid, n.args[1], len) : null;
  const family = a ? a[0] | (a[1] << 8) : -1;
  if (a && family === 1 && a[2] === 0) return { kind: "abstract", addr: a, len };
  if (!a || family !== 1 /* AF_UNIX */) return { kind: "other" };
  const raw = a.subarray(2, len);
  const nul = raw.indexOf(0);
  let path: string;
  try {
    path = dec.decode(nul >= 0 ? raw.subarray(0, nul) : raw);
  } catch {
    const end = { path: "(a socket path that is not UTF-8)", anon: false, unreadable: true };
    return { kind: "path", req: { op: "bind", n, end, exists: false } };
  }
  let base = "/";
  if (!path.startsWith("/")) {
    const b = files.baseDir(n.tid, -100);
    if (b.kind !== "path") return { kind: "error", errno: b.kind === "error" ? b.errno : EACCES };
    base = b.path;
  }
  const r = files.resolvePath(path, base, false, n.tid, n.tid);
  if (r.kind !== "path") return { kind: "error", errno: r.kind === "error" ? r.errno : EACCES };
  const end = { path: r.path, anon: false };
  return { kind: "path", req: { op: "bind", n, end, exists: files.pathExists(r.path) } };
}

/**
 * The path an exec names, as a path under /proc this process can open, when it goes through /proc (where
 * /proc/self would mean us); null when it does not.
 */
function procPath(
  files: Resolver,
  path: string,
  tid: number,
  tgid: () => number,
  dirfd: number,
): string | null {
  if (!path.startsWith("/")) {
    const b = files.baseDir(tid, dirfd);
    if (b.kind !== "path") return null;
    if (b.path !== "/proc" && !b.path.startsWith("/proc/")) return null;
    path = `${b.path}/${path}`;
  }
  if (!path.startsWith("/proc") && !path.startsWith("//")) return null; // the common case: not through /proc
  const p = path.replace(/\/{2,}/g, "/");
  if (p !== "/proc" && !p.startsWith("/proc/")) return null;
  const g = tgid();
  files.view.noteSelf(g);
  return p.replace(/^\/proc\/thread-self(?=\/|$)/, `/proc/${g}/task/${tid}`).replace(
    /^\/proc\/self(?=\/|$)/,
    `/proc/${g}`,
  );
}

/** The canonical interpreter of a `#!` script (resolved as the kernel does, from the thread's cwd), else null. */
export function shebang(files: Resolver, path: string, tid: number): string | null {
  const head = files.view.readHead(path);
  if (head === null) return null;
  if (head[0] !== 0x23 || head[1] !== 0x21) return null;
  const nl = head.indexOf(10);
  const line = new TextDecoder().decode(head.subarray(2, nl < 0 ? head.length : nl));
  const interp = line.trim().split(/[ \t]/)[0];
  if (!interp) return null;
  let base = "/";
  if (!interp.startsWith("/")) {
    const b = files.baseDir(tid, -100);
    if (b.kind !== "path") return null;
    base = b.path;
  }
  const r = files.resolvePath(interp, base, true, tid, tid);
  return r.kind === "path" ? r.path : null;
}

/** Whether `a` and `b` (both followed) are the same file. */
function sameFile(view: FsView, a: string, b: string): boolean {
  const x = view.fileId(a), y = view.fileId(b);
  return x !== null && y !== null && x[0] === y[0] && x[1] === y[1];
}

/** ENOENT, ENOTDIR or EACCES when execve would fail on `path` for those reasons, else 0. */
function notRunnable(view: FsView, path: string): number {
  const r = view.accessExec(path); // access(X_OK): one system call, real ids (the sandbox's own)
  if (r === -Errno.ENOENT || r === -Errno.ENOTDIR || r === -EACCES) return -r;
  if (r < 0) return 0; // anything else: let the kernel say it
  return view.isDirectory(path) ? EACCES : 0;
}

function startsWithMagic(raw: Uint8Array): boolean {
  for (let i = 0; i < MAGIC_PREFIX.length; i++) if (raw[i] !== MAGIC_PREFIX.charCodeAt(i)) return false;
  return true;
}
