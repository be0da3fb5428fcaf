/**
 * Seccomp user notification: receive, validate, answer (continue / errno / value / injected fd), and read
 * the notifying thread's memory. Kernel layouts (x86_64 and aarch64 alike):
 *   struct seccomp_notif      { u64 id; u32 pid; u32 flags; { i32 nr; u32 arch; u64 ip; u64 args[6]; } } = 80
 *   struct seccomp_notif_resp { u64 id; i64 val; i32 error; u32 flags; }                                   = 24
 *   struct seccomp_notif_addfd{ u64 id; u32 flags; u32 srcfd; u32 newfd; u32 newfd_flags; }                = 24
 * Buffers are allocated once per NotifyFd and reused: the receive loop allocates nothing per call.
 */
import { Errno, SysError } from "./errors.ts";
import { errno, libc, libcMore, ptrOf, SYS, sys, transient } from "./libc.ts";

export const NOTIF_SIZE = 80;
export const RESP_SIZE = 24;
export const ADDFD_SIZE = 24;
const IOCTL = {
  RECV: 0xc0502100n,
  SEND: 0xc0182101n,
  ID_VALID: 0x40082102n,
  ADDFD: 0x40182103n,
  SET_FLAGS: 0x40082104n,
} as const;
export const USER_NOTIF_FLAG_CONTINUE = 1;
const ADDFD_FLAG_SEND = 2;
const USER_NOTIF_FD_SYNC_WAKE_UP = 1;

/** The kernel's sizes of the notification structs (SECCOMP_GET_NOTIF_SIZES), to check our layouts. */
export function notifSizes(): { notif: number; resp: number; data: number } | null {
  const buf = new Uint8Array(128);
  const r = sys(SYS.seccomp, 3, /* SECCOMP_GET_NOTIF_SIZES */ 0, ptrOf(buf));
  if (r < 0) return null;
  const dv = new DataView(buf.buffer);
  return { notif: dv.getUint16(0, true), resp: dv.getUint16(2, true), data: dv.getUint16(4, true) };
}

/** Whether the kernel supports SECCOMP_RET_USER_NOTIF (SECCOMP_GET_ACTION_AVAIL). */
export function userNotifAvailable(): boolean {
  const buf = new Uint8Array(128);
  new DataView(buf.buffer).setUint32(0, 0x7fc00000, true);
  return sys(SYS.seccomp, 2, /* SECCOMP_GET_ACTION_AVAIL */ 0, ptrOf(buf)) === 0;
}

/** One received notification, decoded. `args` are BigInt: values above 2^53 are common (pointers, ids). */
export interface Notification {
  id: bigint;
  /** Thread id of the notifying thread (in the supervisor's pid namespace). */
  tid: number;
  nr: number;
  arch: number;
  args: [bigint, bigint, bigint, bigint, bigint, bigint];
}

export class NotifyFd {
  readonly #fd: number;
  readonly #notif = new Uint8Array(128);
  readonly #nv = new DataView(this.#notif.buffer);
  readonly #resp = new Uint8Array(128);
  readonly #rv = new DataView(this.#resp.buffer);
  readonly #idbuf = new Uint8Array(128);
  readonly #iv = new DataView(this.#idbuf.buffer);
  readonly #addfd = new Uint8Array(128);
  readonly #av = new DataView(this.#addfd.buffer);
  // process_vm_readv: one local and one remote iovec, and a page-sized read buffer
  readonly #mem = new Uint8Array(8192);
  readonly #liov = new Uint8Array(128);
  readonly #riov = new Uint8Array(128);
  readonly #rrv = new DataView(this.#riov.buffer);
  readonly #lv = new DataView(this.#liov.buffer);

  readonly #pfd = new Uint8Array(8);
  readonly #pv = new DataView(this.#pfd.buffer);

  constructor(fd: number) {
    this.#fd = fd;
    const lv = new DataView(this.#liov.buffer);
    lv.setBigUint64(0, ptrOf(this.#mem), true);
  }

  get fd(): number {
    return this.#fd;
  }

  /** Lower wake-up latency (Linux 6.6+); harmless to fail. */
  trySyncWakeup(): boolean {
    return sys(SYS.ioctl, this.#fd, IOCTL.SET_FLAGS, USER_NOTIF_FD_SYNC_WAKE_UP) === 0;
  }

  /**
   * Receives one notification; null when there is none to take: the thread died (ENOENT), the call was
   * interrupted (EINTR), errno read EAGAIN (not an answer the kernel documents for this call; what errno
   * can read when the runtime's own futex wait on this thread overwrote it) — or every sandboxed process is
   * gone: the kernel then answers ENOENT at once, every time, so a caller seeing null asks `hungUp()` before
   * receiving again, or it would spin.
   */
  recv(): Notification | null {
    this.#notif.fill(0, 0, NOTIF_SIZE);
    if (libc().ioctl_p(this.#fd, IOCTL.RECV, this.#notif) < 0) {
      const e = errno();
      if (e === Errno.ENOENT || e === Errno.EINTR || e === Errno.EAGAIN) return null;
      throw new SysError("SECCOMP_IOCTL_NOTIF_RECV", e);
    }
    return decodeNotification(this.#nv);
  }

  /** True when every process of the filter is gone (the listener polls POLLHUP): no notification can come. */
  hungUp(): boolean {
    this.#pfd.fill(0);
    this.#pv.setInt32(0, this.#fd, true);
    this.#pv.setInt16(4, 1, /* POLLIN */ true);
    if (Number(libc().poll(this.#pfd, 1n, 0)) <= 0) return false;
    return (this.#pv.getInt16(6, true) & (0x10 | 0x08 | 0x20) /* POLLHUP | POLLERR | POLLNVAL */) !== 0;
  }

  /** A notification received elsewhere (the fast path), in a struct seccomp_notif buffer. */
  decode(buf: Uint8Array<ArrayBuffer>): Notification {
    return decodeNotification(new DataView(buf.buffer, buf.byteOffset));
  }

  /** True while the notification is still pending (the thread did not die or get interrupted). */
  idValid(id: bigint): boolean {
    this.#iv.setBigUint64(0, id, true);
    return this.#ioctl(IOCTL.ID_VALID, this.#idbuf) === 0;
  }

  /**
   * ioctl on the listener, again while it fails with EINTR (the kernel takes the listener's lock
   * interruptibly: a signal to this thread, a terminal's SIGWINCH, fails the call having done nothing) or errno
   * reads EAGAIN (libc.ts transient). Taking EINTR of ID_VALID or SEND for "the thread is gone" would leave the
   * call unanswered and the sandboxed thread blocked for good.
   */
  #ioctl(request: bigint, buf: Uint8Array<ArrayBuffer>): number {
    for (let i = 0;; i++) {
      const r = libc().ioctl_p(this.#fd, request, buf);
      if (r >= 0) return r;
      const e = errno();
      if (!transient(e, i)) return -e;
    }
  }

  #send(id: bigint, val: bigint, error: number, flags: number): boolean {
    const v = this.#rv;
    v.setBigUint64(0, id, true);
    v.setBigInt64(8, val, true);
    v.setInt32(16, error, true);
    v.setUint32(20, flags, true);
    return this.#ioctl(IOCTL.SEND, this.#resp) === 0;
  }

  /** Let the system call run in the kernel as the thread made it. */
  continue(id: bigint): boolean {
    return this.#send(id, 0n, 0, USER_NOTIF_FLAG_CONTINUE);
  }

  /** Fail the system call with errno (positive number). */
  fail(id: bigint, err: number): boolean {
    return this.#send(id, 0n, -Math.abs(err), 0);
  }

  /** Complete the system call with a return value (emulated). */
  succeed(id: bigint, val: number): boolean {
    return this.#send(id, BigInt(val), 0, 0);
  }

  /**
   * Installs our fd `srcfd` in the thread's process and completes the system call with the new fd number
   * (SECCOMP_ADDFD_FLAG_SEND). Returns the new fd, or -errno.
   */
  addFdAndReturn(id: bigint, srcfd: number, cloexec: boolean): number {
    const v = this.#av;
    v.setBigUint64(0, id, true);
    v.setUint32(8, ADDFD_FLAG_SEND, true);
    v.setUint32(12, srcfd, true);
    v.setUint32(16, 0, true);
    v.setUint32(20, cloexec ? 0o2000000 : 0, true);
    return this.#ioctl(IOCTL.ADDFD, this.#addfd);
  }

  /**
   * Reads a NUL-terminated string of at most `max` bytes from the thread's memory, page by page (a string
   * may end just before an unmapped page). Returns null when unreadable or unterminated within `max`.
   */
  readCString(tid: number, addr: bigint, max = 4096): Uint8Array | null {
    if (addr === 0n) return null;
    const out: Uint8Array[] = [];
    let total = 0;
    let a = addr;
    while (total < max) {
      const toPage = 4096 - Number(a & 4095n);
      const want = Math.min(toPage, max - total, this.#mem.length);
      const n = this.#readInto(tid, a, want);
      if (n <= 0) return null;
      const chunk = this.#mem.subarray(0, n);
      const nul = chunk.indexOf(0);
      if (nul >= 0) {
        out.push(chunk.slice(0, nul));
        total += nul;
        break;
      }
      out.push(chunk.slice());
      total += n;
      a += BigInt(n);
      if (total >= max) return null;
    }
    if (out.length === 1) return out[0];
    const all = new Uint8Array(total);
    let off = 0;
    for (const c of out) {
      all.set(c, off);
      off += c.length;
    }
    return all;
  }

  /**
   * Reads a NUL-terminated path (< 4096 bytes) and decodes it as UTF-8 without copying: the string, or
   * -EFAULT (unreadable), -ENAMETOOLONG (no NUL within PATH_MAX), -EILSEQ (not UTF-8).
   */
  readPath(tid: number, addr: bigint): string | number {
    if (addr === 0n) return -14;
    // Fast path: most paths are short; read 256 bytes or to the end of the page, whichever is less.
    const toPage = 4096 - Number(addr & 4095n);
    const n = this.#readInto(tid, addr, toPage < 256 ? toPage : 256);
    if (n <= 0) return -14;
    let nul = this.#mem.subarray(0, n).indexOf(0);
    if (nul < 0) {
      // Crosses into the next page: read up to PATH_MAX from the start (it is mapped, so is the next page
      // as far as the string goes).
      const m = this.#readInto(tid, addr, 4096);
      if (m <= 0) return -14;
      nul = this.#mem.subarray(0, m).indexOf(0);
      if (nul < 0) {
        const slow = this.readCString(tid, addr, 4096);
        if (slow === null) return m >= 4096 ? -36 : -14;
        return decodePath(slow);
      }
    }
    return decodePath(this.#mem.subarray(0, nul));
  }

  /** Reads `len` bytes (≤ 8192) from the thread's memory; null when unreadable. */
  readBytes(tid: number, addr: bigint, len: number): Uint8Array | null {
    if (len > this.#mem.length) return null;
    const n = this.#readInto(tid, addr, len);
    return n === len ? this.#mem.slice(0, len) : null;
  }

  #readInto(tid: number, addr: bigint, len: number): number {
    this.#lv.setBigUint64(8, BigInt(len), true);
    this.#rrv.setBigUint64(0, addr, true);
    this.#rrv.setBigUint64(8, BigInt(len), true);
    const r = Number(libcMore().process_vm_readv(tid, this.#liov, 1n, this.#riov, 1n, 0n));
    return r < 0 ? -errno() : r;
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });
function decodeNotification(v: DataView): Notification {
  return {
    id: v.getBigUint64(0, true),
    tid: v.getUint32(8, true),
    nr: v.getInt32(16, true),
    arch: v.getUint32(20, true),
    args: [
      v.getBigUint64(32, true),
      v.getBigUint64(40, true),
      v.getBigUint64(48, true),
      v.getBigUint64(56, true),
      v.getBigUint64(64, true),
      v.getBigUint64(72, true),
    ],
  };
}

function decodePath(b: Uint8Array): string | number {
  try {
    return utf8.decode(b);
  } catch {
    return -84; // EILSEQ
  }
}

/**
 * pidfds of sandboxed processes, kept while they live: a pidfd names one process, so a stale one (the process
 * died, its pid was reused) fails with ESRCH and is replaced. Bounded; one cache per thread (the Worker's).
 */
const pidfds = new Map<number, number>();

function pidfdOf(pid: number, fresh: boolean): number {
  let fd = pidfds.get(pid);
  if (fd !== undefined && !fresh) return fd;
  if (fd !== undefined) {
    libc().close(fd);
    pidfds.delete(pid);
  }
  if (pidfds.size >= 1024) {
    for (const f of pidfds.values()) libc().close(f);
    pidfds.clear();
  }
  fd = sys(SYS.pidfd_open, pid, 0);
  if (fd >= 0) pidfds.set(pid, fd);
  return fd;
}

/** pidfd_open + pidfd_getfd: a copy of another process's fd. Returns the new fd or -errno. */
export function getRemoteFd(pid: number, fd: number): number {
  for (const fresh of [false, true]) {
    const pidfd = pidfdOf(pid, fresh);
    if (pidfd < 0) return pidfd;
    const r = sys(SYS.pidfd_getfd, pidfd, fd, 0);
    if (r !== -Errno.ESRCH) return r; // else that process is gone; a new one may have its pid
  }
  return -Errno.ESRCH;
}

export const RESOLVE = {
  NO_XDEV: 0x01,
  NO_MAGICLINKS: 0x02,
  NO_SYMLINKS: 0x04,
  BENEATH: 0x08,
  IN_ROOT: 0x10,
} as const;

/** openat2 with a struct open_how { u64 flags; u64 mode; u64 resolve; }. Returns fd or -errno. */
export function openat2(
  dirfd: number,
  path: Uint8Array<ArrayBuffer>,
  flags: number,
  mode: number,
  resolve: number,
): number {
  const how = new Uint8Array(128);
  const hv = new DataView(how.buffer);
  hv.setBigUint64(0, BigInt(flags), true);
  hv.setBigUint64(8, BigInt(mode), true);
  hv.setBigUint64(16, BigInt(resolve), true);
  return sys(SYS.openat2, dirfd, ptrOf(path), ptrOf(how), 24);
}
