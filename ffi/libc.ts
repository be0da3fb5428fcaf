/**
 * libc through Deno FFI: the system calls the supervisor needs, with typed wrappers.
 * No raw pointer leaves this module: callers pass and get Uint8Array buffers and numbers.
 * The library is opened lazily, once per thread (a Worker has its own isolate and opens its own).
 * errno is read with __errno_location() right after each synchronous call on the same thread.
 */
import { Errno, SysError } from "./errors.ts";
import { SYS } from "./syscall_numbers.ts";
export { SYS };

/**
 * Every symbol costs ~0.15 ms of start-up when the table is opened (Deno compiles a fast-call trampoline for
 * each): calls a session makes once or twice (umask, socketpair, sendmsg, recvmsg: the launcher's hand-over) go
 * through syscall6 instead.
 */
const SYMBOLS = {
  __errno_location: { parameters: [], result: "pointer" }, // int *__errno_location(void)
  syscall6: { name: "syscall", parameters: ["i64", "i64", "i64", "i64", "i64", "i64", "i64"], result: "i64" }, // long syscall(long nr, ...)
  ioctl_p: { name: "ioctl", parameters: ["i32", "u64", "buffer"], result: "i32" }, // int ioctl(int fd, unsigned long req, void *arg)
  close: { parameters: ["i32"], result: "i32" }, // int close(int fd)
  read_nb: { name: "read", parameters: ["i32", "buffer", "usize"], result: "isize", nonblocking: true },
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32" }, // int poll(struct pollfd *, nfds_t, int)
  poll_nb: { name: "poll", parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" }, // int fcntl(int, int, int)
  openat: { parameters: ["i32", "buffer", "i32", "u32"], result: "i32" }, // int openat(int, const char *, int, mode_t)
  access: { parameters: ["buffer", "i32"], result: "i32" }, // int access(const char *, int)
  // int posix_spawn(pid_t *, const char *path, file_actions *, attr *, char *const argv[], char *const envp[]):
  // on a blocking thread (ffi/spawn.ts), and a nonblocking symbol costs no trampoline to open
  posix_spawn: {
    parameters: ["buffer", "buffer", "pointer", "pointer", "buffer", "pointer"],
    result: "i32",
    nonblocking: true,
  },
  environ: { type: "pointer" }, // char **environ
  // char *realpath(const char *, char *): here, not in FS_SYMBOLS, since start-up resolves the protected paths
  realpath: { parameters: ["buffer", "buffer"], result: "pointer" }, // char *realpath(const char *, char *)
  // ssize_t getdents64(int, void *, size_t) (glibc ≥ 2.30): every session's exit walk (ffi/dir_entries.ts); here,
  // as a table of its own costs ~0.7 ms to open and a symbol here ~0.15
  getdents64: { parameters: ["i32", "buffer", "usize"], result: "isize" },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Calls the start-up of `hallpass -- true` does not make, in their own table: every symbol costs ~0.3 ms when
 * its table is opened (Deno builds a fast-call trampoline for each).
 */
const MORE_SYMBOLS = {
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" }, // ssize_t read(int, void *, size_t)
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" }, // ssize_t write(int, const void *, size_t)
  // ssize_t process_vm_readv(pid_t, const struct iovec *local, unsigned long, const struct iovec *remote, unsigned long, unsigned long)
  process_vm_readv: { parameters: ["i32", "buffer", "u64", "buffer", "u64", "u64"], result: "isize" },
  memfd_create: { parameters: ["buffer", "u32"], result: "i32" }, // int memfd_create(const char *, unsigned)
  getpid: { parameters: [], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * File system calls, in their own table: only the supervisor Worker needs them (emulation, path resolution),
 * and every symbol costs start-up time when the library is opened.
 */
const FS_SYMBOLS = {
  mkdirat: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  mknodat: { parameters: ["i32", "buffer", "u32", "u64"], result: "i32" },
  unlinkat: { parameters: ["i32", "buffer", "i32"], result: "i32" },
  renameat2: { parameters: ["i32", "buffer", "i32", "buffer", "u32"], result: "i32" },
  linkat: { parameters: ["i32", "buffer", "i32", "buffer", "i32"], result: "i32" },
  symlinkat: { parameters: ["buffer", "i32", "buffer"], result: "i32" },
  fchmodat: { parameters: ["i32", "buffer", "u32", "i32"], result: "i32" },
  fchownat: { parameters: ["i32", "buffer", "u32", "u32", "i32"], result: "i32" },
  fchmod: { parameters: ["i32", "u32"], result: "i32" },
  fchown: { parameters: ["i32", "u32", "u32"], result: "i32" },
  ftruncate: { parameters: ["i32", "i64"], result: "i32" },
  utimensat: { parameters: ["i32", "buffer", "buffer", "i32"], result: "i32" },
  setxattr: { parameters: ["buffer", "buffer", "buffer", "usize", "i32"], result: "i32" },
  removexattr: { parameters: ["buffer", "buffer"], result: "i32" },
  lsetxattr: { parameters: ["buffer", "buffer", "buffer", "usize", "i32"], result: "i32" },
  lremovexattr: { parameters: ["buffer", "buffer"], result: "i32" },
  fsetxattr: { parameters: ["i32", "buffer", "buffer", "usize", "i32"], result: "i32" },
  fremovexattr: { parameters: ["i32", "buffer"], result: "i32" },
  readlink: { parameters: ["buffer", "buffer", "usize"], result: "isize" }, // ssize_t readlink(path, buf, size)
  // int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *buf)
  statx: { parameters: ["i32", "buffer", "i32", "u32", "buffer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];
type FsLib = Deno.DynamicLibrary<typeof FS_SYMBOLS>["symbols"];
type MoreLib = Deno.DynamicLibrary<typeof MORE_SYMBOLS>["symbols"];
let lib: Lib | null = null;
let moreLib: MoreLib | null = null;

/** The rest of libc's calls (MORE_SYMBOLS); errno() reads their errno as well. */
export function libcMore(): MoreLib {
  if (moreLib === null) moreLib = Deno.dlopen("libc.so.6", MORE_SYMBOLS).symbols;
  return moreLib;
}
let fsLib: FsLib | null = null;

export function fslib(): FsLib {
  if (fsLib === null) fsLib = Deno.dlopen("libc.so.6", FS_SYMBOLS).symbols;
  return fsLib;
}
let errnoView: Deno.UnsafePointerView | null = null;

export function libc(): Lib {
  if (lib === null) {
    lib = Deno.dlopen("libc.so.6", SYMBOLS).symbols;
    errnoView = new Deno.UnsafePointerView(lib.__errno_location()!);
  }
  return lib;
}

/**
 * errno of the last failed synchronous call on this thread. Read it right after the call, allocating
 * nothing in between: the runtime's own work on this thread (a garbage collection waiting on a futex) can
 * overwrite errno, which is why the view is made once.
 */
export function errno(): number {
  if (errnoView === null) libc();
  return errnoView!.getInt32();
}

/**
 * A failure to try again (the `tries`-th in a row): EINTR (a signal to this thread: the terminal's SIGWINCH, the
 * watchdog's, a profiler's — each one real, so never a reason to give up), or EAGAIN where the call cannot mean
 * it (a blocking call: what errno reads when the runtime's own work on this thread overwrote it). A long run of
 * EAGAIN is an error: a supervisor loop must not spin, nor stop the sandbox on one.
 */
export function transient(e: number, tries: number): boolean {
  return e === Errno.EINTR || (e === Errno.EAGAIN && tries < 1000);
}

/** Throws SysError when a libc call returned -1. */
export function check(name: string, r: number | bigint): number {
  const n = Number(r);
  if (n < 0) throw new SysError(name, errno());
  return n;
}

/** Returns -errno when a libc call failed, else its result: for emulation, which answers with the errno. */
export function result(r: number | bigint): number {
  const n = Number(r);
  return n < 0 ? -errno() : n;
}

const enc = new TextEncoder();
/** A NUL-terminated C string in a buffer of at least 128 bytes (V8 keeps smaller ones on its heap). */
export function cstr(s: string | Uint8Array): Uint8Array<ArrayBuffer> {
  const bytes = typeof s === "string" ? enc.encode(s) : s;
  const buf = new Uint8Array(Math.max(128, bytes.length + 1));
  buf.set(bytes);
  return buf;
}

/**
 * Raw system call; buffers are passed as addresses (ptrOf) so one FFI signature serves every call.
 * Returns the kernel's result or -errno.
 */
export function sys(nr: number, ...args: (number | bigint)[]): number {
  const a = args.map((x) => BigInt(x));
  while (a.length < 6) a.push(0n);
  const r = Number(libc().syscall6(BigInt(nr), a[0], a[1], a[2], a[3], a[4], a[5]));
  return r < 0 ? -errno() : r;
}

export function ptrOf(buf: Uint8Array<ArrayBuffer>): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(buf)));
}

export const AT_FDCWD = -100;
export const O = {
  RDONLY: 0,
  WRONLY: 1,
  RDWR: 2,
  ACCMODE: 3,
  CREAT: 0o100,
  EXCL: 0o200,
  NOCTTY: 0o400,
  TRUNC: 0o1000,
  APPEND: 0o2000,
  NONBLOCK: 0o4000,
  DIRECTORY: 0o200000,
  NOFOLLOW: 0o400000,
  CLOEXEC: 0o2000000,
  PATH: 0o10000000,
  TMPFILE: 0o20200000,
} as const;
export const AT = {
  SYMLINK_NOFOLLOW: 0x100,
  REMOVEDIR: 0x200,
  SYMLINK_FOLLOW: 0x400,
  EMPTY_PATH: 0x1000,
} as const;

/** fcntl(F_DUPFD_CLOEXEC): a close-on-exec copy of `fd`, or -errno. */
export function dupCloexec(fd: number): number {
  return sys(SYS.fcntl, fd, 1030, 3);
}

export function close(fd: number): void {
  if (fd >= 0) libc().close(fd);
}

export function memfdCreate(name: string, flags: number): number {
  return check("memfd_create", libcMore().memfd_create(cstr(name), flags));
}

export function writeAll(fd: number, data: Uint8Array<ArrayBuffer>): void {
  let off = 0;
  while (off < data.length) {
    const n = check("write", libcMore().write(fd, data.subarray(off), BigInt(data.length - off)));
    off += n;
  }
}

/** socketpair(AF_UNIX, SOCK_SEQPACKET|SOCK_CLOEXEC): both ends close-on-exec. */
export function seqpacketPair(): [number, number] {
  const fds = new Int32Array(32);
  const r = sys(SYS.socketpair, 1, 5 | 0o2000000, 0, ptrOf(new Uint8Array(fds.buffer)));
  if (r < 0) throw new SysError("socketpair", -r);
  return [fds[0], fds[1]];
}

export function setCloexec(fd: number, on: boolean): void {
  const F_GETFD = 1, F_SETFD = 2;
  const cur = check("fcntl", libc().fcntl(fd, F_GETFD, 0));
  check("fcntl", libc().fcntl(fd, F_SETFD, on ? cur | 1 : cur & ~1));
}

/**
 * poll() on a few fds for reading (from `writeFrom` on: for writing); returns revents per fd (0 when not
 * ready), or null on timeout.
 */
export function pollFds(fds: number[], timeoutMs: number, writeFrom = -1): number[] | null {
  const buf = new Uint8Array(Math.max(128, fds.length * 8));
  const dv = new DataView(buf.buffer);
  fds.forEach((fd, i) => {
    dv.setInt32(i * 8, fd, true);
    dv.setInt16(i * 8 + 4, writeFrom >= 0 && i >= writeFrom ? 4 /* POLLOUT */ : 1, /* POLLIN */ true);
  });
  for (let i = 0;; i++) {
    const r = Number(libc().poll(buf, BigInt(fds.length), timeoutMs));
    if (r < 0) {
      const e = errno();
      if (transient(e, i)) continue;
      throw new SysError("poll", e);
    }
    if (r === 0) return null;
    return fds.map((_, i) => dv.getInt16(i * 8 + 6, true));
  }
}

/** sendmsg with a payload and fds (SCM_RIGHTS). */
export function sendWithFds(sock: number, payload: Uint8Array<ArrayBuffer>, fds: number[]): void {
  const data = new Uint8Array(Math.max(128, payload.length));
  data.set(payload);
  const iov = new Uint8Array(128);
  const iv = new DataView(iov.buffer);
  iv.setBigUint64(0, ptrOf(data), true);
  iv.setBigUint64(8, BigInt(payload.length), true);
  const ctlLen = fds.length ? 16 + ((fds.length * 4 + 7) & ~7) : 0; // CMSG_SPACE
  const ctl = new Uint8Array(Math.max(128, ctlLen));
  const cv = new DataView(ctl.buffer);
  if (fds.length) {
    cv.setBigUint64(0, BigInt(16 + fds.length * 4), true); // cmsg_len = CMSG_LEN
    cv.setInt32(8, 1, true); // SOL_SOCKET
    cv.setInt32(12, 1, true); // SCM_RIGHTS
    fds.forEach((fd, i) => cv.setInt32(16 + i * 4, fd, true));
  }
  const msg = new Uint8Array(128);
  const mv = new DataView(msg.buffer);
  mv.setBigUint64(16, ptrOf(iov), true); // msg_iov
  mv.setBigUint64(24, 1n, true); // msg_iovlen
  if (fds.length) {
    mv.setBigUint64(32, ptrOf(ctl), true); // msg_control
    mv.setBigUint64(40, BigInt(ctlLen), true); // msg_controllen
  }
  const MSG_NOSIGNAL = 0x4000;
  const r = sys(SYS.sendmsg, sock, ptrOf(msg), MSG_NOSIGNAL);
  if (r < 0) throw new SysError("sendmsg", -r);
}

/** recvmsg of one packet; returns the payload and any fds received (made close-on-exec). */
export function recvWithFds(sock: number, maxLen = 256): { data: Uint8Array; fds: number[] } {
  const data = new Uint8Array(Math.max(128, maxLen));
  const iov = new Uint8Array(128);
  const iv = new DataView(iov.buffer);
  iv.setBigUint64(0, ptrOf(data), true);
  iv.setBigUint64(8, BigInt(maxLen), true);
  const ctl = new Uint8Array(256);
  const msg = new Uint8Array(128);
  const mv = new DataView(msg.buffer);
  mv.setBigUint64(16, ptrOf(iov), true);
  mv.setBigUint64(24, 1n, true);
  mv.setBigUint64(32, ptrOf(ctl), true);
  mv.setBigUint64(40, BigInt(ctl.length), true);
  const MSG_CMSG_CLOEXEC = 0x40000000;
  let n: number;
  for (;;) {
    n = sys(SYS.recvmsg, sock, ptrOf(msg), MSG_CMSG_CLOEXEC);
    if (n >= 0) break;
    const e = -n;
    if (e !== Errno.EINTR) throw new SysError("recvmsg", e); // EAGAIN: a non-blocking socket with nothing
  }
  const fds: number[] = [];
  const controllen = Number(mv.getBigUint64(40, true));
  const cv = new DataView(ctl.buffer);
  let off = 0;
  while (off + 16 <= controllen) {
    const len = Number(cv.getBigUint64(off, true));
    if (len < 16) break;
    if (cv.getInt32(off + 8, true) === 1 && cv.getInt32(off + 12, true) === 1) {
      for (let p = off + 16; p + 4 <= off + len; p += 4) fds.push(cv.getInt32(p, true));
    }
    off += (len + 7) & ~7;
  }
  return { data: data.slice(0, n), fds };
}

export function setUmask(mask: number): number {
  return sys(SYS.umask, mask);
}

const dec = new TextDecoder();
const pathIn = new Uint8Array(8192);
const pathOut = new Uint8Array(8192);

function putPath(p: string): boolean {
  const r = enc.encodeInto(p, pathIn);
  if (r.read !== p.length || r.written >= pathIn.length - 1) return false;
  pathIn[r.written] = 0;
  return true;
}

/** realpath(3) without exceptions: the canonical path, or -errno. */
export function realpath(p: string): string | number {
  if (!putPath(p)) return -36;
  const r = libc().realpath(pathIn, pathOut);
  if (r === null) return -errno();
  return dec.decode(pathOut.subarray(0, pathOut.indexOf(0)));
}

/** readlink(2) without exceptions: the link text, or -errno (EINVAL: not a symlink). */
export function readlink(p: string): string | number {
  if (!putPath(p)) return -36;
  const n = Number(fslib().readlink(pathIn, pathOut, BigInt(pathOut.length - 1)));
  if (n < 0) return -errno();
  return dec.decode(pathOut.subarray(0, n));
}

/** pipe2(O_CLOEXEC): [read end, write end]. */
export function pipe(): [number, number] {
  const fds = new Int32Array(32);
  const r = sys(SYS.pipe2, ptrOf(new Uint8Array(fds.buffer)), 0o2000000); // (no second table at start-up)
  if (r < 0) throw new SysError("pipe2", -r);
  return [fds[0], fds[1]];
}

/** Reads up to `max` bytes without blocking the event loop (runs on a thread pool). -errno on failure. */
export async function readAsync(fd: number, max: number): Promise<Uint8Array | number> {
  const buf = new Uint8Array(Math.max(128, max));
  const n = Number(await libc().read_nb(fd, buf, BigInt(max)));
  // errno of a nonblocking call is not reliable on this thread: report EIO for any failure.
  return n < 0 ? -5 : buf.slice(0, n);
}

/**
 * poll(2) of one fd off the event loop's thread: resolves with its revents, or 0 after `timeoutMs` (-1: none).
 * `events` 0 waits only for POLLHUP/POLLERR/POLLNVAL (a seccomp listener whose processes are all gone).
 */
export async function pollAsync(fd: number, events: number, timeoutMs: number): Promise<number> {
  const buf = new Uint8Array(128);
  const dv = new DataView(buf.buffer);
  dv.setInt32(0, fd, true);
  dv.setInt16(4, events, true);
  for (;;) {
    const r = await libc().poll_nb(buf, 1n, timeoutMs);
    if (r > 0) return dv.getInt16(6, true);
    if (r === 0 && timeoutMs >= 0) return 0;
    // EINTR and friends: poll again (a bad fd would return POLLNVAL, r > 0).
  }
}

/** Resolves with poll's revents when `fd` is readable or hung up, without blocking the event loop. */
export function pollReadable(fd: number): Promise<number> {
  return pollAsync(fd, 1, /* POLLIN */ -1);
}

/**
 * A reusable poll set: no allocation per wait (the supervisor's loop polls once per notification).
 * Fds from `writeFrom` on are polled for writing, the others for reading.
 */
export class Poller {
  readonly #buf = new Uint8Array(4096);
  readonly #dv = new DataView(this.#buf.buffer);
  #n = 0;

  set(fds: readonly number[], writeFrom = -1): void {
    this.#n = Math.min(fds.length, 512);
    for (let i = 0; i < this.#n; i++) {
      this.#dv.setInt32(i * 8, fds[i], true);
      this.#dv.setInt16(i * 8 + 4, writeFrom >= 0 && i >= writeFrom ? 4 : 1, true);
    }
  }

  /** Waits; returns how many fds are ready (0 on timeout). */
  wait(timeoutMs: number): number {
    for (let i = 0; i < this.#n; i++) this.#dv.setInt16(i * 8 + 6, 0, true);
    for (let i = 0;; i++) {
      const r = Number(libc().poll(this.#buf, BigInt(this.#n), timeoutMs));
      if (r >= 0) return r;
      const e = errno();
      if (!transient(e, i)) throw new SysError("poll", e);
    }
  }

  revents(i: number): number {
    return this.#dv.getInt16(i * 8 + 6, true);
  }
}

/**
 * access(path, X_OK) on the real file system (not a compiled binary's embedded one). A path holding a NUL names
 * nothing (the kernel would read a shorter, other path).
 */
export function executableOnDisk(path: string): boolean {
  return !path.includes("\0") && libc().access(cstr(path), 1 /* X_OK */) === 0;
}

/**
 * Opens the FIFO at `path` for writing without waiting for a reader: the fd (close-on-exec), or -errno (ENXIO:
 * nobody has it open for reading, where a plain open would block until someone does).
 */
export function openFifoWriterNow(path: string): number {
  if (path.includes("\0")) return -22; // EINVAL
  const O_WRONLY = 0o1, O_NONBLOCK = 0o4000, O_CLOEXEC = 0o2000000;
  const fd = libc().openat(AT_FDCWD, cstr(path), O_WRONLY | O_NONBLOCK | O_CLOEXEC, 0);
  return fd < 0 ? -errno() : fd;
}

/** Whether `path` exists on the real file system (not the embedded one of a compiled binary); see above for NUL. */
export function existsOnDisk(path: string): boolean {
  return !path.includes("\0") && libc().access(cstr(path), 0 /* F_OK */) === 0;
}

const statxBuf = new Uint8Array(256);
/**
 * The file type bits (st_mode & S_IFMT) of `path` itself (a final symlink not followed), or undefined when it
 * is not there: one statx(2) asking only for the type, no exception and no Deno.FileInfo to build. Where statx
 * is refused (a seccomp policy), Deno's lstat answers.
 */
export function lstatType(path: string): number | undefined {
  if (path.includes("\0")) return undefined;
  const buf = cstr(path);
  const STATX_TYPE = 1;
  const r = sys(SYS.statx, AT_FDCWD, ptrOf(buf), AT.SYMLINK_NOFOLLOW, STATX_TYPE, ptrOf(statxBuf));
  if (r === 0 && (new DataView(statxBuf.buffer).getUint32(0, true) & STATX_TYPE)) {
    return new DataView(statxBuf.buffer).getUint16(28, true) & 0o170000; // stx_mode
  }
  if (r !== -Errno.ENOSYS && r !== -Errno.EPERM && r !== -Errno.EINVAL && r !== 0) return undefined;
  try {
    const st = Deno.lstatSync(path);
    return st.isSymlink ? 0o120000 : st.isDirectory ? 0o040000 : st.isFile ? 0o100000 : 0o010000;
  } catch {
    return undefined;
  }
}

/**
 * The file type bits (st_mode & S_IFMT) of what `fd` refers to (an O_PATH fd too: a symlink opened with
 * O_NOFOLLOW is the link), or undefined when it cannot be asked: one statx(2) with AT_EMPTY_PATH, instead of
 * Deno's stat of /proc/self/fd/N and the FileInfo it builds (~25 µs each, for every rule of the ruleset's write
 * side at start-up). Where statx is refused (a seccomp policy), Deno's stat of /proc/self/fd/N answers.
 */
export function fdType(fd: number): number | undefined {
  const STATX_TYPE = 1;
  const r = sys(SYS.statx, fd, ptrOf(emptyPath), AT.EMPTY_PATH, STATX_TYPE, ptrOf(statxBuf));
  if (r === 0 && (new DataView(statxBuf.buffer).getUint32(0, true) & STATX_TYPE)) {
    return new DataView(statxBuf.buffer).getUint16(28, true) & 0o170000; // stx_mode
  }
  if (r !== -Errno.ENOSYS && r !== -Errno.EPERM && r !== -Errno.EINVAL && r !== 0) return undefined;
  try {
    const st = Deno.statSync(`/proc/self/fd/${fd}`);
    return st.isDirectory ? 0o040000 : st.isFile ? 0o100000 : st.isSymlink ? 0o120000 : 0o010000;
  } catch {
    return undefined;
  }
}
const emptyPath = new Uint8Array(128);

/**
 * What fd `fd` refers to: its file type bits (st_mode & S_IFMT; -1 when it is not open) and whether it was opened
 * for writing; type undefined when statx does not tell it (no fallback that could mistake a device for a pipe).
 */
export function fdKind(fd: number): { type: number | undefined; writable: boolean } {
  const flags = sys(SYS.fcntl, fd, 3 /* F_GETFL */);
  if (flags === -Errno.EBADF) return { type: -1, writable: false };
  const writable = flags < 0 || (flags & 3 /* O_ACCMODE */) !== 0;
  const STATX_TYPE = 1;
  const r = sys(SYS.statx, fd, ptrOf(emptyPath), AT.EMPTY_PATH, STATX_TYPE, ptrOf(statxBuf));
  const v = new DataView(statxBuf.buffer);
  const known = r === 0 && (v.getUint32(0, true) & STATX_TYPE) !== 0;
  return { type: known ? v.getUint16(28, true) & 0o170000 : undefined, writable };
}

/**
 * lstat's type and ctime of `path` (a final symlink not followed), or undefined when it is not there: one
 * statx(2), no exception (the exit checks ask this of paths that are mostly missing, and Deno's first exception
 * in a process costs ~1.5 ms). `ctimeMs` is in whole seconds, as Deno's `FileInfo.ctime`. Where statx is
 * refused (a seccomp policy), Deno's lstat answers.
 */
export function lstatCtime(path: string): { type: number; ctimeMs: number } | undefined {
  if (path.includes("\0")) return undefined;
  const buf = cstr(path);
  const STATX_TYPE = 1, STATX_CTIME = 0x80;
  const r = sys(
    SYS.statx,
    AT_FDCWD,
    ptrOf(buf),
    AT.SYMLINK_NOFOLLOW,
    STATX_TYPE | STATX_CTIME,
    ptrOf(statxBuf),
  );
  const v = new DataView(statxBuf.buffer);
  if (r === 0 && (v.getUint32(0, true) & (STATX_TYPE | STATX_CTIME)) === (STATX_TYPE | STATX_CTIME)) {
    // stx_mode at 28; stx_ctime.tv_sec (i64) at 96
    return { type: v.getUint16(28, true) & 0o170000, ctimeMs: Number(v.getBigInt64(96, true)) * 1000 };
  }
  if (r !== -Errno.ENOSYS && r !== -Errno.EPERM && r !== -Errno.EINVAL && r !== 0) return undefined;
  try {
    const st = Deno.lstatSync(path);
    return {
      type: st.isSymlink ? 0o120000 : st.isDirectory ? 0o040000 : st.isFile ? 0o100000 : 0o010000,
      ctimeMs: st.ctime?.getTime() ?? Infinity,
    };
  } catch {
    return undefined;
  }
}

/**
 * Whether `path` itself exists on the real file system, a final symlink (dangling or not) included: faccessat2
 * with AT_SYMLINK_NOFOLLOW (Linux ≥ 5.8), so a missing path costs no exception. Where the call is refused
 * (older kernel, a seccomp policy), Deno's lstat answers. See above for NUL.
 */
export function lexistsOnDisk(path: string): boolean {
  if (path.includes("\0")) return false;
  const buf = cstr(path);
  const r = sys(SYS.faccessat2, AT_FDCWD, ptrOf(buf), 0, /* F_OK */ AT.SYMLINK_NOFOLLOW);
  if (r === 0) return true;
  if (r !== -Errno.ENOSYS && r !== -Errno.EPERM && r !== -Errno.EINVAL) return false;
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
