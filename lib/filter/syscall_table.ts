/**
 * The mediated system calls, as data: for each, how to read its arguments and whether Landlock enforces the
 * same decision (so an allowed call inside the floor may simply continue). Pure: no kernel access here.
 *
 * Argument roles:
 *   path  a pathname pointer        dirfd  a directory fd for the next path (AT_FDCWD = -100)
 *   fd    an fd the call acts on    flags  open flags / AT_* flags      mode  a mode
 */

export type WriteKind =
  | "open"
  | "truncate"
  | "mkdir"
  | "mknod"
  | "unlink"
  | "rmdir"
  | "rename"
  | "link"
  | "symlink"
  | "chmod"
  | "chown"
  | "utime"
  | "setxattr"
  | "removexattr";

export interface WriteCall {
  name: string;
  kind: WriteKind;
  /** Index of the dirfd argument for the (first) path, or -1 for AT_FDCWD. */
  dirfd: number;
  /** Index of the (first) path argument, or -1 for an fd form. */
  path: number;
  /** For fd forms: the fd argument. */
  fd?: number;
  /** rename/link: the second dirfd and path (the destination). */
  dirfd2?: number;
  path2?: number;
  /** open flags argument, or a fixed value (creat). */
  openFlags?: number | { fixed: number };
  /** mode argument. */
  mode?: number;
  /** AT_* flags argument. */
  atFlags?: number;
  /** Whether the last path component is followed when it is a symlink (before AT_* flags are applied). */
  follow: boolean;
  /** Landlock (ABI ≥ 3) enforces the same write decision, so CONTINUE is safe for allowed calls in the floor. */
  landlock: boolean;
}

const W = (c: Omit<WriteCall, "dirfd"> & { dirfd?: number }): WriteCall => ({ dirfd: -1, ...c });

/** Write-category system calls, by name (numbers come from libseccomp for the native architecture). */
export const WRITE_CALLS: readonly WriteCall[] = [
  W({ name: "open", kind: "open", path: 0, openFlags: 1, mode: 2, follow: true, landlock: true }),
  W({
    name: "creat",
    kind: "open",
    path: 0,
    openFlags: { fixed: 0o1101 },
    mode: 1,
    follow: true,
    landlock: true,
  }),
  W({ name: "openat", kind: "open", dirfd: 0, path: 1, openFlags: 2, mode: 3, follow: true, landlock: true }),
  W({ name: "truncate", kind: "truncate", path: 0, follow: true, landlock: true }),
  W({ name: "mkdir", kind: "mkdir", path: 0, mode: 1, follow: false, landlock: true }),
  W({ name: "mkdirat", kind: "mkdir", dirfd: 0, path: 1, mode: 2, follow: false, landlock: true }),
  W({ name: "mknod", kind: "mknod", path: 0, mode: 1, follow: false, landlock: true }),
  W({ name: "mknodat", kind: "mknod", dirfd: 0, path: 1, mode: 2, follow: false, landlock: true }),
  W({ name: "unlink", kind: "unlink", path: 0, follow: false, landlock: true }),
  W({ name: "unlinkat", kind: "unlink", dirfd: 0, path: 1, atFlags: 2, follow: false, landlock: true }),
  W({ name: "rmdir", kind: "rmdir", path: 0, follow: false, landlock: true }),
  W({ name: "rename", kind: "rename", path: 0, path2: 1, dirfd2: -1, follow: false, landlock: true }),
  W({
    name: "renameat",
    kind: "rename",
    dirfd: 0,
    path: 1,
    dirfd2: 2,
    path2: 3,
    follow: false,
    landlock: true,
  }),
  W({
    name: "renameat2",
    kind: "rename",
    dirfd: 0,
    path: 1,
    dirfd2: 2,
    path2: 3,
    atFlags: 4,
    follow: false,
    landlock: true,
  }),
  W({ name: "link", kind: "link", path: 0, path2: 1, dirfd2: -1, follow: false, landlock: true }),
  W({
    name: "linkat",
    kind: "link",
    dirfd: 0,
    path: 1,
    dirfd2: 2,
    path2: 3,
    atFlags: 4,
    follow: false,
    landlock: true,
  }),
  // symlink(target, linkpath): the target is text, not a path that is written; linkpath is created.
  W({ name: "symlink", kind: "symlink", path: 1, follow: false, landlock: true }),
  W({ name: "symlinkat", kind: "symlink", dirfd: 1, path: 2, follow: false, landlock: true }),
  // Landlock does not cover the metadata calls: always emulated when allowed.
  W({ name: "chmod", kind: "chmod", path: 0, mode: 1, follow: true, landlock: false }),
  W({ name: "fchmod", kind: "chmod", path: -1, fd: 0, mode: 1, follow: true, landlock: false }),
  W({ name: "fchmodat", kind: "chmod", dirfd: 0, path: 1, mode: 2, follow: true, landlock: false }),
  W({
    name: "fchmodat2",
    kind: "chmod",
    dirfd: 0,
    path: 1,
    mode: 2,
    atFlags: 3,
    follow: true,
    landlock: false,
  }),
  W({ name: "chown", kind: "chown", path: 0, follow: true, landlock: false }),
  W({ name: "lchown", kind: "chown", path: 0, follow: false, landlock: false }),
  W({ name: "fchown", kind: "chown", path: -1, fd: 0, follow: true, landlock: false }),
  W({ name: "fchownat", kind: "chown", dirfd: 0, path: 1, atFlags: 4, follow: true, landlock: false }),
  W({ name: "utime", kind: "utime", path: 0, follow: true, landlock: false }),
  W({ name: "utimes", kind: "utime", path: 0, follow: true, landlock: false }),
  W({ name: "futimesat", kind: "utime", dirfd: 0, path: 1, follow: true, landlock: false }),
  // utimensat(dirfd, NULL, times, 0) is the fd form (futimens): handled by the worker.
  W({ name: "utimensat", kind: "utime", dirfd: 0, path: 1, atFlags: 3, follow: true, landlock: false }),
  W({ name: "setxattr", kind: "setxattr", path: 0, follow: true, landlock: false }),
  W({ name: "lsetxattr", kind: "setxattr", path: 0, follow: false, landlock: false }),
  W({ name: "fsetxattr", kind: "setxattr", path: -1, fd: 0, follow: true, landlock: false }),
  W({ name: "removexattr", kind: "removexattr", path: 0, follow: true, landlock: false }),
  W({ name: "lremovexattr", kind: "removexattr", path: 0, follow: false, landlock: false }),
  W({ name: "fremovexattr", kind: "removexattr", path: -1, fd: 0, follow: true, landlock: false }),
];

/** Raw syscall numbers for calls newer than libseccomp 2.5 knows by name (x86_64 and aarch64 share them). */
export const NEW_SYSCALL_NUMBERS: Record<string, number> = {
  fchmodat2: 452,
  setxattrat: 463,
  removexattrat: 466,
  open_tree_attr: 467,
  file_setattr: 469,
};

export const AT_FDCWD = -100;
export const AT_SYMLINK_NOFOLLOW = 0x100;
export const AT_REMOVEDIR = 0x200;
export const AT_SYMLINK_FOLLOW = 0x400;
export const AT_EMPTY_PATH = 0x1000;
export const O_WRITE_MASK = 0o1 | 0o2 | 0o100 | 0o1000; // O_WRONLY|O_RDWR|O_CREAT|O_TRUNC

/**
 * The calls that change a thread's ids, groups or capabilities (user namespaces are refused:
 * lib/filter/filter_plan.ts), and its umask.
 */
export const CREDENTIAL_CALLS = [
  "setuid",
  "setgid",
  "setreuid",
  "setregid",
  "setresuid",
  "setresgid",
  "setfsuid",
  "setfsgid",
  "setgroups",
  "capset",
  // not a credential, but kept with them: the umask a performed create applies
  "umask",
] as const;
