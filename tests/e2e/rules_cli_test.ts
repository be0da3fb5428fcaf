/**
 * Rules (docs/rules.md) as a user meets them, without a terminal: `hallpass rules` lists the rules with their sources,
 * `hallpass rules write PATH` names the deciding rule, a malformed rules file stops hallpass before anything
 * runs (file:line, exit 125), a project rules file can only deny, deny wins ties and the more specific rule wins.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, scratch } from "./harness.ts";

async function setup() {
  const s = await scratch();
  const xdg = `${s.project}/../xdg`;
  await Deno.mkdir(xdg);
  const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: `${s.project}/..`, XDG_CONFIG_HOME: xdg };
  return { ...s, xdg, env };
}

Deno.test("hallpass rules: lists the rules with their sources", async () => {
  const s = await setup();
  try {
    await Deno.mkdir(`${s.xdg}/hallpass`);
    await Deno.writeTextFile(`${s.xdg}/hallpass/rules`, `# saved\nallow write ${s.outside}/saved/**\n`);
    await Deno.writeTextFile(`${s.outside}/x.rules`, `\n# extra\ndeny write ${s.outside}/extra\n`);
    const r = await hallpass(["--rules", `${s.outside}/x.rules`, "rules"], { cwd: s.project, env: s.env });
    assertEquals(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    const line = (rule: string) => lines.find((l) => l.startsWith(rule + " ") || l === rule);
    assert(line(`allow write ${s.outside}/saved/**`)?.includes(`${s.xdg}/hallpass/rules:2`), r.stdout);
    assert(line(`deny write ${s.outside}/extra`)?.includes(`${s.outside}/x.rules:3`), r.stdout);
    assert(line(`allow write ${s.project}/**`)?.includes("--project"), r.stdout);
    assert(r.stdout.includes(`${s.xdg}/hallpass/rules`), "names the saved rules file");
  } finally {
    await s.cleanup();
  }
});

Deno.test("hallpass rules write PATH: names the deciding rule; the more specific one wins", async () => {
  const s = await setup();
  try {
    const f = `${s.outside}/x.rules`;
    await Deno.writeTextFile(f, `allow write ${s.outside}/zz/**\ndeny write ${s.outside}/zz/a/**\n`);
    let r = await hallpass(["--rules", f, "rules", "write", `${s.outside}/zz/a/b`], {
      cwd: s.project,
      env: s.env,
    });
    assertEquals(r.code, 0, r.stderr);
    assert(r.stdout.startsWith(`write ${s.outside}/zz/a/b: denied`), r.stdout);
    assert(/decided by: deny write .*zz\/a\/\*\* .*x\.rules:2/.test(r.stdout), r.stdout);
    r = await hallpass(["--rules", f, "rules", "write", `${s.outside}/zz/b`], { cwd: s.project, env: s.env });
    assert(r.stdout.startsWith(`write ${s.outside}/zz/b: allowed`), r.stdout);
    assert(/decided by: allow write .*zz\/\*\* .*x\.rules:1/.test(r.stdout), r.stdout);
    // More specific allow inside a broad deny: the allow wins.
    await Deno.writeTextFile(f, `deny write ${s.outside}/**\nallow write ${s.outside}/ok/**\n`);
    r = await hallpass(["--rules", f, "rules", "write", `${s.outside}/ok/x`], { cwd: s.project, env: s.env });
    assert(r.stdout.startsWith(`write ${s.outside}/ok/x: allowed`), r.stdout);
    // And the sandbox does what the command says.
    await Deno.mkdir(`${s.outside}/ok`);
    r = await hallpass(
      ["--no-ask", "--rules", f, "--", "sh", "-c", `echo 1 > ${s.outside}/ok/x; echo 2 > ${s.outside}/no`],
      { cwd: s.project, env: s.env },
    );
    assertEquals(await Deno.readTextFile(`${s.outside}/ok/x`), "1\n");
    assert(!(await exists(`${s.outside}/no`)));
    // Not mentioned anywhere: asks.
    r = await hallpass(["rules", "write", "/var/tmp/elsewhere"], { cwd: s.project, env: s.env });
    assert(r.stdout.startsWith("write /var/tmp/elsewhere: asks"), r.stdout);
  } finally {
    await s.cleanup();
  }
});

Deno.test("rules: deny wins over allow at equal specificity", async () => {
  const s = await setup();
  try {
    const f = `${s.outside}/tie.rules`;
    await Deno.writeTextFile(f, `allow write ${s.outside}/q/**\ndeny write ${s.outside}/q/**\n`);
    const r = await hallpass(["--rules", f, "rules", "write", `${s.outside}/q/f`], {
      cwd: s.project,
      env: s.env,
    });
    assert(r.stdout.startsWith(`write ${s.outside}/q/f: denied`), r.stdout);
    assert(r.stdout.includes("tie.rules:2"), r.stdout);
    await Deno.mkdir(`${s.outside}/q`);
    const run = await hallpass(["--no-ask", "--rules", f, "--", "sh", "-c", `echo 1 > ${s.outside}/q/f`], {
      cwd: s.project,
      env: s.env,
    });
    assert(/Permission denied/.test(run.stderr), run.stderr);
    assert(!(await exists(`${s.outside}/q/f`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("a malformed rules file: one line naming file:line, exit 125, nothing runs", async () => {
  const s = await setup();
  try {
    const bad = `${s.outside}/bad.rules`;
    await Deno.writeTextFile(bad, `# fine\nallow write ${s.outside}/x\nbogus line here\n`);
    const r = await hallpass(["--rules", bad, "--", "touch", `${s.project}/ran`], {
      cwd: s.project,
      env: s.env,
    });
    assertEquals(r.code, 125);
    // One line for the error (a `hint:` line may follow).
    const lines = r.stderr.trim().split("\n").filter((l) => !l.startsWith("hint: "));
    assertEquals(lines.length, 1, r.stderr);
    assert(lines[0].startsWith("hallpass: ") && lines[0].includes(`${bad}:3`), r.stderr);
    assert(!(await exists(`${s.project}/ran`)), "the command must not run");
    // A bad saved rules file is just as fatal.
    await Deno.mkdir(`${s.xdg}/hallpass`);
    await Deno.writeTextFile(`${s.xdg}/hallpass/rules`, "allow write\n");
    const r2 = await hallpass(["--", "touch", `${s.project}/ran`], { cwd: s.project, env: s.env });
    assertEquals(r2.code, 125);
    assert(r2.stderr.includes(`${s.xdg}/hallpass/rules:1`), r2.stderr);
    assert(!(await exists(`${s.project}/ran`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("a project rules file denies writes in the project; an allow line in it is refused", async () => {
  const s = await setup();
  try {
    await Deno.mkdir(`${s.project}/.hallpass`);
    await Deno.mkdir(`${s.project}/secret`);
    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, "# narrow only\ndeny write ./secret/**\n");
    const r = await hallpass([
      "--no-ask",
      "--",
      "sh",
      "-c",
      "echo 1 > secret/k; echo rc=$?; echo 2 > open.txt; echo rc=$?",
    ], { cwd: s.project, env: s.env });
    assertEquals(r.code, 0, r.stderr);
    assertEquals(r.stdout, "rc=2\nrc=0\n");
    assert(/Permission denied/.test(r.stderr), r.stderr);
    assert(!(await exists(`${s.project}/secret/k`)));
    assertEquals(await Deno.readTextFile(`${s.project}/open.txt`), "2\n");
    const why = await hallpass(["rules", "write", "secret/k"], { cwd: s.project, env: s.env });
    assert(why.stdout.includes(`.hallpass/rules:2`) && why.stdout.includes(": denied"), why.stdout);

    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, `allow write ${s.outside}/**\n`);
    const r2 = await hallpass(["--no-ask", "--", "sh", "-c", `echo 1 > ${s.outside}/x`], {
      cwd: s.project,
      env: s.env,
    });
    assertEquals(r2.code, 125, r2.stderr);
    assert(r2.stderr.includes(`${s.project}/.hallpass/rules:1`), r2.stderr);
    assert(!(await exists(`${s.outside}/x`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("hallpass's own rules and program copies stay denied, even under an allow of their parent", async () => {
  const s = await setup();
  try {
    const base = Deno.realPathSync(`${s.project}/..`);
    const cache = `${base}/cache`;
    const env = { ...s.env, XDG_CACHE_HOME: cache };
    for (const target of [`${base}/xdg/hallpass/rules`, `${cache}/hallpass/launcher-1234`]) {
      const r = await hallpass(
        ["--allow-path", `${s.xdg}/**`, "--allow-path", `${cache}/**`, "rules", "write", target],
        { cwd: s.project, env },
      );
      assertEquals(r.code, 0, r.stderr);
      assert(r.stdout.startsWith(`write ${target}: denied`), r.stdout);
    }
    // And for real: a sandboxed program cannot replace a cached launcher.
    await Deno.mkdir(`${cache}/hallpass`, { recursive: true });
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--allow-path",
      `${cache}/**`,
      "--",
      "/bin/sh",
      "-c",
      `echo evil > ${cache}/hallpass/launcher-1234`,
    ], { cwd: s.project, env });
    assert(r.code !== 0, r.stderr);
    assert(!(await exists(`${cache}/hallpass/launcher-1234`)));
  } finally {
    await s.cleanup();
  }
});
