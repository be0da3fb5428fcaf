/**
 * The BPF programs `make` prebuilds (build/filter.bpf, build/filter-connect.bpf; lib/filter/filter_build.ts) are
 * byte for byte what libseccomp compiles from the filter plan now, and hallpass uses them only while they are
 * newer than the sources of the plan.
 */
import assert from "node:assert/strict";
import { compileFilter } from "../ffi/seccomp.ts";
import { close } from "../ffi/libc.ts";
import { BAD_ARCH_ACTION, compiledRules } from "../lib/filter/filter_build.ts";
import { FILTER_SOURCES, prebuiltFilterName } from "../lib/filter/filter_files.ts";

const ROOT = new URL("../", import.meta.url);

for (const connect of [false, true]) {
  Deno.test(`prebuilt filter ${prebuiltFilterName(connect)} is the compiled plan`, () => {
    const file = new URL(`build/${prebuiltFilterName(connect)}`, ROOT);
    const prebuilt = Deno.readFileSync(file); // missing: run `make` (the test suite runs after it)
    const { memfd } = compileFilter(compiledRules(connect), BAD_ARCH_ACTION);
    const fresh = Deno.readFileSync(`/proc/self/fd/${memfd}`);
    close(memfd);
    assert.ok(fresh.length > 80 * 8, `only ${fresh.length / 8} instructions`);
    assert.deepEqual(prebuilt, fresh, "build/ is stale: run `make`");
    const built = Deno.statSync(file).mtime!;
    for (const src of FILTER_SOURCES) {
      assert.ok(
        Deno.statSync(new URL(src, ROOT)).mtime! <= built,
        `${src} is newer than the prebuilt filter`,
      );
    }
  });
}

Deno.test("the two variants differ: connect mediation traps more", () => {
  const a = Deno.readFileSync(new URL(`build/${prebuiltFilterName(false)}`, ROOT));
  const b = Deno.readFileSync(new URL(`build/${prebuiltFilterName(true)}`, ROOT));
  assert.ok(b.length > a.length);
});
