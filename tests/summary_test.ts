/**
 * The exit summary suggests what would work: many files of one directory as one `DIR/**`; a denial by a rule
 * names that rule instead of an --allow-path it would override; a rename names its destination.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { Summary } from "../lib/cli/summary.ts";

const d = (target: string, o: { suggest?: string; rule?: string } = {}) => ({
  op: "write",
  target,
  pid: 7,
  name: "sh",
  suggest: o.suggest ?? target,
  rule: o.rule,
});

Deno.test("summary: three files of one directory are one DIR/** suggestion; two stay apart", () => {
  const s = new Summary();
  for (const f of ["a", "b", "c"]) s.denied(d(`/home/me/.cache/x/${f}`));
  s.denied(d("/home/me/.cache/x/a")); // the same file again: counted
  for (const f of ["p", "q"]) s.denied(d(`/etc/${f}`));
  const lines = s.lines();
  assertEquals(lines.slice(1), [
    "  write /home/me/.cache/x/** (3 files) (4×)",
    "      --allow-path '/home/me/.cache/x/**'   or rule: allow write /home/me/.cache/x/**",
    "  write /etc/p",
    "      --allow-path /etc/p   or rule: allow write /etc/p",
    "  write /etc/q",
    "      --allow-path /etc/q   or rule: allow write /etc/q",
  ]);
});

Deno.test("summary: denied by a rule names the rule, never an --allow-path it would override", () => {
  const s = new Summary();
  s.denied(
    d("/home/me/secret/x", { rule: "deny write /home/me/secret/**   (/home/me/.config/hallpass/rules:3)" }),
  );
  const [, what, fix] = s.lines();
  assertEquals(what, "  write /home/me/secret/x");
  assert(!fix.includes("--allow-path "), fix);
  assert(
    fix.includes("denied by the rule deny write /home/me/secret/**   (/home/me/.config/hallpass/rules:3)"),
    fix,
  );
  assert(fix.includes("hallpass rules write /home/me/secret/x"), fix);
});

Deno.test("summary: a rename shows both ends and suggests its destination", () => {
  const s = new Summary();
  s.denied(d("/tmp/x.tmp.1 → /home/me/x", { suggest: "/home/me/x" }));
  assertEquals(s.lines().slice(1), [
    "  write /tmp/x.tmp.1 → /home/me/x",
    "      --allow-path /home/me/x   or rule: allow write /home/me/x",
  ]);
});
