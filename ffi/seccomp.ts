/**
 * libseccomp (libseccomp.so.2) through FFI: compiles a filter plan (lib/filter/filter_plan.ts) to classic BPF.
 * The BPF goes to the launcher in a memfd; the launcher installs it with a user-notification listener.
 */
import { SysError } from "./errors.ts";
import { close, cstr, memfdCreate } from "./libc.ts";

const SYMBOLS = {
  seccomp_init: { parameters: ["u32"], result: "pointer" }, // scmp_filter_ctx seccomp_init(uint32_t def_action)
  seccomp_release: { parameters: ["pointer"], result: "void" }, // void seccomp_release(scmp_filter_ctx)
  // int seccomp_rule_add_array(ctx, uint32_t action, int syscall, unsigned int arg_cnt, const struct scmp_arg_cmp *)
  seccomp_rule_add_array: { parameters: ["pointer", "u32", "i32", "u32", "buffer"], result: "i32" },
  seccomp_syscall_resolve_name: { parameters: ["buffer"], result: "i32" }, // int (const char *name)
  seccomp_attr_set: { parameters: ["pointer", "i32", "u32"], result: "i32" }, // int (ctx, enum attr, uint32_t)
  seccomp_export_bpf: { parameters: ["pointer", "i32"], result: "i32" }, // int (ctx, int fd)
  seccomp_version: { parameters: [], result: "pointer" }, // const struct scmp_version *(void)
} as const satisfies Deno.ForeignLibraryInterface;

let lib: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] | null = null;
function seccomp() {
  if (lib === null) lib = Deno.dlopen("libseccomp.so.2", SYMBOLS).symbols;
  return lib;
}

export const ACT = {
  ALLOW: 0x7fff0000,
  NOTIFY: 0x7fc00000,
  KILL_PROCESS: 0x80000000,
  errno: (e: number) => (0x00050000 | (e & 0xffff)) >>> 0,
} as const;

/** libseccomp's enum scmp_compare. */
export const CMP = { NE: 1, LT: 2, LE: 3, EQ: 4, GE: 5, GT: 6, MASKED_EQ: 7 } as const;

export interface ArgCmp {
  arg: number;
  op: number;
  a: bigint;
  b?: bigint;
}

export interface CompiledRule {
  /** A syscall name libseccomp knows, or a raw x86_64/aarch64 number for calls newer than libseccomp. */
  syscall: string | number;
  action: number;
  args?: ArgCmp[];
}

export function libseccompVersion(): string {
  const p = seccomp().seccomp_version();
  if (p === null) return "unknown";
  const v = new Deno.UnsafePointerView(p);
  return `${v.getUint32(0)}.${v.getUint32(4)}.${v.getUint32(8)}`;
}

/** Where `make` writes the numbers libseccomp gave the prebuilt filter's calls (helper/bpf/prebuild.ts). */
export const PREBUILT_NUMBERS = new URL("../build/syscall-numbers.json", import.meta.url);
let prebuilt: Record<string, unknown> | null | undefined;

/**
 * The names `make` resolved (PREBUILT_NUMBERS, this architecture's), so that the supervisor Worker resolves the
 * calls it handles without opening libseccomp (~10 ms of its start). A system call's number never changes for
 * its architecture, so a table from an older libseccomp answers the same; a name it lacks is asked of
 * libseccomp.
 */
function prebuiltNumbers(): Record<string, unknown> | null {
  if (prebuilt === undefined) prebuilt = readPrebuiltNumbers();
  return prebuilt;
}

function readPrebuiltNumbers(): Record<string, unknown> | null {
  try {
    const t = JSON.parse(Deno.readTextFileSync(PREBUILT_NUMBERS));
    if (t?.arch === Deno.build.arch && typeof t.numbers === "object" && t.numbers !== null) return t.numbers;
  } catch {
    // not built (or a compiled binary, which does not embed it): libseccomp answers
  }
  return null;
}

export function resolveSyscall(name: string): number {
  const n = prebuiltNumbers()?.[name];
  if (typeof n === "number" && Number.isInteger(n) && n >= 0) return n;
  return resolveSyscallLibseccomp(name);
}

/** libseccomp's number for `name` on this architecture (negative when it has none). */
export function resolveSyscallLibseccomp(name: string): number {
  return seccomp().seccomp_syscall_resolve_name(cstr(name));
}

const SCMP_FLTATR_ACT_BADARCH = 2;
const SCMP_FLTATR_CTL_OPTIMIZE = 8;

/**
 * Builds the filter and returns a memfd holding the BPF program (struct sock_filter[]).
 * Syscalls unknown to this architecture are skipped (listed in `skipped`).
 */
export function compileFilter(
  rules: CompiledRule[],
  badArchAction: number,
): { memfd: number; skipped: string[] } {
  const s = seccomp();
  const ctx = s.seccomp_init(ACT.ALLOW);
  if (ctx === null) throw new SysError("seccomp_init", 12);
  const skipped: string[] = [];
  try {
    const rc = s.seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, badArchAction >>> 0);
    if (rc < 0) throw new SysError("seccomp_attr_set", -rc);
    // A binary tree of system call numbers rather than a chain (libseccomp ≥ 2.5; older ones keep the chain):
    // a call the filter looks at the arguments of (openat for reading, ioctl, clone, ...) no longer walks
    // past every listed call first. The read micro went from 1.11x to 1.01x a Landlock-only run.
    s.seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
    for (const r of rules) {
      const nr = typeof r.syscall === "number" ? r.syscall : resolveSyscallLibseccomp(r.syscall);
      if (nr < 0) {
        skipped.push(String(r.syscall));
        continue;
      }
      const args = r.args ?? [];
      const buf = new Uint8Array(Math.max(128, args.length * 24));
      const dv = new DataView(buf.buffer);
      args.forEach((c, i) => {
        dv.setUint32(i * 24, c.arg, true);
        dv.setUint32(i * 24 + 4, c.op, true);
        dv.setBigUint64(i * 24 + 8, c.a, true);
        dv.setBigUint64(i * 24 + 16, c.b ?? 0n, true);
      });
      const rc2 = s.seccomp_rule_add_array(ctx, r.action >>> 0, nr, args.length, buf);
      if (rc2 < 0) throw new SysError(`seccomp_rule_add(${r.syscall})`, -rc2);
    }
    const fd = memfdCreate("hallpass-bpf", 1 /* MFD_CLOEXEC */);
    const rc3 = s.seccomp_export_bpf(ctx, fd);
    if (rc3 < 0) {
      close(fd);
      throw new SysError("seccomp_export_bpf", -rc3);
    }
    return { memfd: fd, skipped };
  } finally {
    s.seccomp_release(ctx);
  }
}
