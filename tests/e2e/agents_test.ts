/**
 * The real agent CLIs under hallpass, in a real terminal (tmux), as a user meets them: installed from the npm
 * registry by tests/setup_agents.sh (pinned versions, into .tools/agents; an agent whose package cannot be
 * installed is skipped with its reason), started with no API key, in a home outside /tmp (codex treats a home
 * in /tmp differently: it skips the helper programs it installs there) that has its ~/.cache.
 *
 * No model service is reached: connects are mediated and denied (`deny connect *`; unix sockets allowed, the
 * agents talk to their own helpers over them), so each agent shows its first screen (login, onboarding, folder
 * trust) and stays there.
 *
 * The question count of each agent's start with its recipe (`hallpass --agent NAME -- NAME`, no other option or
 * variable) is asserted: the goal is 0 for every agent (issue 15's table; docs/agents.md). Its own state files are
 * written by rule, and the screen is the agent's. Without a recipe (gemini) the bar comes up over the agent's
 * screen, and after the answers the screen is the agent's again.
 */
import { ok as assert } from "node:assert/strict";
import { hallpass, ROOT } from "./harness.ts";
import { makeScratch, q, sleep, Tmux } from "./tmux.ts";
import { agentRules } from "../../lib/policy/agent_recipes.ts";
import { parsePathScope, scopeCovers } from "../../lib/policy/path_scope.ts";
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
    env: {},
    ui: /Claude Code/,
    state: [".claude.json"],
  },
  {
    name: "codex",
    args: [],
    env: {},
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
  /** The agent's $HOME (outside the scratch directory). */
  home: string;
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
  homeDirs: string[] = [],
): Promise<Run> {
  const dir = await makeScratch();
  // The network is denied (no question); local sockets are left to the recipe, as in a default run.
  await Deno.writeTextFile(`${dir}/net.rules`, "deny connect 0.0.0.0/0\ndeny connect [::]/0\n");
  const binDir = bin.slice(0, bin.lastIndexOf("/"));
  const home = await makeHome();
  for (const d of homeDirs) await Deno.mkdir(`${home}/${d}`);
  const exports = Object.entries({ HOME: home, ...env }).map(([k, v]) => `${k}="${v}"; export ${k}`).join(
    "\n",
  );
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
        await t.waitFor((s) => Tmux.bar(s)[1] !== bar[1] || !s.includes("[o] allow once"), "the answer")
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
    await Deno.remove(home, { recursive: true }).catch(() => {});
    throw e;
  }
  return { t, asked, screen, home };
}

/**
 * A fresh home outside /tmp, with its ~/.cache: below the test user's own home (/root, /home/hallpass-test),
 * removed by the test.
 */
async function makeHome(): Promise<string> {
  const base = Deno.env.get("HOME") ?? "/tmp";
  const home = await Deno.makeTempDir({ dir: base, prefix: ".hallpass-agent-home-" });
  await Deno.mkdir(`${home}/.cache`);
  return home;
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

/** The recipe's write scopes for this home, as a predicate. */
function inRecipe(name: string, home: string): (p: string) => boolean {
  const scopes = agentRules(name, { home, cwd: "/nonexistent" }).filter((r) => r.op === "write").map((r) =>
    parsePathScope(r.target, { cwd: "/" })
  );
  return (p) => scopes.some((s) => scopeCovers(s, p));
}

function screenIntact(c: AgentCase, s: string): void {
  assert(c.ui.test(s), `the agent's screen is not shown:\n${s}`);
  assert(!s.includes("[o] allow once"), `the bar is still up:\n${s}`);
  // Once the agent has exited, hallpass's summary (what was denied; reads: lib/floor/read_floor.ts) follows its output.
  const own = s.split("\n").filter((l) =>
    /^hallpass: /.test(l) &&
    !/^hallpass: (\d+ kind\(s\) of operation were denied|not protected, as they lie|made during the run|reads of protected)/
      .test(l)
  );
  assert(own.length === 0, `hallpass wrote into the agent's screen:\n${s}`);
}

for (const c of CASES) {
  const s = SETUP.get(c.name);
  const ignore = agentNeeds(c.name);
  test(
    {
      name: `agent ${c.name} with --agent ${c.name}: its start asks nothing, its state is written by rule`,
      ignore,
    },
    async () => {
      const r = await runAgent(c, s!.bin!, ["--agent", c.name], c.env);
      const dir = r.t.dir;
      const home = r.home;
      try {
        const qs = [...new Set(r.asked)];
        console.log(
          `${c.name} with --agent: ${r.asked.length} question(s)${qs.length ? ": " + qs.join(", ") : ""}`,
        );
        assert(
          r.asked.length === 0,
          `the start asked ${r.asked.length} question(s) (the goal is 0): ${qs.join(", ")}`,
        );
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
        const denied = log.filter((l) => l.decision === "deny" && l.op !== "connect");
        assert(denied.length === 0, `denied: ${JSON.stringify(denied)}`);
      } finally {
        await r.t.close();
        await Deno.remove(dir, { recursive: true }).catch(() => {});
        await Deno.remove(home, { recursive: true }).catch(() => {});
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
    // ~/.gemini is there before (a second run): made during the run directly in $HOME, which read protection
    // carves, the sandbox could not read it back (docs/threat-model.md, "Secrets").
    const r = await runAgent(c, s!.bin!, ["--allow-exec", `${pkg}/**`], c.env, "t", undefined, [".gemini"]);
    try {
      const home = r.home;
      assert(r.asked.some((a) => a.startsWith(`${home}/.gemini`)), `never asked about ~/.gemini: ${r.asked}`);
      screenIntact(c, r.screen);
      console.log(`gemini without a recipe: ${r.asked.length} question(s)`);
    } finally {
      await r.t.close();
      await Deno.remove(r.t.dir, { recursive: true }).catch(() => {});
      await Deno.remove(r.home, { recursive: true }).catch(() => {});
    }
  });
}

test({
  name: "the shell hallpass starts (no command) keeps its history without a question",
  ignore: tool("bash") ?? tmux,
}, async () => {
  const t = await Tmux.start({
    script: [
      "SHELL=/bin/bash; export SHELL",
      // No rc files: a plain interactive bash, its history in ~/.bash_history (saved via a temp file + rename).
      'printf \'PS1="$ "\\n\' > "$HOME/.bashrc"',
      `hp --log "$DIR/log.jsonl"`,
    ].join("\n"),
    cols: 100,
    rows: 30,
  });
  try {
    await t.waitText(/^\$/m);
    await t.type("echo marker-one\n");
    await t.waitText("marker-one\n");
    await t.type("exit\n");
    const rc = await t.waitExit();
    const screen = await t.screen();
    assert(
      !screen.includes("[o] allow once") && !/wants to write/.test(await t.history()),
      `asked:\n${screen}`,
    );
    assert(rc === 0, `exit ${rc}`);
    const hist = await Deno.readTextFile(`${t.dir}/home/.bash_history`);
    assert(hist.includes("echo marker-one"), `history: ${hist}`);
    const log = await readLog(t.dir);
    const denied = log.filter((l) => l.decision === "deny");
    assert(denied.length === 0, `denied: ${JSON.stringify(denied)}`);
  } finally {
    await t.close();
  }
});

Deno.test("hallpass --agents prints each recipe's rules for this user, each with why", async () => {
  const r = await hallpass(["--agents"], { env: { HOME: "/home/someone", PATH: "/usr/bin:/bin" } });
  assert(r.code === 0, r.stderr);
  for (
    const line of [
      "allow write /home/someone/.claude.json*",
      "allow write /tmp/claude-*-cwd",
      "allow write /home/someone/.codex/**",
    ]
  ) {
    assert(r.stdout.includes(line), `${line} missing:\n${r.stdout}`);
  }
  assert(
    /allow write \/tmp\/claude-\*-cwd\n\s+its Bash tool's shell writes its working directory/.test(r.stdout),
    r.stdout,
  );
});
