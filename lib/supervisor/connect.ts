/**
 * connect mediation (SPEC §3, `--mediate connect`): connect, and sendto/sendmsg/sendmmsg with a destination,
 * for IPv4, IPv6 and unix sockets.
 *
 * Allowed operations are performed here on our copy of the program's own socket (pidfd_getfd) with our copy
 * of the address, never continued after a check (DESIGN §2.5): a racing thread can change the address in its
 * memory, not ours. The only CONTINUE is sendmsg/sendmmsg on a stream socket, whose address the kernel ignores
 * (TCP Fast Open, which would connect, is refused). Landlock's TCP rule (ABI ≥ 4) additionally makes every
 * TCP connect the sandbox makes itself fail.
 *
 * A blocking connect is started non-blocking here and answered when it completes, so the supervisor never
 * blocks; the program sees an ordinary blocking connect.
 */
import { getRemoteFd, type Notification, type NotifyFd } from "../../ffi/notify.ts";
import {
  connectFd,
  isNonBlocking,
  peerAddress,
  sendmsgFd,
  sendtoFd,
  setNonBlocking,
  SOCK,
  socketError,
  socketType,
} from "../../ffi/net.ts";
import { ptrOf } from "../../ffi/libc.ts";
import { fs } from "../../ffi/fsops.ts";
import { canonicalAddr, type ConnectTarget, formatTarget } from "../connect_dest.ts";
import { baseDir, pathExists, resolvePath } from "./resolve.ts";
import { view } from "./view.ts";
import { unixAddr } from "../../ffi/unix_socket.ts";

const EACCES = 13, EFAULT = 14, EINVAL = 22, EMSGSIZE = 90, EOPNOTSUPP = 95, ECONNREFUSED = 111;
const EINPROGRESS = 115;
const MSG_FASTOPEN = 0x20000000;
const MAX_DATA = 1 << 20;

export type NetKind = "connect" | "sendto" | "sendmsg" | "sendmmsg";

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
}

export type NetDecision =
  | { kind: "continue" }
  | { kind: "fail"; errno: number }
  | { kind: "decide"; op: NetOp; target: ConnectTarget | null; display: string };

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

export class NetMediator {
  readonly #nfd: NotifyFd;
  /** Blocking connects in progress: answered when the socket is writable. */
  readonly pending = new Map<number, { n: Notification; fd: number; since: number }>();

  constructor(nfd: NotifyFd) {
    this.#nfd = nfd;
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
    } else if (kind === "sendto") {
      addrPtr = a[4];
      addrLen = Number(a[5] & 0xffffffffn);
      flags = Number(a[3] & 0xffffffffn);
    } else {
      // sendmsg(fd, msghdr*, flags); sendmmsg(fd, mmsghdr*, vlen, flags): the first message only (a partial
      // send, which callers handle by sending the rest again).
      flags = Number((kind === "sendmsg" ? a[2] : a[3]) & 0xffffffffn);
      if (kind === "sendmmsg" && (a[2] & 0xffffffffn) === 0n) return { kind: "continue" };
      msg = this.#nfd.readBytes(n.tid, a[1], 56);
      if (!msg) return { kind: "fail", errno: EFAULT };
      const mv = new DataView(msg.buffer);
      addrPtr = mv.getBigUint64(0, true);
      addrLen = mv.getUint32(8, true);
      if (kind === "sendmmsg") lenAddr = a[1] + 56n;
    }
    if (kind === "sendto" && addrPtr === 0n) return { kind: "continue" }; // a register: cannot change
    const fd = getRemoteFd(tgid, childFd);
    if (fd < 0) return { kind: "fail", errno: -fd };
    const type = socketType(fd);
    if (type < 0) {
      fs.close(fd);
      return { kind: "fail", errno: -type };
    }
    const stream = type === SOCK.STREAM || type === SOCK.SEQPACKET;
    if (
      (kind === "sendto" || kind === "sendmsg" || kind === "sendmmsg") && stream && (flags & MSG_FASTOPEN)
    ) {
      fs.close(fd);
      return { kind: "fail", errno: EOPNOTSUPP }; // TCP Fast Open would connect: programs fall back
    }
    if ((kind === "sendmsg" || kind === "sendmmsg") && stream) {
      fs.close(fd);
      return { kind: "continue" }; // the address of a stream socket's message is ignored by the kernel
    }
    let addr: Uint8Array<ArrayBuffer> | null = null;
    if (addrPtr !== 0n) {
      if (addrLen > 128 || addrLen < 2) {
        fs.close(fd);
        return { kind: "fail", errno: EINVAL };
      }
      const b = this.#nfd.readBytes(n.tid, addrPtr, addrLen);
      if (!b) {
        fs.close(fd);
        return { kind: "fail", errno: EFAULT };
      }
      addr = new Uint8Array(128);
      addr.set(b);
    }
    const op: NetOp = { kind, fd, addr, addrLen, flags, lenAddr };
    if (kind !== "connect") {
      const payload = this.#readPayload(n, kind, msg, op);
      if (typeof payload === "number") {
        this.release(op);
        return { kind: "fail", errno: payload };
      }
    }
    const proto = stream ? "tcp" : "udp";
    // The destination: the address given, else (datagram sendmsg without one) the connected peer, which was
    // decided when it was connected.
    const dest = addr ?? peerAddress(fd);
    if (dest === null) return { kind: "decide", op, target: null, display: "" };
    const t = sockaddrTarget(dest, addr ? addrLen : dest.length, proto, () => {
      const b = baseDir(n.tid, -100);
      return b.kind === "path" ? b.path : null;
    });
    if (t !== null && typeof t === "object" && "error" in t) {
      this.release(op);
      return { kind: "fail", errno: t.error };
    }
    if (t === null || t === "unnamed") return { kind: "decide", op, target: null, display: "" };
    if (t.family === "unix" && t.path !== undefined) {
      // Decided on the canonical path (symlinks followed as connect follows them, inside a container's root
      // for the agent), and connected to that very file: the address our call uses is /proc/self/fd/N of an
      // O_PATH fd opened at the canonical path without following any symlink, so no symlink planted or
      // swapped in after the decision can send the connect elsewhere.
      const r = resolvePath(t.path, "/", true, n.tid, n.tid);
      if (r.kind !== "path") {
        this.release(op);
        return { kind: "fail", errno: r.kind === "error" ? r.errno : ECONNREFUSED };
      }
      t.path = r.path;
      if (!pathExists(t.path)) {
        // Nothing listens on a socket that is not there (glibc tries nscd's in every lookup): answered as the
        // kernel would, without a question.
        this.release(op);
        return { kind: "fail", errno: 2 };
      }
      if (addr) {
        const pfd = view.openPath(t.path);
        if (pfd < 0) {
          this.release(op);
          return { kind: "fail", errno: -pfd };
        }
        op.pathFd = pfd;
        const u = unixAddr(`/proc/self/fd/${pfd}`)!;
        op.addr = u.addr;
        op.addrLen = u.len;
      }
    }
    const dns = t.family !== "unix" && t.port === 53 ? " (a DNS name lookup)" : "";
    return { kind: "decide", op, target: t, display: formatTarget(t) + dns };
  }

  #readPayload(n: Notification, kind: NetKind, msg: Uint8Array | null, op: NetOp): number | undefined {
    const a = n.args;
    if (kind === "sendto") {
      const len = Number(a[2] & 0xffffffffffffn);
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
    for (let i = 0; i < iovLen; i++) {
      const base = iv.getBigUint64(i * 16, true);
      const len = Number(iv.getBigUint64(i * 16 + 8, true));
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
      op.control = ctl;
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

  /** Performs an allowed operation and answers the notification (now, or when a blocking connect ends). */
  perform(n: Notification, op: NetOp): number {
    let r: number;
    if (op.kind === "connect") {
      const blocking = !isNonBlocking(op.fd);
      if (blocking) setNonBlocking(op.fd, true);
      r = op.addr ? connectFd(op.fd, op.addr, op.addrLen) : -EINVAL;
      if (blocking) setNonBlocking(op.fd, false);
      if (blocking && r === -EINPROGRESS) {
        this.pending.set(op.fd, { n, fd: op.fd, since: Date.now() });
        return 0; // answered by completeConnect
      }
    } else if (op.kind === "sendto") {
      const d = op.data!;
      r = sendtoFd(
        op.fd,
        d.length ? d : new Uint8Array(128),
        d.length,
        op.flags | 0x4000, /* MSG_NOSIGNAL */
        op.addr,
        op.addrLen,
      );
    } else {
      const iov = new Uint8Array(128);
      const iv = new DataView(iov.buffer);
      iv.setBigUint64(0, ptrOf(op.data!.length ? op.data! : new Uint8Array(128)), true);
      iv.setBigUint64(8, BigInt(op.data!.length), true);
      const hdr = new Uint8Array(128);
      const hv = new DataView(hdr.buffer);
      if (op.addr) {
        hv.setBigUint64(0, ptrOf(op.addr), true);
        hv.setUint32(8, op.addrLen, true);
      }
      hv.setBigUint64(16, ptrOf(iov), true);
      hv.setBigUint64(24, 1n, true);
      if (op.control) {
        hv.setBigUint64(32, ptrOf(op.control), true);
        hv.setBigUint64(40, BigInt(op.control.length), true);
      }
      r = sendmsgFd(op.fd, hdr, op.flags | 0x4000);
      if (op.kind === "sendmmsg" && r >= 0) {
        // One message sent: its msg_len cannot be written back without writing the program's memory, so the
        // call reports 1 message and the caller's loop sends the rest.
        r = 1;
      }
    }
    this.#answer(n, r);
    this.release(op);
    return r;
  }

  #answer(n: Notification, r: number): void {
    if (!this.#nfd.idValid(n.id)) return;
    if (r >= 0) this.#nfd.succeed(n.id, r);
    else this.#nfd.fail(n.id, -r);
  }

  /** A pending blocking connect became writable (or failed): answer it. */
  complete(fd: number): void {
    const p = this.pending.get(fd);
    if (!p) return;
    this.pending.delete(fd);
    const err = socketError(fd);
    this.#answer(p.n, err === 0 ? 0 : -Math.abs(err));
    fs.close(fd);
  }

  /** Pending connects whose program thread is gone. */
  sweep(): void {
    for (const [fd, p] of this.pending) {
      if (!this.#nfd.idValid(p.n.id)) {
        this.pending.delete(fd);
        fs.close(fd);
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
