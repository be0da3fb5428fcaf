/**
 * Performing an allowed call here, on our own copy of what was decided: the canonical path walked again from
 * its parent without following symlinks (so it can only touch what was decided on), our copy of the caller's
 * fd, the arguments read once from its memory, and always with the caller's credentials (asCaller). The
 * result goes back through lib/supervisor/respond.ts (an opened file is installed with ADDFD there).
 *
 * @module
 */
import { cstr } from "../../ffi/libc.ts";
import { setThreadEffectiveCaps, setThreadFsCreds } from "../../ffi/creds.ts";
import { getRemoteFd, type Notification, type NotifyFd, openat2, RESOLVE } from "../../ffi/notify.ts";
import { fs, S_IFDIR, S_IFIFO, S_IFREG } from "../../ffi/fsops.ts";
import { unixAddr } from "../../ffi/unix_socket.ts";
import { bindFd } from "../../ffi/net.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import { AT_EMPTY_PATH, AT_REMOVEDIR } from "../filter/syscall_table.ts";
import { privilegedXattr } from "../policy/privileged_bits.ts";
import type { FsView } from "./view.ts";
import type { NetMediator } from "./connect.ts";
import type { ProcInfo } from "./proc_info.ts";
import type { Respond } from "./respond.ts";
import type { Pending } from "./questions.ts";
import { openFlags } from "./decode.ts";
import { Errno } from "../../ffi/errors.ts";

const { EPERM, EAGAIN, EACCES, EFAULT, ENXIO, EISDIR, EINVAL, ENAMETOOLONG, ENOSYS, EOPNOTSUPP } = Errno;
const O_NONBLOCK = 0o4000, O_PATH = 0o10000000;
const O_WRONLY = 0o1, O_CREAT = 0o100, O_NOFOLLOW = 0o400000, O_CLOEXEC = 0o2000000;
const O_TMPFILE = 0o20200000;
/** The kernel's VALID_OPEN_FLAGS (x86_64 and aarch64 values). */
const VALID_OPEN_FLAGS = 0o37777703;
const RESOLVE_NO_SYMLINKS = RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS;

const dec = new TextDecoder("utf-8", { fatal: true });

/** An emulation's result: the value or -errno; `sent`: ADDFD already answered; `wait`: a FIFO without a reader. */
export interface Emulated {
  value: number;
  sent: boolean;
  wait?: boolean;
}

export class Emulate {
  readonly #nfd: NotifyFd;
  readonly #respond: Respond;
  readonly #proc: ProcInfo;
  readonly #net: NetMediator;
  readonly #allowPrivileged: boolean;
  readonly #view: FsView;
  /** This Worker thread's own file system credentials (see asCaller). */
  #ownCreds: { uid: number; gid: number; groups: number[]; capEff: bigint } | null = null;

  constructor(
    nfd: NotifyFd,
    respond: Respond,
    proc: ProcInfo,
    net: NetMediator,
    allowPrivileged: boolean,
    view: FsView,
  ) {
    this.#view = view;
    this.#nfd = nfd;
    this.#respond = respond;
    this.#proc = proc;
    this.#net = net;
    this.#allowPrivileged = allowPrivileged;
  }

  /**
   * A performed write is done with the caller's credentials, never the supervisor's: its file system ids,
   * groups and effective capabilities (per-thread, set on this Worker's thread only), so the kernel checks
   * permissions as for the caller and what is created is owned as it would be. The supervisor may be root with
   * every capability (locally, or `hallpass agent` on a node) while the caller is another user, or root with
   * few capabilities: it must lend none. The caller's umask is applied by each emulation; no_new_privs does not
   * bear on a file operation (nothing is executed).
   */
  asCaller<T>(tid: number, fn: () => T): T {
    const c = this.#proc.fsCreds(tid);
    const own = this.#ownCreds ??= this.#proc.fsCreds("thread-self");
    if (c === null || own === null) throw new Error(`cannot read the credentials of ${tid}`);
    const sameIds = c.uid === own.uid && c.gid === own.gid && c.groups.join() === own.groups.join();
    if (sameIds && c.capEff === own.capEff) return fn();
    if (!sameIds) setThreadFsCreds(c.uid, c.gid, c.groups);
    try {
      // After the ids: changing the fsuid from 0 clears the file system capabilities, which are set here.
      setThreadEffectiveCaps(c.capEff);
      return fn();
    } finally {
      // Capabilities first: taking our ids back (setgroups) needs CAP_SETGID, which the caller may lack.
      setThreadEffectiveCaps(own.capEff);
      if (!sameIds) setThreadFsCreds(own.uid, own.gid, own.groups);
    }
  }

  call(p: Pending): Emulated {
    const { n, call } = p;
    const c = call!;
    const a = n.args;
    if (p.fdCopy >= 0) return { value: this.#fd(p), sent: false };
    const t = p.targets[0];
    if (t.anon) return { value: -EACCES, sent: false };
    const { dirfd, name } = openParent(this.#view, t.path);
    if (dirfd < 0) return { value: dirfd, sent: false };
    const nameC = cstr(name);
    try {
      switch (c.kind) {
        case "open": {
          const flags = openFlags(n, c);
          const mode = c.mode !== undefined && typeof c.openFlags === "number"
            ? Number(a[c.mode] & 0o7777n)
            : c.name === "creat"
            ? Number(a[1] & 0o7777n)
            : 0;
          const umask = this.#proc.umask(n.tid);
          // openat2 RESOLVE_NO_SYMLINKS rather than O_NOFOLLOW: O_NOFOLLOW would stay in the file's flags
          // (F_GETFL, /proc/PID/fdinfo), and the program did not ask for it. openat2 refuses unknown flag bits
          // (openat ignores them) and a mode without O_CREAT/O_TMPFILE.
          const how = (flags & VALID_OPEN_FLAGS) | O_CLOEXEC | 0o400 /* O_NOCTTY */;
          // Never blocks on what the sandbox controls: O_NONBLOCK (a FIFO without a reader says ENXIO, a device
          // does not wait, a leased file says EAGAIN), cleared again below when the program did not ask for it.
          const fd = openat2(
            dirfd,
            nameC,
            how | O_NONBLOCK,
            how & (O_CREAT | O_TMPFILE) ? mode & ~umask : 0,
            RESOLVE_NO_SYMLINKS,
          );
          if (!(flags & O_NONBLOCK)) {
            // The kernel would block the caller: a writer on a FIFO until a reader comes, a lease until broken.
            if (fd === -EAGAIN) return { value: fd, sent: false, wait: true };
            if (fd === -ENXIO && (flags & 3) === O_WRONLY && isFifo(dirfd, nameC)) {
              return { value: fd, sent: false, wait: true };
            }
          }
          if (fd < 0) return { value: fd, sent: false };
          if (!(flags & O_NONBLOCK)) fs.setNonblocking(fd, false);
          const r = this.#respond.addFd(n, fd, (flags & O_CLOEXEC) !== 0);
          fs.close(fd);
          return { value: r, sent: r >= 0 };
        }
        case "truncate": {
          // Type-checked before it is opened for writing: a FIFO or device is never opened (it could block, a
          // device's open can act), and the kernel's truncate(2) refuses them anyway.
          const pathFd = fs.openat(dirfd, nameC, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
          if (pathFd < 0) return { value: pathFd, sent: false };
          try {
            const type = fs.fileType(pathFd);
            if (type < 0) return { value: type, sent: false };
            if (type === S_IFDIR) return { value: -EISDIR, sent: false };
            if (type !== S_IFREG) return { value: -EINVAL, sent: false };
            const fd = fs.reopen(pathFd, O_WRONLY | O_NONBLOCK);
            if (fd < 0) return { value: fd, sent: false };
            const r = fs.ftruncate(fd, BigInt.asIntN(64, a[1]));
            fs.close(fd);
            return { value: r, sent: false };
          } finally {
            fs.close(pathFd);
          }
        }
        case "mkdir":
          return {
            value: fs.mkdirat(dirfd, nameC, Number(a[c.mode!] & 0o7777n) & ~this.#proc.umask(n.tid)),
            sent: false,
          };
        case "mknod": {
          const mode = Number(a[c.mode!] & 0xffffffffn);
          const umask = this.#proc.umask(n.tid);
          const dev = c.name === "mknod" ? a[2] : a[3];
          return {
            value: fs.mknodat(dirfd, nameC, (mode & ~0o7777) | (mode & 0o7777 & ~umask), dev),
            sent: false,
          };
        }
        case "unlink": {
          const flags = c.atFlags !== undefined ? Number(a[c.atFlags] & BigInt(AT_REMOVEDIR)) : 0;
          return { value: fs.unlinkat(dirfd, nameC, flags), sent: false };
        }
        case "rmdir":
          return { value: fs.unlinkat(dirfd, nameC, AT_REMOVEDIR), sent: false };
        case "rename":
        case "link": {
          const t2 = p.targets[1];
          const second = openParent(this.#view, t2.path);
          if (second.dirfd < 0) return { value: second.dirfd, sent: false };
          try {
            if (c.kind === "rename") {
              const flags = c.atFlags !== undefined ? Number(a[c.atFlags] & 0xffffffffn) : 0;
              return {
                value: fs.renameat2(dirfd, nameC, second.dirfd, cstr(second.name), flags),
                sent: false,
              };
            }
            return { value: fs.linkat(dirfd, nameC, second.dirfd, cstr(second.name), 0), sent: false };
          } finally {
            fs.close(second.dirfd);
          }
        }
        case "symlink": {
          const text = this.mem(p).text;
          if (text === null) return { value: -EFAULT, sent: false };
          return { value: fs.symlinkat(cstr(text), dirfd, nameC), sent: false };
        }
        case "chmod": {
          const mode = Number(a[c.mode!] & 0o7777n);
          return { value: fs.fchmodatNoFollow(dirfd, nameC, mode), sent: false };
        }
        case "chown": {
          const [u, g] = c.name === "fchownat" ? [a[2], a[3]] : [a[1], a[2]];
          return {
            value: fs.fchownatNoFollow(dirfd, nameC, Number(u & 0xffffffffn), Number(g & 0xffffffffn)),
            sent: false,
          };
        }
        case "utime": {
          const ts = this.mem(p).times;
          if (typeof ts === "number") return { value: ts, sent: false };
          return { value: fs.utimensatNoFollow(dirfd, nameC, ts), sent: false };
        }
        case "setxattr": {
          const x = this.mem(p).xattr!;
          if (typeof x === "number") return { value: x, sent: false };
          return {
            value: fs.lsetxattrAt(dirfd, name, x.name, x.value, x.size, Number(a[4] & 0xffffffffn)),
            sent: false,
          };
        }
        case "removexattr": {
          const attr = this.mem(p).text;
          if (attr === null) return { value: -EFAULT, sent: false };
          return { value: fs.lremovexattrAt(dirfd, name, cstr(attr)), sent: false };
        }
      }
    } finally {
      fs.close(dirfd);
    }
    return { value: -ENOSYS, sent: false };
  }

  #fd(p: Pending): number {
    const { n, call } = p;
    const c = call!;
    const a = n.args;
    const fd = p.fdCopy;
    switch (c.kind) {
      case "link": {
        // linkat(fd, "", newdirfd, newpath, AT_EMPTY_PATH): our copy of the fd, linked at the decided path.
        const t2 = p.targets[1];
        if (!t2 || t2.anon) return -EACCES;
        const second = openParent(this.#view, t2.path);
        if (second.dirfd < 0) return second.dirfd;
        try {
          return fs.linkat(fd, cstr(""), second.dirfd, cstr(second.name), AT_EMPTY_PATH);
        } finally {
          fs.close(second.dirfd);
        }
      }
      case "chmod":
        return fs.fchmod(fd, Number(a[c.mode!] & 0o7777n));
      case "chown": {
        const [u, g] = c.name === "fchownat" ? [a[2], a[3]] : [a[1], a[2]];
        return fs.fchown(fd, Number(u & 0xffffffffn), Number(g & 0xffffffffn));
      }
      case "utime": {
        const ts = this.mem(p).times;
        if (typeof ts === "number") return ts;
        return fs.futimens(fd, ts);
      }
      case "setxattr": {
        const x = this.mem(p).xattr!;
        if (typeof x === "number") return x;
        return fs.fsetxattr(fd, x.name, x.value, x.size, Number(a[4] & 0xffffffffn));
      }
      case "removexattr": {
        const attr = this.mem(p).text;
        if (attr === null) return -EFAULT;
        return fs.fremovexattr(fd, cstr(attr));
      }
    }
    return -EOPNOTSUPP;
  }

  /**
   * What an emulation needs from the caller's memory (a symlink's text, times, an xattr), read once and before
   * the caller's credentials are taken on (#asCaller): reading another process's memory needs ours.
   */
  mem(p: Pending): NonNullable<Pending["mem"]> {
    if (p.mem) return p.mem;
    const c = p.call!, n = p.n, a = n.args;
    const m: NonNullable<Pending["mem"]> = { text: null, times: null };
    if (c.kind === "symlink") m.text = this.#nfd.readCString(n.tid, a[0]);
    else if (c.kind === "removexattr") m.text = this.#nfd.readCString(n.tid, a[1], 256);
    else if (c.kind === "utime") m.times = this.#readTimes(n, c);
    else if (c.kind === "setxattr") m.xattr = this.#readXattr(n, 1, 2, 3);
    p.mem = m;
    return m;
  }

  /** Reads the times argument of the utime family as struct timespec[2] (null = now). */
  #readTimes(n: Notification, c: WriteCall): Uint8Array<ArrayBuffer> | null | number {
    const a = n.args;
    const ptr = c.name === "utime" || c.name === "utimes" ? a[1] : a[2];
    if (ptr === 0n) return null;
    const out = new Uint8Array(128);
    const ov = new DataView(out.buffer);
    if (c.name === "utime") {
      const b = this.#nfd.readBytes(n.tid, ptr, 16); // struct utimbuf { time_t actime, modtime; }
      if (!b) return -EFAULT;
      const v = new DataView(b.buffer);
      ov.setBigInt64(0, v.getBigInt64(0, true), true);
      ov.setBigInt64(16, v.getBigInt64(8, true), true);
      return out;
    }
    const b = this.#nfd.readBytes(n.tid, ptr, 32);
    if (!b) return -EFAULT;
    const v = new DataView(b.buffer);
    if (c.name === "utimensat") return new Uint8Array([...b, ...new Uint8Array(96)]);
    // struct timeval[2] → timespec[2]
    for (let i = 0; i < 2; i++) {
      ov.setBigInt64(i * 16, v.getBigInt64(i * 16, true), true);
      ov.setBigInt64(i * 16 + 8, v.getBigInt64(i * 16 + 8, true) * 1000n, true);
    }
    return out;
  }

  #readXattr(
    n: Notification,
    nameArg: number,
    valueArg: number,
    sizeArg: number,
  ): { name: Uint8Array<ArrayBuffer>; value: Uint8Array<ArrayBuffer>; size: number } | number {
    const a = n.args;
    const attr = this.#nfd.readCString(n.tid, a[nameArg], 256);
    if (attr === null) return -EFAULT;
    if (privilegedXattr(attr) && !this.#allowPrivileged) return -EPERM; // decided on the copy that is used (lib/policy/privileged_bits.ts)
    const size = Number(a[sizeArg] & 0xffffffffn);
    if (size > 65536) return -7; // E2BIG
    const value = new Uint8Array(Math.max(128, size));
    for (let off = 0; off < size; off += 8192) {
      const len = Math.min(8192, size - off);
      const chunk = this.#nfd.readBytes(n.tid, a[valueArg] + BigInt(off), len);
      if (!chunk) return -EFAULT;
      value.set(chunk, off);
    }
    return { name: cstr(attr), value, size };
  }

  bind(p: Pending): number {
    const fd = p.bindFd!;
    try {
      const t = p.targets[0].path;
      const i = t.lastIndexOf("/");
      const dirfd = this.#view.openDir(i <= 0 ? "/" : t.slice(0, i));
      if (dirfd < 0) return dirfd;
      try {
        // Through our verified directory fd: no symlink in the directory part can redirect the bind.
        const name = `/proc/self/fd/${dirfd}/${t.slice(i + 1)}`;
        const addr = unixAddr(name);
        if (!addr) return -ENAMETOOLONG;
        const r = bindFd(fd, addr.addr, addr.len);
        if (r < 0) return r;
        // We run with umask 0: give the socket the mode the program's umask would have.
        fs.fchmodatNoFollow(dirfd, cstr(t.slice(i + 1)), 0o777 & ~this.#proc.umask(p.n.tid));
        try {
          const st = Deno.lstatSync(name);
          this.#net.ownFiles.add(`${st.dev}:${st.ino}`); // the sandbox's own socket (lib/policy/socket_policy.ts)
        } catch { /* gone already */ }
        return 0;
      } finally {
        fs.close(dirfd);
      }
    } finally {
      fs.close(fd);
    }
  }

  /**
   * bind of an abstract name: performed here on a copy of the socket, so that a name the sandbox really got is
   * known as its own (with the socket's inode: a name it once had may be an outside daemon's later).
   */
  bindAbstract(n: Notification, a: Uint8Array, len: number): void {
    const fd = getRemoteFd(this.#proc.tgid(n.tid), Number(BigInt.asIntN(32, n.args[0])));
    if (fd < 0) return this.#respond.error(n, -fd);
    try {
      const addr = new Uint8Array(128);
      addr.set(a.subarray(0, len));
      const r = bindFd(fd, addr, len);
      if (r >= 0) {
        try {
          this.#net.ownAbstract.set(
            dec.decode(a.subarray(3, len)),
            Deno.statSync(`/proc/self/fd/${fd}`).ino ?? -1,
          );
        } catch { /* not UTF-8: never matched */ }
      }
      this.#respond.performed(n, r >= 0 ? 0 : r, true);
    } finally {
      fs.close(fd);
    }
  }
}

/** Whether `name` in `dirfd` is a FIFO (looked at through an O_PATH fd: opening it could block). */
function isFifo(dirfd: number, name: Uint8Array<ArrayBuffer>): boolean {
  const fd = openat2(dirfd, name, O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS);
  if (fd < 0) return false;
  try {
    return fs.fileType(fd) === S_IFIFO;
  } finally {
    fs.close(fd);
  }
}

/** Opens the canonical parent of `path` without following symlinks; returns its fd and the last name. */
function openParent(view: FsView, path: string): { dirfd: number; name: string } {
  const i = path.lastIndexOf("/");
  const dir = i <= 0 ? "/" : path.slice(0, i);
  const name = path.slice(i + 1);
  if (name === "" || name === "." || name === "..") return { dirfd: -EACCES, name };
  return { dirfd: view.openDir(dir), name };
}
