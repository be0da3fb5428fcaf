/**
 * The agent recipes (lib/policy/agent_recipes.ts) as rules: notation expanded for this user, narrow patterns where a name is
 * random, exec rules left out where the sandbox could write (except an agent's own copies, said so), the shell's
 * history rules. The real CLIs are checked by tests/e2e/agents_test.ts and tests/e2e/agents_work_test.ts.
 */
import assert from "node:assert/strict";
import {
  agentRules,
  formatRecipes,
  recipeRules,
  RECIPES,
  shellHistoryRules,
} from "../lib/policy/agent_recipes.ts";
import { Policy } from "../lib/policy/policy.ts";
import { newGroupTable } from "../lib/policy/exec_groups.ts";
import type { Rule } from "../lib/types.ts";

const HOME = "/home/me";
const uid = String(Deno.uid());

function policy(rules: Rule[]): Policy {
  return new Policy(rules, { home: HOME, cwd: "/proj", lookup: () => null, groups: newGroupTable() });
}

Deno.test("claude: its atomic saves and its Bash tool's cwd file, no wider than their patterns", () => {
  const p = policy(agentRules("claude", { home: HOME, cwd: "/proj", pathEnv: "" }));
  const allow = (t: string) => p.decide("write", t, Date.now()).effect;
  assert.equal(allow(`${HOME}/.claude.json`), "allow");
  assert.equal(allow(`${HOME}/.claude.json.tmp.4242.8c4b9d0e1f2a`), "allow");
  assert.equal(allow(`${HOME}/.claude.json.lock`), "allow");
  assert.equal(allow("/tmp/claude-8c4b-cwd"), "allow");
  assert.equal(allow(`/tmp/claude-${uid}/x/y`), "allow");
  for (
    const t of [
      `${HOME}/.bashrc`,
      `${HOME}/.claude.jso`,
      "/tmp/claude-8c4b-cwd/x",
      "/tmp/x",
      "/tmp/claude-cwd",
    ]
  ) {
    assert.equal(allow(t), "ask", t);
  }
  assert.equal(allow(HOME), "ask");
});

Deno.test("{tmp} is /tmp and $TMPDIR when it is elsewhere", () => {
  const t = (tmpdir?: string) =>
    agentRules("claude", { home: HOME, cwd: "/proj", pathEnv: "", tmpdir }).map((r) => r.target).filter((x) =>
      x.endsWith("-cwd")
    );
  assert.deepEqual(t(), ["/tmp/claude-*-cwd"]);
  assert.deepEqual(t("/tmp/"), ["/tmp/claude-*-cwd"]);
  assert.deepEqual(t("/var/tmp/me"), ["/tmp/claude-*-cwd", "/var/tmp/me/claude-*-cwd"]);
  assert.deepEqual(t("relative"), ["/tmp/claude-*-cwd"]);
  assert.deepEqual(t("/odd/*"), ["/tmp/claude-*-cwd"]);
});

Deno.test("exec rules: the package when found; never where the sandbox writes, except the agent's own copies", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const pkg = `${dir}/lib/node_modules/@openai/codex`;
    Deno.mkdirSync(`${pkg}/bin`, { recursive: true });
    Deno.mkdirSync(`${dir}/lib/node_modules/@openai/codex-linux-x64`, { recursive: true });
    Deno.mkdirSync(`${dir}/bin`);
    Deno.writeTextFileSync(`${pkg}/bin/codex.js`, "");
    Deno.symlinkSync(`${pkg}/bin/codex.js`, `${dir}/bin/codex`);
    const rules = recipeRules("codex", { home: HOME, cwd: "/proj", pathEnv: `${dir}/bin` });
    const exec = rules.filter((r) => r.rule.op === "exec").map((r) => r.rule.target);
    assert.deepEqual(exec, [
      `${pkg}/**`,
      `${dir}/lib/node_modules/@openai/codex-linux-x64/**`,
      `${HOME}/.codex/packages/app-server-daemon/releases/**`,
    ]);
    const own = rules.find((r) => r.rule.target.includes("releases"))!;
    assert.match(own.why, /runs without a question/);
    // The package inside the project: the sandbox could change it, so no rule.
    const inProject = agentRules("codex", { home: HOME, cwd: dir, pathEnv: `${dir}/bin` });
    assert.ok(!inProject.some((r) => r.op === "exec" && r.target.startsWith(dir)));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("every recipe rule parses and says why; --agents lists them all", () => {
  for (const r of RECIPES) {
    for (const x of [...r.write, ...r.exec, ...(r.ownCopies ?? [])]) assert.ok(x.why.length > 5, x.scope);
    policy(agentRules(r.name, { home: HOME, cwd: "/proj", pathEnv: "" }));
  }
  const text = formatRecipes({ home: HOME, cwd: "/proj", pathEnv: "" }).join("\n");
  assert.match(text, /allow write \/home\/me\/\.claude\.json\*\n\s+its main state file/);
  assert.match(text, /allow write \/tmp\/claude-\*-cwd\n\s+its Bash tool's shell/);
  assert.match(text, /hooks, MCP servers, helpers\) are put back at\nexit/);
  assert.throws(() => agentRules("nope", { home: HOME, cwd: "/" }), /unknown agent/);
});

Deno.test("the shell's history: bash via its temp file, zsh, fish; $HISTFILE only when it is a history file in $HOME", () => {
  const t = (shell: string, histfile?: string) =>
    shellHistoryRules(shell, { home: HOME, histfile }).map((r) => r.target);
  assert.deepEqual(t("/usr/bin/bash"), [`${HOME}/.bash_history`, `${HOME}/.bash_history-*.tmp`]);
  assert.deepEqual(t("/bin/zsh"), [
    `${HOME}/.zsh_history`,
    `${HOME}/.zsh_history.new`,
    `${HOME}/.zsh_history.LOCK`,
  ]);
  assert.deepEqual(t("/usr/bin/fish"), [
    `${HOME}/.local/share/fish/fish_history`,
    `${HOME}/.local/share/fish/fish_history.*`,
  ]);
  assert.deepEqual(t("/bin/sh"), []);
  assert.deepEqual(t("/bin/bash", `${HOME}/.state/bash_history`), [
    `${HOME}/.state/bash_history`,
    `${HOME}/.state/bash_history-*.tmp`,
  ]);
  assert.deepEqual(t("/bin/bash", `${HOME}/.bashrc`), [
    `${HOME}/.bash_history`,
    `${HOME}/.bash_history-*.tmp`,
  ]);
  assert.deepEqual(t("/bin/bash", "/etc/history"), [`${HOME}/.bash_history`, `${HOME}/.bash_history-*.tmp`]);
  const p = policy(shellHistoryRules("/bin/bash", { home: HOME }));
  assert.equal(p.decide("write", `${HOME}/.bash_history-01234.tmp`, Date.now()).effect, "allow");
  assert.equal(p.decide("write", `${HOME}/.bash_profile`, Date.now()).effect, "ask");
});
