/**
 * hallpass-request with the ask-program backend (README.md `--ask-program`, docs/request-protocol.md): a granted request (0) lets later
 * writes in its scope through without another question; the question carries the program's reason and
 * `syscall: "request"`; deny (3); `--timeout` (4); `--for` expiring; `release` (0, then asks again; never
 * touches rules from the command line); `check` never runs the ask program.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { readQuestions } from "./harness.ts";
import { q, requestScratch, type Scratch, session, show } from "./request_harness.ts";

/**
 * An ask program that records each question (one JSON line in `log`) and gives the answers in turn (the last
 * one again when they run out); `sleep` seconds before answering.
 */
async function asker(s: Scratch, answers: string[], sleep = 0): Promise<{ prog: string; log: string }> {
  const log = `${s.base}/questions.jsonl`;
  const list = `${s.base}/answers`;
  const count = `${s.base}/asked`;
  await Deno.writeTextFile(list, answers.join("\n") + "\n");
  const prog = `${s.base}/ask.sh`;
  await Deno.writeTextFile(
    prog,
    `#!/bin/sh
cat >> ${q(log)}
echo >> ${q(count)}
n=$(wc -l < ${q(count)})
[ ${sleep} -gt 0 ] && sleep ${sleep}
a=$(sed -n "\${n}p" ${q(list)})
[ -n "$a" ] || a=$(tail -n 1 ${q(list)})
echo "$a"
`,
  );
  await Deno.chmod(prog, 0o755);
  return { prog, log };
}

Deno.test("request ask program: granted (0); writes in the scope then go through without a question", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const a = await asker(s, ["once"]);
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(o + "/cache/**")} --reason 'npm install fills its cache'`,
        `mkdir ${q(o + "/cache")} && echo mkdir=ok`,
        `wr w1 ${q(o + "/cache/a")}`,
        `mkdir ${q(o + "/cache/d")} && echo mkdir2=ok`,
        `wr w2 ${q(o + "/cache/d/b")}`,
        `req again write ${q(o + "/cache/**")}`,
        `req check check write ${q(o + "/cache/d/e")}`,
      ].join("\n"),
    );
    assertEquals(
      r.rc,
      { ask: "0", mkdir: "ok", w1: "ok", mkdir2: "ok", w2: "ok", again: "1", check: "1" },
      show(r),
    );
    assert(
      r.stderr.includes(`hallpass-request: granted write ${o}/cache/** for the rest of the session\n`),
      show(r),
    );
    const qs = await readQuestions(a.log);
    assertEquals(qs.length, 1, JSON.stringify(qs));
    assertEquals(qs[0].syscall, "request");
    assertEquals(qs[0].op, "write");
    assertEquals(qs[0].target, `${o}/cache/**`);
    assertEquals(qs[0].reason, "npm install fills its cache");
    assertEquals(await Deno.readTextFile(`${o}/cache/d/b`), "x\n");
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: deny answers 3, and nothing is granted", async () => {
  const s = await requestScratch();
  try {
    const a = await asker(s, ["deny"]);
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(s.outside + "/**")} --reason 'want it'`,
        `req check check write ${q(s.outside + "/**")}`,
        `req release release write ${q(s.outside + "/**")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, { ask: "3", check: "5", release: "10" }, show(r));
    assertEquals((await readQuestions(a.log)).length, 1);
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: nobody answers within --timeout 1s: 4 (ETIMEDOUT), nothing granted", async () => {
  const s = await requestScratch();
  try {
    const a = await asker(s, ["always"], 4);
    const t0 = Date.now();
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(s.outside + "/f")} --timeout 1s`,
        `req check check write ${q(s.outside + "/f")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, { ask: "4", check: "5" }, show(r));
    assert(r.stderr.includes(`hallpass-request: nobody answered within 1s: write ${s.outside}/f\n`), show(r));
    assert(Date.now() - t0 < 30_000);
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: a --for 2s grant expires; the next write asks again (and is denied)", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const a = await asker(s, ["once", "deny"]);
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(o + "/**")} --for 2s --reason 'two seconds'`,
        `wr w1 ${q(o + "/a")}`,
        `req check1 check write ${q(o + "/**")}`,
        `sleep 3`,
        `req check2 check write ${q(o + "/**")}`,
        `wr w2 ${q(o + "/b")}`,
        `req release release write ${q(o + "/**")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, { ask: "0", w1: "ok", check1: "1", check2: "5", w2: "fail", release: "0" }, show(r));
    assert(r.stderr.includes(`hallpass-request: granted write ${o}/** for 2s\n`), show(r));
    const qs = await readQuestions(a.log);
    assertEquals(qs.map((x) => [x.syscall === "request" ? "request" : "write", x.target]), [
      ["request", `${o}/**`],
      ["write", `${o}/b`],
    ]);
    assertEquals(qs[0].reason, "two seconds");
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: release gives the grant back (0); the scope asks again; a second release 10", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const a = await asker(s, ["once", "deny"]);
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(o + "/d/**")}`,
        `mkdir ${q(o + "/d")}`,
        `wr w1 ${q(o + "/d/a")}`,
        `req other release write ${q(o + "/d/a")}`,
        `req release release write ${q(o + "/d/**")}`,
        `req check check write ${q(o + "/d/**")}`,
        `wr w2 ${q(o + "/d/b")}`,
        `req release2 release write ${q(o + "/d/**")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, {
      ask: "0",
      w1: "ok",
      other: "10",
      release: "0",
      check: "5",
      w2: "fail",
      release2: "10",
    }, show(r));
    assert(r.stderr.includes(`hallpass-request: released write ${o}/d/**\n`), show(r));
    assertEquals((await readQuestions(a.log)).length, 2, "the request, then the write after the release");
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: release never touches rules from the command line (--allow-path stays)", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    await Deno.mkdir(`${o}/cli`);
    await Deno.mkdir(`${o}/both`);
    await Deno.writeTextFile(`${o}/both/keep`, "");
    const a = await asker(s, ["once"]);
    const r = await session(
      s,
      ["--ask-program", a.prog, "--allow-path", `${o}/cli`, "--allow-path", `${o}/both/keep`],
      [
        `req cli_ask write ${q(o + "/cli/**")}`,
        `req cli_release release write ${q(o + "/cli/**")}`,
        `req cli_release_exact release write ${q(o + "/cli")}`,
        `req cli_check check write ${q(o + "/cli/**")}`,
        `wr cli_write ${q(o + "/cli/f")}`,
        `req both_ask write ${q(o + "/both/**")}`,
        `req both_release release write ${q(o + "/both/**")}`,
        `req both_keep check write ${q(o + "/both/keep")}`,
        `wr both_keep_write ${q(o + "/both/keep")}`,
        `req both_tree check write ${q(o + "/both/**")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, {
      cli_ask: "1",
      cli_release: "10",
      cli_release_exact: "10",
      cli_check: "1",
      cli_write: "ok",
      both_ask: "0",
      both_release: "0",
      both_keep: "1",
      both_keep_write: "ok",
      both_tree: "5",
    }, show(r));
    assertEquals((await readQuestions(a.log)).length, 1, "only the request for both/**");
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: check never asks (the ask program never runs)", async () => {
  const s = await requestScratch();
  try {
    const a = await asker(s, ["always"]);
    const r = await session(
      s,
      ["--ask-program", a.prog, "--mediate", "write,exec,connect"],
      [
        `req w check write ${q(s.outside + "/**")} --reason 'just checking'`,
        `req e check exec ${q(s.outside + "/prog")}`,
        `req c check connect tcp:127.0.0.1:9`,
        `req w2 check write ${q(s.outside + "/f")} --timeout 1s --for 1m`,
      ].join("\n"),
    );
    assertEquals(r.rc, { w: "5", e: "5", c: "5", w2: "5" }, show(r));
    assertEquals(await readQuestions(a.log), []);
  } finally {
    await s.cleanup();
  }
});

Deno.test("request ask program: an answer that widens the scope; release of the requested target gives it back", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const a = await asker(s, [`always ${o}/wide/**`, "deny"]);
    const r = await session(
      s,
      ["--ask-program", a.prog],
      [
        `req ask write ${q(o + "/wide/sub/**")}`,
        `req wider check write ${q(o + "/wide/other")}`,
        `req release release write ${q(o + "/wide/sub/**")}`,
        `req after check write ${q(o + "/wide/other")}`,
        `req ask2 write ${q(o + "/wide/sub/**")}`,
        `req release2 release write ${q(o + "/wide/sub/**")}`,
      ].join("\n"),
    );
    assertEquals(
      r.rc,
      { ask: "0", wider: "1", release: "0", after: "5", ask2: "3", release2: "10" },
      show(r),
    );
    assert(
      r.stderr.includes(`hallpass-request: granted write ${o}/wide/sub/** for the rest of the session\n`),
      show(r),
    );
  } finally {
    await s.cleanup();
  }
});
