/**
 * No raw pointer leaves ffi/ (docs/development.md, "Layout"): outside it, lib/ and main.ts pass typed arrays
 * and numbers to ffi/'s functions, never an address (ffi/libc.ts ptrOf, Deno.UnsafePointer) or a struct laid
 * out by hand for the kernel.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;

function* tsFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(`${ROOT}${dir}`)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory) yield* tsFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

Deno.test("no raw pointer outside ffi/: lib/ and main.ts never take an address", () => {
  const found: string[] = [];
  for (const f of ["main.ts", ...tsFiles("lib")]) {
    const text = Deno.readTextFileSync(`${ROOT}${f}`);
    text.split("\n").forEach((line, i) => {
      if (/\bptrOf\b|\bUnsafePointer(View)?\b|\bUnsafeCallback\b/.test(line)) {
        found.push(`${f}:${i + 1}: ${line.trim()}`);
      }
    });
  }
  assertEquals(found, []);
});
