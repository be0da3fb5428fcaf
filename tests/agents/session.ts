/**
 * One agent session as a test: the real agent CLI (installed by tests/setup_agents.sh) under hallpass with its
 * recipe, in a real terminal (tmux), talking only to the scripted model server (model_server.ts) on 127.0.0.1.
 * Every bar that comes up is counted and answered with the next key of `answers`; a bar beyond them is
 * answered `[d]` and still counted, so the test sees the count.
 *
 * The CLIs are pointed only at the local server, and everything that would reach an outside host is turned off
 * by their own settings: claude `ANTHROPIC_BASE_URL`, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (telemetry,
 * error reports, update checks); codex a custom provider in `~/.codex/config.toml` (`base_url`,
 * `check_for_update_on_startup = false`, plugins off — their marketplace sync runs `git ls-remote` on
 * github.com —, analytics and feedback off). `outside` lists the network connects hallpass
 * saw to anything but the local server (`--mediate connect`, the server's port allowed, the rest of the network
 * denied; local sockets are left to the recipe, as in a default run), so a
 * test can assert there are none.
 */
import { ROOT } from "../e2e/harness.ts";
import { makeScratch, q, sleep, Tmux } from "../e2e/tmux.ts";
import { type ModelServer, startModelServer, type Step } from "./model_server.ts";

export type AgentName = "claude" | "codex";

/** Where tests/setup_agents.sh put each agent, or why it is unavailable (run once per test file). */
export function setupAgents(names: string[]): Map<string, { ok: boolean; bin?: string; why?: string }> {
  const out = new Map<string, { ok: boolean; bin?: string; why?: string }>();
  const r = new Deno.Command("bash", { args: [`${ROOT}/tests/setup_agents.sh`, ...names], stdout: "piped" })
    .outputSync();
  for (const line of new TextDecoder().decode(r.stdout).split("\n")) {
    const m = /^(\S+) (ok|unavailable) (.*)$/.exec(line);
    if (m) out.set(m[1], m[2] === "ok" ? { ok: true, bin: m[3] } : { ok: false, why: m[3] });
  }
  return out;
}

export interface SessionOptions {
  agent: AgentName;
  /** The agent's program (from setupAgents). */
  bin: string;
  script: Step[];
  /** hallpass options before `--` (the recipe `--agent NAME` is always given). */
  hpArgs?: string[];
  /** One key per expected question, in order (`o`, `t`, `a`, `d`, `n`). */
  answers?: string[];
  /** Runs before the session, with the scratch directory (`$DIR/home`, `$DIR/project`). */
  before?: (dir: string) => Promise<void>;
  budgetMs?: number;
  /** Called with the screen each time a bar is up (before it is answered). */
  onBar?: (screen: string) => void;
}

export interface Session {
  dir: string;
  home: string;
  project: string;
  /** The first line of each bar ("hallpass: … wants to write …"), in order. */
  questions: string[];
  /** hallpass's exit status. */
  rc: number;
  /** Scrollback and screen at the end. */
  text: string;
  srv: ModelServer;
  /** Log lines (--log) of decisions that denied. */
  denied: { op: string; target: string; by: string }[];
  /** Connects to anything other than the model server. */
  outside: string[];
  close(): Promise<void>;
}

const TASK = "Do the scripted task.";

/** The command line that runs the agent non-interactively on the task. */
function agentCommand(agent: AgentName): string {
  if (agent === "claude") return `claude -p ${q(TASK)} --allowedTools Bash,Write`;
  // hallpass is the sandbox: codex's own is turned off (it would stack a second Landlock/seccomp layer).
  return `codex exec --skip-git-repo-check --sandbox danger-full-access ${q(TASK)}`;
}

async function configure(agent: AgentName, dir: string, srv: ModelServer): Promise<string[]> {
  if (agent === "claude") {
    return [
      `ANTHROPIC_BASE_URL=${q(srv.url)}`,
      "ANTHROPIC_API_KEY=sk-scripted",
      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
      "DISABLE_AUTOUPDATER=1",
      "DISABLE_TELEMETRY=1",
      "DISABLE_ERROR_REPORTING=1",
    ];
  }
  await Deno.mkdir(`${dir}/home/.codex`, { recursive: true });
  await Deno.writeTextFile(
    `${dir}/home/.codex/config.toml`,
    [
      `model = "scripted"`,
      `model_provider = "scripted"`,
      `check_for_update_on_startup = false`,
      `[features]`,
      `plugins = false`,
      `[analytics]`,
      `enabled = false`,
      `[feedback]`,
      `enabled = false`,
      `[model_providers.scripted]`,
      `name = "scripted"`,
      `base_url = "${srv.url}/v1"`,
      `wire_api = "responses"`,
      "",
    ].join("\n"),
  );
  return ["OPENAI_API_KEY=sk-scripted", "CODEX_HOME=$HOME/.codex"];
}

export async function runSession(o: SessionOptions): Promise<Session> {
  const srv = startModelServer(o.script);
  const dir = await makeScratch();
  const home = `${dir}/home`;
  const project = `${dir}/project`;
  await o.before?.(dir);
  const env = await configure(o.agent, dir, srv);
  // Connects are mediated so that any reach for an outside host shows in the log; the model server is allowed.
  await Deno.writeTextFile(
    `${dir}/net.rules`,
    `allow connect tcp:127.0.0.1:${srv.port}\ndeny connect 0.0.0.0/0\ndeny connect [::]/0\n`,
  );
  const binDir = o.bin.slice(0, o.bin.lastIndexOf("/"));
  const script = [
    `PATH=${q(binDir)}:${q(ROOT)}:/usr/local/bin:/usr/bin:/bin; export PATH`,
    "unset TMUX TMUX_PANE TMPDIR",
    "TERM=xterm-256color; export TERM",
    ...env.map((e) => `export ${e}`),
    `hp --agent ${o.agent} --mediate write,exec,connect --rules "$DIR/net.rules" --log "$DIR/log.jsonl" ${
      (o.hpArgs ?? []).map(q).join(" ")
    } -- ${agentCommand(o.agent)}`,
  ].join("\n");
  const t = await Tmux.start({ script, dir, cols: 160, rows: 40 });
  const questions: string[] = [];
  const answers = [...(o.answers ?? [])];
  const end = Date.now() + (o.budgetMs ?? 90_000);
  let rc: number | undefined;
  const close = async () => {
    await t.close();
    await srv.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  try {
    while (rc === undefined) {
      const s = await t.screen();
      if (s.includes("[o] allow ")) {
        await Tmux.pastArmDelay();
        const shown = await t.screen();
        o.onBar?.(shown);
        const bar = Tmux.bar(shown);
        questions.push(bar.slice(0, 2).join(" "));
        await t.keys(answers.shift() ?? "d");
        await t.waitFor(
          (x) => Tmux.bar(x).join("\n") !== bar.join("\n") || !x.includes("[o] allow "),
          "the answer",
          5000,
        )
          .catch(() => {});
        continue;
      }
      const r = await Deno.readTextFile(`${dir}/pane.rc`).catch(() => "");
      if (r.trim()) rc = Number(r.trim());
      else if (Date.now() > end) throw new Error(`the session did not end in time; the screen:\n${s}`);
      else await sleep(100);
    }
  } catch (e) {
    await close();
    throw e;
  }
  const log = (await Deno.readTextFile(`${dir}/log.jsonl`).catch(() => "")).split("\n").filter(Boolean).map(
    (l) => JSON.parse(l) as { op: string; target: string; decision: string; by: string },
  );
  return {
    dir,
    home,
    project,
    questions,
    rc,
    text: await t.history(),
    srv,
    denied: log.filter((l) => l.decision === "deny"),
    outside: log.filter((l) =>
      l.op === "connect" && /^(tcp|udp):/.test(l.target) && !l.target.startsWith(`tcp:127.0.0.1:${srv.port}`)
    ).map((l) => JSON.stringify(l)), // the whole line: which process, which syscall, who decided
    close,
  };
}
