/**
 * No directory is renamed into the project from outside it (lib/supervisor/moved_in.ts): which renames the
 * supervisor refuses, and the Landlock rights that make the kernel refuse the rest (lib/sandbox/plan.ts).
 * End to end: tests/e2e/moved_in_repos_test.ts.
 */
import assert from "node:assert/strict";
import { movesIntoProject } from "../lib/supervisor/moved_in.ts";
import { landlockPlan, type Plan } from "../lib/sandbox/plan.ts";
import { FS } from "../ffi/landlock.ts";

Deno.test("movesIntoProject: a source outside and a destination inside, or both ways with RENAME_EXCHANGE", () => {
  const ends = (a: string, b: string) => [{ path: a }, { path: b }];
  const table: [string, number, string, string, string | undefined, boolean][] = [
    ["rename", 0, "/z/prep", "/p/sub", "/p", true],
    ["rename", 0, "/z/prep", "/p", "/p", true], // onto the project's own name
    ["rename", 0, "/p/a", "/p/b", "/p", false],
    ["rename", 0, "/p/a", "/z/b", "/p", false],
    ["rename", 2, "/p/a", "/z/b", "/p", true], // RENAME_EXCHANGE brings /z/b in
    ["rename", 1, "/p/a", "/z/b", "/p", false], // RENAME_NOREPLACE
    ["rename", 0, "/pp/a", "/p/b", "/p", true], // a sibling that starts like the project
    ["rename", 0, "/z/a", "/p/b", undefined, false], // no project known
    ["link", 0, "/z/a", "/p/b", "/p", false], // a link sets the file's ctime: the exit check sees it
    ["rename", 0, "/z/a", "/p/b", "/", false], // the project is "/": nothing is outside
  ];
  for (const [kind, flags, from, to, project, want] of table) {
    assert.equal(
      movesIntoProject(kind, flags, ends(from, to), project),
      want,
      `${kind} ${from} ${to} ${flags}`,
    );
  }
});

Deno.test("landlockPlan: floor entries outside the project lack MAKE_BLOCK, those in it have it", () => {
  const plan = {
    project: "/home/me/p",
    floor: [
      { kind: "tree", path: "/home/me/p/src" },
      { kind: "tree", path: "/home/me/p/.git/objects" },
      { kind: "tree", path: "/home/me/pp" },
      { kind: "tree", path: "/tmp" },
      { kind: "exact", path: "/dev/null" },
    ],
  } as unknown as Plan;
  const r = landlockPlan(plan, 4, false);
  const has = (path: string) => (r.paths.find((p) => p.path === path)!.access & FS.MAKE_BLOCK) !== 0n;
  assert.deepEqual(
    plan.floor.map((f) => has(f.path)),
    [true, true, false, false, false],
  );
  assert.ok((r.handledFs & FS.MAKE_BLOCK) !== 0n, "MAKE_BLOCK is handled: refused where not granted");
});
