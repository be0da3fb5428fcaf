/**
 * ./hallpass, when deno compile could not get its runtime, runs the bundle make built, or the sources when the
 * bundle is missing or a source file changed since. It is the small static program helper/bundle/hallpass_stub.c
 * (the sh script helper/bundle/hallpass.sh.in where that does not build): both are judged here, from the
 * arguments a stand-in deno is given, in a made-up tree whose files' times are set (no waiting).
 */
import assert from "node:assert/strict";
import { test, tool } from "./helpers/skip.ts";

const TEMPLATE = new URL("../helper/bundle/hallpass.sh.in", import.meta.url).pathname;
const STUB = new URL("../helper/bundle/hallpass_stub.c", import.meta.url).pathname;
const SOURCES = ["main.ts", "lib/types.ts", "lib/policy/a.ts", "lib/sandbox/b.ts", "ffi/c.ts"];

type Kind = "script" | "program";

/** A C string literal of `s` (for -D). */
const cstr = (s: string) => JSON.stringify(s);

async function tree(kind: Kind): Promise<{ root: string; launcher: string; out: string; deno: string }> {
  const root = await Deno.makeTempDir({ prefix: "hp-script-" });
  for (const d of ["lib/policy", "lib/sandbox", "lib/a/b/c", "ffi", "build/js"]) {
    Deno.mkdirSync(`${root}/${d}`, { recursive: true });
  }
  for (const f of [...SOURCES, "lib/a/b/c/d.ts", "lib/notes.md", "build/js/main.js"]) {
    Deno.writeTextFileSync(`${root}/${f}`, "");
  }
  const out = `${root}/args`;
  const deno = `${root}/deno`;
  Deno.writeTextFileSync(deno, `#!/bin/sh\nprintf '%s\\n' "$@" > '${out}'\n`);
  Deno.chmodSync(deno, 0o755);
  const launcher = `${root}/hallpass`;
  if (kind === "script") {
    Deno.writeTextFileSync(
      launcher,
      Deno.readTextFileSync(TEMPLATE).replaceAll("@DENO@", deno).replaceAll("@ROOT@", root).replaceAll(
        "@V8_FLAGS@",
        "--max-semi-space-size=1",
      ),
    );
    Deno.chmodSync(launcher, 0o755);
  } else {
    // As the Makefile builds it (CFLAGS_STATIC).
    const o = await new Deno.Command("musl-gcc", {
      args: [
        ...["-static", "-Os", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-fno-strict-aliasing"],
        `-DHP_ROOT=${cstr(root)}`,
        `-DHP_DENO=${cstr(deno)}`,
        `-DHP_V8_FLAGS=${cstr("--max-semi-space-size=1")}`,
        "-o",
        launcher,
        STUB,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.ok(o.success, new TextDecoder().decode(o.stderr));
  }
  // Every source older than the bundle.
  for (const f of [...SOURCES, "lib/a/b/c/d.ts", "lib/notes.md"]) Deno.utimeSync(`${root}/${f}`, 1000, 1000);
  Deno.utimeSync(`${root}/build/js/main.js`, 2000, 2000);
  return { root, launcher, out, deno };
}

/** The program the stand-in deno was asked to run, and the arguments after it. */
async function ran(t: { launcher: string; out: string }): Promise<string[]> {
  const o = await new Deno.Command(t.launcher, { args: ["--no-ask", "-q", "--", "a b"], stdin: "null" })
    .output();
  assert.equal(o.code, 0, new TextDecoder().decode(o.stderr));
  const args = Deno.readTextFileSync(t.out).trimEnd().split("\n");
  const i = args.findIndex((a) => a.endsWith("/main.ts") || a.endsWith("/main.js"));
  return args.slice(i);
}

function both(name: string, fn: (kind: Kind) => Promise<void>, kinds: Kind[] = ["script", "program"]) {
  for (const kind of kinds) {
    test({
      name: `./hallpass ${kind}: ${name}`,
      ignore: kind === "program" ? tool("musl-gcc") : undefined,
    }, () => fn(kind));
  }
}

async function within(kind: Kind, fn: (t: Awaited<ReturnType<typeof tree>>) => Promise<void>) {
  const t = await tree(kind);
  try {
    await fn(t);
  } finally {
    await Deno.remove(t.root, { recursive: true });
  }
}

both("the bundle when no source changed since it was built", (kind) =>
  within(kind, async (t) => {
    const args = await ran(t);
    assert.deepEqual(args, [`${t.root}/build/js/main.js`, "--no-ask", "-q", "--", "a b"]);
    // The bundle runs without the lockfile and with every function compiled at load (its code cache).
    const all = Deno.readTextFileSync(t.out);
    assert.ok(all.includes("--no-lock") && all.includes("--max-semi-space-size=1,--no-lazy"), all);
  }));

both("the sources when one changed since the bundle (at each depth)", async (kind) => {
  for (const f of SOURCES) {
    await within(kind, async (t) => {
      Deno.utimeSync(`${t.root}/${f}`, 3000, 3000);
      assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"], f);
      const all = Deno.readTextFileSync(t.out);
      assert.ok(all.includes(`--lock=${t.root}/runtime.lock`) && all.includes("--frozen"), all);
    });
  }
});

both("the sources when there is no bundle", (kind) =>
  within(kind, async (t) => {
    Deno.removeSync(`${t.root}/build/js/main.js`);
    assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"]);
  }));

both(
  "the sources when a file deeper than the script's globs, or less than a second newer, changed",
  async (kind) => {
    await within(kind, async (t) => {
      Deno.utimeSync(`${t.root}/lib/a/b/c/d.ts`, 3000, 3000);
      assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"], "lib/a/b/c/d.ts");
    });
    await within(kind, async (t) => {
      Deno.utimeSync(`${t.root}/lib/policy/a.ts`, 2000.5, 2000.5);
      assert.deepEqual(await ran(t), [`${t.root}/main.ts`, "--no-ask", "-q", "--", "a b"], "half a second");
    });
  },
  ["program"],
);

both("the bundle when only a file that is not a source changed", (kind) =>
  within(kind, async (t) => {
    Deno.utimeSync(`${t.root}/lib/notes.md`, 3000, 3000);
    assert.deepEqual(await ran(t), [`${t.root}/build/js/main.js`, "--no-ask", "-q", "--", "a b"]);
  }));

both("a deno that cannot be run: one line, exit 125", (kind) =>
  within(kind, async (t) => {
    Deno.removeSync(t.deno);
    const o = await new Deno.Command(t.launcher, { args: ["--version"], stdin: "null", stderr: "piped" })
      .output();
    const err = new TextDecoder().decode(o.stderr);
    assert.equal(o.code, 125, err);
    assert.match(
      err,
      /^hallpass: cannot run .*\/deno: No such file or directory\nhint: run `make` again in /,
    );
  }), ["program"]);
