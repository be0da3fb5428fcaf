/**
 * File system operations the supervisor performs on behalf of a sandboxed process (emulation).
 * Each returns the call's result or -errno; none throws. Paths are Uint8Array C strings (see cstr).
 */
import { AT, AT_FDCWD, cstr, fslib, libc, libcMore, O, result, SYS, sys } from "./libc.ts";
import { openat2, RESOLVE } from "./notify.ts";
import { Errno } from "./errors.ts";

/** Opens a canonical directory path without following any symlink or magic link. */
export function openDirNoSymlinks(dir: string): number {
  return openat2(
    AT_FDCWD,
    cstr(dir),
    O.PATH | O.DIRECTORY | O.CLOEXEC,
    0,
    RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS,
  );
}

export const fs = {
  openat: (dfd: number, name: Uint8Array<ArrayBuffer>, flags: number, mode: number) =>
    result(libc().openat(dfd, name, flags, mode)),
  mkdirat: (dfd: number, name: Uint8Array<ArrayBuffer>, mode: number) =>
    result(fslib().mkdirat(dfd, name, mode)),
  mknodat: (dfd: number, name: Uint8Array<ArrayBuffer>, mode: number, dev: bigint) =>
    result(fslib().mknodat(dfd, name, mode, dev)),
  unlinkat: (dfd: number, name: Uint8Array<ArrayBuffer>, flags: number) =>
    result(fslib().unlinkat(dfd, name, flags)),
  renameat2: (
    d1: number,
    n1: Uint8Array<ArrayBuffer>,
    d2: number,
    n2: Uint8Array<ArrayBuffer>,
    flags: number,
  ) => result(fslib().renameat2(d1, n1, d2, n2, flags)),
  linkat: (d1: number, n1: Uint8Array<ArrayBuffer>, d2: number, n2: Uint8Array<ArrayBuffer>, flags: number) =>
    result(fslib().linkat(d1, n1, d2, n2, flags)),
  symlinkat: (target: Uint8Array<ArrayBuffer>, dfd: number, name: Uint8Array<ArrayBuffer>) =>
    result(fslib().symlinkat(target, dfd, name)),
  /** fchmodat2 with AT_SYMLINK_NOFOLLOW (Linux 6.6+): on a symlink, EOPNOTSUPP as the kernel says. */
  fchmodatNoFollow: (dfd: number, name: Uint8Array<ArrayBuffer>, mode: number) => {
    const r = sys(SYS.fchmodat2, dfd, ptr(name), mode, AT.SYMLINK_NOFOLLOW);
    if (r !== -Errno.ENOSYS) return r;
    // Older kernels: open the entry without following it, then chmod through /proc/self/fd.
    const fd = result(libc().openat(dfd, name, O.PATH | O.NOFOLLOW | O.CLOEXEC, 0));
    if (fd < 0) return fd;
    try {
      return result(fslib().fchmodat(AT_FDCWD, cstr(`/proc/self/fd/${fd}`), mode, 0));
    } finally {
      libc().close(fd);
    }
  },
  fchownatNoFollow: (dfd: number, name: Uint8Array<ArrayBuffer>, uid: number, gid: number) =>
    result(fslib().fchownat(dfd, name, uid, gid, AT.SYMLINK_NOFOLLOW)),
  utimensatNoFollow: (dfd: number, name: Uint8Array<ArrayBuffer>, times: Uint8Array<ArrayBuffer> | null) =>
    result(fslib().utimensat(dfd, name, times, AT.SYMLINK_NOFOLLOW)),
  /** xattrs take paths: go through our verified directory fd, never following the last component. */
  lsetxattrAt: (
    dfd: number,
    name: string,
    attr: Uint8Array<ArrayBuffer>,
    value: Uint8Array<ArrayBuffer>,
    size: number,
    flags: number,
  ) => result(fslib().lsetxattr(cstr(`/proc/self/fd/${dfd}/${name}`), attr, value, BigInt(size), flags)),
  lremovexattrAt: (dfd: number, name: string, attr: Uint8Array<ArrayBuffer>) =>
    result(fslib().lremovexattr(cstr(`/proc/self/fd/${dfd}/${name}`), attr)),
  ftruncate: (fd: number, len: bigint) => result(fslib().ftruncate(fd, len)),
  fchmod: (fd: number, mode: number) => result(fslib().fchmod(fd, mode)),
  fchown: (fd: number, uid: number, gid: number) => result(fslib().fchown(fd, uid, gid)),
  /** The raw system call: glibc's utimensat() refuses a NULL path with EINVAL. */
  futimens: (fd: number, times: Uint8Array<ArrayBuffer> | null) =>
    sys(SYS.utimensat, fd, 0, times ? ptr(times) : 0, 0),
  fsetxattr: (
    fd: number,
    attr: Uint8Array<ArrayBuffer>,
    value: Uint8Array<ArrayBuffer>,
    size: number,
    flags: number,
  ) => result(fslib().fsetxattr(fd, attr, value, BigInt(size), flags)),
  fremovexattr: (fd: number, attr: Uint8Array<ArrayBuffer>) => result(fslib().fremovexattr(fd, attr)),
  close: (fd: number) => {
    if (fd >= 0) libc().close(fd);
  },
  /** The file type bits (S_IFMT) of what `fd` refers to (an O_PATH fd too), or -errno. */
  fileType: (fd: number): number => {
    const r = result(fslib().statx(fd, EMPTY, AT.EMPTY_PATH, 1, /* STATX_TYPE */ statxBuf));
    if (r < 0) return r;
    return new DataView(statxBuf.buffer).getUint16(28, true) & S_IFMT;
  },
  /** Sets or clears O_NONBLOCK on the open file description of `fd`; 0 or -errno. */
  setNonblocking: (fd: number, on: boolean): number => {
    const fl = result(libc().fcntl(fd, 3, /* F_GETFL */ 0));
    if (fl < 0) return fl;
    return result(libc().fcntl(fd, 4, /* F_SETFL */ on ? fl | O.NONBLOCK : fl & ~O.NONBLOCK));
  },
  /** Opens the very file an O_PATH fd refers to (through /proc/self/fd, never a path walk); fd or -errno. */
  reopen: (pathFd: number, flags: number) =>
    result(libc().openat(AT_FDCWD, cstr(`/proc/self/fd/${pathFd}`), flags | O.CLOEXEC, 0)),
};

/** File types (S_IFMT bits of st_mode). */
export const S_IFMT = 0o170000, S_IFIFO = 0o010000, S_IFDIR = 0o040000, S_IFREG = 0o100000;
const EMPTY = new Uint8Array(1);
const statxBuf = new Uint8Array(256);

function ptr(b: Uint8Array<ArrayBuffer>): bigint {
  return BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b)));
}

const head = new Uint8Array(256);

/** The first bytes of a file (for `#!`), or null when it cannot be read. */
export function readHead(path: string): Uint8Array | null {
  const fd = result(libc().openat(AT_FDCWD, cstr(path), O.RDONLY | O.CLOEXEC | O.NONBLOCK, 0));
  if (fd < 0) return null;
  try {
    const n = result(libcMore().read(fd, head, 256n));
    return n > 0 ? head.subarray(0, n) : null;
  } finally {
    libc().close(fd);
  }
}

/** access(path, X_OK): 0 or -errno. */
export function accessExec(path: string): number {
  return result(libc().access(cstr(path), 1));
}

/** Whether path is a directory (O_DIRECTORY open succeeds). */
export function isDirectory(path: string): boolean {
  const fd = result(libc().openat(AT_FDCWD, cstr(path), O.PATH | O.DIRECTORY | O.CLOEXEC, 0));
  if (fd >= 0) libc().close(fd);
  return fd >= 0;
}
