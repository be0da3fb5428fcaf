/** existingResolver (start-up's memoised resolveExisting) answers exactly what resolveExisting answers. */
import assert from "node:assert/strict";
import { existingResolver, resolveExisting } from "../lib/floor/carve_fs.ts";

Deno.test("existingResolver = resolveExisting: symlinks, dangling links, files as parents, odd forms", () => {
  const d = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.mkdirSync(`${d}/real/sub`, { recursive: true });
    Deno.symlinkSync(`${d}/real`, `${d}/link`);
    Deno.symlinkSync(`${d}/nowhere`, `${d}/dangling`);
    Deno.symlinkSync("real/sub", `${d}/rel`);
    Deno.writeTextFileSync(`${d}/file`, "");
    const paths = [
      "/",
      d,
      `${d}/link`,
      `${d}/link/sub/x/y`,
      `${d}/rel/z`,
      `${d}/dangling`,
      `${d}/dangling/a`,
      `${d}/file`,
      `${d}/file/a`,
      `${d}/link/`,
      `${d}//link/../x`,
      `${d}/./link/sub`,
      `${d}/missing/a/b`,
      "/proc/self/cwd/zz",
      "relative/x",
      "",
    ];
    const r = existingResolver();
    for (const p of [...paths, ...paths]) assert.equal(r(p), resolveExisting(p), p);
  } finally {
    Deno.removeSync(d, { recursive: true });
  }
});
