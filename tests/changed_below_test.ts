/**
 * ffi/dir_entries.ts changedBelow (the exit check of copilot's unpacked runtime, lib/sandbox/copilot_runtime.ts)
 * gives the answer of the walk it replaced, kept here as the reference: realRepoFs's list and lstat per entry.
 * Trees made at once; after the clock has moved on, one change in each; both walks asked with a threshold
 * between the two.
 */
import assert from "node:assert/strict";
import { changedBelow } from "../ffi/dir_entries.ts";
import { realRepoFs, type RepoFs } from "../lib/sandbox/nested_repos.ts";

const INUSE = /^inuse\.\d+\.(hold|lock)$/;

/** The walk as lib/sandbox/copilot_runtime.ts had it (touched). */
function reference(
  dir: string,
  since: number,
  maxDepth: number,
  maxEntries: number,
  fs: RepoFs = realRepoFs,
) {
  let entries = 0;
  const walk = (d: string, depth: number): boolean => {
    const list = fs.list(d);
    if (list === undefined || depth > maxDepth) return true;
    for (const e of list) {
      if (++entries > maxEntries) return true;
      const p = `${d}/${e.name}`;
      const st = fs.lstat(p);
      if (st === undefined) continue;
      if (depth === 0 && e.kind === "file" && st.kind === "file" && INUSE.test(e.name)) continue;
      if (st.ctimeMs >= since) return true;
      if (st.kind === "dir" && walk(p, depth + 1)) return true;
    }
    return false;
  };
  return walk(dir, 0);
}

function fast(dir: string, since: number, maxDepth: number, maxEntries: number) {
  return changedBelow(dir, since, { maxDepth, maxEntries, skipTopFile: (n) => INUSE.test(n) });
}

function makeTree(d: string): void {
  Deno.mkdirSync(`${d}/node_modules/pkg/lib`, { recursive: true });
  Deno.mkdirSync(`${d}/prebuilds/linux-x64`, { recursive: true });
  for (const f of ["index.js", "app.js", "inuse.123.hold", "inuse.7.lock", "node_modules/pkg/lib/m.js"]) {
    Deno.writeTextFileSync(`${d}/${f}`, "x");
  }
  Deno.writeTextFileSync(`${d}/prebuilds/linux-x64/inuse.1.hold`, "x");
  Deno.symlinkSync("/etc", `${d}/link`);
}

function ctimeSec(p: string): number {
  return Math.floor(Deno.lstatSync(p).ctime!.getTime() / 1000);
}

Deno.test("changedBelow answers as the lstat walk it replaced: changes at each depth, inuse files, links, limits", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "hp-changed-" }));
  try {
    /** What each tree gets after the clock moved on (undefined: nothing). */
    const changes: Record<string, ((d: string) => void) | undefined> = {
      none: undefined,
      top: (d) => Deno.writeTextFileSync(`${d}/index.js`, "y"),
      deep: (d) => Deno.writeTextFileSync(`${d}/node_modules/pkg/lib/m.js`, "y"),
      added: (d) => Deno.writeTextFileSync(`${d}/node_modules/pkg/new.js`, "y"),
      removed: (d) => Deno.removeSync(`${d}/node_modules/pkg/lib/m.js`),
      inuseTop: (d) => Deno.writeTextFileSync(`${d}/inuse.123.hold`, "y"),
      inuseBelow: (d) => Deno.writeTextFileSync(`${d}/prebuilds/linux-x64/inuse.1.hold`, "y"),
      chmod: (d) => Deno.chmodSync(`${d}/app.js`, 0o755),
      relinked: (d) => {
        Deno.removeSync(`${d}/link`);
        Deno.symlinkSync("/tmp", `${d}/link`);
      },
      ownCtime: (d) => Deno.chmodSync(d, 0o700), // the directory's own ctime is not looked at
    };
    for (const name of Object.keys(changes)) makeTree(`${root}/${name}`);
    let base = 0;
    for (const name of Object.keys(changes)) {
      for (const e of Deno.readDirSync(`${root}/${name}`)) {
        base = Math.max(base, ctimeSec(`${root}/${name}/${e.name}`));
      }
    }
    base = Math.max(base, ctimeSec(`${root}/none/node_modules/pkg/lib/m.js`));
    // Until the kernel's clock has passed that second (a condition, at most ~2 s).
    const probe = `${root}/probe`;
    for (let i = 0; i < 400; i++) {
      Deno.writeTextFileSync(probe, String(i));
      if (ctimeSec(probe) > base) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.ok(ctimeSec(probe) > base, "the clock did not move on");
    for (const [name, change] of Object.entries(changes)) change?.(`${root}/${name}`);
    const since = (base + 1) * 1000;
    const expected: Record<string, boolean> = {
      none: false,
      top: true,
      deep: true,
      added: true,
      removed: true,
      inuseTop: false,
      inuseBelow: true,
      chmod: true,
      relinked: true,
      ownCtime: false,
    };
    for (const name of Object.keys(changes)) {
      const d = `${root}/${name}`;
      const want = reference(d, since, 24, 20_000);
      assert.equal(want, expected[name], `reference, ${name}`);
      assert.equal(fast(d, since, 24, 20_000), want, name);
      // Every entry counts as changed with a threshold before them all, none with one after.
      assert.equal(fast(d, 0, 24, 20_000), reference(d, 0, 24, 20_000), `${name}, since 0`);
      assert.equal(fast(d, Date.now() + 60_000, 24, 20_000), reference(d, Date.now() + 60_000, 24, 20_000));
      // Limits: too many entries, too deep (node_modules/pkg/lib is depth 3), a directory that is not there.
      for (const [depth, max] of [[24, 3], [2, 20_000], [3, 20_000]]) {
        assert.equal(fast(d, since, depth, max), reference(d, since, depth, max), `${name} ${depth} ${max}`);
      }
    }
    assert.equal(fast(`${root}/missing`, 0, 24, 20_000), true);
    assert.equal(reference(`${root}/missing`, 0, 24, 20_000), true);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
