/**
 * A refused read is told to the person (lib/floor/refused_reads.ts), judged from outside: the sandbox reads a
 * planted SSH key twice; the key must not reach its output, stderr must hold one line naming the path and the
 * rule, and the exit summary the option that allows it (which, given, does). As root with audit on (the test
 * turns audit on for its run and restores it: the machine boots with it off), after two controls: the key is
 * readable bare, and a bare Landlock denial logged after an exec reaches the audit group (helper
 * audit_switch). Two sessions at once each name only their own refusal (the domain is told apart by the
 * command's pid, and the launcher's program: a domain the command makes itself under the same pid is not the
 * session's). Where the kernel does not report (audit off; an unprivileged user: run as hallpass-test by
 * tests/run_all.sh), a failed command's exit line says why, and no line claims anything.
 */
import { deepStrictEqual as assertEquals, match as assertMatch, ok as assert } from "node:assert/strict";
import { bare, compileHelper, hallpass, isRoot, scratchHome as scratchHomeIn } from "./harness.ts";
import { landlockAbi, type Need, test, tool } from "../helpers/skip.ts";

const SECRET = "TOPSECRET-refused";
const abi7 = await landlockAbi(7, "logging Landlock denials to audit");
const root: Need = isRoot() ? undefined : { reason: "reading audit records needs root (CAP_AUDIT_READ)" };
const unprivileged: Need = isRoot()
  ? { reason: "the unprivileged case (tests/run_all.sh runs it as hallpass-test)" }
  : undefined;

/** A scratch project and a scratch $HOME (tests/e2e/harness.ts) with two ssh keys, and its env. */
async function scratchHome() {
  const s = await scratchHomeIn("hallpass-refused-");
  await Deno.mkdir(`${s.home}/.ssh`);
  await Deno.writeTextFile(`${s.home}/.ssh/id_ed25519`, `${SECRET}\n`);
  await Deno.writeTextFile(`${s.home}/.ssh/id_rsa`, `${SECRET}\n`);
  return { ...s, env: { HOME: s.home, PATH: Deno.env.get("PATH")! } };
}

/** Runs `fn` with audit enabled (restored after), once the control shows the kernel reports to the group. */
async function withAudit(fn: () => Promise<void>): Promise<void> {
  const sw = await compileHelper("audit_switch");
  const run = (...a: string[]) => bare([sw, ...a]);
  const was = await run("get");
  assertEquals(was.code, 0, was.stderr);
  if (was.stdout.trim() === "0") assertEquals((await run("set", "1")).code, 0);
  try {
    const control = await run("control", "/etc/hostname");
    assertEquals(
      control.code,
      0,
      `control: a bare Landlock denial is not in the audit records: ${control.stderr}`,
    );
    assertMatch(control.stdout, /blockers=fs\.read_file path="\/etc\/hostname"/);
    await fn();
  } finally {
    if (was.stdout.trim() === "0") await run("set", "0");
  }
}

/** The live lines (found anywhere: the program's own errors may be written around them on the same stderr). */
const refusedLines = (err: string) => err.match(/hallpass: refused read [^\n]*/g) ?? [];

const readTwice = "cat ~/.ssh/id_ed25519; cat ~/.ssh/id_ed25519; exit 0";

test({
  name:
    "root, audit on: one line naming the path and the rule, the exit summary with the option that allows it",
  ignore: [root, abi7, tool("gcc")],
}, async () => {
  const s = await scratchHome();
  try {
    const b = await bare(["sh", "-c", readTwice], { env: s.env });
    assertMatch(b.stdout, new RegExp(SECRET), "control: the key is readable bare");
    await withAudit(async () => {
      const r = await hallpass(["--no-ask", "--fail-on-deny", "--", "sh", "-c", readTwice], {
        cwd: s.project,
        env: s.env,
      });
      assert(!r.stdout.includes(SECRET) && !r.stderr.includes(SECRET), "the key leaked");
      const said = refusedLines(r.stderr);
      assertEquals(
        said,
        ["hallpass: refused read ~/.ssh/id_ed25519: protect ~/.ssh (builtin: SSH keys)"],
        r.stderr,
      );
      const lines = r.stderr.split("\n");
      const at = lines.indexOf(
        "hallpass: the kernel refused reads of 1 protected file(s); to allow one next time:",
      );
      assert(at >= 0, r.stderr);
      assertEquals(lines.slice(at + 1, at + 3), [
        "  read ~/.ssh/id_ed25519 (2×), refused by protect ~/.ssh (builtin: SSH keys)",
        "      --allow-read ~/.ssh/id_ed25519   or rule: allow read ~/.ssh/id_ed25519",
      ]);
      assertEquals(r.code, 123, "--fail-on-deny counts a refused read");
      // The option it names allows it (and only it: id_rsa stays protected, and is said).
      const ok = await hallpass([
        "--no-ask",
        "--allow-read",
        `${s.home}/.ssh/id_ed25519`,
        "--",
        "sh",
        "-c",
        "cat ~/.ssh/id_ed25519; cat ~/.ssh/id_rsa; exit 0",
      ], { cwd: s.project, env: s.env });
      assertEquals(ok.stdout, `${SECRET}\n`, ok.stderr);
      // (Not anchored: the program's own error may be written around it on the same stderr.)
      assertMatch(
        ok.stderr,
        /hallpass: refused read ~\/\.ssh\/id_rsa: protect ~\/\.ssh \(builtin: SSH keys\)\n/,
      );
    });
  } finally {
    await s.cleanup();
  }
});

test({
  name: "root, audit on: two sessions at once each name only their own refusal",
  ignore: [root, abi7, tool("gcc")],
}, async () => {
  const s = await scratchHome();
  try {
    await withAudit(async () => {
      // Each reads its own key many times while the other does the same.
      const loop = (f: string) => `for i in $(seq 50); do cat ~/.ssh/${f} 2>/dev/null; done; exit 0`;
      const [a, b] = await Promise.all([
        hallpass(["--no-ask", "--", "sh", "-c", loop("id_ed25519")], { cwd: s.project, env: s.env }),
        hallpass(["--no-ask", "--", "sh", "-c", loop("id_rsa")], { cwd: s.project, env: s.env }),
      ]);
      assertEquals(refusedLines(a.stderr), [
        "hallpass: refused read ~/.ssh/id_ed25519: protect ~/.ssh (builtin: SSH keys)",
      ], a.stderr);
      assertEquals(refusedLines(b.stderr), [
        "hallpass: refused read ~/.ssh/id_rsa: protect ~/.ssh (builtin: SSH keys)",
      ], b.stderr);
      // Every refusal is accounted for: listed, or said to be dropped by the kernel (audit's backlog limit, 64
      // when no audit daemon sets it, drops records of a burst; the domain's own count tells how many).
      for (const r of [a, b]) {
        const listed = Number(/\((\d+)×\)/.exec(r.stderr)?.[1] ?? 0);
        const dropped = Number(
          /hallpass: (\d+) more refusal\(s\) in this session were not reported/.exec(r.stderr)?.[1] ?? 0,
        );
        // (When the domain's last record is late, the count is unknown: the summary says some may be missing.)
        const unknown = r.stderr.includes("hallpass: some refusals in this session may be missing");
        assert(listed + dropped >= 50 || unknown, r.stderr);
      }
    });
  } finally {
    await s.cleanup();
  }
});

test({
  name:
    "root, audit on: a Landlock domain the command makes itself (same pid) does not pass for the session's",
  ignore: [root, abi7, tool("gcc")],
}, async () => {
  const s = await scratchHome();
  try {
    const nested = await compileHelper("nested_landlock");
    const key = `${s.home}/.ssh/id_ed25519`;
    // Control: bare, its own domain refuses /etc/hostname and lets it read the key.
    const b = await bare([nested, s.home, "/etc/hostname", key]);
    assertEquals(b.stdout, "DENIED: Permission denied\nKEY: ok\n", b.stderr);
    await withAudit(async () => {
      // In place of the shell (exec: the command's pid), its domain's first record names the command's pid.
      const r = await hallpass([
        "--no-ask",
        "--allow-exec",
        nested,
        "--",
        "sh",
        "-c",
        `exec ${nested} ${s.home} /etc/hostname ${key}`,
      ], { cwd: s.project, env: s.env });
      assertEquals(r.stdout, "DENIED: Permission denied\nKEY: Permission denied\n", r.stderr);
      // The key's refusal (by the session's domain) is said; the program's own refusal is not the session's.
      assertEquals(refusedLines(r.stderr), [
        "hallpass: refused read ~/.ssh/id_ed25519: protect ~/.ssh (builtin: SSH keys)",
      ], r.stderr);
    });
  } finally {
    await s.cleanup();
  }
});

test({
  name: "root, audit off: no line claims anything; a failed command's exit line says audit is off",
  ignore: [root, tool("gcc")],
}, async () => {
  const s = await scratchHome();
  try {
    const sw = await compileHelper("audit_switch");
    const was = await bare([sw, "get"]);
    assertEquals(was.code, 0, was.stderr);
    if (was.stdout.trim() === "1") await bare([sw, "set", "0"]);
    try {
      const r = await hallpass(["--no-ask", "--", "sh", "-c", "cat ~/.ssh/id_ed25519"], {
        cwd: s.project,
        env: s.env,
      });
      assert(r.code !== 0 && !r.stdout.includes(SECRET), r.stdout + r.stderr);
      assert(!r.stderr.includes("hallpass: refused read"), r.stderr);
      assertMatch(r.stderr, /unseen by hallpass here \((audit is off|Landlock ABI 7)/);
    } finally {
      if (was.stdout.trim() === "1") await bare([sw, "set", "1"]);
    }
  } finally {
    await s.cleanup();
  }
});

test({
  name:
    "unprivileged: no line claims anything; a failed command's exit line says the kernel does not report to it",
  ignore: unprivileged,
}, async () => {
  const s = await scratchHome();
  try {
    const b = await bare(["sh", "-c", "cat ~/.ssh/id_ed25519"], { env: s.env });
    assertEquals(b.stdout, `${SECRET}\n`, "control: the key is readable bare");
    const r = await hallpass(["--no-ask", "--", "sh", "-c", "cat ~/.ssh/id_ed25519"], {
      cwd: s.project,
      env: s.env,
    });
    assert(r.code !== 0 && !r.stdout.includes(SECRET), r.stdout + r.stderr);
    assert(!r.stderr.includes("hallpass: refused read"), r.stderr);
    assertMatch(
      r.stderr,
      /unseen by hallpass here \((the kernel reports them to audit, which an unprivileged|Landlock ABI 7)/,
    );
  } finally {
    await s.cleanup();
  }
});

test({
  name: "doctor says whether refused reads can be reported, as the probe finds: root with audit on and off",
  ignore: [root, abi7, tool("gcc")],
}, async () => {
  const line = async () =>
    (await hallpass(["doctor"])).stdout.split("\n").find((l) => l.includes("refused reads"));
  await withAudit(async () => {
    assertMatch((await line()) ?? "", /^ok\s+refused reads reported\s+yes: from the kernel's audit records/);
  });
  const sw = await compileHelper("audit_switch");
  if ((await bare([sw, "get"])).stdout.trim() === "0") {
    assertMatch((await line()) ?? "", /^warn\s+refused reads reported\s+no: audit is off/);
  }
});

test(
  { name: "doctor, unprivileged: refused reads are not reported, and why", ignore: [unprivileged, abi7] },
  async () => {
    const r = await hallpass(["doctor"]);
    assertMatch(r.stdout, /^ok\s+read protection\s+credential files unreadable \(Landlock ABI \d+\)/m);
    assertMatch(
      r.stdout,
      /^warn\s+refused reads reported\s+no: the kernel reports them to audit, which an unprivileged/m,
    );
  },
);
