/**
 * The filter plan (filter_plan.ts) as libseccomp rules, and the BPF programs `make` prebuilds from it
 * (helper/bpf/prebuild.ts → build/filter.bpf, build/filter-connect.bpf): hallpass reads one at start-up
 * instead of loading libseccomp and compiling (~4-6 ms). Running from the sources, a prebuilt program older
 * than any of FILTER_SOURCES (lib/filter/filter_files.ts) is not used (the plan may have changed since `make`): it is compiled instead.
 * tests/filter_prebuilt_test.ts checks that the prebuilt bytes are what libseccomp compiles now.
 */
import { ACT, CMP, type CompiledRule } from "../../ffi/seccomp.ts";
import { filterPlan } from "./filter_plan.ts";

/** Foreign architectures (32-bit int 0x80, x32) get ENOSYS: none of them is mediated. */
export const BAD_ARCH_ACTION = ACT.errno(38);

export function compiledRules(mediateConnect: boolean): CompiledRule[] {
  return filterPlan({ mediateConnect }).map((e) => ({
    syscall: e.syscall,
    action: e.action.kind === "notify" ? ACT.NOTIFY : ACT.errno(e.action.errno),
    args: e.args?.map((a) => ({
      arg: a.arg,
      op: a.op === "eq" ? CMP.EQ : a.op === "ne" ? CMP.NE : a.op === "gt" ? CMP.GT : CMP.MASKED_EQ,
      a: a.op === "masked_eq" ? a.mask! : a.value,
      b: a.op === "masked_eq" ? a.value : 0n,
    })),
  }));
}
