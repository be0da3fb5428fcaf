/**
 * The source rewrites of helper/bundle/bundle.ts (the bundle the ./hallpass script runs): each lazy import
 * is its own file (never a second copy of a module from the sources), so is a literal dynamic import,
 * `import.meta.url` keeps naming the module's source file, the Worker is worker.js.
 */
import assert from "node:assert/strict";
import {
  answerXtermNodeCheck,
  lazyFile,
  lazyName,
  rewrite,
  startReexports,
  xtermFirstWriteMicrotask,
} from "../helper/bundle/bundle.ts";

const npm = (name: string) => `/nm/${name}/main.js`;

Deno.test("bundle rewrite: a lazy import is its own file, named by the module's path", () => {
  const lazy = new Set<string>();
  const out = rewrite(
    `const { a } = await lazyImport<typeof import("../ui/terminal.ts")>(\n  new URL("../ui/terminal.ts", import.meta.url),\n);`,
    "lib/sandbox/run.ts",
    npm,
    lazy,
  );
  assert.deepEqual([...lazy], ["lib/ui/terminal.ts"]);
  assert.equal(lazyName("lib/ui/terminal.ts"), "lib_ui_terminal");
  assert.equal(lazyFile("lib/ui/terminal.ts"), "lazy-lib_ui_terminal.js");
  assert.equal(
    out,
    `const { a } = await lazyImport<any>(new URL("./lazy-lib_ui_terminal.js", import.meta.url));`,
  );
});

Deno.test("bundle start.ts: what the start-up path's modules import from each other, values only", () => {
  const files: Record<string, string> = {
    "main.ts": [
      `import { a, type T, b as c } from "./lib/x.ts";`,
      `import type { U } from "./lib/u.ts";`,
      `import {\n  d, // the d\n  e, /* and e */\n} from "./lib/y.ts";`,
      `const z = lazyImport<typeof import("./lib/lazy.ts")>(new URL("./lib/lazy.ts", import.meta.url));`,
    ].join("\n"),
    "lib/x.ts":
      `import * as __bundled_0 from "./z.ts";\nexport { f } from "./y.ts";\nexport const a = 1, b = 2;`,
    "lib/y.ts": `import D from "./d.ts";\nexport const d = 1, e = 2, f = 3;`,
    "lib/z.ts": `export const g = 1;`,
    "lib/d.ts": `export default 1;`,
  };
  const out = startReexports((m) => {
    if (!(m in files)) throw new Error(`read ${m}`);
    return files[m];
  });
  assert.equal(
    out,
    [
      `import { default as __s0_default } from "./lib/d.ts";`,
      `import { a as __s1_a, b as __s1_b } from "./lib/x.ts";`,
      `import { d as __s2_d, e as __s2_e, f as __s2_f } from "./lib/y.ts";`,
      `import * as __s3 from "./lib/z.ts";`,
      `export const __start = [__s0_default, __s1_a, __s1_b, __s2_d, __s2_e, __s2_f, __s3];`,
      "",
    ].join("\n"),
  );
});

Deno.test("bundle rewrite: literal dynamic imports load their own file, type imports stay", () => {
  const lazy = new Set<string>();
  const out = rewrite(
    [
      `let s: import("./answer_service.ts").AnswerService | null = null;`,
      `const { A } = await import("./answer_service.ts");`,
      `const p = import("../sandbox/run.ts").then((r) => r.x);`,
    ].join("\n"),
    "lib/agent/agent.ts",
    npm,
    lazy,
  );
  assert.deepEqual([...lazy].sort(), ["lib/agent/answer_service.ts", "lib/sandbox/run.ts"]);
  assert.equal(
    out,
    [
      `let s: import("./answer_service.ts").AnswerService | null = null;`,
      `const { A } = await import(new URL("./lazy-lib_agent_answer_service.js", import.meta.url).href);`,
      `const p = import(new URL("./lazy-lib_sandbox_run.js", import.meta.url).href).then((r) => r.x);`,
    ].join("\n"),
  );
});

Deno.test("bundle rewrite: import.meta.url is the source file's; the Worker is worker.js; xterm is a file", () => {
  const out = rewrite(
    [
      "const p = new URL(`../../build/${name}`, import.meta.url);",
      `const w = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });`,
      `import xterm from "@xterm/headless";`,
    ].join("\n"),
    "lib/supervisor/host.ts",
    npm,
    new Set(),
  );
  assert.equal(
    out,
    [
      'const p = new URL(`../../build/${name}`, new URL("../../lib/supervisor/host.ts", import.meta.url).href);',
      `const w = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });`,
      `import xterm from "/nm/@xterm/headless/main.js";`,
    ].join("\n"),
  );
});

Deno.test("bundle rewrite: every lazyImport call in the sources is rewritten (none loads a source copy)", () => {
  const root = new URL("../", import.meta.url);
  const files: string[] = ["main.ts"];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(new URL(dir, root))) {
      if (e.isDirectory) walk(`${dir}${e.name}/`);
      else if (e.name.endsWith(".ts")) files.push(`${dir}${e.name}`);
    }
  };
  walk("lib/");
  walk("ffi/");
  let calls = 0;
  for (const f of files) {
    if (f === "lib/util/lazy_import.ts") continue;
    const text = Deno.readTextFileSync(new URL(f, root));
    const out = rewrite(text, f, npm, new Set());
    calls += (text.match(/lazyImport</g) ?? []).length;
    assert.ok(!/lazyImport<typeof/.test(out), `${f}: a lazyImport left as it was`);
    assert.ok(!/(?<![\w.:] ?)import\("\.{1,2}\/[^"]+"\)(?!\.\w)/.test(out), `${f}: a dynamic import left`);
  }
  assert.ok(calls >= 5, `found ${calls} lazyImport calls`);
});

Deno.test("bundle: xterm.js's first parse after a write is a microtask, once or not at all", () => {
  const first = "void this._innerWrite();setTimeout((()=>this._innerWrite()))";
  assert.equal(
    xtermFirstWriteMicrotask(`if(x)return ${first}}`),
    "if(x)return void this._innerWrite();queueMicrotask((()=>this._innerWrite()))}",
  );
  assert.equal(xtermFirstWriteMicrotask(`${first};${first}`), `${first};${first}`);
  // The later slices of a long parse stay timers.
  const later = "setTimeout((()=>this._innerWrite(0,e))):this._innerWrite(s,e)";
  assert.equal(xtermFirstWriteMicrotask(later), later);
});

Deno.test("bundle: xterm.js's Node check is answered (true, as under Deno), once or not at all", () => {
  const check = `"undefined"!=typeof process&&"title"in process`;
  assert.equal(
    answerXtermNodeCheck(`t.isNode=${check};const s=t.isNode?"node":n;`),
    `t.isNode=true;const s=t.isNode?"node":n;`,
  );
  assert.equal(answerXtermNodeCheck(`a=${check};b=${check};`), `a=${check};b=${check};`);
  assert.equal(answerXtermNodeCheck("no check"), "no check");
  // What the check says under Deno: the value the bundle puts in its place.
  assert.equal("undefined" != typeof process && "title" in process, true);
});
