/**
 * The command line as README.md, docs/ci.md promise it: exit statuses, bad input (125 + one line + hint), the
 * --no-ask denial lines and exit summary, --log records, broken ask programs, and stdio passing through.
 */
import { deepStrictEqual as assertEquals, match, ok as assert } from "node:assert/strict";
import { exists, hallpass, hallpassLines, scratch } from "./harness.ts";

Deno.test("exit status: the command's own, 128+N on a signal, 127 not found, 126 not executable", async () => {
  const s = await scratch();
  try {
    const run = (...cmd: string[]) => hallpass(["--no-ask", "-q", "--", ...cmd], { cwd: s.project });
    assertEquals((await run("sh", "-c", "exit 0")).code, 0);
    assertEquals((await run("sh", "-c", "exit 3")).code, 3);
    assertEquals((await run("sh", "-c", "exit 255")).code, 255);
    assertEquals((await run("sh", "-c", "kill -TERM $$")).code, 143);
    assertEquals((await run("sh", "-c", "kill -KILL $$")).code, 137);
    assertEquals((await run("sh", "-c", "kill -SEGV $$")).code, 139);
    const nf = await run("no-such-program-hallpass-test");
    assertEquals(nf.code, 127, nf.stderr);
    assertEquals((await run(`${s.project}/missing`)).code, 127);
    await Deno.writeTextFile(`${s.project}/noexec`, "#!/bin/sh\necho hi\n");
    await Deno.chmod(`${s.project}/noexec`, 0o644);
    assertEquals((await run(`${s.project}/noexec`)).code, 126);
    assertEquals((await run(s.project)).code, 126); // a directory
  } finally {
    await s.cleanup();
  }
});

Deno.test("bad input: 125, one line, and a hint; the command never runs", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/bad.rules`, "allow write\nfrobnicate everything\n");
    const marker = `${s.outside}/ran`;
    const cases: string[][] = [
      ["--frobnicate"],
      ["--ask-timeout", "soon"],
      ["--for", "5 minutes"],
      ["--project", `${s.outside}/missing-dir`],
      ["--rules", `${s.outside}/bad.rules`],
      ["--rules", `${s.outside}/no-such.rules`],
      ["--mediate", "write,teleport"],
    ];
    for (const c of cases) {
      const r = await hallpass([...c, "--", "sh", "-c", `touch ${marker}`], { cwd: s.project });
      assertEquals(r.code, 125, `${c.join(" ")}: ${r.stderr}`);
      const lines = r.stderr.trim().split("\n");
      assert(lines[0].startsWith("hallpass: "), `${c.join(" ")}: first line ${JSON.stringify(lines[0])}`);
      assert(lines.length <= 2, `${c.join(" ")}: more than a line and a hint:\n${r.stderr}`);
      assert(r.stderr.includes("hint:"), `${c.join(" ")}: no hint:\n${r.stderr}`);
      assert(!(await exists(marker)), `${c.join(" ")}: the command ran`);
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("--no-ask: a line per denial, and an exit summary naming the option that allows it", async () => {
  const s = await scratch();
  try {
    const r = await hallpass([
      "--no-ask",
      "--",
      "sh",
      "-c",
      `echo x > ${s.outside}/f; mkdir ${s.outside}/d; exit 0`,
    ], {
      cwd: s.project,
    });
    assertEquals(r.code, 0);
    // The line is printed once the call is answered, when the program may already be writing its own error
    // to the same stderr in pieces (dash writes "sh: 1: ", the message and the newline separately; at load the
    // line can come after any of them: docs/terminal.md): it is written whole, and ends a line.
    match(r.stderr, new RegExp(`hallpass: denied write ${s.outside}/f by sh \\(pid \\d+\\)$`, "m"));
    match(r.stderr, new RegExp(`hallpass: denied write ${s.outside}/d by (sh|mkdir) \\(pid \\d+\\)$`, "m"));
    assert(
      r.stderr.includes(`--allow-path ${s.outside}/f`) || r.stderr.includes(`--allow-path ${s.outside}`),
      r.stderr,
    );
    assert(!(await exists(`${s.outside}/f`)) && !(await exists(`${s.outside}/d`)));
    // -q drops the summary, not the denial lines.
    const q = await hallpass(["--no-ask", "-q", "--", "sh", "-c", `echo x > ${s.outside}/f`], {
      cwd: s.project,
    });
    // Counted anywhere in the text, not at line starts: the line may follow the program's "sh: 1: " (above).
    assertEquals(q.stderr.match(/hallpass: /g)?.length, 1, q.stderr);
    assert(q.stderr.includes(`hallpass: denied write ${s.outside}/f`), q.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("--log: one JSON object per decision with time, pid, op, target, decision, by", async () => {
  const s = await scratch();
  try {
    const log = `${s.outside}/../decisions.jsonl`;
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--log",
      log,
      "--",
      "sh",
      "-c",
      `echo x > ${s.outside}/no; echo y > ${s.project}/yes`,
    ], { cwd: s.project });
    assertEquals(r.code, 0, r.stderr);
    const recs = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l));
    for (const rec of recs) {
      for (const k of ["time", "pid", "op", "target", "decision", "by"]) {
        assert(k in rec, `${k} missing: ${JSON.stringify(rec)}`);
      }
      assert(!Number.isNaN(Date.parse(rec.time)), rec.time);
    }
    const denied = recs.find((x) => x.target === `${s.outside}/no`);
    assert(denied, JSON.stringify(recs));
    assertEquals([denied.op, denied.decision], ["write", "deny"]);
    const allowed = recs.find((x) => x.target === `${s.project}/yes`);
    assert(allowed, `the allowed write is not logged: ${JSON.stringify(recs)}`);
    assertEquals([allowed.op, allowed.decision], ["write", "allow"]);
  } finally {
    await s.cleanup();
  }
});

Deno.test("ask program that answers garbage, hangs or dies: denied with one clear line", async () => {
  const s = await scratch();
  try {
    const prog = async (name: string, body: string) => {
      const p = `${s.outside}/../${name}.sh`;
      await Deno.writeTextFile(p, `#!/bin/sh\ncat >/dev/null\n${body}\n`);
      await Deno.chmod(p, 0o755);
      return p;
    };
    const cases: [string, string, string[]][] = [
      ["garbage", "echo 'yes please'", []],
      ["hangs", "sleep 60", ["--ask-timeout", "2s"]],
      ["dies", "kill -KILL $$", []],
      ["silent", "exit 0", []],
    ];
    for (const [name, body, extra] of cases) {
      const t0 = Date.now();
      const r = await hallpass(
        [
          "--ask-program",
          await prog(name, body),
          ...extra,
          "-q",
          "--",
          "sh",
          "-c",
          `echo x > ${s.outside}/${name}`,
        ],
        { cwd: s.project, timeoutMs: 90_000 },
      );
      assert(!(await exists(`${s.outside}/${name}`)), `${name}: the write went through`);
      assertEquals(r.code, 2, `${name}: ${r.stderr}`); // sh: cannot create: Permission denied
      assert(r.stderr.includes("Permission denied"), r.stderr);
      const own = hallpassLines(r).filter((l) => !l.startsWith("hallpass: denied write"));
      assertEquals(own.length, 1, `${name}: expected one line about the ask program:\n${r.stderr}`);
      // Generous at load (a sandbox's start alone can take seconds), and still well short of the 90 s kill.
      if (name.startsWith("hangs")) assert(Date.now() - t0 < 45_000, "--ask-timeout 2s was not honoured");
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("stdin and stdout pass through", async () => {
  const s = await scratch();
  try {
    const r = await hallpass(["--no-ask", "-q", "--", "cat"], { cwd: s.project, stdin: "hi\nthere\n" });
    assertEquals([r.code, r.stdout], [0, "hi\nthere\n"]);
    const big = "x".repeat(1 << 20) + "\n";
    const r2 = await hallpass(["--no-ask", "-q", "--", "wc", "-c"], { cwd: s.project, stdin: big });
    assertEquals(r2.stdout.trim(), String(big.length));
    const r3 = await hallpass(["--no-ask", "-q", "--", "sh", "-c", "echo out; echo err >&2"], {
      cwd: s.project,
    });
    assertEquals([r3.stdout, r3.stderr], ["out\n", "err\n"]);
  } finally {
    await s.cleanup();
  }
});
