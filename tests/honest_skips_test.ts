/**
 * The suite's own rule (tests/helpers/skip.ts): a test that cannot run here is reported skipped with its
 * reason, never passed. This scans every test file for the forms that hid skips before: a note printed and
 * a return, a bare boolean `ignore:`, `assert(true)`.
 */
import { ok as assert } from "node:assert/strict";
import { MAKE_INSTALLS } from "./helpers/skip.ts";

const ROOT = new URL("..", import.meta.url).pathname;
/** This file and the helper itself, which name the forms. */
const SELF = [new URL(import.meta.url).pathname, new URL("./helpers/skip.ts", import.meta.url).pathname];

function* testFiles(dir: string): Generator<string> {
  for (const e of Deno.readDirSync(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory && e.name !== "fixtures" && e.name !== "node_modules") yield* testFiles(p);
    else if (e.isFile && e.name.endsWith(".ts") && !SELF.includes(p)) yield p;
  }
}

const FORBIDDEN: [RegExp, string][] = [
  [
    /console\.(log|error)\([^\n]*\b(skipp?ed|not tested)\b/i,
    "a skip printed instead of reported (use ignore:)",
  ],
  [/\bassert(\.ok)?\(true\)/, "assert(true) checks nothing"],
  [/\bconst ignore = !/, "a boolean ignore without a reason (tests/helpers/skip.ts)"],
  [
    /\bignore:\s*(![\w.()"]+|true|[\w.]+ ===? null)\s*(,|\}|$)/,
    "a boolean ignore: without a reason (tests/helpers/skip.ts)",
  ],
];

Deno.test("no test file hides a skip: no printed skip, no bare boolean ignore, no assert(true)", () => {
  const bad: string[] = [];
  for (const f of testFiles(`${ROOT}tests`)) {
    const lines = Deno.readTextFileSync(f).split("\n");
    lines.forEach((l, i) => {
      for (const [re, why] of FORBIDDEN) {
        if (re.test(l)) bad.push(`${f.slice(ROOT.length)}:${i + 1}: ${why}: ${l.trim()}`);
      }
    });
  }
  assert(bad.length === 0, bad.join("\n"));
});

Deno.test("every tool tests/helpers/skip.ts says `make test` installs is in the Makefile's package lists", () => {
  const mk = Deno.readTextFileSync(`${ROOT}Makefile`).replaceAll("\\\n", " ");
  const pkgs = new Set(
    [...mk.matchAll(/^(APT_PKGS|TEST_PKGS)\s*:=(.*)$/gm)].flatMap((m) => m[2].trim().split(/\s+/)),
  );
  const missing = Object.entries(MAKE_INSTALLS).filter(([, p]) => !pkgs.has(p));
  assert(missing.length === 0, `not in APT_PKGS/TEST_PKGS: ${JSON.stringify(missing)}`);
});
