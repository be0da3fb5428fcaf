/**
 * System call numbers, per architecture (x86_64, aarch64): the only place outside the filter tables
 * (lib/filter/syscall_table.ts, libseccomp by name) that holds one. `SYS` is the table of the architecture hallpass
 * runs on. tests/syscall_numbers_test.ts checks both tables against the kernel headers of the build machine
 * (asm/unistd_64.h for x86_64, asm-generic/unistd.h for aarch64).
 */

export type SyscallName =
  | "execve"
  | "ioctl"
  | "fcntl"
  | "pipe2"
  | "waitid"
  | "gettid"
  | "tgkill"
  | "capget"
  | "capset"
  | "setgroups"
  | "setfsuid"
  | "setfsgid"
  | "utimensat"
  | "process_vm_readv"
  | "seccomp"
  | "memfd_create"
  | "pidfd_send_signal"
  | "pidfd_open"
  | "pidfd_getfd"
  | "openat2"
  | "landlock_create_ruleset"
  | "landlock_add_rule"
  | "landlock_restrict_self"
  | "fchmodat2"
  | "faccessat2"
  | "socket"
  | "bind"
  | "sendto"
  | "recvfrom"
  | "setsockopt"
  | "socketpair"
  | "sendmsg"
  | "recvmsg"
  | "umask"
  | "statx";

/** Calls numbered alike on every architecture since Linux 5.1 (the unified table). */
const COMMON = {
  pidfd_send_signal: 424,
  pidfd_open: 434,
  openat2: 437,
  pidfd_getfd: 438,
  landlock_create_ruleset: 444,
  landlock_add_rule: 445,
  landlock_restrict_self: 446,
  fchmodat2: 452,
  faccessat2: 439,
} as const;

export const SYSCALLS: Record<"x86_64" | "aarch64", Record<SyscallName, number>> = {
  x86_64: {
    execve: 59,
    ioctl: 16,
    fcntl: 72,
    pipe2: 293,
    waitid: 247,
    gettid: 186,
    tgkill: 234,
    capget: 125,
    capset: 126,
    setgroups: 116,
    setfsuid: 122,
    setfsgid: 123,
    utimensat: 280,
    process_vm_readv: 310,
    seccomp: 317,
    memfd_create: 319,
    socket: 41,
    bind: 49,
    sendto: 44,
    recvfrom: 45,
    setsockopt: 54,
    socketpair: 53,
    sendmsg: 46,
    recvmsg: 47,
    umask: 95,
    statx: 332,
    ...COMMON,
  },
  aarch64: {
    execve: 221,
    ioctl: 29,
    fcntl: 25,
    pipe2: 59,
    waitid: 95,
    gettid: 178,
    tgkill: 131,
    capget: 90,
    capset: 91,
    setgroups: 159,
    setfsuid: 151,
    setfsgid: 152,
    utimensat: 88,
    process_vm_readv: 270,
    seccomp: 277,
    memfd_create: 279,
    socket: 198,
    bind: 200,
    sendto: 206,
    recvfrom: 207,
    setsockopt: 208,
    socketpair: 199,
    sendmsg: 211,
    recvmsg: 212,
    umask: 166,
    statx: 291,
    ...COMMON,
  },
};

function native(): Record<SyscallName, number> {
  const a = Deno.build.arch;
  if (a !== "x86_64" && a !== "aarch64") throw new Error(`hallpass: unsupported architecture ${a}`);
  return SYSCALLS[a];
}

/** The numbers of the architecture hallpass runs on. */
export const SYS: Readonly<Record<SyscallName, number>> = native();
