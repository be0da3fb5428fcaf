/**
 * Socket calls the supervisor makes on its copies of sandboxed sockets (pidfd_getfd): connect, send, and the
 * socket's type. Each returns the result or -errno. Addresses are raw struct sockaddr bytes.
 */
import { errno, ptrOf } from "./libc.ts";

const SYMBOLS = {
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" }, // int connect(int, const struct sockaddr *, socklen_t)
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" }, // int bind(int, const struct sockaddr *, socklen_t)
  sendto: { parameters: ["i32", "buffer", "usize", "i32", "buffer", "u32"], result: "isize" },
  sendmsg: { parameters: ["i32", "buffer", "i32"], result: "isize" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  listen: { parameters: ["i32", "i32"], result: "i32" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

let lib: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] | null = null;
function net() {
  if (lib === null) lib = Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  return lib;
}

const r = (x: number | bigint) => (Number(x) < 0 ? -errno() : Number(x));

export const SOCK = { STREAM: 1, DGRAM: 2, RAW: 3, SEQPACKET: 5 } as const;

export function socketType(fd: number): number {
  return socketOption(fd, 3 /* SO_TYPE */);
}

export function socketError(fd: number): number {
  return socketOption(fd, 4 /* SO_ERROR */);
}

/** SOL_SOCKET options read as an int: SO_DOMAIN (39), SO_PROTOCOL (38). */
export const SO = { PROTOCOL: 38, DOMAIN: 39 } as const;

/** A SOL_SOCKET (1) option read as an int, or -errno. */
export function socketOption(fd: number, opt: number): number {
  const v = new Uint8Array(128);
  const len = new Uint8Array(128);
  new DataView(len.buffer).setUint32(0, 4, true);
  const rc = r(net().getsockopt(fd, 1, opt, v, len));
  return rc < 0 ? rc : new DataView(v.buffer).getInt32(0, true);
}

/** The address getpeername or getsockname gives, or null. */
function address(fd: number, get: "getpeername" | "getsockname"): Uint8Array | null {
  const a = new Uint8Array(128);
  const len = new Uint8Array(128);
  new DataView(len.buffer).setUint32(0, 128, true);
  if (r(net()[get](fd, a, len)) < 0) return null;
  return a.slice(0, new DataView(len.buffer).getUint32(0, true));
}

/** The connected peer's address, or null. */
export function peerAddress(fd: number): Uint8Array | null {
  return address(fd, "getpeername");
}

export function bindFd(fd: number, addr: Uint8Array<ArrayBuffer>, len: number): number {
  return r(net().bind(fd, addr, len));
}

export function connectFd(fd: number, addr: Uint8Array<ArrayBuffer>, len: number): number {
  return r(net().connect(fd, addr, len));
}

export function sendtoFd(
  fd: number,
  data: Uint8Array<ArrayBuffer>,
  len: number,
  flags: number,
  addr: Uint8Array<ArrayBuffer> | null,
  alen: number,
): number {
  return r(net().sendto(fd, data, BigInt(len), flags, addr, alen));
}

export function sendmsgFd(fd: number, msghdr: Uint8Array<ArrayBuffer>, flags: number): number {
  return r(net().sendmsg(fd, msghdr, flags));
}

/**
 * sendmsg(2) of one buffer, to `addr` (or the connected peer) with ancillary data `control`: the struct msghdr
 * and its iovec built here, so that no pointer leaves ffi/. An empty `data` is sent from a 128-byte buffer of
 * its own (a zero-length datagram still needs a valid pointer).
 */
export function sendmsgParts(
  fd: number,
  data: Uint8Array<ArrayBuffer>,
  addr: Uint8Array<ArrayBuffer> | null,
  addrLen: number,
  control: Uint8Array<ArrayBuffer> | null,
  flags: number,
): number {
  const iov = new Uint8Array(16);
  const iv = new DataView(iov.buffer);
  iv.setBigUint64(0, ptrOf(data.length ? data : new Uint8Array(128)), true);
  iv.setBigUint64(8, BigInt(data.length), true);
  const hdr = new Uint8Array(56); // struct msghdr
  const hv = new DataView(hdr.buffer);
  if (addr) {
    hv.setBigUint64(0, ptrOf(addr), true);
    hv.setUint32(8, addrLen, true);
  }
  hv.setBigUint64(16, ptrOf(iov), true);
  hv.setBigUint64(24, 1n, true);
  if (control) {
    hv.setBigUint64(32, ptrOf(control), true);
    hv.setBigUint64(40, BigInt(control.length), true);
  }
  return sendmsgFd(fd, hdr, flags);
}

const O_NONBLOCK = 0o4000;
export function isNonBlocking(fd: number): boolean {
  return (r(net().fcntl(fd, 3, /* F_GETFL */ 0)) & O_NONBLOCK) !== 0;
}
export function setNonBlocking(fd: number, on: boolean): void {
  const fl = r(net().fcntl(fd, 3, 0));
  if (fl < 0) return;
  net().fcntl(fd, 4, /* F_SETFL */ on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/** The socket's own (bound) address, or null. */
export function localAddress(fd: number): Uint8Array | null {
  return address(fd, "getsockname");
}

export function listenFd(fd: number, backlog: number): number {
  return r(net().listen(fd, backlog));
}
