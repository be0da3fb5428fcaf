/**
 * `make` runs this: compiles the seccomp filter of both variants (with and without connect mediation) with
 * libseccomp and writes them to DIR/filter.bpf and DIR/filter-connect.bpf (lib/filter/filter_build.ts). hallpass
 * then reads the program at start-up instead of compiling it. DIR/syscall-numbers.json: the numbers libseccomp
 * gives the filter's calls here (ffi/seccomp.ts resolveSyscall: the supervisor Worker need not open it).
 *
 *   deno run --allow-all helper/bpf/prebuild.ts DIR
 */
import { compileFilter, resolveSyscallLibseccomp } from "../../ffi/seccomp.ts";
import { BAD_ARCH_ACTION, compiledRules } from "../../lib/filter/filter_build.ts";
import { prebuiltFilterName } from "../../lib/filter/filter_files.ts";

const dir = Deno.args[0];
if (!dir) {
  console.error("usage: prebuild.ts DIR");
  Deno.exit(2);
}
for (const connect of [false, true]) {
  const rules = compiledRules(connect);
  const { memfd } = compileFilter(rules, BAD_ARCH_ACTION);
  const bytes = Deno.readFileSync(`/proc/self/fd/${memfd}`);
  const name = prebuiltFilterName(connect);
  Deno.writeFileSync(`${dir}/${name}`, bytes, { mode: 0o644 });
  console.log(`${dir}/${name} (${bytes.length / 8} instructions${connect ? ", connect mediated" : ""})`);
}
const numbers: Record<string, number> = {};
for (const connect of [false, true]) {
  for (const r of compiledRules(connect)) {
    if (typeof r.syscall === "string") numbers[r.syscall] = resolveSyscallLibseccomp(r.syscall);
  }
}
Deno.writeFileSync(
  `${dir}/syscall-numbers.json`,
  new TextEncoder().encode(JSON.stringify({ arch: Deno.build.arch, numbers }) + "\n"),
  { mode: 0o644 },
);
