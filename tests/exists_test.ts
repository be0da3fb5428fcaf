/**
 * lib/util/exists.ts asks access(2) instead of catching Deno's exception for a missing path: the same answers as
 * Deno.statSync (symlinks followed, a dangling one missing), and a path holding a NUL names nothing (the kernel
 * would read the shorter path before it).
 */
import assert from "node:assert/strict";
import { exists, statIfThere } from "../lib/util/exists.ts";

function statOk(p: string): boolean {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
}

Deno.test("exists() and statIfThere() answer as Deno.statSync: files, directories, symlinks, missing paths", () => {
  const d = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.mkdirSync(`${d}/dir`);
    Deno.writeTextFileSync(`${d}/file`, "x");
    Deno.symlinkSync(`${d}/file`, `${d}/link`);
    Deno.symlinkSync(`${d}/nowhere`, `${d}/dangling`);
    Deno.symlinkSync(`${d}/dir`, `${d}/dirlink`);
    const paths = [
      d,
      `${d}/dir`,
      `${d}/file`,
      `${d}/link`,
      `${d}/dangling`,
      `${d}/dirlink`,
      `${d}/dirlink/`,
      `${d}/missing`,
      `${d}/file/below`,
      `${d}/missing/below`,
      "/",
      "/proc/self/exe",
    ];
    for (const p of paths) {
      assert.equal(exists(p), statOk(p), p);
      assert.equal(statIfThere(p)?.isDirectory, statOk(p) ? Deno.statSync(p).isDirectory : undefined, p);
    }
  } finally {
    Deno.removeSync(d, { recursive: true });
  }
});

Deno.test("a path holding a NUL exists nowhere (not the shorter path before it)", () => {
  assert.equal(exists("/etc\0/missing"), false);
  assert.equal(statIfThere("/\0"), undefined);
});
