/**
 * Operations with two paths (docs/threat-model.md, "Operations with two paths"): rename, renameat,
 * renameat2 (0, RENAME_NOREPLACE, RENAME_EXCHANGE), link, linkat (AT_SYMLINK_FOLLOW, AT_EMPTY_PATH on an fd)
 * and symlink's link path decide BOTH ends; a question shows both (`rename A → B`); an answer grants only what
 * the bar showed, and a scope covers an end only if the end is inside it.
 *
 * Every form runs through the fast path and through the mediator (HALLPASS_FAST_PATH=0), each with a bare
 * control showing that the same calls do change the outside directory on this kernel. Judged from outside:
 * the outside directory's snapshot.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  askProgram,
  bare,
  compileHelper,
  hallpass,
  isRoot,
  readQuestions,
  scratch,
  scratchAsker,
  snapshot,
} from "./harness.ts";
import { step } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

/** Each attack: try_write operations ($P the project, $O the outside directory) that touch the outside. */
const ATTACKS: [string, string[]][] = [
  ["rename project file over an outside file", ["rename", "$P/a", "$O/victim"]],
  ["renameat with dirfds, over an outside file", ["renameat", "$P", "a", "$O", "victim"]],
  ["renameat2 flags 0", ["renameat2", "$P", "a", "$O", "victim", "0"]],
  ["renameat2 RENAME_NOREPLACE to a new outside name", ["renameat2", "$P", "a", "$O", "new", "noreplace"]],
  ["renameat2 RENAME_EXCHANGE project ↔ outside", ["renameat2", "$P", "a", "$O", "victim", "exchange"]],
  ["renameat2 RENAME_EXCHANGE outside ↔ project", ["renameat2", "$O", "victim", "$P", "a", "exchange"]],
  ["rename an outside file into the project", ["rename", "$O/victim", "$P/taken"]],
  ["renameat an outside file into the project", ["renameat", "$O", "victim", "$P", "taken"]],
  ["link a project file to an outside name", ["link", "$P/a", "$O/new"]],
  ["link an outside file into the project", ["link", "$O/victim", "$P/h"]],
  ["linkat an outside file into the project", ["linkat", "$O", "victim", "$P", "h", "0"]],
  ["linkat AT_SYMLINK_FOLLOW through a project symlink", [
    "linkat",
    "$P",
    "toout",
    "$P",
    "h",
    "symlink_follow",
  ]],
  ["linkat AT_EMPTY_PATH on an fd of an outside file", [
    "linkat",
    "fd:$O/victim",
    "",
    "$P",
    "h",
    "empty_path",
  ]],
  ["linkat AT_EMPTY_PATH of a project file to an outside name", [
    "linkat",
    "fd:$P/a",
    "",
    "$O",
    "new",
    "empty_path",
  ]],
  ["symlink's link path outside", ["symlink", "/etc/passwd", "$O/sl"]],
  ["symlinkat's link path outside", ["symlinkat", "/etc/passwd", "$O", "sl"]],
];

async function setup(project: string, outside: string): Promise<void> {
  await Deno.writeTextFile(`${project}/a`, "project");
  await Deno.writeTextFile(`${outside}/victim`, "orig");
  await Deno.symlink(`${outside}/victim`, `${project}/toout`);
}

const fill = (op: string[], p: string, o: string) => op.map((w) => w.replaceAll("$P", p).replaceAll("$O", o));

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "two paths");
  Deno.test(`two paths (${engine}): every form with one end outside is denied under --no-ask`, async (t) => {
    const helper = await compileHelper("try_write");
    for (const [name, op] of ATTACKS) {
      // linkat(fd, "", AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH: the kernel refuses it to other users.
      const ignore = op.includes("empty_path") && !isRoot()
        ? { reason: "needs root (CAP_DAC_READ_SEARCH)" }
        : undefined;
      await step(t, {
        name,
        ignore,
        fn: async () => {
          // Control: without hallpass the call changes the outside directory.
          const c = await scratch();
          try {
            await setup(c.project, c.outside);
            const before = await snapshot(c.outside);
            const r = await bare([helper, ...fill(op, c.project, c.outside)], { cwd: c.project });
            assert(r.stdout.startsWith(`${op[0]} OK`), `control: ${r.stdout}${r.stderr}`);
            assert(
              JSON.stringify(await snapshot(c.outside)) !== JSON.stringify(before),
              "control changed nothing",
            );
          } finally {
            await c.cleanup();
          }
          const s = await scratch();
          try {
            await setup(s.project, s.outside);
            const before = await snapshot(s.outside);
            const r = await hp(["--no-ask", "-q", "--", helper, ...fill(op, s.project, s.outside)], {
              cwd: s.project,
            });
            assertEquals(r.stdout.trim(), `${op[0]} EACCES`, r.stderr);
            assertEquals(await snapshot(s.outside), before, "the outside directory changed");
          } finally {
            await s.cleanup();
          }
        },
      });
    }
  });

  Deno.test(`two paths (${engine}): --allow-path of one end does not allow the other`, async () => {
    const helper = await compileHelper("try_write");
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.outside}/innocuous.tmp`, "planted");
      await Deno.writeTextFile(`${s.outside}/victim`, "orig");
      const r = await hp([
        "--no-ask",
        "-q",
        "--allow-path",
        `${s.outside}/innocuous.tmp`,
        "--",
        helper,
        "rename",
        `${s.outside}/innocuous.tmp`,
        `${s.outside}/victim`,
      ], { cwd: s.project });
      assertEquals(r.stdout.trim(), "rename EACCES", r.stderr);
      assertEquals(await Deno.readTextFile(`${s.outside}/victim`), "orig");
      assertEquals(await Deno.readTextFile(`${s.outside}/innocuous.tmp`), "planted");
    } finally {
      await s.cleanup();
    }
  });
}

Deno.test("two paths: the question shows both ends; [o] grants what it showed", async () => {
  const helper = await compileHelper("try_write");
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/innocuous.tmp`, "new content");
    await Deno.writeTextFile(`${s.outside}/victim`, "orig");
    const { ask, log } = await scratchAsker(s, "once");
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      helper,
      "rename",
      `${s.outside}/innocuous.tmp`,
      `${s.outside}/victim`,
    ], { cwd: s.project });
    assertEquals(r.stdout.trim(), "rename OK", r.stderr);
    const qs = (await readQuestions(log)).filter((q) => q.op === "write");
    assertEquals(qs.length, 1, JSON.stringify(qs));
    assertEquals(qs[0].target, `${s.outside}/innocuous.tmp → ${s.outside}/victim`);
    assertEquals(qs[0].paths, [`${s.outside}/innocuous.tmp`, `${s.outside}/victim`]);
    assertEquals(qs[0].syscall, "rename");
    // The question is about the file that changes (the destination).
    assertEquals(qs[0].scope, `${s.outside}/victim`);
    assertEquals(await Deno.readTextFile(`${s.outside}/victim`), "new content");
  } finally {
    await s.cleanup();
  }
});

Deno.test("two paths: a timed scope covering one end asks about the other; covering nothing new denies", async () => {
  const helper = await compileHelper("try_write");
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.outside}/src`);
    await Deno.writeTextFile(`${s.outside}/src/innocuous.tmp`, "planted");
    await Deno.writeTextFile(`${s.outside}/victim`, "orig");
    // Every answer: for 1m covering the source's directory only.
    const { ask, log } = await scratchAsker(s, `for 1m ${s.outside}/src/**`);
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      helper,
      "rename",
      `${s.outside}/src/innocuous.tmp`,
      `${s.outside}/victim`,
    ], { cwd: s.project });
    assertEquals(r.stdout.trim(), "rename EACCES", r.stderr);
    assertEquals(await Deno.readTextFile(`${s.outside}/victim`), "orig");
    const qs = (await readQuestions(log)).filter((q) => q.op === "write");
    // Asked about the destination; the answer covered only the source; asked again (still both shown), and
    // the same answer, covering nothing new, denies.
    assertEquals(qs.length, 2, JSON.stringify(qs));
    for (const q of qs) assertEquals(q.target, `${s.outside}/src/innocuous.tmp → ${s.outside}/victim`);

    // A scope that covers both ends: one question, the rename goes through.
    await Deno.remove(log);
    const ask2 = await askProgram(`${s.outside}/..`, `for 1m ${s.outside}/**`, log);
    const r2 = await hallpass([
      "--ask-program",
      ask2,
      "-q",
      "--",
      helper,
      "rename",
      `${s.outside}/src/innocuous.tmp`,
      `${s.outside}/victim`,
    ], { cwd: s.project });
    assertEquals(r2.stdout.trim(), "rename OK", r2.stderr);
    assertEquals(await Deno.readTextFile(`${s.outside}/victim`), "planted");
    assertEquals((await readQuestions(log)).filter((q) => q.op === "write").length, 1);
  } finally {
    await s.cleanup();
  }
});

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "two paths");
  for (const tainted of [false, true]) {
    Deno.test(
      `two paths (${engine}${
        tainted ? ", deny rule in the project: performed" : ""
      }): racing threads flip the ` +
        "destination and swap a directory for a symlink for 3 s: nothing lands outside",
      async () => {
        const helper = await compileHelper("rename_race", ["-pthread"]);
        // Control: without hallpass the race overwrites the outside file.
        const c = await scratch();
        try {
          await Deno.writeTextFile(`${c.outside}/victim`, "orig");
          await bare([helper, c.project, c.outside, "1"]);
          assert(
            (await Deno.readTextFile(`${c.outside}/victim`)) !== "orig",
            "control: the race did not land",
          );
        } finally {
          await c.cleanup();
        }
        const s = await scratch();
        try {
          await Deno.writeTextFile(`${s.outside}/victim`, "orig");
          const before = await snapshot(s.outside);
          const extra = tainted ? ["--rules", `${s.outside}/../rules`] : [];
          if (tainted) {
            await Deno.writeTextFile(`${s.outside}/../rules`, `deny write ${s.project}/secret/**\n`);
          }
          const r = await hp(
            ["--no-ask", "-q", ...extra, "--allow-exec", helper, "--", helper, s.project, s.outside, "3"],
            { cwd: s.project, timeoutMs: 150_000 },
          );
          const m = r.stdout.match(/rename_race ok=(\d+) denied=(\d+) other=(\d+)/);
          assert(m, r.stdout + r.stderr);
          assert(Number(m[1]) > 0, `nothing allowed ever went through: ${r.stdout}`);
          assert(Number(m[2]) > 0, `nothing was ever denied: the race never reached outside (${r.stdout})`);
          assertEquals(await snapshot(s.outside), before, "the outside directory changed");
        } finally {
          await s.cleanup();
        }
      },
    );
  }
}
