/**
 * Pseudo-terminals and the real terminal's modes, through libc.
 *
 * One symbol table, opened lazily on first use (importing this module costs nothing). Every failure becomes a
 * {@linkcode SysError}; no pointer leaves this file (callers get numbers, strings and opaque values).
 *
 * The master fd is made non-blocking: a full slave input queue must never block the event loop (the supervisor
 * answers seccomp notifications on it). Waiting is done by a `nonblocking: true` poll(2) on a pool thread,
 * followed by a synchronous read/write so that errno is read on the thread that made the call.
 *
 * @example
 * ```ts
 * import { closeFd, openPty, openSlave, readMaster } from "./pty.ts";
 * const { master, slavePath } = openPty();
 * const slave = openSlave(slavePath); // hand this fd number to the launcher, then close it here
 * closeFd(slave);
 * const chunk = await readMaster(master); // null: the child side closed (EIO)
 * ```
 */

import { Errno, SysError } from "./errors.ts";

const SYMBOLS = {
  /** int *__errno_location(void); */
  __errno_location: { parameters: [], result: "pointer" },
  /** int posix_openpt(int flags); */
  posix_openpt: { parameters: ["i32"], result: "i32" },
  /** int grantpt(int fd); */
  grantpt: { parameters: ["i32"], result: "i32" },
  /** int unlockpt(int fd); */
  unlockpt: { parameters: ["i32"], result: "i32" },
  /** int ptsname_r(int fd, char *buf, size_t buflen);  returns an errno value, 0 on success */
  ptsname_r: { parameters: ["i32", "buffer", "usize"], result: "i32" },
  /** int open(const char *path, int flags, mode_t mode); */
  open: { parameters: ["buffer", "i32", "u32"], result: "i32" },
  /** int close(int fd); */
  close: { parameters: ["i32"], result: "i32" },
  /** int isatty(int fd); */
  isatty: { parameters: ["i32"], result: "i32" },
  /** int fcntl(int fd, int cmd, int arg); */
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  /** int ioctl(int fd, unsigned long request, struct winsize *ws); */
  ioctl: { parameters: ["i32", "u64", "buffer"], result: "i32" },
  /** int tcgetattr(int fd, struct termios *t); */
  tcgetattr: { parameters: ["i32", "buffer"], result: "i32" },
  /** int tcsetattr(int fd, int optional_actions, const struct termios *t); */
  tcsetattr: { parameters: ["i32", "i32", "buffer"], result: "i32" },
  /** void cfmakeraw(struct termios *t); */
  cfmakeraw: { parameters: ["buffer"], result: "void" },
  /** ssize_t read(int fd, void *buf, size_t count); */
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** ssize_t write(int fd, const void *buf, size_t count); */
  write: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  /** int poll(struct pollfd *fds, nfds_t nfds, int timeout);  on a pool thread: errno is not read after it */
  poll_wait: { name: "poll", parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  /** pid_t getpgrp(void); */
  getpgrp: { parameters: [], result: "i32" },
  /** int eventfd(unsigned int initval, int flags); */
  eventfd: { parameters: ["u32", "i32"], result: "i32" },
  /** The same poll, on the calling thread (short waits only). */
  poll_now: { name: "poll", parameters: ["buffer", "u64", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

let lib: Deno.DynamicLibrary<typeof SYMBOLS> | null = null;
function libc(): Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS);
  return lib.symbols;
}

let errnoView: Deno.UnsafePointerView | null = null;
/** errno of the last synchronous call on this thread (the view is made once: see ffi/libc.ts errno). */
function errno(): number {
  errnoView ??= new Deno.UnsafePointerView(libc().__errno_location()!);
  return errnoView.getInt32();
}

function sysError(syscall: string, e: number, detail?: string): SysError {
  return new SysError(detail === undefined ? syscall : `${syscall}(${detail})`, e);
}

function check(result: number | bigint, syscall: string, detail?: string): number {
  const n = Number(result);
  if (n < 0) throw sysError(syscall, errno(), detail);
  return n;
}

// Linux generic values (x86_64, aarch64).
const O_RDWR = 0o2;
const O_NOCTTY = 0o400;
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;
const F_GETFL = 3;
const F_SETFL = 4;
const TIOCGWINSZ = 0x5413n;
const TIOCSWINSZ = 0x5414n;
const TCSADRAIN = 1;
const POLLIN = 0x1;
const POLLOUT = 0x4;
const POLLERR = 0x8;
const POLLHUP = 0x10;
const POLLNVAL = 0x20;
const { EINTR, EAGAIN, EIO } = Errno;
/** sizeof(struct termios) with glibc is 60; a little slack costs nothing. */
const TERMIOS_SIZE = 64;

/** Opens a new pty pair's master (non-blocking, close-on-exec) and returns it with the slave's path. */
export function openPty(): { master: number; slavePath: string } {
  const c = libc();
  const master = check(c.posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), "posix_openpt");
  try {
    check(c.grantpt(master), "grantpt");
    check(c.unlockpt(master), "unlockpt");
    const buf = new Uint8Array(256);
    const rc = c.ptsname_r(master, buf, BigInt(buf.length));
    if (rc !== 0) throw new SysError("ptsname_r", rc);
    const slavePath = new TextDecoder().decode(buf.subarray(0, buf.indexOf(0)));
    setNonBlocking(master);
    return { master, slavePath };
  } catch (e) {
    c.close(master);
    throw e;
  }
}

/**
 * Opens the slave side `O_RDWR|O_NOCTTY`, deliberately without O_CLOEXEC: its fd number is inherited by the
 * launcher, which makes it the controlling terminal (setsid, TIOCSCTTY).
 */
export function openSlave(path: string): number {
  const cpath = new TextEncoder().encode(path + "\0");
  return check(libc().open(cpath, O_RDWR | O_NOCTTY, 0), "open", path);
}

/**
 * A read-only reopen of the terminal on `fd` (`/proc/self/fd/N`, O_RDONLY|O_NOCTTY|O_CLOEXEC): a program given it
 * reads keys and sets modes, but cannot write the terminal through it.
 */
export function reopenReadOnly(fd: number): number {
  const cpath = new TextEncoder().encode(`/proc/self/fd/${fd}\0`);
  return check(libc().open(cpath, O_NOCTTY | O_CLOEXEC, 0), "open", `/proc/self/fd/${fd}`);
}

/** Whether this process's group is the foreground of the terminal on `fd` (tcsetattr would not stop it). */
export function inForeground(fd: number): boolean {
  const buf = new Uint8Array(4);
  if (Number(libc().ioctl(fd, 0x540fn, /* TIOCGPGRP */ buf)) < 0) return false;
  return new DataView(buf.buffer).getInt32(0, true) === libc().getpgrp();
}

/** Whether two saved states are the same bytes. */
export function sameTermios(a: TermiosState, b: TermiosState): boolean {
  const x = TermiosState.bytes(a), y = TermiosState.bytes(b);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** `state` without output processing (OPOST cleared in c_oflag: bytes pass unchanged); the rest unchanged. */
export function withoutOutputProcessing(state: TermiosState): TermiosState {
  const copy = TermiosState.bytes(state).slice();
  const view = new DataView(copy.buffer);
  view.setUint32(4, view.getUint32(4, true) & ~1, /* OPOST */ true);
  return new TermiosState(copy, TOKEN);
}

/**
 * Another fd on the slave, kept by hallpass (close-on-exec, non-blocking): while it is open the slave's input
 * queue outlives the command, so what was typed and not read can be handed back ({@linkcode takeUnread}).
 */
export function openSlaveKeeper(path: string): number {
  const cpath = new TextEncoder().encode(path + "\0");
  return check(libc().open(cpath, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK, 0), "open", path);
}

const FIONREAD = 0x541bn;
const TIOCOUTQ = 0x5411n;
const TIOCSTI = 0x5412n;

/** Bytes waiting in a tty's output queue (written by the program, not yet read through the master). */
export function outputQueued(fd: number): number {
  const n = new Int32Array(1);
  return libc().ioctl(fd, TIOCOUTQ, new Uint8Array(n.buffer)) < 0 ? 0 : n[0];
}

/**
 * What was typed to the slave and not read (its input queue, a partial line included): the slave is switched
 * out of canonical mode to read it. The program is gone by then.
 */
export function takeUnread(slave: number): Uint8Array {
  try {
    const n = new Int32Array(1);
    setTermios(slave, makeRaw(getTermios(slave)));
    if (libc().ioctl(slave, FIONREAD, new Uint8Array(n.buffer)) < 0 || n[0] <= 0) return new Uint8Array(0);
    return readMasterNow(slave, Math.min(n[0], 65536));
  } catch {
    return new Uint8Array(0);
  }
}

/**
 * Puts `bytes` into the input queue of the terminal on `fd` (TIOCSTI; it must be this process's controlling
 * terminal). False when the kernel refuses it (`dev.tty.legacy_tiocsti = 0`).
 */
export function pushInput(fd: number, bytes: Uint8Array): boolean {
  for (const b of bytes) {
    if (libc().ioctl(fd, TIOCSTI, Uint8Array.of(b)) < 0) return false;
  }
  return true;
}

/** Sets O_NONBLOCK on fd. */
export function setNonBlocking(fd: number): void {
  const c = libc();
  const flags = check(c.fcntl(fd, F_GETFL, 0), "fcntl(F_GETFL)");
  check(c.fcntl(fd, F_SETFL, flags | O_NONBLOCK), "fcntl(F_SETFL)");
}

/** close(2); errors other than EINTR are thrown. */
export function closeFd(fd: number): void {
  if (libc().close(fd) < 0) {
    const e = errno();
    if (e !== EINTR) throw sysError("close", e, String(fd));
  }
}

/** True when fd is a terminal. */
export function isatty(fd: number): boolean {
  return libc().isatty(fd) === 1;
}

/** A terminal size in character cells. */
export interface WinSize {
  rows: number;
  cols: number;
}

/** TIOCGWINSZ on fd; null when fd is not a terminal or reports a zero size. */
export function getWinSize(fd: number): WinSize | null {
  const ws = new Uint16Array(4); // struct winsize { unsigned short ws_row, ws_col, ws_xpixel, ws_ypixel; }
  if (libc().ioctl(fd, TIOCGWINSZ, new Uint8Array(ws.buffer)) < 0) return null;
  if (ws[0] === 0 || ws[1] === 0) return null;
  return { rows: ws[0], cols: ws[1] };
}

/** TIOCSWINSZ on fd (the master: the kernel sends SIGWINCH to the slave's foreground process group). */
export function setWinSize(fd: number, size: WinSize): void {
  const ws = new Uint16Array([size.rows, size.cols, 0, 0]);
  check(libc().ioctl(fd, TIOCSWINSZ, new Uint8Array(ws.buffer)), "ioctl(TIOCSWINSZ)");
}

/** Saved terminal modes; opaque outside this module. */
export class TermiosState {
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array, _token: typeof TOKEN) {
    this.#bytes = bytes;
  }
  /** @internal */
  static bytes(t: TermiosState): Uint8Array {
    return t.#bytes;
  }
}
const TOKEN = Symbol("termios");

/** tcgetattr(fd). */
export function getTermios(fd: number): TermiosState {
  const buf = new Uint8Array(TERMIOS_SIZE);
  check(libc().tcgetattr(fd, buf), "tcgetattr");
  return new TermiosState(buf, TOKEN);
}

/** tcsetattr(fd, TCSADRAIN, saved). */
export function setTermios(fd: number, state: TermiosState): void {
  check(libc().tcsetattr(fd, TCSADRAIN, TermiosState.bytes(state)), "tcsetattr");
}

/** The cfmakeraw(3) version of `state` (state itself is unchanged). */
export function makeRaw(state: TermiosState): TermiosState {
  const copy = TermiosState.bytes(state).slice();
  libc().cfmakeraw(copy);
  return new TermiosState(copy, TOKEN);
}

/** `state` with echo off (ECHO, ECHONL cleared in c_lflag); the rest unchanged. */
export function withoutEcho(state: TermiosState): TermiosState {
  const copy = TermiosState.bytes(state).slice();
  const view = new DataView(copy.buffer);
  const ECHO = 0o10, ECHONL = 0o100;
  view.setUint32(12, view.getUint32(12, true) & ~(ECHO | ECHONL), true); // c_lflag: after c_iflag, c_oflag, c_cflag
  return new TermiosState(copy, TOKEN);
}

/**
 * An fd that ends the waits of {@linkcode readMaster} and {@linkcode readWhenReady} at once once
 * {@linkcode wakeWaits} was called on it (an eventfd, left readable): give it with an AbortSignal, and call
 * wakeWaits when the signal aborts, so an abort is noticed without waiting for the end of a slice.
 */
export function waitWaker(): number {
  const EFD_NONBLOCK = 0o4000, EFD_CLOEXEC = 0o2000000;
  return check(libc().eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), "eventfd");
}

/** Makes every wait given `waker` return (see {@linkcode waitWaker}). */
export function wakeWaits(waker: number): void {
  const one = new BigUint64Array([1n]);
  libc().write(waker, new Uint8Array(one.buffer), 8n);
}

/**
 * Resolves after `ms`, or at once when `waker` was woken ({@linkcode wakeWaits}): a poll(2) of the waker alone
 * on a pool thread. For the pty session's own waits instead of a timer: the first `setTimeout` of a process
 * makes Deno load node:timers and what it needs (~6 ms of CPU at every interactive start).
 */
export async function sleepUnlessWoken(ms: number, waker: number): Promise<void> {
  const pfd = new Uint8Array(8);
  const view = new DataView(pfd.buffer);
  view.setInt32(0, waker, true);
  view.setInt16(4, POLLIN, true);
  await libc().poll_wait(pfd, 1n, ms);
}

/** poll(2) one fd (and the waker, if any) on a pool thread; returns fd's revents (0 on timeout or a wake). */
async function pollOne(fd: number, events: number, timeoutMs: number, waker = -1): Promise<number> {
  // struct pollfd { int fd; short events; short revents; }
  const pfd = new Uint8Array(waker >= 0 ? 16 : 8);
  const view = new DataView(pfd.buffer);
  view.setInt32(0, fd, true);
  view.setInt16(4, events, true);
  if (waker >= 0) {
    view.setInt32(8, waker, true);
    view.setInt16(12, POLLIN, true);
  }
  const n = await libc().poll_wait(pfd, waker >= 0 ? 2n : 1n, timeoutMs);
  if (n <= 0) return 0; // timeout, or EINTR (errno can't be read here: wait again)
  return view.getInt16(6, true);
}

/**
 * Reads what is available on a non-blocking fd (the pty master), waiting without blocking the event loop.
 * Returns null when the other side is gone (EIO: every slave fd is closed, or POLLNVAL/POLLHUP with no data),
 * or when `signal` aborts. Waits in slices of `sliceMs` so an abort is noticed (at once with `waker`:
 * {@linkcode waitWaker}).
 */
export async function readMaster(
  fd: number,
  opts: { max?: number; signal?: AbortSignal; sliceMs?: number; waker?: number } = {},
): Promise<Uint8Array | null> {
  const c = libc();
  const buf = new Uint8Array(opts.max ?? 65536);
  for (;;) {
    if (opts.signal?.aborted) return null;
    const n = Number(c.read(fd, buf, BigInt(buf.length)));
    if (n > 0) return buf.slice(0, n);
    if (n === 0) return null;
    const e = errno();
    if (e === EIO) return null;
    if (e !== EAGAIN && e !== EINTR) throw sysError("read", e, "pty master");
    const rev = await pollOne(fd, POLLIN, opts.sliceMs ?? 250, opts.waker);
    if (rev & POLLNVAL) return null;
    // POLLHUP/POLLERR: loop once more; read then returns EIO (or the last data).
    if ((rev & (POLLHUP | POLLERR)) && !(rev & POLLIN)) {
      const m = Number(c.read(fd, buf, BigInt(buf.length)));
      if (m > 0) return buf.slice(0, m);
      return null;
    }
  }
}

/**
 * Waits on the calling thread (blocking it) up to `ms` for `fd` to have data; false on a timeout or a hang-up
 * without data. For short waits in a burst of copying only.
 */
export function readableWithin(fd: number, ms: number): boolean {
  const pfd = new Uint8Array(8);
  const view = new DataView(pfd.buffer);
  view.setInt32(0, fd, true);
  view.setInt16(4, POLLIN, true);
  return libc().poll_now(pfd, 1n, ms) > 0 && (view.getInt16(6, true) & POLLIN) !== 0;
}

/** Reads what a non-blocking fd (the pty master) holds right now, without waiting: empty when nothing. */
export function readMasterNow(fd: number, max: number | Uint8Array = 65536): Uint8Array {
  const c = libc();
  // A scratch buffer may be passed (reused: a fresh 64 KiB per read costs more than the read).
  const buf = typeof max === "number" ? new Uint8Array(max) : max;
  const n = Number(c.read(fd, buf, BigInt(buf.length)));
  return n > 0 ? buf.slice(0, n) : new Uint8Array(0);
}

/**
 * Writes all of `data` to a non-blocking fd, waiting (off the event loop) while the other side is full.
 * Returns false when the other side is gone (EIO) or `signal` aborted.
 */
export async function writeAll(fd: number, data: Uint8Array, signal?: AbortSignal): Promise<boolean> {
  const c = libc();
  let off = 0;
  while (off < data.length) {
    if (signal?.aborted) return false;
    const n = Number(c.write(fd, data.subarray(off), BigInt(data.length - off)));
    if (n > 0) {
      off += n;
      continue;
    }
    const e = errno();
    if (e === EIO) return false;
    if (e !== EAGAIN && e !== EINTR) throw sysError("write", e, "pty master");
    const rev = await pollOne(fd, POLLOUT, 250);
    if (rev & (POLLNVAL | POLLERR)) return false;
  }
  return true;
}

/**
 * Reads from a blocking fd (the real terminal's stdin) without blocking the event loop: waits with poll(2) in
 * slices of `sliceMs` (so an abort is noticed; at once with `waker`), then reads what is there. Null at end of file, on a hang-up,
 * or when `signal` aborts. Never sets O_NONBLOCK (the terminal's file description is shared with the shell).
 */
export async function readWhenReady(
  fd: number,
  opts: { max?: number; signal?: AbortSignal; sliceMs?: number; waker?: number } = {},
): Promise<Uint8Array | null> {
  const c = libc();
  const buf = new Uint8Array(opts.max ?? 4096);
  for (;;) {
    if (opts.signal?.aborted) return null;
    const rev = await pollOne(fd, POLLIN, opts.sliceMs ?? 250, opts.waker);
    if (opts.signal?.aborted) return null;
    if (rev & POLLNVAL) return null;
    if (rev & (POLLIN | POLLHUP | POLLERR)) {
      const n = Number(c.read(fd, buf, BigInt(buf.length)));
      if (n > 0) return buf.slice(0, n);
      if (n === 0) return null;
      const e = errno();
      if (e !== EAGAIN && e !== EINTR) return null;
    }
  }
}
