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
import {
  fastExecRoots,
  fastFileRoots,
  fastPerformRegion,
  fastWriteRoots,
  taintedFloor,
} from "../lib/supervisor/fast_roots.ts";
import { writeVerdict } from "../lib/supervisor/decide.ts";
import type { ProtectedPath } from "../lib/policy/protected_paths.ts";

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

/**
 * The perform region (fastPerformRegion, checked as helper/fastpath/fastpath.c perform_ok checks it): every
 * path in it is decided "allow" — never "floor", "deny" or "ask" — for every kind of call, and no path there
 * carries a read protection or is new in a read-carved directory. Every combination of a set of rules, with
 * and without a floor, protected paths and read protections.
 */
Deno.test("every path in the perform region is allowed, outside the floor, and nothing the mediator notes", () => {
  const ruleLines = [
    "allow write /p/**",
    "allow write ~/.npm/**",
    "deny write /p/secret/**",
    "deny write /p/x.pem",
    "deny write /p/nm/*.key",
    "allow write /p/nm/keep/** for 10m",
    "deny write /p/**",
    "allow write /p/a",
    "deny write /p/nm/deep/x/**",
    "allow write /q/**",
    "deny write /q/*.key",
    "deny write /q",
  ];
  const parsed = ruleLines.map((l) => rules(l));
  const floors: PathScope[][] = [
    [{ kind: "tree", path: "/p/src" }, { kind: "exact", path: "/dev/null" }, {
      kind: "tree",
      path: "/p/.git/objects",
    }],
    [{ kind: "tree", path: "/p" }],
    [],
  ];
  const prot: ProtectedPath[] = [
    { scope: { kind: "exact", path: "/p/.git" }, reason: "git" },
    { scope: { kind: "tree", path: "/p/.git/hooks" }, reason: "git" },
    { scope: { kind: "exact", path: "/p/.git/config" }, reason: "git" },
    { scope: { kind: "tree", path: "/p/.hallpass" }, reason: "hallpass" },
  ];
  const paths = [
    "/p/nm",
    "/p/nm/a",
    "/p/nm/a/b",
    "/p/nm/x.key",
    "/p/nm/keep/a",
    "/p/nm/deep",
    "/p/nm/deep/x",
    "/p/nm/deep/x/y",
    "/p",
    "/home/me/.npm",
    "/q",
    "/q/a.key",
    "/q/b",
    "/p/secret",
    "/p/secret/a",
    "/p/src",
    "/p/src/a",
    "/p/.git",
    "/p/.git/hooks",
    "/p/.git/hooks/h",
    "/p/.git/config",
    "/p/.git/index",
    "/p/.git/objects/ab",
    "/p/.hallpass",
    "/p/.hallpass/rules",
    "/p/.env",
    "/p/.env/x",
    "/p/x.pem",
    "/p/a",
    "/p/top",
    "/home/me/.npm/_cacache/x",
    "/home/me/.npmrc",
    "/other/x",
  ];
  // helper/fastpath/fastpath.c perform_ok, in TypeScript
  // (a name in a newNames directory counts too: the fast path performs there only what makes no new name)
  const inRegion = (r: ReturnType<typeof fastPerformRegion>, p: string, names: boolean) => {
    if (!r.roots.some((x) => p === x || p.startsWith(x + "/"))) return false;
    const parent = p.slice(0, p.lastIndexOf("/"));
    if (r.tree.some((t) => p === t || p.startsWith(t + "/"))) return false;
    if (r.exact.includes(p) || r.children.includes(parent)) return false;
    return !names ||
      ![...r.tree, ...r.exact, ...r.children, ...r.newNames].some((e) => e.startsWith(p + "/"));
  };
  let inside = 0;
  for (let mask = 0; mask < 1 << ruleLines.length; mask++) {
    const subset = parsed.filter((_, i) => mask & (1 << i)).flat();
    for (const floor of floors) {
      for (const withProt of [false, true]) {
        const { p } = setup(subset, floor);
        const write = p.pathEntries("write");
        const protectedPaths = withProt ? prot : [];
        const readProtect = withProt ? ["/p/.env"] : [];
        const readCarved = withProt ? ["/p"] : [];
        const region = fastPerformRegion(write, floor, {
          protected: protectedPaths,
          readProtect,
          readCarved,
        });
        const ctx = { policy: p, floor, tainted: taintedFloor(floor, write), protected: protectedPaths };
        for (const path of paths) {
          if (!inRegion(region, path, false)) continue;
          inside++;
          for (const contents of [true, false]) {
            for (const names of [false, true]) {
              if (names && !inRegion(region, path, true)) continue; // a rename end: never above an exception
              assert.equal(
                writeVerdict(ctx, path, contents, names, NOW),
                "allow",
                `${path} (contents=${contents} names=${names}) with rules ${
                  JSON.stringify(subset.map((r) => r.target))
                }, floor ${JSON.stringify(floor)}`,
              );
            }
          }
          assert(!readProtect.some((r) => path === r || path.startsWith(r + "/")), path);
          // a rename end carries no read protection along
          if (inRegion(region, path, true)) assert(!readProtect.some((r) => r.startsWith(path + "/")), path);
          if (readCarved.includes(path.slice(0, path.lastIndexOf("/")))) {
            assert(region.newNames.includes(path.slice(0, path.lastIndexOf("/"))), path);
          }
        }
      }
    }
  }
  assert(inside > 1000, `only ${inside} paths were in a region: the check checked little`);
});

Deno.test("the perform region of a project carved around .git: below a new top directory, not in the floor", () => {
  const floor: PathScope[] = [{ kind: "tree", path: "/p/src" }, { kind: "tree", path: "/p/.git/objects" }];
  const { p } = setup("allow write /p/**", floor);
  const r = fastPerformRegion(p.pathEntries("write"), floor, {
    protected: [{ scope: { kind: "tree", path: "/p/.git/hooks" }, reason: "git" }],
  });
  assert.deepEqual(r.roots, ["/p"]);
  assert.deepEqual(r.tree.sort(), ["/p/.git/hooks", "/p/.git/objects", "/p/src"]);
  // a duration: the region would change when it ends (and the mediator recomputes on every rule change)
  assert.deepEqual(
    fastPerformRegion(setup("allow write /q/** for 10m", []).p.pathEntries("write"), [], {}).roots,
    [],
  );
});
