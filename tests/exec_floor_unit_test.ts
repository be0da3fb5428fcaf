// The execute floor (lib/floor/exec_floor.ts) holds every program the policy allows without a person: each compiled
// exec allow of lib/policy/policy.ts (groups and names expanded) is inside a floor entry.
import { strict as assert } from "node:assert";
import { execFloor } from "../lib/floor/exec_floor.ts";
import { newGroupTable } from "../lib/policy/exec_groups.ts";
import { Policy } from "../lib/policy/policy.ts";
import { lookupInPath } from "../lib/policy/path_lookup.ts";
import { scopeCovers } from "../lib/policy/path_scope.ts";
import type { Plan } from "../lib/sandbox/plan.ts";
import type { Rule } from "../lib/types.ts";

const src = { kind: "cli" as const, option: "--allow-exec" };
const rule = (target: string, extra: Partial<Rule> = {}): Rule => ({
  effect: "allow",
  op: "exec",
  target,
  source: src,
  ...extra,
});

Deno.test("the execute floor covers every exec allow the policy compiles, and nothing with a duration", () => {
  const pathEnv = "/usr/local/bin:/usr/bin:/bin";
  const tmp = Deno.makeTempDirSync({ prefix: "hallpass-floor-" });
  Deno.mkdirSync(`${tmp}/bin`);
  const rules: Rule[] = [
    rule("@system"),
    rule("@shells"),
    rule("@coreutils"),
    rule("/opt/tools/**"),
    rule("/srv/app/run.sh"),
    rule("sh"),
    rule("/usr/no-such-dir-hallpass/app"),
    rule(`${tmp}/build/app`),
    rule(`${tmp}/bin/x*`),
    rule("/tmp/timed/**", { expiresAt: Date.now() + 60_000 }),
    { effect: "deny", op: "exec", target: "/usr/bin/curl", source: src },
  ];
  const plan = {
    project: "/p",
    home: "/home/me",
    cwd: "/p",
    rules,
    floor: [{ kind: "tree", path: tmp }],
    program: "/usr/bin/true",
    argv: ["true"],
    pathEnv,
    userRulesFile: "/home/me/.config/hallpass/rules",
    reads: { protect: [], lifted: [], readable: [], unused: [] },
    groups: newGroupTable(),
  } satisfies Plan;
  const floor = execFloor(plan);
  const lookup = (p: string) => lookupInPath(p, pathEnv);
  const policy = new Policy(rules, { home: plan.home, cwd: plan.cwd, lookup });
  for (const e of policy.pathEntries("exec")) {
    if (e.effect !== "allow" || e.expiresAt !== Infinity) continue;
    // A path that does not exist outside the write floor cannot hold a program the sandbox runs.
    const there = (() => {
      try {
        Deno.statSync(e.path);
        return true;
      } catch {
        return e.path.startsWith(tmp + "/");
      }
    })();
    if (!there) continue;
    const probe = e.tree ? `${e.path}/x` : e.path.replace(/[*?[].*$/, "y");
    assert.ok(floor.some((f) => scopeCovers(f, probe)), `${e.path} (${probe}) is not in the floor`);
  }
  assert.ok(floor.some((f) => f.path === "/usr/bin/true"), "the command");
  // Not there yet: in the write floor, its nearest existing directory, whole; elsewhere nothing, never "/".
  assert.ok(floor.some((f) => f.kind === "tree" && f.path === tmp), JSON.stringify(floor));
  assert.ok(!floor.some((f) => f.path.includes("no-such-dir") || f.path === "/"), JSON.stringify(floor));
  assert.ok(floor.some((f) => f.kind === "tree" && f.path === `${tmp}/bin`), "a glob grants its directory");
  Deno.removeSync(tmp, { recursive: true });
  assert.ok(!floor.some((f) => f.path.startsWith("/tmp/timed")), "a rule with a duration");
});
