/**
 * A project's rules can only narrow, whatever links are on their way (docs/threat-model.md, "What is left
 * behind to run outside"). The attack: a session that may write one place outside the project plants a file
 * there with `allow write /**` and links the project's `.hallpass/rules` (or the `.hallpass` directory) to
 * it; every later `--no-ask` session in that project would then write anywhere. Judged from outside: the
 * outside file is never written, and hallpass refuses to start with one line naming the link.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, scratch } from "./harness.ts";

async function attempt(setup: (project: string, outside: string) => Promise<string[]>) {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/planted`, "allow write /**\n");
    const extra = await setup(s.project, s.outside);
    const r = await hallpass([
      "--no-ask",
      ...extra,
      "--",
      "/bin/sh",
      "-c",
      `echo pwned > ${s.outside}/victim`,
    ], {
      cwd: s.project,
      env: { HOME: s.outside, XDG_CONFIG_HOME: `${s.outside}/config` },
    });
    assert(!(await exists(`${s.outside}/victim`)), `the planted allow widened the policy: ${r.stderr}`);
    return { r, project: s.project, outside: s.outside, cleanup: s.cleanup };
  } catch (e) {
    await s.cleanup();
    throw e;
  }
}

Deno.test("project rules: .hallpass/rules as a symlink to an outside file is refused, with one line", async () => {
  const t = await attempt(async (p, o) => {
    await Deno.mkdir(`${p}/.hallpass`);
    await Deno.symlink(`${o}/planted`, `${p}/.hallpass/rules`);
    return [];
  });
  try {
    assertEquals(t.r.code, 125, t.r.stderr);
    assert(t.r.stderr.startsWith(`hallpass: ${t.project}/.hallpass/rules is a symlink`), t.r.stderr);
  } finally {
    await t.cleanup();
  }
});

Deno.test("project rules: a symlinked .hallpass directory is refused", async () => {
  const t = await attempt(async (p, o) => {
    await Deno.mkdir(`${o}/dir`);
    await Deno.copyFile(`${o}/planted`, `${o}/dir/rules`);
    await Deno.symlink(`${o}/dir`, `${p}/.hallpass`);
    return [];
  });
  try {
    assertEquals(t.r.code, 125, t.r.stderr);
    assert(t.r.stderr.includes(`${t.project}/.hallpass is a symlink`), t.r.stderr);
  } finally {
    await t.cleanup();
  }
});

Deno.test("project rules: a --rules file that is in the project by its name or by its target only narrows", async () => {
  for (const where of ["name in project", "target in project"]) {
    const t = await attempt(async (p, o) => {
      if (where === "name in project") {
        await Deno.symlink(`${o}/planted`, `${p}/my.rules`);
        return ["--rules", `${p}/my.rules`];
      }
      await Deno.copyFile(`${o}/planted`, `${p}/my.rules`);
      await Deno.symlink(`${p}/my.rules`, `${o}/link.rules`);
      return ["--rules", `${o}/link.rules`];
    });
    try {
      assertEquals(t.r.code, 125, `${where}: ${t.r.stderr}`);
      assert(t.r.stderr.includes("a project rules file can only deny"), `${where}: ${t.r.stderr}`);
    } finally {
      await t.cleanup();
    }
  }
});

Deno.test("project rules: a real .hallpass/rules is read and narrows (deny holds)", async () => {
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.project}/.hallpass`);
    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, "deny write ./secret/**\n");
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--",
      "/bin/sh",
      "-c",
      "mkdir -p secret; echo x > secret/f; echo y > ok",
    ], {
      cwd: s.project,
      env: { HOME: s.outside, XDG_CONFIG_HOME: `${s.outside}/config` },
    });
    assert(r.stderr.includes("denied write"), r.stderr);
    assert(!(await exists(`${s.project}/secret/f`)));
    assertEquals(await Deno.readTextFile(`${s.project}/ok`), "y\n");
  } finally {
    await s.cleanup();
  }
});
