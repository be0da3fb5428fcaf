/**
 * The seccomp filter as data: which system calls are trapped for the supervisor, which are always refused,
 * and why. Pure; ffi/seccomp.ts compiles it. Everything not listed is allowed by the filter (Landlock still
 * applies to it).
 */
import { CREDENTIAL_CALLS, NEW_SYSCALL_NUMBERS, WRITE_CALLS } from "./syscall_table.ts";
import { refusedSockets } from "../policy/socket_policy.ts";
import { sysFilterEntries } from "./filter_sys.ts";
import { Errno } from "../../ffi/errors.ts";

export type FilterAction = { kind: "notify" } | { kind: "errno"; errno: number };

export interface FilterArg {
  arg: number;
  /** libseccomp comparison: masked-equal ((arg & mask) == value), equal, not equal, greater (64 bits). */
  op: "masked_eq" | "eq" | "ne" | "gt";
  mask?: bigint;
  value: bigint;
}

export interface FilterEntry {
  syscall: string | number;
  action: FilterAction;
  /** All must hold for this entry; several entries for one call are alternatives. */
  args?: FilterArg[];
  why: string;
}

const { EPERM, EACCES, ENOSYS } = Errno;

const NOTIFY: FilterAction = { kind: "notify" };

export interface FilterOptions {
  mediateConnect: boolean;
  /**
   * Trap every open, reads too (the Kubernetes agent's protect profile, lib/agent/profile.ts): the agent refuses
   * read-protected paths and performs the other opens itself. Never on a workstation (Landlock refuses reads).
   */
  mediateReads?: boolean;
}

export function filterPlan(opts: FilterOptions): FilterEntry[] {
  const plan: FilterEntry[] = [];
  const sys = (name: string): string | number => NEW_SYSCALL_NUMBERS[name] ?? name;

  for (const c of WRITE_CALLS) {
    if (c.kind === "open" && typeof c.openFlags === "number" && opts.mediateReads) {
      plan.push({ syscall: c.name, action: NOTIFY, why: `read and write: every ${c.name}` });
      continue;
    }
    if (c.kind === "open" && typeof c.openFlags === "number") {
      // Only opens that can write are trapped: reads never wait for the supervisor.
      for (const bit of [0o1, 0o2, 0o100, 0o1000]) {
        plan.push({
          syscall: c.name,
          action: NOTIFY,
          args: [{ arg: c.openFlags, op: "masked_eq", mask: BigInt(bit), value: BigInt(bit) }],
          why: `write: ${c.name} with a write, create or truncate flag`,
        });
      }
      continue;
    }
    plan.push({ syscall: sys(c.name), action: NOTIFY, why: `write: ${c.name}` });
  }

  // bind of a unix socket creates a file: a write (Landlock would refuse it outside the floor, unasked).
  plan.push({ syscall: "bind", action: NOTIFY, why: "write: bind creates a unix socket's file" });

  // exec is always trapped: hallpass-request's magic path must be answered even when exec is not mediated.
  plan.push({ syscall: "execve", action: NOTIFY, why: "exec: program runs and hallpass-request" });
  plan.push({ syscall: "execveat", action: NOTIFY, why: "exec: program runs by fd" });

  // Not decided, only seen: the supervisor's fast path keeps each thread's working directory instead of
  // reading it for every relative path, and must know when one changes. Always continued.
  plan.push({
    syscall: "chdir",
    action: NOTIFY,
    why: "cwd: the fast path must know when a directory changes",
  });
  plan.push({
    syscall: "fchdir",
    action: NOTIFY,
    why: "cwd: the fast path must know when a directory changes",
  });
  // Not decided, only seen, as chdir: the fast path keeps whether a thread's credentials are the supervisor's
  // (it performs chmod/chown/utimensat with them) instead of reading /proc for every call, and must know when
  // a thread changes them (exec is trapped above). Always continued.
  for (const name of CREDENTIAL_CALLS) {
    plan.push({
      syscall: name,
      action: NOTIFY,
      why: "creds: the fast path must know when credentials change",
    });
  }

  // Connects and sends with a destination, in every mode: unix sockets (local IPC) are always decided, network
  // destinations under --mediate connect (lib/policy/socket_policy.ts). sendto without an address (send(2)) goes to
  // the connected peer, decided at connect: its address is a register, so the filter can tell.
  for (const s of ["connect", "sendmsg", "sendmmsg"]) {
    plan.push({ syscall: s, action: NOTIFY, why: `connect: ${s}` });
  }
  plan.push({
    syscall: "sendto",
    action: NOTIFY,
    args: [{ arg: 4, op: "ne", value: 0n }],
    why: "connect: sendto with a destination",
  });
  if (opts.mediateConnect) {
    plan.push({ syscall: "listen", action: NOTIFY, why: "connect: inbound TCP (listen on a port)" });
    for (const r of refusedSockets()) {
      plan.push({ syscall: "socket", action: { kind: "errno", errno: EACCES }, args: r.args, why: r.why });
    }
  }

  const refuse = (syscall: string | number, errno: number, why: string, args?: FilterArg[]) =>
    plan.push({ syscall, action: { kind: "errno", errno }, why, args });
  // docs/threat-model.md: ways around the supervisor.
  refuse("openat2", ENOSYS, "its flags live in a struct the filter cannot read; libc falls back to openat");
  refuse("open_by_handle_at", EPERM, "opens by file handle, bypassing path checks");
  refuse("io_uring_setup", ENOSYS, "io_uring operations bypass seccomp");
  refuse("io_uring_enter", ENOSYS, "io_uring operations bypass seccomp");
  refuse("io_uring_register", ENOSYS, "io_uring operations bypass seccomp");
  refuse(sys("setxattrat"), ENOSYS, "new xattr call (Linux 6.13); libc falls back to setxattr");
  refuse(sys("removexattrat"), ENOSYS, "new xattr call (Linux 6.13); libc falls back to removexattr");
  // Sets a file's flags by path (the new form of FS_IOC_FSSETXATTR, which is decided: lib/filter/filter_sys.ts).
  refuse(sys("file_setattr"), ENOSYS, "new file-flags call (Linux 6.17); chattr and xfs_io use the ioctl");
  // Terminal input injection: compare only the low 32 bits (the kernel ignores the high ones: CVE-2019-10063).
  for (const req of [0x5412n, /* TIOCSTI */ 0x541cn /* TIOCLINUX */]) {
    refuse("ioctl", EPERM, "terminal input injection", [{
      arg: 1,
      op: "masked_eq",
      mask: 0xffffffffn,
      value: req,
    }]);
  }
  // File leases: a lease the sandbox takes on a file it may only read (your ~/.bashrc, a repository's config)
  // makes every opener outside that writes or truncates it wait for the lease break (45 s by default).
  refuse("fcntl", EACCES, "file leases would make programs outside wait", [{
    arg: 1,
    op: "masked_eq",
    mask: 0xffffffffn,
    value: 1024n, /* F_SETLEASE */
  }]);
  // User namespaces (and so new mount namespaces) are refused; clone3 keeps its flags in a struct.
  const CLONE_NEWUSER = 0x10000000n;
  refuse("unshare", EPERM, "user namespaces", [{
    arg: 0,
    op: "masked_eq",
    mask: CLONE_NEWUSER,
    value: CLONE_NEWUSER,
  }]);
  refuse("clone", EPERM, "user namespaces", [{
    arg: 0,
    op: "masked_eq",
    mask: CLONE_NEWUSER,
    value: CLONE_NEWUSER,
  }]);
  refuse("clone3", ENOSYS, "its flags live in a struct the filter cannot read; libc falls back to clone");
  refuse("setns", EPERM, "entering other namespaces");
  // The supervisor reads a path from the real root (or, in a container, the process's own); after a chroot a
  // root-run program's paths would name other files than the ones decided (an exec of /usr/bin/x would run
  // the jail's copy, which the sandbox wrote).
  refuse("chroot", EPERM, "a new root would make paths name other files than the ones decided");
  // userfaultfd could stall the supervisor's reads of the sandbox's memory.
  refuse("userfaultfd", EPERM, "could stall the supervisor while it reads arguments");
  // Other processes, keyrings, file ioctls, system-wide calls (lib/filter/filter_sys.ts).
  plan.push(...sysFilterEntries());
  return plan;
}
