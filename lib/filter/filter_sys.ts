/**
 * The filter's entries for what is not a file write, an exec or a connect (docs/threat-model.md, "Other
 * processes, keyrings, ioctls and system-wide calls" and "Root"): calls that change the whole system are
 * refused outright; calls aimed at another process, keyring calls and file-changing ioctls go to the
 * supervisor (lib/supervisor/sys_calls.ts), which decides them. Pure data, added to lib/filter/filter_plan.ts.
 */
import type { FilterArg, FilterEntry } from "./filter_plan.ts";
import { NEW_SYSCALL_NUMBERS } from "./syscall_table.ts";
import { Errno } from "../../ffi/errors.ts";

const { EPERM } = Errno;

/**
 * System-wide calls: refused for every sandbox, root or not. Without their capability (dropped for root by the
 * launcher, never held otherwise) the kernel refuses most of them too; refusing them here holds even where
 * a capability is left, and for unprivileged paths the kernel opens (unprivileged bpf, syslog with
 * dmesg_restrict=0). Calls newer than libseccomp 2.5 go by number (syscall_table.ts NEW_SYSCALL_NUMBERS).
 */
export const SYSTEM_WIDE_CALLS: readonly string[] = [
  "reboot",
  "kexec_load",
  "kexec_file_load",
  "init_module",
  "finit_module",
  "delete_module",
  "bpf",
  "syslog",
  "sethostname",
  "setdomainname",
  "swapon",
  "swapoff",
  "acct",
  "settimeofday",
  "clock_settime",
  "clock_adjtime",
  "adjtimex",
  "quotactl",
  "quotactl_fd",
  "mount",
  "umount2",
  "pivot_root",
  "move_mount",
  "open_tree",
  "fsopen",
  "fsconfig",
  "fsmount",
  "fspick",
  "mount_setattr",
  "lookup_dcookie",
  "ioperm",
  "iopl",
  "uselib",
  "vhangup",
  "fanotify_init",
  "nfsservctl",
  "open_tree_attr",
];

/**
 * Namespace flags of clone/unshare. CLONE_NEWUSER is refused by filter_plan.ts already; the others need
 * CAP_SYS_ADMIN (dropped for root) and would let a root-run program mount or renumber pids. CLONE_NEWTIME
 * (0x80) is an unshare flag only: in clone's flags those bits are the exit signal.
 */
export const NAMESPACE_FLAGS: readonly { name: string; bit: bigint; unshareOnly?: boolean }[] = [
  { name: "CLONE_NEWNS", bit: 0x00020000n },
  { name: "CLONE_NEWCGROUP", bit: 0x02000000n },
  { name: "CLONE_NEWUTS", bit: 0x04000000n },
  { name: "CLONE_NEWIPC", bit: 0x08000000n },
  { name: "CLONE_NEWPID", bit: 0x20000000n },
  { name: "CLONE_NEWNET", bit: 0x40000000n },
  { name: "CLONE_NEWTIME", bit: 0x80n, unshareOnly: true },
];

/** The kernel keyring calls: refused (EPERM) in the supervisor unless `--allow-keyring`. */
export const KEYRING_CALLS: readonly string[] = ["add_key", "keyctl", "request_key"];

/**
 * Calls that change another process, with the argument that names it. The filter traps them only when that
 * argument is not 0 (0 = the caller itself); the supervisor then continues them for the sandbox's own
 * processes and answers EPERM for any other. `which` (setpriority, ioprio_set): only a process may be named;
 * a process group or a user (every process of the uid) is refused outright.
 *
 * Not here because Landlock already refuses them for a process outside the sandbox (its ptrace check, which
 * the kernel makes for each of them): kcmp, process_madvise, process_vm_readv/writev, migrate_pages,
 * move_pages, pidfd_getfd, perf_event_open, get_robust_list, ptrace. Signals (kill, tgkill, pidfd_send_signal,
 * F_SETOWN's SIGIO) are Landlock's signal scope.
 */
export const PROCESS_CALLS: readonly {
  name: string;
  pid: number;
  /** Only this many of the process-selecting first argument values are a single process (PRIO_PROCESS). */
  which?: { arg: number; process: bigint; others: bigint[] };
  /** Trap only when this argument (the new value) is not NULL: reading another process's value is harmless. */
  setter?: number;
}[] = [
  { name: "prlimit64", pid: 0, setter: 2 },
  { name: "setpriority", pid: 1, which: { arg: 0, process: 0n, others: [1n, 2n] } }, // PRIO_PGRP, PRIO_USER
  { name: "ioprio_set", pid: 1, which: { arg: 0, process: 1n, others: [2n, 3n] } }, // IOPRIO_WHO_PGRP, _USER
  { name: "sched_setaffinity", pid: 0 },
  { name: "sched_setscheduler", pid: 0 },
  { name: "sched_setparam", pid: 0 },
  { name: "sched_setattr", pid: 0 },
  { name: "pidfd_open", pid: 0 },
];

/** _IOC(dir, type, nr, size) as the kernel builds an ioctl request number (low 32 bits). */
const ioc = (dir: number, type: number, nr: number, size: number): bigint =>
  BigInt(((dir << 30) | (size << 16) | (type << 8) | nr) >>> 0);
const W = 1, R = 2, RW = 3;
const f = 0x66, v = 0x76, X = 0x58;

/**
 * ioctls that change a file (its flags, version, attributes, encryption, verity, extents) through an fd,
 * read from include/uapi/linux/fs.h, fscrypt.h, fsverity.h and ext4's ioctls: the supervisor lets one through
 * only when the rules allow writing the fd's file (lib/supervisor/sys_calls.ts). A read-only fd is enough for
 * the kernel for most of them (it checks ownership, not the open mode), which is why Landlock does not see
 * them.
 */
export const FILE_IOCTLS: Record<string, bigint> = {
  FS_IOC_SETFLAGS: ioc(W, f, 2, 8),
  FS_IOC32_SETFLAGS: ioc(W, f, 2, 4),
  FS_IOC_SETVERSION: ioc(W, v, 2, 8),
  FS_IOC32_SETVERSION: ioc(W, v, 2, 4),
  EXT4_IOC_SETVERSION: ioc(W, f, 4, 8),
  EXT4_IOC32_SETVERSION: ioc(W, f, 4, 4),
  FS_IOC_FSSETXATTR: ioc(W, X, 32, 28),
  FS_IOC_SET_ENCRYPTION_POLICY: ioc(R, f, 19, 12),
  FS_IOC_ENABLE_VERITY: ioc(W, f, 133, 128),
  EXT4_IOC_MOVE_EXT: ioc(RW, f, 15, 40),
  EXT4_IOC_MIGRATE: ioc(0, f, 9, 0),
  EXT4_IOC_ALLOC_DA_BLKS: ioc(0, f, 12, 0),
};

/**
 * ioctls that change a whole file system or its keys: refused outright (most need CAP_SYS_ADMIN or
 * CAP_SYS_RESOURCE, which root's sandbox does not keep; the fscrypt key calls do not).
 */
export const FS_WIDE_IOCTLS: Record<string, bigint> = {
  FS_IOC_ADD_ENCRYPTION_KEY: ioc(RW, f, 23, 80),
  FS_IOC_REMOVE_ENCRYPTION_KEY: ioc(RW, f, 24, 64),
  FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS: ioc(RW, f, 25, 64),
  FITRIM: ioc(RW, X, 121, 24),
  FIFREEZE: ioc(RW, X, 119, 4),
  FITHAW: ioc(RW, X, 120, 4),
  FS_IOC_SHUTDOWN: ioc(R, X, 125, 4),
  EXT4_IOC_GROUP_EXTEND: ioc(W, f, 7, 8),
  EXT4_IOC_GROUP_ADD: ioc(W, f, 8, 40),
  EXT4_IOC_RESIZE_FS: ioc(W, f, 16, 8),
  EXT4_IOC_SWAP_BOOT: ioc(0, f, 17, 0),
  EXT4_IOC_SETFSUUID: ioc(W, f, 44, 8),
};

/**
 * The ioctl type 0x94 (BTRFS_IOCTL_MAGIC, also FICLONE, FICLONERANGE, FIDEDUPERANGE, FS_IOC_SETFSLABEL) is
 * trapped whole: btrfs creates and deletes subvolumes and snapshots through ioctls on a directory fd, which
 * Landlock does not see. The supervisor decides them like the other file ioctls.
 */
export const IOCTL_TYPE_BTRFS = 0x94n;

export const FICLONE = ioc(W, 0x94, 9, 4);
export const FICLONERANGE = ioc(W, 0x94, 13, 32);
export const FIDEDUPERANGE = ioc(RW, 0x94, 54, 24);

/** `which` is an int: the kernel ignores the high bits, so the filter must too. */
const low32 = (arg: number, value: bigint): FilterArg => ({ arg, op: "masked_eq", mask: 0xffffffffn, value });

/** The filter entries (added by filterPlan). */
export function sysFilterEntries(): FilterEntry[] {
  const out: FilterEntry[] = [];
  const refuse = (syscall: string | number, why: string, args?: FilterArg[]) =>
    out.push({ syscall, action: { kind: "errno", errno: EPERM }, why, args });
  const notify = (syscall: string, why: string, args?: FilterArg[]) =>
    out.push({ syscall, action: { kind: "notify" }, why, args });

  for (const s of SYSTEM_WIDE_CALLS) {
    refuse(NEW_SYSCALL_NUMBERS[s] ?? s, "system-wide: changes the machine, not the project");
  }
  for (const ns of NAMESPACE_FLAGS) {
    const arg: FilterArg[] = [{ arg: 0, op: "masked_eq", mask: ns.bit, value: ns.bit }];
    refuse("unshare", `namespaces: ${ns.name}`, arg);
    if (!ns.unshareOnly) refuse("clone", `namespaces: ${ns.name}`, arg);
  }
  for (const s of KEYRING_CALLS) notify(s, "keyring: refused unless --allow-keyring");

  for (const c of PROCESS_CALLS) {
    const target: FilterArg = { arg: c.pid, op: "ne", value: 0n };
    const setter: FilterArg[] = c.setter === undefined ? [] : [{ arg: c.setter, op: "ne", value: 0n }];
    if (c.which) {
      for (const w of c.which.others) {
        refuse(c.name, "another process group or user: refused", [low32(c.which.arg, w)]);
      }
      notify(c.name, "another process: only the sandbox's own", [
        low32(c.which.arg, c.which.process),
        target,
      ]);
    } else {
      notify(c.name, "another process: only the sandbox's own", [target, ...setter]);
    }
  }

  // ioctl request numbers: only the low 32 bits count (the kernel's cmd is an unsigned int).
  const req = (value: bigint, mask = 0xffffffffn): FilterArg[] => [{ arg: 1, op: "masked_eq", mask, value }];
  for (const [name, nr] of Object.entries(FILE_IOCTLS)) notify("ioctl", `file ioctl ${name}`, req(nr));
  for (const [name, nr] of Object.entries(FS_WIDE_IOCTLS)) {
    refuse("ioctl", `file-system ioctl ${name}`, req(nr));
  }
  notify("ioctl", "btrfs and clone ioctls (type 0x94)", req(IOCTL_TYPE_BTRFS << 8n, 0xff00n));
  return out;
}
