/**
 * Landlock through raw system calls: the ABI version, and a ruleset built from a plan (lib/sandbox/plan.ts landlockPlan).
 * The ruleset fd is handed to the launcher, which calls landlock_restrict_self in the command's process.
 */
import { SysError } from "./errors.ts";
import { close, errno, fdType, libc, O, ptrOf, SYS, sys } from "./libc.ts";

export const FS = {
  EXECUTE: 1n << 0n,
  WRITE_FILE: 1n << 1n,
  READ_FILE: 1n << 2n,
  READ_DIR: 1n << 3n,
  REMOVE_DIR: 1n << 4n,
  REMOVE_FILE: 1n << 5n,
  MAKE_CHAR: 1n << 6n,
  MAKE_DIR: 1n << 7n,
  MAKE_REG: 1n << 8n,
  MAKE_SOCK: 1n << 9n,
  MAKE_FIFO: 1n << 10n,
  MAKE_BLOCK: 1n << 11n,
  MAKE_SYM: 1n << 12n,
  REFER: 1n << 13n,
  TRUNCATE: 1n << 14n,
  IOCTL_DEV: 1n << 15n,
} as const;
/** Rights that apply to a file (not a directory) in a path-beneath rule. */
export const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV;
export const NET = { BIND_TCP: 1n, CONNECT_TCP: 2n } as const;
export const SCOPE = { ABSTRACT_UNIX_SOCKET: 1n, SIGNAL: 2n } as const;

/** The Landlock ABI version, 0 when Landlock is unavailable (disabled or too old a kernel). */
export function landlockAbi(): number {
  const r = sys(SYS.landlock_create_ruleset, 0, 0, 1 /* LANDLOCK_CREATE_RULESET_VERSION */);
  return r < 0 ? 0 : r;
}

export interface LandlockRuleset {
  handledFs: bigint;
  handledNet: bigint;
  scoped: bigint;
  /**
   * `dir` set (carved rules, lib/floor/landlock_carve.ts): the path is opened without following a symlink and must
   * still be a directory (true) or not one (false), else it is skipped; no stat is needed (fast with
   * thousands of rules).
   */
  paths: { path: string; access: bigint; dir?: boolean }[];
  ports: { port: number; access: bigint }[];
}

/**
 * Creates the ruleset; returns its fd (close-on-exec) and the paths that could not be opened (skipped:
 * a path that does not exist yet cannot be in a Landlock rule; the supervisor mediates it instead).
 */
export function createRuleset(plan: LandlockRuleset, abi: number): { fd: number; skipped: string[] } {
  const fd = newRuleset(plan, abi);
  try {
    return { fd, skipped: addRules(fd, plan) };
  } catch (e) {
    close(fd);
    throw e;
  }
}

/** An empty ruleset handling what `plan` handles: its fd (close-on-exec). */
export function newRuleset(plan: Omit<LandlockRuleset, "paths" | "ports">, abi: number): number {
  const attr = new Uint8Array(128);
  const dv = new DataView(attr.buffer);
  dv.setBigUint64(0, plan.handledFs, true);
  dv.setBigUint64(8, plan.handledNet, true);
  dv.setBigUint64(16, plan.scoped, true);
  const size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
  const fd = sys(SYS.landlock_create_ruleset, ptrOf(attr), size, 0);
  if (fd < 0) throw new SysError("landlock_create_ruleset", -fd);
  return fd;
}

/**
 * Adds the rules of `plan` to the ruleset `fd`; returns the paths that could not be opened. Throws SysError when
 * the kernel refuses a rule.
 */
export function addRules(fd: number, plan: LandlockRuleset): string[] {
  const skipped: string[] = [];
  // One buffer each for every rule (hundreds at start-up): the path, and the rule with its address.
  const name = new Uint8Array(4096);
  const rule = new Uint8Array(128);
  const rv = new DataView(rule.buffer);
  const rulePtr = ptrOf(rule);
  const enc = new TextEncoder();
  const lc = libc();
  const addRule = [
    BigInt(SYS.landlock_add_rule),
    BigInt(fd),
    1n, /* PATH_BENEATH */
    rulePtr,
    0n,
    0n,
    0n,
  ] as const;
  for (const { path, access, dir } of plan.paths) {
    const flags = O.PATH | O.CLOEXEC | (dir === undefined ? 0 : O.NOFOLLOW | (dir ? O.DIRECTORY : 0));
    const { read, written } = enc.encodeInto(path, name.subarray(0, name.length - 1));
    if (read !== path.length) {
      skipped.push(path); // longer than PATH_MAX: cannot be opened
      continue;
    }
    name[written] = 0;
    const pfd = lc.openat(-100, name, flags, 0);
    if (pfd < 0) {
      skipped.push(path);
      continue;
    }
    try {
      const isDir = dir ?? fdType(pfd) === 0o040000;
      const allowed = (isDir ? access : access & FILE_RIGHTS) & plan.handledFs;
      if (allowed === 0n) continue;
      rv.setBigUint64(0, allowed, true);
      rv.setInt32(8, pfd, true);
      if (lc.syscall6(...addRule) < 0n) throw new SysError(`landlock_add_rule(${path})`, errno());
    } finally {
      lc.close(pfd);
    }
  }
  for (const { port, access } of plan.ports) {
    const rule = new Uint8Array(128);
    const rv = new DataView(rule.buffer);
    rv.setBigUint64(0, access & plan.handledNet, true);
    rv.setBigUint64(8, BigInt(port), true);
    const rc = sys(SYS.landlock_add_rule, fd, 2, /* NET_PORT */ ptrOf(rule), 0);
    if (rc < 0) throw new SysError(`landlock_add_rule(port ${port})`, -rc);
  }
  return skipped;
}

export { SysError };
