/**
 * Attacks found by the red team that the area tests did not try (docs/threat-model.md, "How each promise is
 * tested"). Each is judged from outside the sandbox, with a control that shows the attack works without
 * hallpass on this machine. Runs as root and as hallpass-test (tests/run_all.sh).
 */
import { ok as assert } from "node:assert/strict";
import { bare, exists, hallpass, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const GIT_ENV = {
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
  PATH: "/usr/local/bin:/usr/bin:/bin",
};

async function git(cwd: string, ...args: string[]): Promise<number> {
  const r = await new Deno.Command("git", {
    args,
    cwd,
    env: { ...GIT_ENV, HOME: cwd },
    stdout: "null",
    stderr: "null",
  }).output();
  return r.code;
}

/**
 * The project's top made a repository of the sandbox's own: git looks for `.git` first, then at the
 * directory itself as a git directory (HEAD, objects/, refs/). With `.git` made unusable (its objects moved
 * away: nothing protected is touched) and HEAD, objects/, refs/ and a config at the top, git run outside
 * uses the planted config, whose `core.fsmonitor` command runs at `git status`.
 */
function bareTopScript(marker: string): string {
  return [
    "mv .git/objects .git/objects.away",
    "echo 'ref: refs/heads/main' > HEAD",
    "mkdir -p objects refs",
    `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n` +
    `\\tfsmonitor = "echo ran >> ${marker}; false"\\n' > config`,
    "true",
  ].join("; ");
}

for (const fast of ["1", "0"]) {
  test({
    name: `a repository planted at the project's top (bare form) runs nothing outside (fast path ${fast})`,
    ignore: tool("git"),
    async fn() {
      const s = await scratch();
      try {
        const marker = `${s.outside}/fsmonitor-ran`;
        const make = async (dir: string) => {
          await Deno.mkdir(dir, { recursive: true });
          await git(dir, "init", "-q");
          await Deno.writeTextFile(`${dir}/a.txt`, "a\n");
          await git(dir, "add", "-A");
          await git(dir, "commit", "-q", "-m", "one");
        };
        // Control: without hallpass the same script makes git status outside run the planted command.
        const ctl = `${s.outside}/control`;
        await make(ctl);
        await bare(["/bin/sh", "-c", bareTopScript(`${ctl}.marker`)], { cwd: ctl, env: GIT_ENV });
        await git(ctl, "status");
        assert(await exists(`${ctl}.marker`), "control: the planted fsmonitor did not run without hallpass");

        await make(s.project);
        const r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", bareTopScript(marker)], {
          cwd: s.project,
          env: { ...GIT_ENV, HOME: s.project, HALLPASS_FAST_PATH: fast },
        });
        await git(s.project, "status");
        await git(s.project, "log");
        assert(!(await exists(marker)), `git status outside ran the sandbox's command: ${r.stderr}`);
        assert(!(await exists(`${s.project}/HEAD`)), "HEAD was made at the project's top without a question");
      } finally {
        await s.cleanup();
      }
    },
  });
}
