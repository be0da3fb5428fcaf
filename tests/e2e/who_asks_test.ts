/**
 * Who asks (docs/threat-model.md, "Writes"): a program chooses its own name (PR_SET_NAME) and argv, so the
 * question names the executable the kernel runs (/proc/PID/exe) and labels the rest as the program's words:
 * in the ask program's JSON, the log, the terminal bar and the agent's web page (the last two through `who`).
 * The attack: python renames itself "git" and rewrites its argv before asking to write outside.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { hallpass, readQuestions, scratch, scratchAsker } from "./harness.ts";
import { layout, who } from "../../lib/ui/prompt_bar.ts";
import type { Question } from "../../lib/types.ts";
import { test, tool } from "../helpers/skip.ts";

const PY = "/usr/bin/python3";

test(
  { name: "who asks: a process calling itself git is shown as the python it is", ignore: tool(PY) },
  async () => {
    const s = await scratch();
    try {
      const { ask, log } = await scratchAsker(s, "deny");
      const script = "import ctypes,sys\nctypes.CDLL(None).prctl(15, b'git', 0, 0, 0)\n" +
        `open('${s.outside}/x', 'w')\n`;
      await Deno.writeTextFile(`${s.project}/spoof.py`, script);
      const r = await hallpass(
        [
          "--ask-program",
          ask,
          "-q",
          "--allow-exec",
          PY,
          "--log",
          `${s.outside}/../decisions.jsonl`,
          "--",
          PY,
          "spoof.py",
        ],
        { cwd: s.project },
      );
      assert(r.stderr.includes("PermissionError"), r.stderr);
      const [q] = (await readQuestions(log)).filter((x) => x.op === "write");
      assertEquals(q.name, "git"); // its own words
      const real = Deno.realPathSync(PY);
      assertEquals(q.exe, real); // what the kernel runs
      const decisions = (await readQuestions(`${s.outside}/../decisions.jsonl`)).filter((d) =>
        d.op === "write"
      );
      assert(decisions.length > 0 && decisions.every((d) => d.exe === real), JSON.stringify(decisions));
      // The bar and the web page say it the same way.
      assertEquals(who(q as unknown as Question), `${real} (pid ${q.pid}, calls itself "git")`);
      const lines = layout(
        { question: q as unknown as Question, queued: 0, scopeIndex: 0, forMs: 300_000 },
        200,
      );
      assert(lines.some((l) => l.startsWith(`hallpass: ${real} (pid`)), lines.join("\n"));
      assert(lines.some((l) => l.startsWith("by (their words): ")), lines.join("\n"));
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test("who asks: a name that is the executable's own is not repeated; no exe keeps the old line", () => {
  const base: Question = {
    id: 1,
    op: "write",
    pid: 7,
    name: "sh",
    exe: "/usr/bin/dash",
    target: "/x",
    syscall: "openat",
    chain: ["sh -c x"],
    suggestedScope: "/x",
    scopes: ["/x"],
  };
  assertEquals(who(base), `/usr/bin/dash (pid 7, calls itself "sh")`);
  assertEquals(who({ ...base, name: "dash" }), "/usr/bin/dash (pid 7)");
  assertEquals(
    who({ ...base, exe: "/opt/a-very-long-program-name", name: "a-very-long-pro" }),
    "/opt/a-very-long-program-name (pid 7)",
  );
  assertEquals(who({ ...base, exe: undefined }), "sh (pid 7)");
  assertEquals(who({ ...base, name: "\x1b[2Jx" }), `/usr/bin/dash (pid 7, calls itself "^[[2Jx")`);
});
