/**
 * A person's first session with each real agent (pinned in tests/setup_agents.sh): a fresh home (no
 * ~/.claude.json, ~/.codex, ...) below the real one, so that it is carved (a directory on the way to the
 * protected ~/.ssh: what the sandbox makes directly there it cannot read back in that session). The agents'
 * non-interactive first commands (`--version`, `mcp add`, `mcp list`, claude's `-p` without a login) run under
 * `hallpass --agent NAME` with an ask program that records every question, and must end as they do without
 * hallpass in another fresh home: the same exit status, no question, no EACCES, and nothing of the agent's
 * named as "made during the run" (claude's `mcp add` failed: "~/.claude.json could not be read to confirm the
 * change (EACCES)"; lib/sandbox/agent_start_files.ts). A server `mcp add` saved is put back at exit
 * (lib/sandbox/agent_config_check.ts): `mcp list` afterwards is not compared, only its status.
 */
import { ok as assert } from "node:assert/strict";
import { askProgram, bare, hallpass, scratchHome } from "./harness.ts";
import { type Need, test } from "../helpers/skip.ts";
import { setupAgents } from "../agents/session.ts";

const SETUP = setupAgents(["claude", "codex", "gemini", "copilot"]);

function needs(a: string): Need[] {
  const s = SETUP.get(a);
  return [s?.ok ? undefined : { reason: `agent ${a} unavailable: ${s?.why ?? "not set up"}` }];
}

const FIRST: Record<string, string[][]> = {
  claude: [["--version"], ["mcp", "add", "first", "--", "/bin/true"], ["mcp", "list"], ["-p", "hi"]],
  codex: [["--version"], ["mcp", "add", "first", "--", "/bin/true"], ["mcp", "list"]],
  gemini: [["--version"], ["mcp", "add", "first", "/bin/true"], ["mcp", "list"]],
  copilot: [["--version"], ["mcp", "list"]],
};

for (const [agent, commands] of Object.entries(FIRST)) {
  test({
    name:
      `first day: ${agent}'s first commands in a fresh home end under hallpass --agent ${agent} as without it`,
    ignore: needs(agent),
    async fn() {
      const bin = SETUP.get(agent)!.bin!;
      const dir = bin.slice(0, bin.lastIndexOf("/"));
      const s = await scratchHome("hallpass-first-day-");
      try {
        const ctl = `${s.outside}/ctl`;
        const env = (home: string) => ({
          HOME: home,
          PATH: `${dir}:/usr/local/bin:/usr/bin:/bin`,
          NO_COLOR: "1",
          // no model service here: an agent that would reach one fails fast, the same way with and without
          DISABLE_AUTOUPDATER: "1",
        });
        await Deno.mkdir(ctl);
        const log = `${s.outside}/questions.jsonl`;
        const ask = await askProgram(s.outside, "deny", log);
        for (const args of commands) {
          const what = `${agent} ${args.join(" ")}`;
          const b = await bare([bin, ...args], { cwd: s.project, env: env(ctl), timeoutMs: 120_000 });
          const r = await hallpass(["--ask-program", ask, "--agent", agent, "--", bin, ...args], {
            cwd: s.project,
            env: env(s.home),
            timeoutMs: 120_000,
          });
          const out = r.stdout + r.stderr;
          assert(
            r.code === b.code,
            `${what}: exit ${r.code} under hallpass, ${b.code} without:\n${out}\n--- without:\n${b.stdout}${b.stderr}`,
          );
          // (hallpass's own hint after a failed command names EACCES: not the agent's words)
          const agents = out.split("\n").filter((l) => !l.startsWith("hallpass: reads of protected")).join(
            "\n",
          );
          assert(!/EACCES|permission denied/i.test(agents), `${what}: a refusal under hallpass:\n${out}`);
          // Only its home's entries ("~/…"): a concurrent test's directory made in the real home is listed too.
          assert(!/^ {2}~\//m.test(out), `${what}: a file it cannot read back:\n${out}`);
        }
        const asked = await Deno.readTextFile(log).catch(() => "");
        assert(asked === "", `${agent}'s first commands asked:\n${asked}`);
      } finally {
        await s.cleanup();
      }
    },
  });
}

test({
  name: "first day: claude's ~/.claude.json is made as {} only for --agent claude, and kept in place",
  ignore: needs("claude"),
  async fn() {
    const s = await scratchHome("hallpass-first-day-");
    try {
      const env = { HOME: s.home, PATH: "/usr/local/bin:/usr/bin:/bin" };
      const r0 = await hallpass(["--no-ask", "--agent", "codex", "--", "/bin/true"], { cwd: s.project, env });
      assert(r0.code === 0, r0.stderr);
      assert(
        !(await Deno.lstat(`${s.home}/.claude.json`).catch(() => null)),
        "~/.claude.json made for another agent",
      );
      // The sandbox itself saves it as claude does (a temporary file renamed over it): refused with EXDEV, then
      // written in place, and read back in the same session.
      const script = `printf '{"a":1}' > ~/.claude.json.tmp.1; ` +
        `perl -e 'rename(shift, shift) or exit 1' ~/.claude.json.tmp.1 ~/.claude.json; echo "rename=$?"; ` +
        `printf '{"b":2}' > ~/.claude.json; cat ~/.claude.json`;
      const r = await hallpass(["--no-ask", "--agent", "claude", "--", "sh", "-c", script], {
        cwd: s.project,
        env,
      });
      assert(
        /rename=[1-9]/.test(r.stdout),
        `the rename over ~/.claude.json went through:\n${r.stdout}${r.stderr}`,
      );
      assert(r.stdout.includes('{"b":2}'), `~/.claude.json not read back:\n${r.stdout}${r.stderr}`);
      const st = await Deno.lstat(`${s.home}/.claude.json`);
      assert(st.isFile && (st.mode! & 0o777) === 0o600, `mode ${(st.mode! & 0o777).toString(8)}`);
    } finally {
      await s.cleanup();
    }
  },
});
