/**
 * What the fast path may decide by itself (lib/supervisor/fast_roots.ts) must never differ from the policy:
 * every program below an exec root is allowed by Policy.decide (with the mediator's isWritable), and every
 * path below a write root is allowed and in no deny rule's way. Checked on chosen cases, then on every
 * combination of a set of rules against a set of programs and paths.
 */
import assert from "node:assert/strict";
import { newGroupTable } from "../lib/policy/exec_groups.ts";
import { Policy } from "../lib/policy/policy.ts";
import { parseRules } from "../lib/policy/rules_file.ts";
import type { PathScope, Rule } from "../lib/types.ts";
import { scopeCovers } from "../lib/policy/path_scope.ts";
import { fastExecRoots, fastFileRoots, fastWriteRoots, taintedFloor } from "../lib/supervisor/fast_roots.ts";

const NOW = 1_700_000_000_000;
const HOME = "/home/me";
const builtin: Rule = {
  effect: "allow",
  op: "exec",
  target: "@system",
  source: { kind: "builtin", what: "@system" },
};

function rules(text: string): Rule[] {
  return parseRules(text, {
    file: "r",
    project: false,
    cwd: "/proj",
    home: HOME,
    lookup: (p) => (p === "git" ? "/usr/bin/git" : null),
    now: NOW,
    groups: newGroupTable(),
  });
}

function setup(text: string | Rule[], floor: PathScope[]) {
  const holder: { p?: Policy } = {};
  const inFloor = (path: string) => floor.some((f) => scopeCovers(f, path));
  const p = new Policy([builtin, ...(typeof text === "string" ? rules(text) : text)], {
    home: HOME,
    cwd: "/proj",
    lookup: (x) => (x === "git" ? "/usr/bin/git" : null),
    groups: newGroupTable(),
    // as the mediator does
    isWritable: (path) => inFloor(path) || holder.p!.decide("write", path, NOW).effect === "allow",
  });
  holder.p = p;
  const write = p.pathEntries("write");
  return {
    p,
    exec: fastExecRoots(p.pathEntries("exec"), write, floor),
    write: fastWriteRoots(floor, write),
    files: fastFileRoots(floor, write),
    tainted: taintedFloor(floor, write).map((f) => f.path),
  };
}

const PROJECT: PathScope = { kind: "tree", path: "/home/me/proj" };
const DEVNULL: PathScope = { kind: "exact", path: "/dev/null" };

Deno.test("exec roots: the @system trees, less every tree a rule could make differ", async (t) => {
  const SYSTEM = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/opt",
    "/nix/store",
    "/snap",
  ];
  const cases: [string, PathScope[], string[]][] = [
    ["", [PROJECT, DEVNULL], SYSTEM],
    // a deny anywhere in, at or above a tree drops the tree
    ["deny exec /usr/bin/curl", [PROJECT], SYSTEM.filter((r) => r !== "/usr")],
    ["deny exec /**", [PROJECT], []],
    ["deny exec git", [PROJECT], SYSTEM.filter((r) => r !== "/usr")],
    // @system does not apply to what the sandbox may write: a floor or a write allow in a tree drops it
    ["", [PROJECT, { kind: "tree", path: "/opt/work" }], SYSTEM.filter((r) => r !== "/opt")],
    ["allow write /usr/local/**", [PROJECT], SYSTEM.filter((r) => r !== "/usr")],
    ["allow write /**", [PROJECT], []],
    // ... unless the user allowed the tree by path: then it applies whatever is writable
    ["allow write /opt/**\nallow exec /opt/**", [PROJECT], SYSTEM],
    // a rule with a duration is left to the mediator
    ["allow exec /home/me/bin/** for 1h", [PROJECT], SYSTEM],
    ["allow exec /home/me/bin/**", [PROJECT], [...SYSTEM, "/home/me/bin"]],
  ];
  for (const [text, floor, want] of cases) {
    await t.step(`${JSON.stringify(text)} with floor ${floor.map((f) => f.path).join(",")}`, () => {
      assert.deepEqual(setup(text, floor).exec.sort(), [...want].sort());
    });
  }
});

Deno.test("write roots: floor trees without a deny rule in, at or above them; files without a deny", () => {
  const floor = [PROJECT, { kind: "tree", path: "/tmp/x" } as PathScope, DEVNULL];
  let s = setup("", floor);
  assert.deepEqual(s.write, ["/home/me/proj", "/tmp/x"]);
  assert.deepEqual(s.files, ["/dev/null"]);
  s = setup("deny write /home/me/proj/.git/hooks/**", floor);
  assert.deepEqual(s.write, ["/tmp/x"]);
  assert.deepEqual(s.tainted, ["/home/me/proj"]);
  s = setup("deny write /home/**", floor);
  assert.deepEqual(s.write, ["/tmp/x"]);
  s = setup("deny write /dev/null", floor);
  assert.deepEqual(s.files, []);
  s = setup("deny write /tmp/xy/**", floor); // a sibling with a common prefix is no overlap
  assert.deepEqual(s.write, ["/home/me/proj", "/tmp/x"]);
  // a glob counts as its whole directory: a deny glob inside (or naming) a floor tree taints it
  s = setup("deny write /home/me/proj/.env*", floor);
  assert.deepEqual(s.write, ["/tmp/x"]);
  s = setup("deny write /tmp/x*", floor);
  assert.deepEqual(s.write, ["/home/me/proj"]);
  s = setup("deny write /dev/nul*", floor);
  assert.deepEqual(s.files, []);
});

Deno.test("every program below an exec root and every path below a write root is allowed by the policy", () => {
  const ruleLines = [
    "deny exec /usr/bin/curl",
    "allow exec /usr/local/bin/**",
    "allow write /usr/local/**",
    "allow write /opt/data/**",
    "deny exec /opt/**",
    "allow exec /opt/tool/**",
    "deny write /home/me/proj/secrets/**",
    "allow exec /home/me/proj/bin/** for 1h",
    "allow exec /home/me/proj/scripts/**",
    "deny exec /home/me/proj/scripts/bad",
    "allow write /home/me/.cache/**",
    "deny write /home/me/.cache/hallpass/**",
    "deny write /home/me/proj/.env*",
    "deny exec /usr/local/bin/ev*l",
    "allow write /usr/local/bin/x*",
  ];
  const programs = [
    "/usr/bin/git",
    "/usr/bin/curl",
    "/usr/local/bin/x",
    "/usr/local/bin/evil",
    "/usr/lib/gcc/cc1",
    "/opt/tool/t",
    "/opt/data/d",
    "/bin/sh",
    "/home/me/proj/scripts/bad",
    "/home/me/proj/scripts/ok",
    "/home/me/proj/bin/b",
    "/nix/store/abc/bin/x",
  ];
  const writes = [
    "/home/me/proj/a",
    "/home/me/proj/secrets/k",
    "/home/me/proj/.env.local",
    "/home/me/.cache/x",
    "/home/me/.cache/hallpass/l",
  ];
  const floors: PathScope[][] = [[PROJECT], [PROJECT, { kind: "tree", path: "/home/me/.cache" }], [
    { kind: "tree", path: "/usr/local" },
  ]];
  let checked = 0;
  // every subset of the rules (2^15), every floor
  let subsets = 0;
  const parsed = ruleLines.map((l) => rules(l)); // each line parsed once
  for (let mask = 0; mask < 1 << ruleLines.length; mask++) {
    subsets++;
    const text = ruleLines.filter((_, i) => mask & (1 << i)).join("\n");
    const subset = parsed.filter((_, i) => mask & (1 << i)).flat();
    for (const floor of floors) {
      const s = setup(subset, floor);
      for (const prog of programs) {
        if (!s.exec.some((r) => scopeCovers({ kind: "tree", path: r }, prog))) continue;
        assert.equal(
          s.p.decide("exec", prog, NOW).effect,
          "allow",
          `${text} | floor ${JSON.stringify(floor)}: ${prog}`,
        );
        checked++;
      }
      for (const w of writes) {
        if (!s.write.some((r) => scopeCovers({ kind: "tree", path: r }, w))) continue;
        assert.notEqual(s.p.decide("write", w, NOW).effect, "deny", `${text}: ${w}`);
        checked++;
      }
    }
  }
  assert.equal(subsets, 2 ** ruleLines.length);
  assert.ok(checked > 1000, `only ${checked} checks`);
});
