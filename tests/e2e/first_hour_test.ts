/**
 * A new user's and an operator's first hour with bad input (README.md "Exit status"): each entry point answers
 * one clear line (and a hint) with the README's exit status, never a raw escape sequence or newline from an
 * argument, never an internal error, never a hung session, and runs nothing.
 */
import { deepStrictEqual as assertEquals, match, ok as assert } from "node:assert/strict";
import { exists, hallpass, HALLPASS_ARGV, HALLPASS_BIN, isRoot, ROOT, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { Tmux } from "./tmux.ts";

/** An argument a terminal would obey: set the window title, clear the screen, a newline, and C1 CSI (U+009B). */
const HOSTILE = "\x1b]0;pwned\x07\x1b[2J\nline2\u009bX";

/** No byte of `text` that a terminal would take as a control function (ESC, BEL, C1), no newline but line ends. */
function assertInert(text: string, what: string): void {
  assert(
    // deno-lint-ignore no-control-regex
    !/[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(text),
    `${what}: a control character reached the output:\n${text}`,
  );
  assert(!/^line2/m.test(text), `${what}: the argument's newline started a line:\n${text}`);
}

Deno.test("control characters in arguments reach the terminal visible, never raw, at every entry point", async () => {
  const s = await scratch();
  try {
    const marker = `${s.project}/ran`; // the project: the command could make it
    const run = ["--", "sh", "-c", `touch ${marker}`];
    const cases: [string[], number][] = [
      [["--no-ask", "--", HOSTILE], 127],
      [[`--${HOSTILE}`, ...run], 125],
      [["--project", HOSTILE, ...run], 125],
      [["--rules", HOSTILE, ...run], 125],
      [["--agent", HOSTILE, ...run], 125],
      [["--allow-exec", HOSTILE, ...run], 125],
      [["--allow-path", `${s.outside}/${HOSTILE}`, ...run], 125],
      [["--for", HOSTILE, ...run], 125],
      [["--log", `${s.outside}/missing/${HOSTILE}`, ...run], 125],
      [["rules", "write", HOSTILE], 0],
      [["rules", "exec", HOSTILE], 125],
      [["agent", "--rules", HOSTILE], 125],
      [["agent", "--listen", HOSTILE], 125],
      [["answer", "--token-file", `${s.outside}/${HOSTILE}`, "--agent", "http://127.0.0.1:9"], 2],
    ];
    for (const [args, code] of cases) {
      const what = JSON.stringify(args);
      const r = await hallpass(args, { cwd: s.project, timeoutMs: 60_000 });
      assertEquals(r.code, code, `${what}: ${r.stderr}`);
      assertInert(r.stderr, what);
      assertInert(r.stdout, what);
      assert(!r.stderr.includes("internal error"), `${what}: ${r.stderr}`);
      if (code !== 0) {
        assert(r.stderr.trim().split("\n").length <= 2, `${what}: more than a line and a hint:\n${r.stderr}`);
      }
      assert(!(await exists(marker)), `${what}: the command ran`);
    }
    // The user sees what was given, made visible.
    const nf = await hallpass(["--no-ask", "--", HOSTILE], { cwd: s.project });
    assert(nf.stderr.includes("^[]0;pwned^G^[[2J\\nline2<U+009B>X: command not found"), nf.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("--log a file hallpass cannot write: 125 and one line before the command runs, never mid-run or a hang", async () => {
  const s = await scratch();
  try {
    const marker = `${s.project}/ran`;
    // A denial, so the log is written during the run (where an unusable log used to stop the sandbox).
    const cmd = ["--no-ask", "--", "sh", "-c", `touch ${marker}; echo > ${s.outside}/denied; true`];
    await Deno.mkdir(`${s.outside}/dir`);
    const fifo = `${s.outside}/fifo`;
    await new Deno.Command("mkfifo", { args: [fifo] }).output();
    const cases: [string, RegExp][] = [
      [`${s.outside}/missing/log`, /--log .*\/missing\/log: no such directory .*\/missing$/m],
      [`${s.outside}/dir`, /--log .*\/dir: is a directory$/m],
      [fifo, /--log .*\/fifo: a FIFO nobody reads \(start its reader first\)$/m], // used to block for ever
    ];
    for (const [log, said] of cases) {
      const t0 = Date.now();
      const r = await hallpass(["--log", log, ...cmd], { cwd: s.project, timeoutMs: 60_000 });
      assertEquals(r.code, 125, `${log}: ${r.stderr}`);
      match(r.stderr, said);
      assert(!r.stderr.includes("supervisor failed"), r.stderr);
      assert(!(await exists(marker)), `${log}: the command ran (${Date.now() - t0} ms)`);
      assert(!(await exists(`${s.outside}/missing`)), "a directory was made");
    }
    // Control: a FIFO whose reader is there gets the decision lines (the reader sees no end before them).
    const reader = new Deno.Command("cat", { args: [fifo], stdout: "piped" }).spawn();
    const r = await hallpass(["--log", fifo, ...cmd], { cwd: s.project, timeoutMs: 60_000 });
    assertEquals(r.code, 0, r.stderr);
    const got = new TextDecoder().decode((await reader.output()).stdout);
    match(got, /"decision":"deny"/);
    // And a new regular file is made and written.
    const file = `${s.outside}/new.jsonl`;
    assertEquals((await hallpass(["--log", file, ...cmd], { cwd: s.project })).code, 0);
    match(await Deno.readTextFile(file), /"decision":"deny"/);
  } finally {
    await s.cleanup();
  }
});

Deno.test("hallpass agent where its socket cannot be made: one line saying what to do, 125, not an internal error", async () => {
  const s = await scratch();
  try {
    const r = await hallpass(["agent", "--socket", `${s.outside}/run/agent.sock`], { timeoutMs: 60_000 });
    assertEquals(r.code, 125, r.stderr);
    match(
      r.stderr,
      /^hallpass: agent: cannot listen on .*\/run\/agent\.sock: .*\/run does not exist \(mkdir -p /,
    );
    assert(!r.stderr.includes("internal error"), r.stderr);
    assert(!(await exists(`${s.outside}/run`)));
    const l = await hallpass(["agent", "--socket", `${s.outside}/a.sock`, "--log", `${s.outside}/no/log`]);
    assertEquals(l.code, 125, l.stderr);
    match(l.stderr, /^hallpass: agent: --log .*\/no\/log: no such directory/);
    assert(!(await exists(`${s.outside}/a.sock`)), "the socket was made");
  } finally {
    await s.cleanup();
  }
});

test({
  name:
    "an unreadable ~/.config/hallpass is said (as an unreadable rules file is), not taken as no saved rules",
  ignore: isRoot()
    ? { reason: "as root a directory's mode refuses nothing (runs as the unprivileged user)" }
    : undefined,
}, async () => {
  const s = await scratch();
  try {
    const home = `${s.outside}/home`;
    await Deno.mkdir(`${home}/.config/hallpass`, { recursive: true });
    await Deno.writeTextFile(`${home}/.config/hallpass/rules`, `allow write ${s.outside}/**\n`);
    await Deno.chmod(`${home}/.config/hallpass`, 0o000);
    const marker = `${s.project}/ran`;
    const r = await hallpass(["--no-ask", "--", "sh", "-c", `touch ${marker}`], {
      cwd: s.project,
      env: { HOME: home, PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    });
    await Deno.chmod(`${home}/.config/hallpass`, 0o700);
    assertEquals(r.code, 125, r.stderr);
    match(r.stderr, /^hallpass: .*\/\.config\/hallpass\/rules: permission denied/);
    assert(!(await exists(marker)), "the command ran without the saved rules");
  } finally {
    await s.cleanup();
  }
});

Deno.test("output to a reader that left (`| head`): quiet, no internal error", async () => {
  const child = new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), "agent", "--print-profile"],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  await child.stdout.cancel(); // the reader leaves before the first write
  const err = await new Response(child.stderr).text();
  const status = await child.status;
  assert(!err.includes("internal error"), err);
  assertEquals(err, "");
  assertEquals(status.code, 141);
});

/** Why ./hallpass is not what `make` leaves without deno compile (helper/bundle/hallpass_stub.c or the script). */
function notStub(): string | undefined {
  if (HALLPASS_BIN) return "HALLPASS_BIN is set (a compiled binary: Deno itself reads the directory first)";
  try {
    const st = Deno.statSync(`${ROOT}/hallpass`);
    return st.size < 1 << 20
      ? undefined
      : "./hallpass is the compiled binary (Deno itself reads the directory first)";
  } catch {
    return "no ./hallpass (run make)";
  }
}

test({
  name: "./hallpass in a directory deleted under it: one line and 125, not deno's coloured error",
  ignore: notStub() ? { reason: notStub()! } : undefined,
}, async () => {
  const s = await scratch();
  try {
    const gone = `${s.outside}/gone`;
    // The shell deletes its own working directory, then starts hallpass there.
    const r = await new Deno.Command("sh", {
      args: ["-c", `mkdir ${gone} && cd ${gone} && rmdir ${gone} && exec ${ROOT}/hallpass --version`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(r.stderr);
    assertEquals(r.code, 125, err);
    match(err, /^hallpass: the current directory no longer exists: cd to one that does; nothing was run$/m);
    assertInert(err, "deleted cwd");
  } finally {
    await s.cleanup();
  }
});

test({
  name: "a question in a 40×3 terminal shows what is asked about and the keys, and answers",
  ignore: tool("tmux"),
}, async () => {
  const t = await Tmux.start({
    cols: 40,
    rows: 3,
    script: `hp -- sh -c 'echo x > "$DIR/outside/tiny-f"; echo rc=$?'`,
  });
  try {
    // The bar's bottom rows: the keys in two lines (under 60 columns), the target above them.
    const screen = await t.waitFor((s) => /^\[d\] deny/m.test(s), "the keys");
    const rows = screen.split("\n").map((l) => l.trimEnd());
    assert(rows.some((l) => l.endsWith("/outside/tiny-f")), `the target is not on the screen:\n${screen}`);
    assert(rows.some((l) => l.startsWith("[o] allow once")), screen);
    await Tmux.pastArmDelay();
    await t.keys("d");
    assertEquals(await t.waitExit(), 0); // sh's: its echo of the denied write's status ran
    assert((await t.history()).includes("rc=2"), await t.history()); // (the exit summary scrolls it away)
    assert(!(await exists(`${t.dir}/outside/tiny-f`)));
  } finally {
    await t.close();
  }
});

test({
  name:
    "make run: the shell's own exit status is not make's failure; run from source, it says writes here ask",
  ignore: [
    tool("make"),
    HALLPASS_BIN ? { reason: "HALLPASS_BIN is set (make run runs ./hallpass)" } : undefined,
  ],
}, async () => {
  const s = await scratch();
  try {
    const shell = `${s.outside}/shell.sh`;
    await Deno.writeTextFile(shell, "#!/bin/sh\nexit 3\n");
    await Deno.chmod(shell, 0o755);
    // -o all: what `all` builds is taken as done (the suite runs after make); only the recipe of run runs.
    const r = await new Deno.Command("make", {
      args: ["--no-print-directory", "-o", "all", "run"],
      cwd: ROOT,
      env: { SHELL: shell },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
    assertEquals(r.code, 0, out);
    assert(!/Error \d/.test(out), out);
    match(out, /a sandboxed shell here; exit leaves it/);
    if (!notStub()) match(out, /in this checkout writes ask \(hallpass's own program, run from source\)/);
  } finally {
    await s.cleanup();
  }
});

Deno.test("PATH unset or empty: names are found in the default path and the command gets no PATH, as under env -i", async () => {
  const s = await scratch();
  try {
    for (const path of [undefined, ""]) {
      const out = await new Deno.Command(HALLPASS_ARGV[0], {
        args: [...HALLPASS_ARGV.slice(1), "--no-ask", "--", "sh", "-c", "ls -d / && echo ok"],
        cwd: s.project,
        clearEnv: true,
        env: {
          HOME: s.outside,
          ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
          ...(path === undefined ? {} : { PATH: path }),
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const err = new TextDecoder().decode(out.stderr);
      assertEquals(out.code, 0, `PATH ${JSON.stringify(path)}: ${err}`); // was 127, "sh: command not found"
      assertEquals(new TextDecoder().decode(out.stdout), "/\nok\n");
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("hallpass agents (an option typed as a word): 127 and a hint naming the option", async () => {
  const s = await scratch();
  try {
    const r = await hallpass(["agents"], { cwd: s.project });
    assertEquals(r.code, 127, r.stderr);
    assertEquals(
      r.stderr,
      "hallpass: agents: command not found\nhint: did you mean `hallpass --agents`? (agents is not a program here)\n",
    );
  } finally {
    await s.cleanup();
  }
});

Deno.test("--rules FILE inside the project with an allow line: 125, and the line says why and where allow rules go", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.project}/my.rules`, `allow write ${s.outside}/**\n`);
    const r = await hallpass(["--rules", "my.rules", "--", "true"], { cwd: s.project });
    assertEquals(r.code, 125, r.stderr);
    match(
      r.stderr,
      /^hallpass: my\.rules:1: a project rules file can only deny: .* \(a rules file inside the project,/,
    );
    match(r.stderr, /allow rules go in one outside it\)$/m);
  } finally {
    await s.cleanup();
  }
});

test({
  name:
    "at a terminal with stdin or stdout a pipe: said at start that nothing asks (not only denials at exit)",
  ignore: tool("tmux"),
}, async () => {
  const t = await Tmux.start({
    cols: 120,
    rows: 30,
    script: `echo hi | hp -- sh -c 'cat >/dev/null; echo x > "$DIR/outside/f"'; hp -- true | cat; ` +
      `hp --no-ask -- true | cat; echo end`,
  });
  try {
    await t.waitExit();
    const h = await t.history();
    match(
      h,
      /^hallpass: stdin is not a terminal, so nothing asks: what would ask is denied and listed at exit/m,
    );
    match(h, /^hallpass: stdout is not a terminal, so nothing asks/m);
    assertEquals(h.match(/is not a terminal, so nothing asks/g)?.length, 2, h); // not with --no-ask
    assert(!(await exists(`${t.dir}/outside/f`)));
  } finally {
    await t.close();
  }
});

Deno.test("hallpass answer --json with an agent it cannot reach: said on stderr while it retries, not silence", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/token`, "me abcdefghijklmnopqrstuvwxyz\n");
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close(); // nobody listens there now
    const child = new Deno.Command(HALLPASS_ARGV[0], {
      args: [
        ...HALLPASS_ARGV.slice(1),
        "answer",
        "--json",
        "--agent",
        `http://127.0.0.1:${port}`,
        "--token-file",
        `${s.outside}/token`,
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let err = "";
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const deadline = Date.now() + 60_000;
    while (!err.includes("\n") && Date.now() < deadline) {
      const r = await Promise.race([
        reader.read(),
        new Promise<null>((res) => setTimeout(() => res(null), deadline - Date.now())),
      ]);
      if (r === null || r.done) break;
      err += r.value;
    }
    await child.stdin.close(); // the end of stdin ends it
    const out = await new Response(child.stdout).text();
    const status = await child.status;
    reader.releaseLock();
    await child.stderr.cancel().catch(() => {});
    match(
      err,
      new RegExp(`^hallpass answer: cannot reach http://127\\.0\\.0\\.1:${port} \\(.*\\); retrying every`),
    );
    assertEquals(out, "");
    assertEquals(status.code, 0);
  } finally {
    await s.cleanup();
  }
});

Deno.test("many --protect paths hallpass cannot protect: the start-up line names five and the count, not all", async () => {
  const s = await scratch(); // in /tmp: a directory everyone creates files in
  try {
    const args = Array.from({ length: 40 }, (_, i) => ["--protect", `${s.outside}/secret-${i}`]).flat();
    const r = await hallpass([...args, "--no-ask", "--", "true"], { cwd: s.project });
    assertEquals(r.code, 0, r.stderr);
    const line = r.stderr.split("\n").find((l) => l.includes("NOT protected this session")) ?? "";
    match(line, /, … \(40 in all\) \(`hallpass rules` lists the protections\)$/);
    assert(line.length < 1000, `${line.length} characters`);
  } finally {
    await s.cleanup();
  }
});

/** Why `make apt` cannot show a missing package here: root or sudo would install it, or it is installed. */
function cannotTryApt(): string | undefined {
  if (isRoot()) return "as root make would install the package (runs as the unprivileged user)";
  const onPath = (name: string) =>
    (Deno.env.get("PATH") ?? "").split(":").some((d) => {
      try {
        return d !== "" && Deno.statSync(`${d}/${name}`).isFile;
      } catch {
        return false;
      }
    });
  if (onPath("sudo")) return "sudo is there: make would install the package";
  if (!onPath("dpkg-query")) return "no dpkg-query (not Debian/Ubuntu)";
  const have = new Deno.Command("dpkg-query", { args: ["-W", "sl"], stdout: "null", stderr: "null" })
    .outputSync();
  return have.success ? "the package sl is installed here: nothing would be missing" : undefined;
}

test({
  name: "make as a user without sudo and a package missing: says which to install, not that it is installing",
  ignore: [tool("make"), cannotTryApt() ? { reason: cannotTryApt()! } : undefined],
}, async () => {
  const pkg = "sl"; // a package nobody's build needs (not installed: checked above)
  const r = await new Deno.Command("make", {
    args: ["--no-print-directory", "apt", `APT_PKGS=${pkg}`],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
  assertEquals(r.code, 2, out);
  match(out, /^make: missing packages: sl; as root: apt-get install sl \(then make again\)$/m);
  assert(!out.includes("installing"), out);
});
