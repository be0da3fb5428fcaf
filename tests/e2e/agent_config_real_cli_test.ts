/**
 * The agents' own writers as the hostile program: `claude mcp add` (local and user scope) and `codex mcp add`,
 * the real CLIs (pinned in tests/setup_agents.sh), run under `hallpass --no-ask --agent NAME`, save an MCP server
 * the way the agent does (claude: ~/.claude.json through a temporary file, a rename and its lock; codex:
 * ~/.codex/config.toml). Judged from outside: the agent's own `mcp list`, run without hallpass afterwards,
 * shows no server (and, as a control, shows it when the same `mcp add` ran without hallpass), while the state
 * claude wrote in the session (its user id) stays. lib/sandbox/agent_config_check.ts.
 */
import { ok as assert } from "node:assert/strict";
import { bare, hallpass, scratchHome } from "./harness.ts";
import { type Need, test } from "../helpers/skip.ts";
import { setupAgents } from "../agents/session.ts";

const SETUP = setupAgents(["claude", "codex"]);
const SERVER = "/tmp/hallpass-agentcfg-server";

function needs(a: string): Need[] {
  const s = SETUP.get(a);
  return [s?.ok ? undefined : { reason: `agent ${a} unavailable: ${s?.why ?? "not set up"}` }];
}

const CASES = [
  { agent: "claude", add: ["mcp", "add", "evil", "--", SERVER], list: ["mcp", "list"] },
  { agent: "claude", add: ["mcp", "add", "-s", "user", "evil", "--", SERVER], list: ["mcp", "list"] },
  { agent: "codex", add: ["mcp", "add", "evil", "--", SERVER], list: ["mcp", "list"] },
];

for (const c of CASES) {
  test({
    name: `agent config: \`${c.agent} ${
      c.add.slice(0, -3).join(" ")
    }\` under hallpass leaves no server outside`,
    ignore: needs(c.agent),
    async fn() {
      const bin = SETUP.get(c.agent)!.bin!;
      const dir = bin.slice(0, bin.lastIndexOf("/"));
      const s = await scratchHome("hallpass-agentcfg-cli-");
      try {
        const env = (home: string) => ({ HOME: home, PATH: `${dir}:/usr/local/bin:/usr/bin:/bin` });
        // The project inside the home and the agent used once before outside, as measured by hand: in a fresh
        // home below the real one (scratchHome), claude under hallpass could not read its new ~/.claude.json
        // back ("a directory on the way to a protected location") and gave up before saving.
        const project = `${s.home}/p`;
        const ctlProject = `${s.outside}/ctl/p`;
        await Deno.mkdir(project);
        await Deno.mkdir(ctlProject, { recursive: true });
        for (const d of [".claude", ".codex"]) await Deno.mkdir(`${s.home}/${d}`, { recursive: true });
        const ctl = `${s.outside}/ctl`;
        for (const d of [".claude", ".codex"]) await Deno.mkdir(`${ctl}/${d}`, { recursive: true });

        // Control: without hallpass, the agent started later lists the server.
        const b = await bare([bin, ...c.add], { cwd: ctlProject, env: env(ctl), timeoutMs: 120_000 });
        assert(b.code === 0, `control: ${c.agent} mcp add failed: ${b.stdout}${b.stderr}`);
        const bl = await bare([bin, ...c.list], { cwd: ctlProject, env: env(ctl), timeoutMs: 120_000 });
        assert((bl.stdout + bl.stderr).includes(SERVER), `control: the server is not listed:\n${bl.stdout}`);

        // The agent used before, outside (its state files exist).
        await bare([bin, ...c.list], { cwd: project, env: env(s.home), timeoutMs: 120_000 });
        const r = await hallpass(["--no-ask", "--agent", c.agent, "--", bin, ...c.add], {
          cwd: project,
          env: env(s.home),
          timeoutMs: 120_000,
        });
        assert(r.code === 0, `${c.agent} mcp add failed under hallpass: ${r.stdout}${r.stderr}`);
        assert(
          r.stderr.includes(SERVER),
          `hallpass did not name the server it took out:\n${r.stdout}${r.stderr}`,
        );
        const l = await bare([bin, ...c.list], { cwd: project, env: env(s.home), timeoutMs: 120_000 });
        assert(
          !(l.stdout + l.stderr).includes(SERVER),
          `the agent outside still lists the server:\n${l.stdout}`,
        );
        if (c.agent === "claude") {
          const state = JSON.parse(await Deno.readTextFile(`${s.home}/.claude.json`));
          assert(state.userID, "claude's state written in the session was lost");
        }
      } finally {
        await s.cleanup();
      }
    },
  });
}
