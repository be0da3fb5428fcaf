/**
 * The kernel's audit records, read through a NETLINK_AUDIT socket joined to the read-only multicast group
 * (AUDIT_NLGRP_READLOG): how hallpass learns of the reads Landlock refused (lib/floor/refused_reads.ts). Joining
 * needs CAP_AUDIT_READ in the initial namespaces, and records exist only while audit is enabled.
 * Docs: kernel Documentation/admin-guide/LSM/landlock.rst (record types), userspace-api/landlock.rst (flags).
 */
import { close, pollAsync, pollFds, ptrOf, SYS, sys } from "./libc.ts";
import { Errno } from "./errors.ts";

// Raw system calls through the libc already loaded (a library of its own would cost a dlopen at every start).
const nl = {
  socket: (domain: number, type: number, proto: number) => sys(SYS.socket, domain, type, proto),
  bind: (fd: number, addr: Uint8Array<ArrayBuffer>, len: number) => sys(SYS.bind, fd, ptrOf(addr), len),
  sendto: (fd: number, msg: Uint8Array<ArrayBuffer>, len: number, addr: Uint8Array<ArrayBuffer>) =>
    sys(SYS.sendto, fd, ptrOf(msg), len, 0, ptrOf(addr), 12),
  recvfrom: (
    fd: number,
    buf: Uint8Array<ArrayBuffer>,
    flags: number,
    from: Uint8Array<ArrayBuffer> | null,
    fromLen: Uint8Array<ArrayBuffer> | null,
  ) =>
    sys(
      SYS.recvfrom,
      fd,
      ptrOf(buf),
      buf.length,
      flags,
      from ? ptrOf(from) : 0,
      fromLen ? ptrOf(fromLen) : 0,
    ),
  setsockopt: (fd: number, level: number, opt: number, val: Uint8Array<ArrayBuffer>) =>
    sys(SYS.setsockopt, fd, level, opt, ptrOf(val), 4),
};

const AF_NETLINK = 16;
const SOCK_RAW = 3;
const SOCK_CLOEXEC = 0o2000000;
const NETLINK_AUDIT = 9;
const AUDIT_NLGRP_READLOG = 1;
const AUDIT_GET = 1000;
const NLMSG_ERROR = 2;
const NLM_F_REQUEST = 1;
const MSG_DONTWAIT = 0x40;
const { ENOBUFS, EAGAIN } = Errno;

/** Landlock's record types (include/uapi/linux/audit.h). */
export const AUDIT_LANDLOCK_ACCESS = 1423;
export const AUDIT_LANDLOCK_DOMAIN = 1424;

/** landlock_restrict_self(2) flags (Landlock ABI 7). */
export const RESTRICT_SELF = { LOG_SAME_EXEC_OFF: 1, LOG_NEW_EXEC_ON: 2, LOG_SUBDOMAINS_OFF: 4 } as const;

function sockaddrNl(groups: number): Uint8Array<ArrayBuffer> {
  const a = new Uint8Array(128);
  const v = new DataView(a.buffer);
  v.setUint16(0, AF_NETLINK, true);
  v.setUint32(4, 0, true); // nl_pid: the kernel picks one
  v.setUint32(8, groups, true);
  return a;
}

/**
 * AUDIT_GET (needs CAP_AUDIT_CONTROL): whether audit is enabled. The kernel answers from a thread it starts
 * for the reply (2–40 ms on a loaded machine), so the session sends the question at start and reads the answer
 * when it needs it.
 */
export class AuditStatusQuery {
  #fd: number;
  private constructor(fd: number) {
    this.#fd = fd;
  }

  /** Sends the question, or returns -errno. */
  static send(): AuditStatusQuery | number {
    const fd = nl.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
    if (fd < 0) return fd;
    const msg = new Uint8Array(128);
    const v = new DataView(msg.buffer);
    v.setUint32(0, 16, true); // nlmsg_len: the header alone
    v.setUint16(4, AUDIT_GET, true);
    v.setUint16(6, NLM_F_REQUEST, true);
    v.setUint32(8, 1, true); // seq
    const sent = nl.sendto(fd, msg, 16, sockaddrNl(0));
    if (sent < 0) {
      close(fd);
      return sent;
    }
    return new AuditStatusQuery(fd);
  }

  /** The answer within `timeoutMs`: enabled or not, or -errno (ETIMEDOUT: none came). */
  async result(timeoutMs: number): Promise<boolean | number> {
    const end = Date.now() + timeoutMs;
    try {
      while (this.#fd >= 0) {
        const left = end - Date.now();
        if (left <= 0 || (await pollAsync(this.#fd, 1, /* POLLIN */ left)) === 0) return -110;
        const r = this.#read();
        if (r !== null) return r;
      }
      return -9; // EBADF: closed
    } finally {
      this.close();
    }
  }

  /** The same, blocking this thread (`hallpass doctor`). */
  resultSync(timeoutMs: number): boolean | number {
    try {
      for (let i = 0; i < 4; i++) {
        if (!pollFds([this.#fd], timeoutMs)) return -110;
        const r = this.#read();
        if (r !== null) return r;
      }
      return -71; // EPROTO
    } finally {
      this.close();
    }
  }

  #read(): boolean | number | null {
    const buf = new Uint8Array(8192);
    const n = nl.recvfrom(this.#fd, buf, MSG_DONTWAIT, null, null);
    if (n < 16) return null;
    const bv = new DataView(buf.buffer);
    const type = bv.getUint16(4, true);
    if (type === NLMSG_ERROR) {
      const err = bv.getInt32(16, true);
      return err < 0 ? err : null; // an error, or an ack
    }
    // struct audit_status: mask, enabled, failure, pid, ... (0 off, 1 on, 2 on and locked)
    if (type === AUDIT_GET && n >= 24) return bv.getUint32(20, true) !== 0;
    return null;
  }

  close(): void {
    close(this.#fd);
    this.#fd = -1;
  }
}

/** AUDIT_TRUSTED_APP: an application's own message, freestyle text (the end-of-session marker). */
export const AUDIT_TRUSTED_APP = 1121;

/**
 * Sends an application message to audit (needs CAP_AUDIT_WRITE): 0, or -errno. Audit queues every record in
 * order, so once this one comes back on the multicast group, every record queued before it has too.
 */
export function sendAuditMessage(text: string): number {
  const fd = nl.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
  if (fd < 0) return fd;
  try {
    const body = new TextEncoder().encode(text);
    const len = 16 + body.length + 1;
    const msg = new Uint8Array(Math.max(128, (len + 3) & ~3));
    const v = new DataView(msg.buffer);
    v.setUint32(0, len, true);
    v.setUint16(4, AUDIT_TRUSTED_APP, true);
    v.setUint16(6, NLM_F_REQUEST, true);
    msg.set(body, 16);
    const r = nl.sendto(fd, msg, len, sockaddrNl(0));
    return r < 0 ? r : 0;
  } finally {
    close(fd);
  }
}

export interface AuditRecord {
  type: number;
  text: string;
}

/** A socket on the audit read-only multicast group; records from the kernel only (sender port 0). */
export class AuditReader {
  #fd: number;
  #lost = false;
  private constructor(fd: number) {
    this.#fd = fd;
  }

  /** Joins the group, or returns -errno (EPERM without CAP_AUDIT_READ). */
  static open(): AuditReader | number {
    const fd = nl.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
    if (fd < 0) return fd;
    const bound = nl.bind(fd, sockaddrNl(1 << (AUDIT_NLGRP_READLOG - 1)), 12);
    if (bound < 0) {
      close(fd);
      return bound;
    }
    // A larger receive buffer (best effort, up to net.core.rmem_max): a burst of denials overflows the default.
    const size = new Uint8Array(128);
    new DataView(size.buffer).setInt32(0, 1 << 20, true);
    nl.setsockopt(fd, 1, /* SOL_SOCKET */ 8, /* SO_RCVBUF */ size);
    return new AuditReader(fd);
  }

  /** The kernel dropped records for this socket (its buffer overflowed). */
  get lost(): boolean {
    return this.#lost;
  }

  /** Waits up to `timeoutMs` for records (off the event loop's thread); [] when none came. */
  async next(timeoutMs: number): Promise<AuditRecord[]> {
    if (this.#fd < 0) return [];
    const ev = await pollAsync(this.#fd, 1, /* POLLIN */ timeoutMs);
    if (this.#fd < 0 || ev === 0) return [];
    return this.drain();
  }

  /** The records already there, without waiting. */
  drain(): AuditRecord[] {
    const out: AuditRecord[] = [];
    if (this.#fd < 0) return out;
    const buf = new Uint8Array(16384);
    const from = new Uint8Array(128);
    const fromLen = new Uint8Array(128);
    const dec = new TextDecoder();
    for (let i = 0; i < 256; i++) {
      new DataView(fromLen.buffer).setUint32(0, 12, true);
      const n = nl.recvfrom(this.#fd, buf, MSG_DONTWAIT, from, fromLen);
      if (n < 0) {
        const e = -n;
        if (e === ENOBUFS) {
          this.#lost = true;
          continue;
        }
        if (e === EAGAIN) break;
        break;
      }
      if (new DataView(from.buffer).getUint32(4, true) !== 0) continue; // not from the kernel
      const v = new DataView(buf.buffer, 0, n);
      for (let off = 0; off + 16 <= n;) {
        const len = v.getUint32(off, true);
        if (len < 16 || off + len > n) break;
        const type = v.getUint16(off + 4, true);
        let end = off + len;
        while (end > off + 16 && buf[end - 1] === 0) end--;
        out.push({ type, text: dec.decode(buf.subarray(off + 16, end)) });
        off += (len + 3) & ~3;
      }
    }
    return out;
  }

  close(): void {
    close(this.#fd);
    this.#fd = -1;
  }
}
