/**
 * Paths through a directory that does not exist (docs/threat-model.md, "Writes"): the kernel's walk stops at
 * the missing name, so `/tmp/nonexist/../narrow.txt` names nothing. hallpass must fail such a call as the
 * kernel would (ENOENT, ENOTDIR), never fold `..` lexically and ask about (or create) `/tmp/narrow.txt`.
 * Judged from outside: the file must not appear; a bare run on this kernel is the control.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, compileHelper, exists, hallpass, readQuestions, scratch, scratchAsker } from "./harness.ts";
import { engineRunner, ENGINES } from "./engine.ts";

/** try_write operations ($O the outside directory, $P the project) and the errno the kernel gives. */
const CASES: [string, string[], string][] = [
  [
    "open O_CREAT through a missing dir and ..",
    ["open", "$O/nonexist/../narrow.txt", "wronly|creat", "0644"],
    "ENOENT",
  ],
  [
    "open O_CREAT through a file and ..",
    ["open", "$O/file/../narrow.txt", "wronly|creat", "0644"],
    "ENOTDIR",
  ],
  ["mkdir through a missing dir and ..", ["mkdir", "$O/nonexist/../narrow.txt", "0755"], "ENOENT"],
  ["two missing levels", ["open", "$O/a/b/narrow.txt", "wronly|creat", "0644"], "ENOENT"],
  ["rename to a missing dir and ..", ["rename", "$P/f", "$O/nonexist/../narrow.txt"], "ENOENT"],
  ["symlink at a missing dir and ..", ["symlink", "x", "$O/nonexist/../narrow.txt"], "ENOENT"],
  [
    "inside the project, missing dir and ..",
    ["open", "$P/nonexist/../narrow.txt", "wronly|creat", "0644"],
    "ENOENT",
  ],
];

const fill = (op: string[], p: string, o: string) => op.map((w) => w.replaceAll("$P", p).replaceAll("$O", o));

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "missing directory");
  Deno.test(`missing directory (${engine}): fails as the kernel does, asks nothing, creates nothing`, async (t) => {
    const helper = await compileHelper("try_write");
    for (const [name, op, errno] of CASES) {
      await t.step(name, async () => {
        const c = await scratch();
        try {
          await Deno.writeTextFile(`${c.outside}/file`, "");
          await Deno.writeTextFile(`${c.project}/f`, "");
          const r = await bare([helper, ...fill(op, c.project, c.outside)], { cwd: c.project });
          assertEquals(r.stdout.trim(), `${op[0]} ${errno}`, "control: the kernel's answer on this machine");
        } finally {
          await c.cleanup();
        }
        const s = await scratch();
        try {
          await Deno.writeTextFile(`${s.outside}/file`, "");
          await Deno.writeTextFile(`${s.project}/f`, "");
          // An ask program that would allow anything: nothing may be asked, nothing created.
          const { ask, log } = await scratchAsker(s, "once");
          const r = await hp([
            "--ask-program",
            ask,
            "-q",
            "--",
            helper,
            ...fill(op, s.project, s.outside),
          ], {
            cwd: s.project,
          });
          assertEquals(r.stdout.trim(), `${op[0]} ${errno}`, r.stderr);
          assertEquals((await readQuestions(log)).filter((q) => q.op === "write"), []);
          assert(!(await exists(`${s.outside}/narrow.txt`)), "created outside");
          assert(!(await exists(`${s.project}/narrow.txt`)), "created in the project");
        } finally {
          await s.cleanup();
        }
      });
    }
  });
}

Deno.test("missing directory: the shell's `echo x > /tmp/nonexist/../narrow.txt` (the issue's case)", async () => {
  const s = await scratch();
  try {
    const { ask, log } = await scratchAsker(s, "once");
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      "sh",
      "-c",
      `echo x > ${s.outside}/nonexist/../narrow.txt; echo rc=$?`,
    ], { cwd: s.project });
    assert(r.stdout.includes("rc=") && !r.stdout.includes("rc=0"), r.stdout + r.stderr);
    assert(/No such file|nonexistent|can't create/i.test(r.stderr), r.stderr);
    assert(!(await exists(`${s.outside}/narrow.txt`)));
    assertEquals((await readQuestions(log)).filter((q) => q.op === "write"), []);
  } finally {
    await s.cleanup();
  }
});
