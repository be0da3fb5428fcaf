/**
 * The real agent CLIs under hallpass, in a real terminal (tmux), as a user meets them: installed from the npm
 * registry by tests/setup_agents.sh (pinned versions, into .tools/agents; an agent whose package cannot be
 * installed is skipped with a note), started in a fresh $HOME with no API key.
 *
 * No model service is reached: connects are mediated and denied (`deny connect *`; unix sockets allowed, the
 * agents talk to their own helpers over them), so each agent shows its first screen (login, onboarding, folder
 * trust) and stays there.
 *
 * For each agent, with its recipe (`--agent NAME`): it renders, its own state files are written without a
 * question (the log says "rule"), and whatever still asks is outside the recipe; the bar is answered [o] and the
 * agent's screen is back afterwards. Without a recipe (gemini) and with a write the recipe leaves out (claude's
 * temp file next to ~/.claude.json): the bar comes up over the agent's screen, and after the answers the screen
 * is the agent's again. The number of questions is printed; docs/agents.md has the table.
 *
 * claude keeps ~/.claude.json next to ~/.claude and writes it through temp files `~/.claude.json.tmp.PID.RANDOM`,
 * which no recipe can name: answered in a terminal that is ~30 questions a start, so that case is counted with an
 * ask program (the last test), and the terminal tests run claude with CLAUDE_CONFIG_DIR=~/.claude.
 */
import { ok as assert } from "node:assert/strict";
import { HALLPASS_ARGV, ROOT } from "./harness.ts";
import { makeScratch, q, sleep, Tmux } from "./tmux.ts";
import { RECIPES } from "../../lib/agents.ts";
import { type Need, test, tool } from "../helpers/skip.ts";

interface Setup {
  ok: boolean;
  bin?: string;
  why?: string;
}

const tmux = tool("tmux");

/** Runs tests/setup_agents.sh once; name → where the program is, or why it is unavailable. */
function setupAgents(): Map<string, Setup> {
  const out = new Map<string, Setup>();
  if (tmux) return out;
  const r = new Deno.Command("bash", {
    args: [`${ROOT}/tests/setup_agents.sh`],
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  for (const line of new TextDecoder().decode(r.stdout).split("\n")) {
    const m = /^(\S+) (ok|unavailable) (.*)$/.exec(line);
    if (!m) continue;
    out.set(m[1], m[2] === "ok" ? { ok: true, bin: m[3] } : { ok: false, why: m[3] });
  }
  return out;
}

const SETUP = setupAgents();

/** What an agent's test needs: tmux and the agent's CLI (installed by tests/setup_agents.sh). */
function agentNeeds(name: string, withTmux = true): Need[] {
  const s = SETUP.get(name);
  return [
    withTmux ? tmux : undefined,
    s?.ok
      ? undefined
      : { reason: `agent ${name} unavailable: ${s?.why ?? "tests/setup_agents.sh did not set it up"}` },
  ];
}

interface AgentCase {
  name: string;
  args: string[];
  /** Extra environment, shell syntax (`$DIR`, `$HOME` usable). */
  env: Record<string, string>;
  /** The agent's own screen has rendered. */
  ui: RegExp;
  /** Files below $HOME that its first run writes (they must be there afterwards). */
  state: string[];
}

const CASES: AgentCase[] = [
  {
    name: "claude",
    args: [],
    // Keeps .claude.json inside ~/.claude: its temp files (.claude.json.tmp.PID.RANDOM) are then inside the recipe.
    env: { CLAUDE_CONFIG_DIR: "$HOME/.claude" },
    ui: /Claude Code/,
    state: [".claude/.claude.json"],
  },
  {
    name: "codex",
    // Its app-server daemon binds a unix socket, which fails in the sandbox (reported): run it in-process.
    args: ["--no-daemon"],
    env: { TMPDIR: "$DIR/project/.tmp" },
    ui: /Welcome to Codex/,
    state: [".codex/config.toml", ".codex/installation_id"],
  },
  {
    name: "gemini",
    args: [],
    env: {},
    ui: /Do you trust the files in this folder\?/,
    state: [".gemini/installation_id", ".gemini/projects.json"],
  },
  {
    name: "copilot",
    args: [],
    env: {},
    ui: /Do you trust the files in this folder\?/,
    state: [".copilot/config.json"],
  },
];

interface Run {
  t: Tmux;
  /** Targets of the questions the bar asked (answered [o]). */
  asked: string[];
  screen: string;
}

/**
 * Starts the agent under hallpass in a 120×40 terminal and answers every bar with `answer` until its own screen is up and
 * stays up (no bar) for a moment. At most `budgetMs`.
 */
async function runAgent(
  c: AgentCase,
  bin: string,
  hpArgs: string[],
  env: Record<string, string>,
  answer = "o",
  budgetMs = 30_000,
): Promise<Run> {
  const dir = await makeScratch();
  await Deno.mkdir(`${dir}/project/.tmp`);
  await Deno.writeTextFile(`${dir}/net.rules`, "deny connect *\nallow connect unix:/**\n");
  const binDir = bin.slice(0, bin.lastIndexOf("/"));
  const exports = Object.entries(env).map(([k, v]) => `${k}="${v}"; export ${k}`).join("\n");
  const script = [
    `PATH=${q(binDir)}:/usr/local/bin:/usr/bin:/bin; export PATH`,
    "unset TMUX TMUX_PANE",
    "TERM=xterm-256color; export TERM",
    exports,
    `hp --mediate write,exec,connect --rules "$DIR/net.rules" --log "$DIR/log.jsonl" ${
      hpArgs.map(q).join(" ")
    } ` +
    `-- ${q(c.name)} ${c.args.map(q).join(" ")}`,
  ].join("\n");
  const t = await Tmux.start({ script, dir, cols: 120, rows: 40 });
  const asked: string[] = [];
  const end = Date.now() + budgetMs;
  let calmSince = 0;
  let screen = "";
  try {
    for (;;) {
      screen = await t.screen();
      if (screen.includes("[o] allow once")) {
        calmSince = 0;
        await Tmux.pastArmDelay(); // seen: past the arm delay after this bound
        screen = await t.screen();
        const bar = Tmux.bar(screen);
        if (bar.length >= 2) asked.push(bar[1]);
        await t.keys(answer);
        await t.waitFor((s) => Tmux.bar(s)[1] !== bar[1] || !s.includes("[o] allow once"), "the answer", 5000)
          .catch(() => {});
      } else if (c.ui.test(screen)) {
        if (!calmSince) calmSince = Date.now();
        else if (Date.now() - calmSince > 1500) break;
      } else {
        calmSince = 0;
      }
      if (Date.now() > end) {
        throw new Error(
          `${c.name}: its screen did not come up within ${budgetMs} ms; the screen:\n${screen}`,
        );
      }
      await sleep(100);
    }
  } catch (e) {
    await t.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
    throw e;
  }
  return { t, asked, screen };
}

interface LogLine {
  op: string;
  target: string;
  decision: string;
  by: string;
}

async function readLog(dir: string): Promise<LogLine[]> {
  const text = await Deno.readTextFile(`${dir}/log.jsonl`).catch(() => "");
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

/** The recipe's write scopes for this home, as predicates. */
function inRecipe(name: string, home: string): (p: string) => boolean {
  const r = RECIPES.find((x) => x.name === name)!;
  const uid = String(Deno.uid());
  const scopes = r.write.map((w) => w.replace(/^~/, home).replaceAll("{uid}", uid));
  return (p) =>
    scopes.some((s) => s.endsWith("/**") ? p === s.slice(0, -3) || p.startsWith(s.slice(0, -2)) : p === s);
}

function screenIntact(c: AgentCase, s: string): void {
  assert(c.ui.test(s), `the agent's screen is not shown:\n${s}`);
  assert(!s.includes("[o] allow once"), `the bar is still up:\n${s}`);
  // Once the agent has exited, hallpass's summary of what was denied follows its output: that is not in its screen.
  const own = s.split("\n").filter((l) =>
    /^hallpass: /.test(l) && !/^hallpass: \d+ kind\(s\) of operation were denied/.test(l)
  );
  assert(own.length === 0, `hallpass wrote into the agent's screen:\n${s}`);
}

for (const c of CASES) {
  const s = SETUP.get(c.name);
  const ignore = agentNeeds(c.name);
  test(
    { name: `agent ${c.name} with --agent ${c.name}: renders, its state writes ask nothing`, ignore },
    async () => {
      const r = await runAgent(c, s!.bin!, ["--agent", c.name], c.env);
      const dir = r.t.dir;
      const home = `${dir}/home`;
      try {
        screenIntact(c, r.screen);
        for (const f of c.state) {
          assert((await Deno.stat(`${home}/${f}`).catch(() => null))?.isFile, `${f} was not written`);
        }
        const covered = inRecipe(c.name, home);
        const log = await readLog(dir);
        const stateWrites = log.filter((l) => l.op === "write" && covered(l.target.split(" → ")[0]));
        assert(stateWrites.length > 0, "no write of its state in the log");
        for (const l of stateWrites) {
          assert(
            l.by === "rule" || l.by === "floor",
            `a state write was decided by ${l.by}: ${JSON.stringify(l)}`,
          );
        }
        for (const a of r.asked) assert(!covered(a), `asked about ${a}, which the recipe covers`);
        console.log(
          `${c.name} with --agent: ${r.asked.length} question(s)${
            r.asked.length ? ": " + [...new Set(r.asked)].join(", ") : ""
          }`,
        );
      } finally {
        await r.t.close();
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    },
  );
}

{
  const c = CASES.find((x) => x.name === "gemini")!;
  const s = SETUP.get("gemini");
  test({
    name:
      "agent gemini without a recipe: the bar comes up over its screen for ~/.gemini, the screen is back after",
    ignore: agentNeeds("gemini"),
  }, async () => {
    const pkg = s!.bin!.replace(/\/bin\/gemini$/, "");
    // [t] on the scope the bar suggests (~/.gemini/**), as a person would after the first few questions.
    const r = await runAgent(c, s!.bin!, ["--allow-exec", `${pkg}/**`], c.env, "t");
    try {
      const home = `${r.t.dir}/home`;
      assert(r.asked.some((a) => a.startsWith(`${home}/.gemini`)), `never asked about ~/.gemini: ${r.asked}`);
      screenIntact(c, r.screen);
      console.log(`gemini without a recipe: ${r.asked.length} question(s)`);
    } finally {
      await r.t.close();
      await Deno.remove(r.t.dir, { recursive: true }).catch(() => {});
    }
  });
}

{
  const s = SETUP.get("claude");
  test({
    name:
      "agent claude with its recipe, ~/.claude.json in $HOME: only $HOME and the temp files next to .claude.json ask",
    ignore: agentNeeds("claude", false),
  }, async () => {
    const dir = await makeScratch();
    try {
      const ask = `${dir}/ask.sh`;
      await Deno.writeTextFile(
        ask,
        `#!/bin/sh\nq=$(cat); printf '%s\\n' "$q" >> ${q(dir + "/questions.jsonl")}\n` +
          `case "$q" in *'"op":"connect"'*) echo deny;; *) echo once;; esac\n`,
      );
      await Deno.chmod(ask, 0o755);
      await Deno.writeTextFile(`${dir}/net.rules`, "deny connect *\nallow connect unix:/**\n");
      const home = `${dir}/home`;
      const binDir = s!.bin!.slice(0, s!.bin!.lastIndexOf("/"));
      // No terminal: claude prints its error and exits; what it writes before that is the same as in one.
      const r = await new Deno.Command(HALLPASS_ARGV[0], {
        args: [
          ...HALLPASS_ARGV.slice(1),
          "--agent",
          "claude",
          "--mediate",
          "write,exec,connect",
          "--rules",
          `${dir}/net.rules`,
          "--ask-program",
          ask,
          "--log",
          `${dir}/log.jsonl`,
          "--",
          "claude",
          "-p",
          "hello",
        ],
        cwd: `${dir}/project`,
        env: { HOME: home, XDG_CONFIG_HOME: `${dir}/xdg`, PATH: `${binDir}:/usr/local/bin:/usr/bin:/bin` },
        clearEnv: true,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      void r;
      const qs = (await Deno.readTextFile(`${dir}/questions.jsonl`).catch(() => "")).split("\n").filter(
        Boolean,
      )
        .map((l) => JSON.parse(l) as { op: string; target: string });
      const writes = qs.filter((x) => x.op === "write");
      assert(writes.length > 0, "nothing asked");
      for (const w of writes) {
        const t = w.target.split(" → ")[0];
        assert(t === home || t.startsWith(`${home}/.claude.json.tmp.`), `asked about ${w.target}`);
      }
      assert((await Deno.stat(`${home}/.claude.json`)).isFile);
      console.log(
        `claude with --agent, .claude.json in $HOME: ${writes.length} write question(s) ` +
          `(${writes.filter((w) => w.target === home).length} about $HOME itself)`,
      );
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
}
