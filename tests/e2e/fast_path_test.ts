/**
 * The supervisor's fast path (helper/fastpath/fastpath.c) answers the same as the mediator: it keeps each
 * thread's working directory, and a chdir or fchdir — trapped for that — makes it read it again, so a relative
 * write after moving out of the project is asked about, not continued (which Landlock would refuse unasked).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, exists, readQuestions, scratch } from "./harness.ts";
import { engineRunner } from "./engine.ts";

Deno.test("relative writes follow chdir and fchdir: outside the project they ask", async () => {
  for (const fast of ["1", "0"]) {
    const s = await scratch();
    try {
      const ask = await askProgram(s.outside, "once", `${s.outside}/../questions.jsonl`);
      // sh's cd is chdir(2); python's os.fchdir is fchdir(2); many writes in between fill the fast path's cache.
      const script = `cd "${s.project}" && for i in 1 2 3 4 5 6 7 8; do echo x > "in$i"; done && ` +
        `cd "${s.outside}" && echo y > out1 && cd "${s.project}" && echo z > in9 && ` +
        `/usr/bin/python3 -c 'import os; d = os.open(${JSON.stringify(s.outside)}, os.O_RDONLY); ` +
        `open("in10", "w").close(); os.fchdir(d); open("out2", "w").write("w")'`;
      const r = await engineRunner(fast === "1", "fast path")([
        "--ask-program",
        ask,
        "-q",
        "--",
        "/bin/sh",
        "-c",
        script,
      ], {
        cwd: s.project,
      });
      assertEquals(r.code, 0, `fast=${fast}: ${r.stderr}`);
      for (const f of ["in1", "in8", "in9", "in10"]) {
        assert(await exists(`${s.project}/${f}`), `fast=${fast}: ${f}`);
      }
      assertEquals(await Deno.readTextFile(`${s.outside}/out1`), "y\n", `fast=${fast}`);
      assertEquals(await Deno.readTextFile(`${s.outside}/out2`), "w", `fast=${fast}`);
      const asked = (await readQuestions(`${s.outside}/../questions.jsonl`)).map((q) => q.target);
      assertEquals(asked, [`${s.outside}/out1`, `${s.outside}/out2`], `fast=${fast}`);
    } finally {
      await s.cleanup();
    }
  }
});

/**
 * The fast path runs programs of the @system trees by itself only while no rule could make one of them differ
 * (lib/supervisor/fast_roots.ts): a deny of one system program, or a write allow in a system directory (the
 * @system allow does not apply to a program the sandbox may write), leaves those execs to the mediator, with
 * and without the fast path alike.
 */
Deno.test("exec rules that touch system directories are decided as without the fast path", async () => {
  for (const fast of ["1", "0"]) {
    const s = await scratch();
    try {
      const rules = `${s.outside}/rules`;
      await Deno.writeTextFile(rules, "deny exec /usr/bin/id\nallow write /usr/lib/git-core/**\n");
      const script =
        `/usr/bin/id >/dev/null 2>&1; echo id=$?; /usr/lib/git-core/git --version >/dev/null 2>&1; ` +
        `echo git=$?; /usr/bin/true; echo true=$?; /usr/bin/git --version >/dev/null; echo usrgit=$?`;
      const r = await engineRunner(fast === "1", "fast path")([
        "--no-ask",
        "-q",
        "--rules",
        rules,
        "--",
        "/bin/sh",
        "-c",
        script,
      ], {
        cwd: s.project,
        env: { PATH: "/usr/bin:/bin" },
      });
      assertEquals(r.code, 0, `fast=${fast}: ${r.stderr}`);
      // id: denied by its rule; git-core/git: writable by the rule, so @system does not allow it and --no-ask
      // denies it; /usr/bin/true and /usr/bin/git: nothing makes them writable, they run.
      assertEquals(r.stdout.trim().split("\n"), ["id=126", "git=126", "true=0", "usrgit=0"], `fast=${fast}`);
    } finally {
      await s.cleanup();
    }
  }
});

Deno.test("exec through a symlink in the project to a system program, and of what is not there", async () => {
  for (const fast of ["1", "0"]) {
    const s = await scratch();
    try {
      await Deno.symlink("/usr/bin/true", `${s.project}/t`);
      await Deno.symlink("/usr/bin/no-such-program", `${s.project}/dangling`);
      const script = "./t; echo t=$?; ./dangling; echo dangling=$?; /usr/bin/no-such; echo none=$?; " +
        "/usr/bin/; echo dir=$?";
      const r = await engineRunner(fast === "1", "fast path")([
        "--no-ask",
        "-q",
        "--",
        "/bin/sh",
        "-c",
        script,
      ], {
        cwd: s.project,
        env: { PATH: "/usr/bin:/bin" },
      });
      assertEquals(
        r.stdout.trim().split("\n"),
        ["t=0", "dangling=127", "none=127", "dir=126"],
        `fast=${fast}: ${r.stderr}`,
      );
      // answered as the kernel would: nothing asked, nothing denied
      assert(!r.stderr.includes("hallpass: denied"), `fast=${fast}: ${r.stderr}`);
    } finally {
      await s.cleanup();
    }
  }
});
