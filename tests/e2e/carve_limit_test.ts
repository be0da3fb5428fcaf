/**
 * A project whose top holds more entries than Landlock rules can be made for (the carve of the write floor
 * around `.git/hooks` grants entry by entry): hallpass still starts, says so in one line, performs every write in
 * the project itself, and the protected paths stay protected. A sandbox that fills the project's top cannot keep
 * the next session from starting (docs/threat-model.md, "What is left behind to run outside").
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, scratch } from "./harness.ts";

Deno.test("a project top with 20,050 entries: starts, says so, writes performed, hooks still denied", async () => {
  const s = await scratch();
  try {
    const git = await new Deno.Command("git", { args: ["init", "-q", s.project] }).output();
    assert(git.success);
    for (let i = 0; i < 20_050; i++) Deno.writeFileSync(`${s.project}/f${i}`, new Uint8Array());
    const r = await hallpass([
      "--no-ask",
      "--",
      "sh",
      "-c",
      'echo x > new.txt; echo "new=$?"; mkdir d && echo y > d/f; echo "d=$?"; ' +
      'echo evil > .git/hooks/pre-commit 2>/dev/null; echo "hook=$?"',
    ], { cwd: s.project });
    assertEquals(r.code, 0, r.stderr);
    assert(/more than 20000 Landlock rules needed.*performed by hallpass/.test(r.stderr), r.stderr);
    assert(!/internal error/.test(r.stderr), r.stderr);
    assert(r.stdout.includes("new=0") && r.stdout.includes("d=0"), r.stdout + r.stderr);
    assert(/hook=[1-9]/.test(r.stdout), r.stdout);
    assertEquals(await Deno.readTextFile(`${s.project}/new.txt`), "x\n");
    assert(!(await exists(`${s.project}/.git/hooks/pre-commit`)), "the hook was written");
  } finally {
    await s.cleanup();
  }
});
