/** The one error type for failed system calls, made in one place per calling convention. */

const NAMES: Record<number, string> = {
  1: "EPERM",
  2: "ENOENT",
  3: "ESRCH",
  4: "EINTR",
  5: "EIO",
  9: "EBADF",
  11: "EAGAIN",
  12: "ENOMEM",
  13: "EACCES",
  17: "EEXIST",
  18: "EXDEV",
  20: "ENOTDIR",
  21: "EISDIR",
  22: "EINVAL",
  28: "ENOSPC",
  30: "EROFS",
  36: "ENAMETOOLONG",
  38: "ENOSYS",
  39: "ENOTEMPTY",
  40: "ELOOP",
  42: "ENOMSG",
  71: "EPROTO",
  95: "EOPNOTSUPP",
  110: "ETIMEDOUT",
  114: "EALREADY",
  125: "ECANCELED",
};

/** errno numbers used by hallpass (x86_64 and aarch64 share them). */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  EIO: 5,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EEXIST: 17,
  EXDEV: 18,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  ENAMETOOLONG: 36,
  ENOSYS: 38,
  ELOOP: 40,
  ENOMSG: 42,
  EPROTO: 71,
  ETIMEDOUT: 110,
  EALREADY: 114,
  ECANCELED: 125,
} as const;

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
