/**
 * No module of lib/ holds state that changes what a call does (docs/development.md, "Layout"): what a run or a
 * container decides with lives in objects passed to the code that needs it. A top-level `let` or `var` is
 * such state; the only ones allowed are caches of values that never change, made on first use.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

/**
 * Made on first use, never changed after: a table read from xterm.js, an Intl.Segmenter (ICU's load), a
 * regular expression of Unicode properties (~0.3 ms to create).
 */
const CACHES = [
  "lib/ui/screen.ts: charsetFlags",
  "lib/ui/sanitize.ts: segmenter",
  "lib/ui/sanitize.ts: zeroWidth",
];

function* tsFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(`${ROOT}${dir}`)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* tsFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

Deno.test("lib/ has no module-level let or var (state lives in passed objects) but the listed caches", () => {
  const found: string[] = [];
  for (const f of tsFiles("lib")) {
    for (const m of Deno.readTextFileSync(`${ROOT}${f}`).matchAll(/^(?:export\s+)?(?:let|var)\s+(\w+)/gm)) {
      found.push(`${f}: ${m[1]}`);
    }
  }
  assertEquals(found.sort(), [...CACHES].sort());
});
