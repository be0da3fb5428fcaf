/**
 * One question per thing: the same process asking the same operation on the same path again right after a
 * deny (`less` retrying its history file three times) gets that deny again; another process asks for itself;
 * after `[o]` (one operation) the next identical write asks again.
 * Counted from outside: the ask program's log of questions; the writes' effects on the outside files.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { hallpass, readQuestions, scratch, scratchAsker } from "./harness.ts";

for (const answer of ["deny", "once"]) {
  Deno.test(`one question per thing: three tries by one process, answered ${answer}`, async () => {
    const s = await scratch();
    try {
      const { ask, log } = await scratchAsker(s, answer);
      const f = `${s.outside}/hist`;
      const r = await hallpass([
        "--ask-program",
        ask,
        "-q",
        "--",
        "sh",
        "-c",
        // One shell process (no fork: builtins) opens the same file three times; then a child asks for itself.
        `for i in 1 2 3; do echo $i >> ${f}; done; sh -c 'echo child >> ${f}'; true`,
      ], { cwd: s.project });
      assertEquals(r.code, 0, r.stderr);
      const qs = (await readQuestions(log)).filter((q) => q.op === "write");
      // deny: one question for the shell's three tries, one for the child; once: each write is its own.
      assertEquals(qs.length, answer === "deny" ? 2 : 4, JSON.stringify(qs.map((q) => [q.pid, q.target])));
      assertEquals(qs[0].target, f);
      const content = await Deno.readTextFile(f).catch(() => null);
      assertEquals(content, answer === "once" ? "1\n2\n3\nchild\n" : null);
    } finally {
      await s.cleanup();
    }
  });
}
