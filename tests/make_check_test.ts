/**
 * `make check` type-checks every TypeScript module of the repository (the Worker's too: it is loaded by URL,
 * so main.ts alone never reaches it), with the lockfile frozen; .ci/run and the CI workflow fail on it.
 * Checked here from the files: a new folder of .ts files that the check line does not name would otherwise
 * go unchecked silently.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";

const ROOT = new URL("../", import.meta.url).pathname;
const make = Deno.readTextFileSync(`${ROOT}Makefile`);

/** The targets of the `check:` recipe's `deno check` line (wildcards expanded against the tree). */
function checked(): string[] {
  const recipe = make.slice(make.indexOf("\ncheck:"));
  const line = recipe.split("\n").find((l) => /\$\(DENO\) check /.test(l));
  assert(line, "make check has no deno check line");
  assert(line.includes("--frozen"), `the lockfile is not frozen: ${line}`);
  return line.trim().split(/\s+/).slice(2).filter((w) => !w.startsWith("--"));
}

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const e of Deno.readDirSync(`${ROOT}${dir}`)) {
    const p = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory) {
      if (!["build", ".tools", "node_modules", ".git"].includes(e.name)) tsFiles(p, out);
    } else if (/\.(ts|tsx|mts)$/.test(e.name)) out.push(p);
  }
  return out;
}

Deno.test("make check: deno check covers every .ts file of the repository (the Worker too), lockfile frozen", () => {
  const targets = checked();
  const covers = (t: string, f: string) =>
    t === "." || t === f || f.startsWith(t.endsWith("/") ? t : `${t}/`);
  // The Worker is loaded by URL: main.ts alone never reaches it.
  assert(targets.some((t) => covers(t, "lib/supervisor/worker.ts")), `the Worker is not checked: ${targets}`);
  const excluded: string[] = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).exclude ?? [];
  assertEquals(
    excluded.filter((e) => !["build/", ".tools/", "node_modules/"].includes(e)),
    [],
    "deno.json excludes",
  );
  const missed = tsFiles("").filter((f) => !targets.some((t) => covers(t, f)));
  assertEquals(missed, []);
});

Deno.test("make check: fmt --check and lint; .ci/run fails when make check fails", () => {
  const recipe = make.slice(make.indexOf("\ncheck:")).split("\n\n")[0];
  assert(recipe.includes("$(DENO) fmt --check"), recipe);
  assert(recipe.includes("$(DENO) lint"), recipe);
  const ci = Deno.readTextFileSync(`${ROOT}.ci/run`);
  assert(/make check \|\| check=\$\?/.test(ci) && /exit "\$check"\s*$/.test(ci.trim() + "\n"), ci);
  const wf = Deno.readTextFileSync(`${ROOT}.github/workflows/ci.yml`);
  assert(/run: make check\b/.test(wf), "the CI workflow does not run make check");
});
