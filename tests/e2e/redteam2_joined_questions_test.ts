/**
 * Red team: an answer grants what was shown. While one question waits, a second call that is "the same" joins
 * it and gets its answer (lib/supervisor/host.ts groups by key). For exec the bar shows the program *and its
 * arguments*: a second run of the same program with other arguments must get its own question, never the
 * answer the person gave to the first one's arguments. Judged outside: what the program wrote.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { hallpass, readQuestions, scratch } from "./harness.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };

Deno.test("redteam2: an exec with other arguments never gets the answer given to the question shown", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.project}/run.sh`, `#!/bin/sh\necho "$1" >> '${s.project}/ran'\n`);
    await Deno.chmod(`${s.project}/run.sh`, 0o755);
    // The person (an ask program) allows what it is shown only when its arguments say "harmless", and takes a
    // second to answer: the other run is asked meanwhile.
    const ask = `${s.outside}/ask.sh`;
    await Deno.writeTextFile(
      ask,
      `#!/bin/sh\nq=$(cat)\nprintf '%s\\n' "$q" >> '${s.outside}/questions.jsonl'\nsleep 1\n` +
        `case "$q" in *'"argv":["./run.sh","harmless"]'*) echo once;; *) echo deny;; esac\n`,
    );
    await Deno.chmod(ask, 0o755);
    const r = await hallpass(
      ["--ask-program", ask, "--", "sh", "-c", "./run.sh harmless & sleep 0.2; ./run.sh evil & wait"],
      { cwd: s.project, env: ENV },
    );
    const ran = await Deno.readTextFile(`${s.project}/ran`).catch(() => "");
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    const shown = qs.map((q) => JSON.stringify(q.argv));
    assert(ran.includes("harmless"), `the control: the run shown was allowed (${ran}; ${r.stderr})`);
    // "evil" may run only if a question showing it was asked (and it was denied: it must not run).
    assertEquals(ran.includes("evil"), false, `ran: ${ran}; questions shown: ${shown.join(" | ")}`);
    assert(
      shown.some((a) => a.includes("evil")),
      `the evil run got no question of its own: ${shown.join(" | ")}`,
    );
  } finally {
    await s.cleanup();
  }
});
