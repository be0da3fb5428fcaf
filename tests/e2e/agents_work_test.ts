/**
 * Agents at work under hallpass: the real claude and codex CLIs (pinned in tests/setup_agents.sh), each with its
 * recipe, in a real terminal (tmux), driven through real tool calls by the scripted model server
 * (tests/agents/model_server.ts) — no network: the CLIs talk only to 127.0.0.1, and the log is checked for any
 * connect elsewhere. The bar is answered by keys; the number of questions of each session is asserted.
 *
 * Sessions, for each agent:
 * - a task inside the project: 0 questions, nothing denied, every tool result clean (the command's real output);
 * - a task that writes outside (a dotfile, a cache): exactly the expected questions, and `[o]`, `[d]`, `[t]`,
 *   `[a]` each give the outcome the agent then sees (the output, or the EACCES text);
 * - the agent asking in advance with hallpass-request: one question, then none for the writes it covered;
 * - `--no-ask`: the task finishes, the denial is listed at exit, hallpass exits with the agent's status.
 *
 * Runs as root and as the unprivileged user (tests/run_all.sh).
 */
import { ok as assert } from "node:assert/strict";
import { ROOT } from "./harness.ts";
import { type Need, test, tool } from "../helpers/skip.ts";
import { type AgentName, runSession, type Session, setupAgents } from "../agents/session.ts";
import type { Step } from "../agents/model_server.ts";

const tmux = tool("tmux");
const AGENTS: AgentName[] = ["claude", "codex"];
const SETUP = tmux ? new Map() : setupAgents(AGENTS);

/** What a session needs: tmux and the agent's CLI (installed by tests/setup_agents.sh). */
function ignore(a: AgentName): Need[] {
  const s = SETUP.get(a);
  return [tmux, s?.ok ? undefined : { reason: `agent ${a} unavailable: ${s?.why ?? "not set up"}` }];
}

/** A failed assertion shows the session's terminal and what the agent got back. */
function check(s: Session, cond: unknown, what: string): asserts cond {
  assert(
    cond,
    `${what}\n--- questions ---\n${s.questions.join("\n")}\n--- tool results ---\n${
      JSON.stringify(s.srv.results, null, 1)
    }\n--- terminal ---\n${s.text.split("\n").slice(-40).join("\n")}`,
  );
}

const EACCES = /Permission denied/;

for (const agent of AGENTS) {
  for (const noAsk of [false, true]) {
    test(
      {
        name: `${agent} at work: a task inside the project ${
          noAsk ? "under --no-ask denies nothing" : "asks nothing"
        }`,
        ignore: ignore(agent),
      },
      async () => {
        const script: Step[] = [
          { run: "mkdir -p src && echo 'export const x = 1;' > src/x.ts && cat src/x.ts" },
          { write: "", content: "notes\n" }, // filled in below: needs the project's path
          { run: "ls src && wc -l < notes.md && git --version >/dev/null; echo exit=$?" },
          { say: "done" },
        ];
        const s = await runSession({
          agent,
          bin: SETUP.get(agent)!.bin!,
          script,
          hpArgs: noAsk ? ["--no-ask"] : [],
          before: (dir) => {
            script[1] = { write: `${dir}/project/notes.md`, content: "notes\n" };
            return Promise.resolve();
          },
        });
        try {
          check(s, s.questions.length === 0, `asked ${s.questions.length} question(s)`);
          check(s, s.denied.length === 0, `denied: ${JSON.stringify(s.denied)}`);
          check(s, s.rc === 0, `exit ${s.rc}`);
          check(s, s.srv.served() >= 4, "the script did not run to its end");
          check(s, /export const x = 1;/.test(s.srv.results[0] ?? ""), "step 1's output");
          check(
            s,
            /x\.ts/.test(s.srv.results[2] ?? "") && /exit=0/.test(s.srv.results[2] ?? ""),
            "step 3's output",
          );
          for (const r of s.srv.results) {
            check(s, !EACCES.test(r ?? ""), `a tool result carries a denial: ${r}`);
          }
          check(
            s,
            s.srv.errors.every((e) => !e),
            "a tool result was marked an error",
          );
          check(s, (await Deno.readTextFile(`${s.project}/notes.md`)) === "notes\n", "notes.md");
          check(s, s.outside.length === 0, `connects elsewhere: ${s.outside}`);
        } finally {
          await s.close();
        }
      },
    );
  }

  test({
    name: `${agent} at work: writes outside ask, and each answer is what the agent sees`,
    ignore: ignore(agent),
  }, async () => {
    const s = await runSession({
      agent,
      bin: SETUP.get(agent)!.bin!,
      before: (dir) => Deno.mkdir(`${dir}/home/.cache/tool`, { recursive: true }),
      script: [
        { run: `echo one > "$HOME/notes.txt"; cat "$HOME/notes.txt"` }, // [o]
        { run: `echo two > "$HOME/notes.txt"; cat "$HOME/notes.txt"` }, // [d]: still "one"
        { run: `echo c1 > "$HOME/.cache/tool/a"; cat "$HOME/.cache/tool/a"` }, // [t] on ~/.cache/tool/**
        { run: `echo c2 > "$HOME/.cache/tool/b"; cat "$HOME/.cache/tool/b"` }, // covered: no question
        { run: `echo p1 > "$HOME/.toolrc"; cat "$HOME/.toolrc"` }, // [a]: saved
        { run: `echo p2 > "$HOME/.toolrc"; cat "$HOME/.toolrc"` }, // covered: no question
        { say: "done" },
      ],
      answers: ["o", "d", "t", "a"],
    });
    try {
      check(s, s.questions.length === 4, `asked ${s.questions.length} question(s), expected 4`);
      const [q1, q2, q3, q4] = s.questions;
      check(s, q1.includes("notes.txt") && q2.includes("notes.txt"), "the first two are about ~/notes.txt");
      check(
        s,
        q3.includes(".cache/tool/a") && q4.includes(".toolrc"),
        "then ~/.cache/tool/a, then ~/.toolrc",
      );
      const r = s.srv.results;
      check(s, /one/.test(r[0] ?? "") && !EACCES.test(r[0] ?? ""), "[o]: the write went through");
      check(s, EACCES.test(r[1] ?? "") && /one/.test(r[1] ?? ""), "[d]: EACCES, the file unchanged");
      check(s, /c1/.test(r[2] ?? "") && /c2/.test(r[3] ?? ""), "[t]: both cache writes went through");
      check(s, /p1/.test(r[4] ?? "") && /p2/.test(r[5] ?? ""), "[a]: both went through");
      check(s, (await Deno.readTextFile(`${s.home}/notes.txt`)) === "one\n", "~/notes.txt");
      const saved = await Deno.readTextFile(`${s.dir}/xdg/hallpass/rules`).catch(() => "");
      check(s, saved.includes(`allow write ${s.home}/.toolrc`), `[a] saved no rule: ${saved}`);
      check(s, s.rc === 0, `exit ${s.rc}`);
      check(s, s.outside.length === 0, `connects elsewhere: ${s.outside}`);
    } finally {
      await s.close();
    }
  });

  test({
    name: `${agent} at work: asking ahead with hallpass-request is one question, then none`,
    ignore: ignore(agent),
  }, async () => {
    const s = await runSession({
      agent,
      bin: SETUP.get(agent)!.bin!,
      hpArgs: ["--allow-exec", `${ROOT}/hallpass-request`],
      // A home has its ~/.cache: the request names what is below it.
      before: (dir) => Deno.mkdir(`${dir}/home/.cache`, { recursive: true }),
      script: [
        // By its full path: codex runs commands in a login shell (bash -lc), which resets $PATH.
        {
          run:
            `${ROOT}/hallpass-request write "$HOME/.cache/x/**" --for 10m --reason "build cache"; echo rc=$?`,
        },
        {
          run:
            `mkdir -p "$HOME/.cache/x/y" && echo 1 > "$HOME/.cache/x/y/z" && echo 2 > "$HOME/.cache/x/w"; echo rc=$?`,
        },
        { say: "done" },
      ],
      answers: ["o"],
    });
    try {
      check(s, s.questions.length === 1, `asked ${s.questions.length} question(s), expected 1`);
      check(s, /rc=0/.test(s.srv.results[0] ?? ""), "the request was granted");
      check(
        s,
        /rc=0/.test(s.srv.results[1] ?? "") && !EACCES.test(s.srv.results[1] ?? ""),
        "the writes went through",
      );
      check(s, (await Deno.readTextFile(`${s.home}/.cache/x/y/z`)) === "1\n", "~/.cache/x/y/z");
      check(s, s.rc === 0, `exit ${s.rc}`);
    } finally {
      await s.close();
    }
  });

  test({
    name: `${agent} at work: --no-ask finishes, lists the denial, exits with the agent's status`,
    ignore: ignore(agent),
  }, async () => {
    const s = await runSession({
      agent,
      bin: SETUP.get(agent)!.bin!,
      hpArgs: ["--no-ask"],
      script: [
        { run: `echo x > "$HOME/denied.txt"; echo after` },
        { run: "echo inside > in.txt && cat in.txt" },
        // The model service fails the last turn: the agent exits 1 (both CLIs do, run bare), and so must hallpass.
        { fail: "scripted failure" },
      ],
    });
    try {
      check(s, s.questions.length === 0, `asked ${s.questions.length} question(s)`);
      check(s, EACCES.test(s.srv.results[0] ?? "") && /after/.test(s.srv.results[0] ?? ""), "EACCES seen");
      check(s, /inside/.test(s.srv.results[1] ?? ""), "the task went on");
      check(
        s,
        s.denied.length === 1 && s.denied[0].target === `${s.home}/denied.txt`,
        `denied: ${JSON.stringify(s.denied)}`,
      );
      check(
        s,
        s.text.includes(`hallpass: denied write ${s.home}/denied.txt`),
        "the denial is listed at exit",
      );
      check(s, s.rc === 1, `hallpass exit ${s.rc}, the agent's is 1`);
      check(s, s.outside.length === 0, `connects elsewhere: ${s.outside}`);
    } finally {
      await s.close();
    }
  });
}
