/** The one error type for failed system calls, made in one place per calling convention. */

/** errno numbers used by hallpass (x86_64 and aarch64 share them). */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  EIO: 5,
  ENXIO: 6,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  EXDEV: 18,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  ENOSPC: 28,
  EROFS: 30,
  ENAMETOOLONG: 36,
  ENOSYS: 38,
  ENOTEMPTY: 39,
  ELOOP: 40,
  ENOMSG: 42,
  EPROTO: 71,
  EILSEQ: 84,
  EMSGSIZE: 90,
  EOPNOTSUPP: 95,
  EADDRINUSE: 98,
  ENOBUFS: 105,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EALREADY: 114,
  EINPROGRESS: 115,
  ECANCELED: 125,
} as const;

const NAMES: Record<number, string> = Object.fromEntries(Object.entries(Errno).map(([name, n]) => [n, name]));

export function errnoName(errno: number): string {
  return NAMES[errno] ?? `errno ${errno}`;
}

export class SysError extends Error {
  override name = "SysError";
  constructor(readonly syscall: string, readonly errno: number) {
    super(`${syscall}: ${errnoName(errno)}`);
  }
  get code(): string {
    return errnoName(this.errno);
  }
}
