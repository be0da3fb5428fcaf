/**
 * build/syscall-numbers.json (helper/bpf/prebuild.ts, `make`): the numbers the supervisor Worker resolves
 * without opening libseccomp are libseccomp's, for this architecture, for every call the filter traps.
 */
import assert from "node:assert/strict";
import { PREBUILT_NUMBERS, resolveSyscall, resolveSyscallLibseccomp } from "../ffi/seccomp.ts";
import { compiledRules } from "../lib/filter/filter_build.ts";

Deno.test("prebuilt syscall numbers: libseccomp's, this architecture's, one for every call the filter names", () => {
  let text: string;
  try {
    text = Deno.readTextFileSync(PREBUILT_NUMBERS);
  } catch (e) {
    throw new Error(`${PREBUILT_NUMBERS.pathname}: ${(e as Error).message} (run make)`);
  }
  const t = JSON.parse(text) as { arch: string; numbers: Record<string, number> };
  assert.equal(t.arch, Deno.build.arch);
  const names = new Set<string>();
  for (const c of [false, true]) {
    for (const r of compiledRules(c)) if (typeof r.syscall === "string") names.add(r.syscall);
  }
  assert.ok(names.has("openat") && names.has("execve") && names.has("chdir") && names.has("ioctl"));
  for (const n of names) {
    assert.equal(t.numbers[n], resolveSyscallLibseccomp(n), n);
    assert.equal(resolveSyscall(n), resolveSyscallLibseccomp(n), n);
  }
  for (const [n, nr] of Object.entries(t.numbers)) assert.equal(nr, resolveSyscallLibseccomp(n), n);
  // A name the table lacks is asked of libseccomp.
  assert.equal(resolveSyscall("getpid"), resolveSyscallLibseccomp("getpid"));
  assert.ok(resolveSyscall("getpid") >= 0);
  assert.ok(resolveSyscall("no_such_call") < 0);
});
