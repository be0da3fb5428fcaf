/**
 * Connects and sends with a destination (connect, sendto/sendmsg/sendmmsg), and listen under connect
 * mediation: what lib/policy/socket_policy.ts decides, done here. Unix sockets (local IPC) are decided in every
 * mode; network destinations under `--mediate connect`.
 *
 * Every operation is performed here on our copy of the program's own socket (pidfd_getfd) with our copy of
 * the address and data, never continued after a check: a racing thread can change the address in its
 * memory, or put another socket at the fd number, not ours. Landlock's TCP rule (ABI ≥ 4) additionally makes
 * every TCP connect the sandbox makes itself fail under connect mediation, and its abstract-socket scope
 * (ABI ≥ 6) every connect to an abstract socket outside the sandbox.
 *
 * A blocking connect, or a send on a blocking socket whose buffer is full, is started non-blocking here and
 * answered when it can complete, so the supervisor never blocks; the program sees an ordinary blocking call.
 */
import { getRemoteFd, type Notification, type NotifyFd } from "../../ffi/notify.ts";
import {
  connectFd,
  isNonBlocking,
  listenFd,
  localAddress,
  sendmsgParts,
  sendtoFd,
  setNonBlocking,
  SO,
  SOCK,
  socketError,
  socketOption,
  socketType,
} from "../../ffi/net.ts";
import { fs } from "../../ffi/fsops.ts";
import { canonicalAddr, type ConnectTarget, formatTarget } from "../policy/connect_dest.ts";
import { AF, ALLOWED_FAMILIES, effectiveTarget, IPPROTO, netlinkPeer } from "../policy/socket_policy.ts";
import { Resolver } from "./resolve.ts";
import { hostView } from "./view.ts";
import { unixAddr } from "../../ffi/unix_socket.ts";
import type { Respond } from "./respond.ts";
import { Errno } from "../../ffi/errors.ts";

const { EPERM, EACCES, EFAULT, EINVAL, EMSGSIZE, EOPNOTSUPP, ECONNREFUSED, EINPROGRESS, EAGAIN } = Errno;
const MSG_FASTOPEN = 0x20000000, MSG_DONTWAIT = 0x40, MSG_NOSIGNAL = 0x4000;
const MAX_DATA = 1 << 20;

export type NetKind = "connect" | "sendto" | "sendmsg" | "sendmmsg" | "listen";

/** Everything needed to perform the operation later, in our memory. */
export interface NetOp {
  kind: NetKind;
  fd: number;
  addr: Uint8Array<ArrayBuffer> | null;
  addrLen: number;
  /** sendto/sendmsg payload (iovecs joined). */
  data?: Uint8Array<ArrayBuffer>;
  /** sendmsg ancillary data with SCM_RIGHTS fds already translated to ours. */
  control?: Uint8Array<ArrayBuffer>;
  controlFds?: number[];
  flags: number;
  /** sendmmsg: where to write msg_len back. */
  lenAddr?: bigint;
  /** A unix socket destination, opened O_PATH at its canonical path (the address names it through /proc). */
  pathFd?: number;
  /** The program's socket is blocking (no O_NONBLOCK, no MSG_DONTWAIT): a send that would block waits. */
  blocking?: boolean;
}

export type NetDecision =
  | { kind: "continue" }
  | { kind: "fail"; errno: number }
  | { kind: "decide"; op: NetOp; target: ConnectTarget | null; display: string; own?: boolean };

/** Decodes a struct sockaddr into a destination; null for families that are not network destinations. */
export function sockaddrTarget(
  a: Uint8Array,
  len: number,
  proto: "tcp" | "udp",
  cwd: () => string | null,
): ConnectTarget | "unnamed" | null | { error: number } {
  if (len < 2) return { error: EINVAL };
  const dv = new DataView(a.buffer, a.byteOffset, a.byteLength);
  const family = dv.getUint16(0, true);
  if (family === 2) {
    if (len < 8) return { error: EINVAL };
    return { family: "inet", proto, addr: `${a[4]}.${a[5]}.${a[6]}.${a[7]}`, port: dv.getUint16(2, false) };
  }
  if (family === 10) {
    if (len < 24) return { error: EINVAL };
    const groups: string[] = [];
    for (let i = 0; i < 8; i++) groups.push(dv.getUint16(8 + i * 2, false).toString(16));
    const addr = canonicalAddr("inet6", groups.join(":")) ?? groups.join(":");
    return { family: "inet6", proto, addr, port: dv.getUint16(2, false) };
  }
  if (family === 1) {
    if (len <= 2) return "unnamed";
    const raw = a.subarray(2, len);
    if (raw[0] === 0) {
      return { family: "unix", abstract: new TextDecoder().decode(raw.subarray(1)) };
    }
    const end = raw.indexOf(0);
    let path = new TextDecoder().decode(end >= 0 ? raw.subarray(0, end) : raw);
    if (!path.startsWith("/")) {
      const c = cwd();
      if (c === null) return { error: EACCES };
      path = (c === "/" ? "" : c) + "/" + path;
    }
    return { family: "unix", path };
  }
  return null;
}

/**
 * The inode of the socket bound to abstract name `name` in the network namespace of process `pid` (the
 * sandbox's), from /proc/PID/net/unix, or -1. Names with spaces, newlines or NULs are never found (never "own").
 */
export function abstractInode(name: string, pid: number): number {
  if (/[\s\0]/.test(name)) return -1;
  let text: string;
  try {
    text = Deno.readTextFileSync(`/proc/${pid}/net/unix`); // the sandbox's network namespace (a container's)
  } catch {
    return -1;
  }
  for (const line of text.split("\n")) {
    // Num RefCount Protocol Flags Type St Inode Path
    const f = line.trim().split(/\s+/);
    if (f.length >= 8 && f[7] === "@" + name) {
      return Number(f[6]);
    }
  }
  return -1;
}

/** The kernel's errno for a path that is not there: ENOTDIR when a name on the way is not a directory. */
function notThereErrno(path: string): number {
  try {
    Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotADirectory) return Errno.ENOTDIR;
  }
  return Errno.ENOENT;
}

/** Writes a loopback or bound address (IPv4 dotted, `::1`, `::ffff:a.b.c.d`) into a sockaddr_in/in6. */
function writeAddr(sa: Uint8Array, text: string): void {
  const v4 = (t: string) => t.split(".").map(Number);
  if ((sa[0] | (sa[1] << 8)) === AF.INET) {
    sa.set(v4(text), 4);
    return;
  }
  sa.fill(0, 8, 24);
  if (text === "::1") sa[23] = 1;
  else if (text.startsWith("::ffff:")) {
    sa[18] = sa[19] = 0xff;
    sa.set(v4(text.slice(7)), 20);
  }
}

export class NetMediator {
  /** Reads the caller's memory. */
  readonly #nfd: NotifyFd;
  /** Answers the kernel (lib/supervisor/respond.ts). */
  readonly #respond: Respond;
  readonly #mediateConnect: boolean;
  /** Operations waiting for their socket: a blocking connect, or a send that would block. */
  readonly pending = new Map<
    number,
    { n: Notification; fd: number; since: number; op?: NetOp; tries?: number; counted?: boolean }
  >();
  /**
   * Unix sockets the sandbox bound itself (lib/supervisor/mediator.ts #bind performs those binds): socket
   * files by `dev:ino`, abstract names with the inode of the socket bound to them (checked in /proc/net/unix
   * at connect: a name the sandbox once had may be an outside daemon's later).
   */
  readonly ownFiles = new Set<string>();
  readonly ownAbstract = new Map<string, number>();

  /** `fs`: the sandbox's file system (socket paths are resolved and opened there). */
  constructor(
    nfd: NotifyFd,
    respond: Respond,
    mediateConnect: boolean,
    readonly fs = new Resolver(hostView),
  ) {
    this.#nfd = nfd;
    this.#respond = respond;
    this.#mediateConnect = mediateConnect;
  }

  /** Reads the operation's arguments into our memory and says what to decide on. */
  prepare(n: Notification, kind: NetKind, tgid: number): NetDecision {
    const a = n.args;
    const childFd = Number(BigInt.asIntN(32, a[0]));
    let addrPtr = 0n, addrLen = 0, flags = 0;
    let msg: Uint8Array | null = null;
    let lenAddr: bigint | undefined;
    if (kind === "connect") {
      addrPtr = a[1];
      addrLen = Number(a[2] & 0xffffffffn);
    } else if (kind === "listen") {
      flags = Number(BigInt.asIntN(32, a[1])); // the backlog
    } else if (kind === "sendto") {
      addrPtr = a[4];
      addrLen = Number(a[5] & 0xffffffffn);
      flags = Number(a[3] & 0xffffffffn);
    } else {
      // sendmsg(fd, msghdr*, flags); sendmmsg(fd, mmsghdr*, vlen, flags): the first message only (a partial
      // send, which callers handle by sending the rest again).
      flags = Number((kind === "sendmsg" ? a[2] : a[3]) & 0xffffffffn);
      // vlen 0 (a register): nothing is sent, whatever the memory says.
      if (kind === "sendmmsg" && (a[2] & 0xffffffffn) === 0n) return { kind: "continue" };
      msg = this.#nfd.readBytes(n.tid, a[1], 56);
      if (!msg) return { kind: "fail", errno: EFAULT };
      const mv = new DataView(msg.buffer);
      addrPtr = mv.getBigUint64(0, true);
      addrLen = mv.getUint32(8, true);
      if (kind === "sendmmsg") lenAddr = a[1] + 56n;
    }
    const fd = getRemoteFd(tgid, childFd);
    if (fd < 0) return { kind: "fail", errno: -fd };
    const fail = (errno: number): NetDecision => {
      fs.close(fd);
      return { kind: "fail", errno };
    };
    const type = socketType(fd);
    if (type < 0) return fail(-type);
    const domain = socketOption(fd, SO.DOMAIN);
    const protocol = socketOption(fd, SO.PROTOCOL);
    const inet = domain === AF.INET || domain === AF.INET6;
    if (this.#mediateConnect) {
      // A socket the filter would not have let the sandbox make (inherited, or passed in): refused, as at
      // socket() (lib/policy/socket_policy.ts).
      if (!(domain in ALLOWED_FAMILIES)) return fail(EACCES);
      if (
        inet && !(type === SOCK.STREAM && protocol === IPPROTO.TCP) &&
        !(type === SOCK.DGRAM && protocol === IPPROTO.UDP)
      ) return fail(EACCES);
    }
    const stream = type === SOCK.STREAM || type === SOCK.SEQPACKET;
    if (kind === "listen") {
      const op: NetOp = { kind, fd, addr: null, addrLen: 0, flags };
      if (!inet || !stream) return { kind: "decide", op, target: null, display: "" };
      const local = localAddress(fd);
      const t = local ? sockaddrTarget(local, local.length, "tcp", () => null) : null;
      if (t === null || t === "unnamed" || "error" in t || t.family === "unix") {
        return { kind: "decide", op, target: null, display: "" };
      }
      return { kind: "decide", op, target: t, display: "listen on " + formatTarget(t) + " (inbound)" };
    }
    const sctp = protocol === IPPROTO.SCTP;
    if (kind !== "connect" && stream && (flags & MSG_FASTOPEN)) {
      return fail(EOPNOTSUPP); // TCP Fast Open would connect: programs fall back
    }
    // A stream socket sends to its connected peer, decided when it was connected: the kernel ignores a
    // message's address (SCTP's is a connect: kept, and decided below).
    if (kind !== "connect" && stream && !sctp) addrPtr = 0n;
    let addr: Uint8Array<ArrayBuffer> | null = null;
    if (addrPtr !== 0n) {
      if (addrLen > 128 || addrLen < 2) return fail(EINVAL);
      const b = this.#nfd.readBytes(n.tid, addrPtr, addrLen);
      if (!b) return fail(EFAULT);
      addr = new Uint8Array(128);
      addr.set(b);
    }
    const op: NetOp = { kind, fd, addr, addrLen: addr ? addrLen : 0, flags, lenAddr };
    if (kind !== "connect") {
      op.blocking = (flags & MSG_DONTWAIT) === 0 && !isNonBlocking(fd);
      const payload = this.#readPayload(n, kind, msg, op, stream);
      if (typeof payload === "number") {
        this.release(op);
        return { kind: "fail", errno: payload };
      }
      // A send without an address goes to the connected peer, decided when it was connected.
      if (!addr) return { kind: "decide", op, target: null, display: "" };
    }
    if (!addr) return { kind: "decide", op, target: null, display: "" };
    const proto = stream ? "tcp" : "udp";
    let t = sockaddrTarget(addr, addrLen, proto, () => {
      const b = this.fs.baseDir(n.tid, -100);
      return b.kind === "path" ? b.path : null;
    });
    if (t !== null && typeof t === "object" && "error" in t) {
      this.release(op);
      return { kind: "fail", errno: t.error };
    }
    if (t === null || t === "unnamed") {
      // Not an IP or unix address: the socket's family decides what it is. A unix or IP socket given another
      // family's address fails in the kernel; netlink and AF_ALG reach the kernel only (a netlink address
      // naming a process or group is refused: netlinkPeer); with connects not mediated, the other families
      // (vsock, packet) are network like any other.
      if (domain === AF.NETLINK && netlinkPeer(addr, addrLen)) {
        this.release(op);
        return { kind: "fail", errno: EPERM };
      }
      if (
        !this.#mediateConnect || inet || domain === AF.UNIX || domain === AF.NETLINK || domain === AF.ALG
      ) {
        return { kind: "decide", op, target: null, display: "" };
      }
      this.release(op);
      return { kind: "fail", errno: EACCES };
    }
    if ((domain === AF.UNIX) !== (t.family === "unix") && domain >= 0) {
      // A unix socket given an IP address, or an IP socket a unix one: the kernel refuses it (EINVAL,
      // EAFNOSUPPORT) on our copy too. Nothing to ask about.
      return { kind: "decide", op, target: null, display: "" };
    }
    if (t.family !== "unix") {
      // Decided on the address the kernel would use (0.0.0.0 and :: are loopback, or the bound address), and
      // performed on that very address.
      const local = localAddress(fd);
      const lt = local ? sockaddrTarget(local, local.length, proto, () => null) : null;
      const bound = lt !== null && typeof lt === "object" && !("error" in lt) && lt.family !== "unix"
        ? lt.addr
        : null;
      const eff = effectiveTarget(t, bound);
      if (
        eff.family !== "unix" && eff.addr !== t.addr &&
        (t.addr === "0.0.0.0" || t.addr === "::" || t.addr === "::ffff:0.0.0.0")
      ) {
        writeAddr(op.addr!, eff.addr);
      }
      t = eff;
    }
    let own = false;
    if (t.family === "unix" && t.path !== undefined) {
      // Decided on the canonical path (symlinks followed as connect follows them, inside a container's root
      // for the agent), and connected to that very file: the address our call uses is /proc/self/fd/N of an
      // O_PATH fd opened at the canonical path without following any symlink, so no symlink planted or
      // swapped in after the decision can send the connect elsewhere.
      const r = this.fs.resolvePath(t.path, "/", true, n.tid, n.tid);
      if (r.kind !== "path") {
        this.release(op);
        return { kind: "fail", errno: r.kind === "error" ? r.errno : ECONNREFUSED };
      }
      t.path = r.path;
      if (!this.fs.pathExists(t.path)) {
        // Nothing listens on a socket that is not there (glibc tries nscd's in every lookup): answered as the
        // kernel would, without a question: ENOENT, or ENOTDIR below a file.
        this.release(op);
        return { kind: "fail", errno: notThereErrno(t.path) };
      }
      const pfd = this.fs.view.openPath(t.path);
      if (pfd < 0) {
        this.release(op);
        return { kind: "fail", errno: -pfd };
      }
      op.pathFd = pfd;
      // The very file connected to: a socket, with one name unless the sandbox made it. A second name is a hard
      // link the sandbox may have made to a daemon's socket outside (in the project, or any directory a rule
      // allows), which would borrow that directory's rule: refused.
      let st: Deno.FileInfo;
      try {
        st = Deno.statSync(`/proc/self/fd/${pfd}`);
      } catch {
        this.release(op);
        return { kind: "fail", errno: ECONNREFUSED };
      }
      if (((st.mode ?? 0) & 0o170000) !== 0o140000) {
        this.release(op);
        return { kind: "fail", errno: ECONNREFUSED }; // what connect says of a file that is not a socket
      }
      own = this.ownFiles.has(`${st.dev}:${st.ino}`);
      if ((st.nlink ?? 1) > 1 && !own) {
        this.release(op);
        return { kind: "fail", errno: EACCES };
      }
      const u = unixAddr(`/proc/self/fd/${pfd}`)!;
      op.addr = u.addr;
      op.addrLen = u.len;
    } else if (t.family === "unix" && t.abstract !== undefined) {
      const ino = this.ownAbstract.get(t.abstract);
      own = ino !== undefined && abstractInode(t.abstract, tgid) === ino;
    }
    const dns = t.family !== "unix" && t.port === 53 ? " (a DNS name lookup)" : "";
    return { kind: "decide", op, target: t, display: formatTarget(t) + dns, own };
  }

  /** Reads the data to send; a stream socket sends at most MAX_DATA per call (a partial send). */
  #readPayload(
    n: Notification,
    kind: NetKind,
    msg: Uint8Array | null,
    op: NetOp,
    stream: boolean,
  ): number | undefined {
    const a = n.args;
    if (kind === "sendto") {
      let len = Number(a[2] & 0xffffffffffffn);
      if (len > MAX_DATA && stream) len = MAX_DATA;
      if (len > MAX_DATA) return EMSGSIZE;
      const data = this.#read(n.tid, a[1], len);
      if (!data) return EFAULT;
      op.data = data.subarray(0, len) as Uint8Array<ArrayBuffer>; // #read's buffer is at least 128 bytes
      return;
    }
    const mv = new DataView(msg!.buffer);
    const iovPtr = mv.getBigUint64(16, true);
    const iovLen = Number(mv.getBigUint64(24, true));
    const ctlPtr = mv.getBigUint64(32, true);
    const ctlLen = Number(mv.getBigUint64(40, true));
    if (iovLen > 1024 || ctlLen > 4096) return EMSGSIZE;
    const iov = iovLen ? this.#read(n.tid, iovPtr, iovLen * 16) : new Uint8Array(128);
    if (!iov) return EFAULT;
    const iv = new DataView(iov.buffer);
    const parts: Uint8Array[] = [];
    let total = 0;
    for (let i = 0; i < iovLen && total < MAX_DATA; i++) {
      const base = iv.getBigUint64(i * 16, true);
      let len = Number(iv.getBigUint64(i * 16 + 8, true));
      if (total + len > MAX_DATA && stream) len = MAX_DATA - total;
      total += len;
      if (total > MAX_DATA) return EMSGSIZE;
      const part = this.#read(n.tid, base, len);
      if (!part) return EFAULT;
      parts.push(part.subarray(0, len));
    }
    const data = new Uint8Array(Math.max(128, total));
    let off = 0;
    for (const p of parts) {
      data.set(p, off);
      off += p.length;
    }
    op.data = data.subarray(0, total) as Uint8Array<ArrayBuffer>;
    if (ctlLen > 0) {
      const ctl = this.#read(n.tid, ctlPtr, ctlLen);
      if (!ctl) return EFAULT;
      // Translate SCM_RIGHTS fds (the program's numbers) into copies of ours; refuse anything else.
      const cv = new DataView(ctl.buffer);
      const fds: number[] = [];
      let p = 0;
      while (p + 16 <= ctlLen) {
        const len = Number(cv.getBigUint64(p, true));
        if (len < 16 || p + len > ctlLen) return EINVAL;
        if (cv.getInt32(p + 8, true) !== 1 || cv.getInt32(p + 12, true) !== 1) return EINVAL;
        for (let q = p + 16; q + 4 <= p + len; q += 4) {
          const copy = getRemoteFd(n.tid, cv.getInt32(q, true));
          if (copy < 0) {
            fds.forEach(fs.close);
            return -copy;
          }
          fds.push(copy);
          cv.setInt32(q, copy, true);
        }
        p += (len + 7) & ~7;
      }
      op.control = ctl.subarray(0, ctlLen) as Uint8Array<ArrayBuffer>;
      op.controlFds = fds;
    }
  }

  #read(tid: number, addr: bigint, len: number): Uint8Array<ArrayBuffer> | null {
    const out = new Uint8Array(Math.max(128, len));
    for (let off = 0; off < len; off += 8192) {
      const chunk = this.#nfd.readBytes(tid, addr + BigInt(off), Math.min(8192, len - off));
      if (!chunk) return null;
      out.set(chunk, off);
    }
    return out;
  }

  /** Performs an allowed operation and answers the notification (now, or when its socket is ready). */
  perform(n: Notification, op: NetOp, tries = 0): number {
    let r: number;
    if (op.kind === "listen") {
      r = listenFd(op.fd, op.flags);
    } else if (op.kind === "connect") {
      const blocking = !isNonBlocking(op.fd);
      if (blocking) setNonBlocking(op.fd, true);
      r = op.addr ? connectFd(op.fd, op.addr, op.addrLen) : -EINVAL;
      if (blocking) setNonBlocking(op.fd, false);
      if (blocking && r === -EINPROGRESS) {
        this.pending.set(op.fd, { n, fd: op.fd, since: Date.now() });
        return 0; // answered by complete()
      }
    } else {
      r = this.#send(op);
      if (r === -EAGAIN && op.blocking && tries < 20) {
        // The program's call blocks until the socket can take the data: so do we, without blocking. (A socket
        // that polls writable and still cannot send — an unconnected datagram socket whose receiver is full —
        // gets EAGAIN after 20 tries rather than spinning.)
        this.pending.set(op.fd, { n, fd: op.fd, since: Date.now(), op, tries: tries + 1 });
        return 0;
      }
    }
    this.#answer(n, r);
    this.release(op);
    return r;
  }

  /** The send itself, never blocking (MSG_DONTWAIT), never raising SIGPIPE in the supervisor. */
  #send(op: NetOp): number {
    const flags = op.flags | MSG_DONTWAIT | MSG_NOSIGNAL;
    if (op.kind === "sendto") {
      const d = op.data!;
      return sendtoFd(op.fd, d.length ? d : new Uint8Array(128), d.length, flags, op.addr, op.addrLen);
    }
    const r = sendmsgParts(op.fd, op.data!, op.addr, op.addrLen, op.control ?? null, flags);
    // sendmmsg: one message sent. Its msg_len cannot be written back without writing the program's memory,
    // so the call reports 1 message and the caller's loop sends the rest.
    return op.kind === "sendmmsg" && r >= 0 ? 1 : r;
  }

  #answer(n: Notification, r: number): void {
    this.#respond.performed(n, r, true);
  }

  /** A blocking connect the fast path started on `fd` (our copy of the socket): answered when it completes. */
  waitFor(n: Notification, fd: number): void {
    if (fd >= 0) this.pending.set(fd, { n, fd, since: Date.now(), counted: true });
  }

  /** A pending connect or send's socket became writable (or failed): finish it. */
  complete(fd: number): void {
    const p = this.pending.get(fd);
    if (!p) return;
    this.pending.delete(fd);
    if (p.op) {
      if (!this.#respond.valid(p.n)) return this.release(p.op);
      this.perform(p.n, p.op, p.tries ?? 0); // may wait again
      return;
    }
    const err = socketError(fd);
    const r = err === 0 ? 0 : -Math.abs(err);
    // The fast path counted the connects it started (waitFor); ours are counted when answered.
    if (p.counted) this.#respond.result(p.n, r);
    else this.#answer(p.n, r);
    fs.close(fd);
  }

  /** Pending operations whose program thread is gone. */
  sweep(): void {
    for (const [fd, p] of this.pending) {
      if (!this.#respond.valid(p.n)) {
        this.pending.delete(fd);
        if (p.op) this.release(p.op);
        else fs.close(fd);
      }
    }
  }

  release(op: NetOp): void {
    if (op.pathFd !== undefined) {
      fs.close(op.pathFd);
      op.pathFd = undefined;
    }
    if (this.pending.has(op.fd)) return;
    fs.close(op.fd);
    op.controlFds?.forEach(fs.close);
  }
}
