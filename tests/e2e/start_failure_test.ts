/**
 * A start that fails after the launcher was started (it starts while the read side is carved, and waits for its
 * configuration: lib/sandbox/run.ts): hallpass says why in one line and a hint, exits 125, the command never
 * runs, and the launcher, which sees hallpass gone before it was configured, says nothing. The failure here is
 * the read side's rule limit: a protected directory below one with more than 20,000 entries. Control: the same
 * $HOME with fewer entries starts the command.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, scratchHome } from "./harness.ts";

Deno.test("a start that fails after the launcher started: one line and a hint, 125, nothing ran, no launcher line", async () => {
  const t = await scratchHome("hallpass-startfail-");
  try {
    await Deno.mkdir(`${t.home}/.ssh`);
    const mark = `${t.project}/ran`; // in the project: the sandbox may write it
    const args = ["--no-ask", "--", "sh", "-c", 'echo x > "$1"', "sh", mark];
    const env = { HOME: t.home };
    // Control: with a few entries the command runs.
    const c = await hallpass(args, { cwd: t.project, env });
    assertEquals(c.code, 0, c.stderr);
    assert(await exists(mark), "control: the command ran");
    await Deno.remove(mark);
    for (let i = 0; i < 20_050; i++) await Deno.writeTextFile(`${t.home}/f${i}`, "");
    for (const lib of ["1", "0"]) {
      const r = await hallpass(args, { cwd: t.project, env: { ...env, HALLPASS_START_LIB: lib } });
      const lines = r.stderr.trimEnd().split("\n");
      assertEquals({ lib, code: r.code }, { lib, code: 125 }, r.stderr);
      assert(
        lines.length === 2 &&
          /^hallpass: cannot protect the credential locations: more than 20000/.test(lines[0]) &&
          lines[1].startsWith("hint: "),
        `lib=${lib}: ${r.stderr}`,
      );
      assert(!(await exists(mark)), `lib=${lib}: the command ran`);
    }
  } finally {
    await t.cleanup();
  }
});
