/**
 * The seccomp profile that sends a pod's calls to `hallpass agent` (docs/kubernetes.md): the workstation filter
 * (lib/filter/filter_plan.ts, compiled there through libseccomp by ffi/seccomp.ts) written in the OCI runtime-spec
 * `linux.seccomp` format, which is what the kubelet's Localhost profiles are
 * (`/var/lib/kubelet/seccomp/profiles/hallpass.json`, read by containerd and CRI-O, applied by runc or crun).
 * Pure: no kernel access, no libseccomp.
 *
 * How the plan maps onto the format:
 * * `defaultAction: SCMP_ACT_ALLOW`, as the workstation filter: what is not listed runs.
 * * Each plan entry becomes a `syscalls` entry: notify → `SCMP_ACT_NOTIFY`, errno → `SCMP_ACT_ERRNO` with
 *   `errnoRet`. Entries with the same action, errno and arguments are merged into one entry with several
 *   `names` (the runtimes add one rule per name, so this changes nothing but the length of the file).
 * * Argument conditions: several entries for one call are OR-ed and the `args` of one entry are AND-ed, as in
 *   libseccomp, which both runc and crun call. libseccomp's masked-equal `(arg & mask) == datum` is written
 *   `{op: SCMP_CMP_MASKED_EQ, value: mask, valueTwo: datum}` (runc passes value, valueTwo to
 *   `MakeCondition`, crun to `datum_a`, `datum_b`). No entry compares the same argument twice: runc and crun
 *   then add each comparison as its own rule, which turns the AND into an OR.
 * * Calls newer than libseccomp 2.5 that the plan names by number (`fchmodat2`, `setxattrat`, `removexattrat`,
 *   `file_setattr`) are written by name, since the format has names only. A runtime whose libseccomp does not
 *   know a name skips that entry (runc logs it at debug level, crun warns) and, under `SCMP_ACT_ALLOW`, the
 *   call then runs unmediated: the node's libseccomp must know them (2.5.5 knows fchmodat2; the xattr*at calls
 *   of Linux 6.13 and file_setattr of 6.17 need a libseccomp that lists them). The workstation filter has no such gap: it uses the numbers.
 *
 * Architectures, and what happens to 32-bit and x32 calls: the workstation filter refuses every call made
 * through another ABI with ENOSYS (libseccomp's bad-architecture action, set in lib/sandbox/run.ts). The OCI format has
 * no field for that action; runc and crun leave libseccomp's default, `SCMP_ACT_KILL` (kill the thread). The
 * profile lists `SCMP_ARCH_X86_64` and `SCMP_ARCH_AARCH64` (the two architectures hallpass is released for; the
 * runtime also always adds the node's native one) and deliberately not `SCMP_ARCH_X86`, `SCMP_ARCH_X32` or
 * `SCMP_ARCH_ARM`: listing them would make their calls go through the rules (the agent would have to decode
 * i386 and x32 call numbers), and leaving them out makes a 32-bit (`int 0x80`) or x32 call kill the thread that
 * made it, which libseccomp also does for x32 numbers on an x86_64-only filter. So those calls are refused, as
 * on the workstation, only more abruptly (SIGSYS instead of ENOSYS).
 *
 * Nothing had to fall back to NOTIFY: every condition of the plan (open flags, ioctl request, clone and unshare
 * flags) is a single masked-equal comparison, which the format expresses exactly. Calls whose arguments live in
 * memory (clone3, openat2) are refused outright by the plan already, as on the workstation.
 *
 * @example
 * ```ts
 * const profile = seccompProfile({ listenerPath: "/var/run/hallpass/agent.sock" });
 * Deno.writeTextFileSync("hallpass.json", JSON.stringify(profile, null, 2) + "\n");
 * notifiedSyscalls({ connect: false }); // ["open", "creat", "openat", …, "execve", "execveat"]
 * ```
 *
 * @module
 */

import { type FilterArg, type FilterEntry, filterPlan } from "../filter/filter_plan.ts";
import { NEW_SYSCALL_NUMBERS } from "../filter/syscall_table.ts";

/** Where the agent listens for the runtimes' seccomp fds (a path on the node). */
export const DEFAULT_LISTENER_PATH = "/var/run/hallpass/agent.sock";

/** The comparison operators of the OCI format (libseccomp's `enum scmp_compare`). */
export type OciSeccompOperator =
  | "SCMP_CMP_NE"
  | "SCMP_CMP_LT"
  | "SCMP_CMP_LE"
  | "SCMP_CMP_EQ"
  | "SCMP_CMP_GE"
  | "SCMP_CMP_GT"
  | "SCMP_CMP_MASKED_EQ";

/** One argument comparison; for `SCMP_CMP_MASKED_EQ`, `value` is the mask and `valueTwo` the datum. */
export interface OciSeccompArg {
  index: number;
  value: number;
  valueTwo?: number;
  op: OciSeccompOperator;
}

/** One `syscalls` entry. */
export interface OciSyscall {
  names: string[];
  action: "SCMP_ACT_NOTIFY" | "SCMP_ACT_ERRNO";
  errnoRet?: number;
  args?: OciSeccompArg[];
}

/** The profile: an OCI runtime-spec `linux.seccomp` object, as the kubelet's Localhost profiles are. */
export interface OciSeccompProfile {
  defaultAction: "SCMP_ACT_ALLOW";
  architectures: string[];
  listenerPath: string;
  listenerMetadata?: string;
  syscalls: OciSyscall[];
}

export interface SeccompProfileOptions {
  /** The agent's socket, a path on the node (runc and crun connect to it from the node's mount namespace). */
  listenerPath: string;
  /**
   * Passed to the agent with each container's fd (`metadata` of the ContainerProcessState). Default:
   * {@linkcode profileMetadata}, which tells the agent which categories this profile traps.
   */
  listenerMetadata?: string;
  /** Trap connect, sendto, sendmsg and sendmmsg too (the workstation's `--mediate …,connect`). Default false. */
  connect?: boolean;
  /**
   * Trap every open and openat, reads too (`hallpass-protect.json`): for pods whose rules `protect` paths. The
   * agent refuses those and performs every other open itself (docs/kubernetes.md). Default false.
   */
  reads?: boolean;
}

/** The architectures the profile's rules apply to; other ABIs get the runtime's bad-architecture action. */
export const PROFILE_ARCHITECTURES: readonly string[] = ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"];

const METADATA_PREFIX = "hallpass/1";

/**
 * The default `listenerMetadata`: `hallpass/1 mediate=write,exec` (`,connect` when connect is trapped), so the
 * agent knows what a container's profile sends it (an `allow connect` rule means nothing for a pod whose
 * profile does not trap connect).
 */
export function profileMetadata(o: { connect?: boolean; reads?: boolean } = {}): string {
  return `${METADATA_PREFIX} mediate=write,exec${o.reads ? ",read" : ""}${o.connect ? ",connect" : ""}`;
}

/**
 * Reads {@linkcode profileMetadata}'s format back: the categories trapped, or null for metadata that is not
 * hallpass's (an unknown prefix, or a category that does not exist).
 */
export function parseProfileMetadata(
  text: string,
): { mediate: Set<"write" | "exec" | "read" | "connect"> } | null {
  const m = /^hallpass\/1 mediate=([a-z,]+)$/.exec(text);
  if (m === null) return null;
  const mediate = new Set<"write" | "exec" | "read" | "connect">();
  for (const c of m[1].split(",")) {
    if (c !== "write" && c !== "exec" && c !== "read" && c !== "connect") return null;
    mediate.add(c);
  }
  return mediate.has("write") && mediate.has("exec") ? { mediate } : null;
}

/** The Localhost seccomp profile for pods whose calls `hallpass agent` mediates. */
export function seccompProfile(o: SeccompProfileOptions): OciSeccompProfile {
  if (!o.listenerPath.startsWith("/")) {
    throw new Error(
      `listenerPath must be an absolute path on the node, got ${JSON.stringify(o.listenerPath)}`,
    );
  }
  const connect = o.connect ?? false, reads = o.reads ?? false;
  const syscalls = profileSyscalls(filterPlan({ mediateConnect: connect, mediateReads: reads }));
  // runc refuses a profile that notifies write(2): it needs write to hand the listener fd to its parent.
  if (syscalls.some((s) => s.action === "SCMP_ACT_NOTIFY" && s.names.includes("write"))) {
    throw new Error("the filter plan notifies write(2), which runc refuses");
  }
  return {
    defaultAction: "SCMP_ACT_ALLOW",
    architectures: [...PROFILE_ARCHITECTURES],
    listenerPath: o.listenerPath,
    listenerMetadata: o.listenerMetadata ?? profileMetadata({ connect, reads }),
    syscalls,
  };
}

/**
 * The names of the calls the profile sends to the agent (some only for some arguments, e.g. openat only when
 * it may write): the agent must answer a notification for each of them, and for nothing else.
 */
export function notifiedSyscalls(o: { connect?: boolean; reads?: boolean } = {}): string[] {
  const names = new Set<string>();
  for (const e of filterPlan({ mediateConnect: o.connect ?? false, mediateReads: o.reads ?? false })) {
    if (e.action.kind === "notify") names.add(syscallName(e.syscall));
  }
  return [...names];
}

/** The plan's entries in the OCI form, merged where only the name differs. Exported for the tests. */
export function profileSyscalls(plan: readonly FilterEntry[]): OciSyscall[] {
  const out: OciSyscall[] = [];
  const byKey = new Map<string, OciSyscall>();
  for (const e of plan) {
    const entry: OciSyscall = e.action.kind === "notify"
      ? { names: [], action: "SCMP_ACT_NOTIFY" }
      : { names: [], action: "SCMP_ACT_ERRNO", errnoRet: e.action.errno };
    if (e.args !== undefined && e.args.length > 0) entry.args = ociArgs(e.args, e);
    const key = JSON.stringify({ ...entry, names: undefined });
    const name = syscallName(e.syscall);
    const same = byKey.get(key);
    if (same !== undefined) {
      if (!same.names.includes(name)) same.names.push(name);
      continue;
    }
    entry.names.push(name);
    byKey.set(key, entry);
    out.push(entry);
  }
  return out;
}

function ociArgs(args: readonly FilterArg[], e: FilterEntry): OciSeccompArg[] {
  const seen = new Set<number>();
  return args.map((a) => {
    if (seen.has(a.arg)) {
      // runc and crun would split such an entry into one rule per comparison (an OR instead of an AND).
      throw new Error(`${syscallName(e.syscall)}: two comparisons of argument ${a.arg} in one entry`);
    }
    seen.add(a.arg);
    if (a.op === "eq") return { index: a.arg, value: u64(a.value, e), op: "SCMP_CMP_EQ" };
    if (a.op === "ne") return { index: a.arg, value: u64(a.value, e), op: "SCMP_CMP_NE" };
    if (a.op === "gt") return { index: a.arg, value: u64(a.value, e), op: "SCMP_CMP_GT" };
    if (a.mask === undefined) throw new Error(`${syscallName(e.syscall)}: masked_eq without a mask`);
    return {
      index: a.arg,
      value: u64(a.mask, e),
      valueTwo: u64(a.value, e),
      op: "SCMP_CMP_MASKED_EQ",
    };
  });
}

/** A JSON number that is exactly the 64-bit value (JSON parsers in the runtimes read uint64; we stay exact). */
function u64(v: bigint, e: FilterEntry): number {
  if (v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new Error(`${syscallName(e.syscall)}: ${v} cannot be written exactly as a JSON number`);
  }
  return Number(v);
}

/** The plan names new calls by number (libseccomp 2.5 does not know them); the format wants names. */
function syscallName(s: string | number): string {
  if (typeof s === "string") return s;
  for (const [name, nr] of Object.entries(NEW_SYSCALL_NUMBERS)) if (nr === s) return name;
  throw new Error(`system call number ${s} has no name in NEW_SYSCALL_NUMBERS`);
}
