/**
 * Unix stream sockets for `hallpass agent`: the socket container runtimes connect to (OCI `listenerPath`),
 * with the peer's credentials, and the agent-to-agent hand-over socket. Deno's own unix sockets cannot carry
 * file descriptors, so these go through libc. Sockets are non-blocking and close-on-exec; wait with
 * pollReadable before accepting or reading.
 */
import { close, errno } from "./libc.ts";
import { SysError } from "./errors.ts";

const SYMBOLS = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  listen: { parameters: ["i32", "i32"], result: "i32" },
  accept4: { parameters: ["i32", "buffer", "buffer", "i32"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

let lib: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] | null = null;
function sock() {
  if (lib === null) lib = Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  return lib;
}

const AF_UNIX = 1, SOCK_STREAM = 1, SOCK_SEQPACKET = 5, SOCK_NONBLOCK = 0o4000, SOCK_CLOEXEC = 0o2000000;

/** A struct sockaddr_un for `path` (in a 128-byte buffer), or null when the path is too long for one. */
export function unixAddr(path: string): { addr: Uint8Array<ArrayBuffer>; len: number } | null {
  const bytes = new TextEncoder().encode(path);
  if (bytes.length > 107) return null;
  const a = new Uint8Array(128);
  new DataView(a.buffer).setUint16(0, AF_UNIX, true);
  a.set(bytes, 2);
  return { addr: a, len: 2 + bytes.length + 1 };
}

function address(path: string): { addr: Uint8Array<ArrayBuffer>; len: number } {
  const a = unixAddr(path);
  if (a === null) throw new SysError(`socket path ${path}`, 36);
  return a;
}

/**
 * A listening socket at `path` (which must not exist), mode 0600; stream, or seqpacket (message boundaries
 * kept). Throws SysError.
 */
export function listenUnix(path: string, type: "stream" | "seqpacket" = "stream"): number {
  const t = type === "stream" ? SOCK_STREAM : SOCK_SEQPACKET;
  const fd = sock().socket(AF_UNIX, t | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new SysError("socket", errno());
  const { addr, len } = address(path);
  if (sock().bind(fd, addr, len) < 0) {
    const e = errno();
    close(fd);
    throw new SysError(`bind ${path}`, e);
  }
  try {
    Deno.chmodSync(path, 0o600);
  } catch { /* checked by the caller's mode test */ }
  if (sock().listen(fd, 64) < 0) {
    const e = errno();
    close(fd);
    throw new SysError("listen", e);
  }
  return fd;
}

/** A connection waiting on `lfd` (non-blocking, close-on-exec), or null when none is. */
export function acceptUnix(lfd: number): { fd: number; pid: number; uid: number; gid: number } | null {
  const fd = sock().accept4(lfd, null, null, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) return null;
  // SO_PEERCRED: struct ucred { pid_t pid; uid_t uid; gid_t gid; }, as the kernel saw the peer at connect.
  const cred = new Uint8Array(128);
  const len = new Uint8Array(128);
  new DataView(len.buffer).setUint32(0, 12, true);
  if (sock().getsockopt(fd, 1, /* SOL_SOCKET */ 17, /* SO_PEERCRED */ cred, len) < 0) {
    close(fd);
    return null;
  }
  const v = new DataView(cred.buffer);
  return { fd, pid: v.getInt32(0, true), uid: v.getUint32(4, true), gid: v.getUint32(8, true) };
}

/** A blocking connection to the socket at `path`, or -errno. */
export function connectUnix(path: string, type: "stream" | "seqpacket" = "stream"): number {
  const fd = sock().socket(AF_UNIX, (type === "stream" ? SOCK_STREAM : SOCK_SEQPACKET) | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno();
  const { addr, len } = address(path);
  if (sock().connect(fd, addr, len) < 0) {
    const e = errno();
    close(fd);
    return -e;
  }
  return fd;
}
