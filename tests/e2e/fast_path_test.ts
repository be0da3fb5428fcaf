/**
 * The supervisor's fast path (helper/fastpath/fastpath.c) answers the same as the mediator: it keeps each
 * thread's working directory, and a chdir or fchdir — trapped for that — makes it read it again, so a relative
 * write after moving out of the project is asked about, not continued (which Landlock would refuse unasked).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, exists, hallpass, readQuestions, scratch } from "./harness.ts";

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
      const r = await hallpass(["--ask-program", ask, "-q", "--", "/bin/sh", "-c", script], {
        cwd: s.project,
        env: { HALLPASS_FAST_PATH: fast },
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
