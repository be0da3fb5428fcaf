/**
 * The ./hallpass script (helper/bundle/hallpass.sh.in, when deno compile could not get its runtime) runs the
 * bundle make built, or the sources when the bundle is missing or a source file changed since. Judged from the
 * arguments a stand-in deno is given, in a made-up tree whose files' times are set (no waiting).
 */
import assert from "node:assert/strict";

const TEMPLATE = new URL("../helper/bundle/hallpass.sh.in", import.meta.url);

async function tree(): Promise<{ root: string; script: string; out: string }> {
  const root = await Deno.makeTempDir({ prefix: "hp-script-" });
  for (const d of ["lib/policy", "lib/sandbox", "ffi", "build/js"]) {
    Deno.mkdirSync(`${root}/${d}`, { recursive: true });
  }
  for (
    const f of [
      "main.ts",
      "lib/types.ts",
      "lib/policy/a.ts",
      "lib/sandbox/b.ts",
      "ffi/c.ts",
      "build/js/main.js",
    ]
  ) {
    Deno.writeTextFileSync(`${root}/${f}`, "");
  }
  const out = `${root}/args`;
  const deno = `${root}/deno`;
  Deno.writeTextFileSync(deno, `#!/bin/sh\nprintf '%s\\n' "$@" > '${out}'\n`);
  Deno.chmodSync(deno, 0o755);
  const script = `${root}/hallpass`;
  Deno.writeTextFileSync(
    script,
    Deno.readTextFileSync(TEMPLATE).replaceAll("@DENO@", deno).replaceAll("@ROOT@", root).replaceAll(
      "@V8_FLAGS@",
      "--max-semi-space-size=1",
    ),
  );
  Deno.chmodSync(script, 0o755);
  // Every source older than the bundle.
  for (const f of ["main.ts", "lib/types.ts", "lib/policy/a.ts", "lib/sandbox/b.ts", "ffi/c.ts"]) {
    Deno.utimeSync(`${root}/${f}`, 1000, 1000);
  }
  Deno.utimeSync(`${root}/build/js/main.js`, 2000, 2000);
  return { root, script, out };
}

/** The program the stand-in deno was asked to run, and the arguments after it. */
async function ran(t: { script: string; out: string }): Promise<string[]> {
  const o = await new Deno.Command(t.script, { args: ["--no-ask", "-q", "--", "a b"], stdin: "null" })
    .output();
  assert.equal(o.code, 0, new TextDecoder().decode(o.stderr));
  const args = Deno.readTextFileSync(t.out).trimEnd().split("\n");
  const i = args.findIndex((a) => a.endsWith("/main.ts") || a.endsWith("/main.js"));
  return args.slice(i);
}

Deno.test("./hallpass script: the bundle when no source changed since it was built", async () => {
  const t = await tree();
  try {
    assert.deepEqual(await ran(t), [`${t.root}/build/js/main.js`, "--no-ask", "-q", "--", "a b"]);
  } finally {
    await Deno.remove(t.root, { recursive: true });
  }
});

Deno.test("./hallpass script: the sources when one changed since the bundle (at each depth)", async () => {
  for (const f of ["main.ts", "lib/types.ts", "lib/policy/a.ts", "lib/sandbox/b.ts", "ffi/c.ts"]) {
    const t = await tree();
    try {
      Deno.utimeSync(`${t.root}/${f}`, 3000, 3000);
      assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"], f);
    } finally {
      await Deno.remove(t.root, { recursive: true });
    }
  }
});

Deno.test("./hallpass script: the sources when there is no bundle", async () => {
  const t = await tree();
  try {
    Deno.removeSync(`${t.root}/build/js/main.js`);
    assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"]);
  } finally {
    await Deno.remove(t.root, { recursive: true });
  }
});
