/**
 * Every module loaded through lib/util/lazy_import.ts is embedded in each compiled binary: a compiled hallpass sees
 * only literal imports and what `--include` names (the Makefile, the release workflow, the agent's image).
 */
import assert from "node:assert/strict";

const root = new URL("../", import.meta.url);
const read = (p: string) => Deno.readTextFileSync(new URL(p, root));

function lazyTargets(): string[] {
  const out = new Set<string>();
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(new URL(dir, root))) {
      const p = `${dir}${e.name}`;
      if (e.isDirectory) walk(p + "/");
      else if (p.endsWith(".ts")) {
        for (const m of read(p).matchAll(/lazyImport<[^>]*>\(\s*new URL\("([^"]+)", import\.meta\.url\)/g)) {
          out.add(new URL(m[1], new URL(p, root)).href.slice(root.href.length));
        }
      }
    }
  };
  walk("lib/");
  walk("ffi/");
  for (const m of read("main.ts").matchAll(/new URL\("\.\/([^"]+)", import\.meta\.url\)/g)) out.add(m[1]);
  return [...out].sort();
}

Deno.test("every lazily imported module is --include'd by each deno compile", () => {
  const targets = lazyTargets();
  assert.ok(targets.includes("lib/ui/pty_session.ts"), `found: ${targets}`);
  assert.ok(targets.includes("lib/ask/terminal_ask.ts"), `found: ${targets}`);
  const makefile = read("Makefile").match(/LAZY_MODULES := ((?:.*\\\n)*.*)/)![1].split(/[\s\\]+/).filter(
    Boolean,
  );
  assert.deepEqual([...makefile].sort(), targets, "Makefile LAZY_MODULES");
  for (const f of [".github/workflows/release.yml", "deploy/Dockerfile.agent"]) {
    const text = read(f);
    for (const t of targets) assert.ok(text.includes(`--include ${t}`), `${f} lacks --include ${t}`);
  }
});
