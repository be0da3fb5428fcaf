/**
 * Repositories below the project's top (docs/threat-model.md, "What is left behind to run outside"): one the
 * sandbox makes (`git init sub`, a bare-form directory, a `.git` file pointing at a git directory it made) or
 * one that was there at start. A hook or config written in them during the session must not run when git is
 * run there outside afterwards; ordinary git work in them keeps its config. Judged by running git outside
 * after hallpass exits, with a control that shows each plant runs without hallpass.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, exists, hallpass, HALLPASS_ARGV, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { GIT_ENV, gitAt as git } from "../helpers/git.ts";

/** Names of the plants; each leaves a marker `M.NAME` in `out` when git run outside runs the sandbox's code. */
const PLANTS = ["init-sub", "existing", "bare-form", "gitdir-file"] as const;

/** The attack, run in the project (or a control directory) with git and sh. */
function attack(out: string): string {
  const hook = (name: string) => `printf '#!/bin/sh\\necho hook >> ${out}/M.${name}\\n'`;
  const fsmon = (name: string) => `"echo fs >> ${out}/M.${name}; false"`;
  return [
    "set -e",
    // A repository made in a subdirectory: a hook and an fsmonitor command.
    "mkdir init-sub && git -C init-sub init -q",
    `${hook("init-sub")} > init-sub/.git/hooks/pre-commit && chmod +x init-sub/.git/hooks/pre-commit`,
    `git -C init-sub config core.fsmonitor ${fsmon("init-sub")}`,
    // A repository that was there at start.
    `${hook("existing")} > existing/.git/hooks/pre-commit && chmod +x existing/.git/hooks/pre-commit`,
    `git -C existing config core.fsmonitor ${fsmon("existing")}`,
    // A bare-form directory (HEAD, objects/, refs/, config): git takes it as a git directory.
    "mkdir -p bare-form/objects bare-form/refs && echo 'ref: refs/heads/main' > bare-form/HEAD",
    `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = ${
      fsmon("bare-form")
    }\\n' > bare-form/config`,
    // A `.git` file pointing at a git directory made elsewhere in the project.
    "mkdir store && git init -q --separate-git-dir=store/g gitdir-file",
    `${hook("gitdir-file")} > store/g/hooks/pre-commit && chmod +x store/g/hooks/pre-commit`,
    // Ordinary work: a repository made and configured the everyday way keeps its config.
    "git init -q plain && git -C plain remote add origin https://example.invalid/r.git",
    "git -C plain config user.email a@example.invalid && git -C plain config branch.main.remote origin",
  ].join("\n");
}

/** Runs git outside in each plant's directory the way a person would (status, then a commit). */
async function runGitOutside(dir: string, home: string): Promise<void> {
  for (const p of PLANTS) {
    await git(`${dir}/${p}`, home, "status");
    await git(`${dir}/${p}`, home, "commit", "-q", "--allow-empty", "-m", "x");
  }
}

async function setUp(dir: string, home: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await git(dir, home, "init", "-q");
  await Deno.mkdir(`${dir}/existing`);
  await git(`${dir}/existing`, home, "init", "-q");
}

for (const fast of ["1", "0"]) {
  test({
    name: `a repository below the project's top runs nothing of the sandbox's outside (fast path ${fast})`,
    ignore: tool("git"),
    async fn() {
      const s = await scratch();
      try {
        // Control: without hallpass every plant runs when git is run there.
        const ctl = `${s.outside}/control`;
        const ctlOut = `${s.outside}/ctl-markers`;
        await Deno.mkdir(ctlOut);
        await setUp(ctl, s.outside);
        const c = await bare(["/bin/sh", "-c", attack(ctlOut)], {
          cwd: ctl,
          env: { ...GIT_ENV, HOME: s.outside },
        });
        assertEquals(c.code, 0, `control script failed: ${c.stderr}`);
        await runGitOutside(ctl, s.outside);
        for (const p of PLANTS) assert(await exists(`${ctlOut}/M.${p}`), `control: ${p} did not run bare`);

        const out = `${s.outside}/markers`;
        await Deno.mkdir(out);
        await setUp(s.project, s.outside);
        const r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", attack(out)], {
          cwd: s.project,
          env: { ...GIT_ENV, HOME: s.outside, HALLPASS_FAST_PATH: fast },
        });
        assertEquals(r.code, 0, `the attack script failed in the sandbox: ${r.stderr}`);
        await runGitOutside(s.project, s.outside);
        for (const p of PLANTS) {
          assert(!(await exists(`${out}/M.${p}`)), `git outside ran the sandbox's ${p} plant: ${r.stderr}`);
        }
        assert(r.stderr.includes("moved to"), `nothing was said: ${r.stderr}`);
        // Nothing of the ordinary repository was moved aside.
        const cfg = await Deno.readTextFile(`${s.project}/plain/.git/config`);
        assert(cfg.includes("example.invalid/r.git"), cfg);
        assert(!r.stderr.includes("/plain/"), r.stderr);
      } finally {
        await s.cleanup();
      }
    },
  });
}

test({
  name: "a .git file the sandbox plants never makes hallpass move a file outside the project",
  ignore: tool("git"),
  async fn() {
    const s = await scratch();
    try {
      // A repository of the person's outside the project, whose hook the person writes during the session.
      const theirs = `${s.outside}/theirs.git`;
      await git(s.outside, s.outside, "init", "-q", "--bare", theirs);
      const script = [
        `printf 'gitdir: ${theirs}\\n' > ptr/.git`,
        "for i in $(seq 1800); do [ -e go ] && exit 0; sleep 0.05; done; exit 1",
      ].join("\n");
      await Deno.mkdir(`${s.project}/ptr`);
      const run = hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", script], {
        cwd: s.project,
        env: { ...GIT_ENV, HOME: s.outside },
        timeoutMs: 150_000,
      });
      // Until the sandbox has planted the pointer: up to 90 s (at load its start alone takes seconds).
      for (const end = Date.now() + 90_000; Date.now() < end && !(await exists(`${s.project}/ptr/.git`));) {
        await new Promise((r) => setTimeout(r, 50));
      }
      await Deno.writeTextFile(`${theirs}/hooks/pre-commit`, "#!/bin/sh\nexit 0\n");
      await Deno.writeTextFile(`${s.project}/go`, "");
      const r = await run;
      assertEquals(r.code, 0, r.stderr);
      assert(await exists(`${theirs}/hooks/pre-commit`), `hallpass moved the person's hook: ${r.stderr}`);
      assert(!(await exists(`${s.project}/ptr/.git`)), `the planted pointer stayed: ${r.stderr}`);
      assert(r.stderr.includes(`${s.project}/ptr/.git points git at`), r.stderr);
    } finally {
      await s.cleanup();
    }
  },
});

test({
  name:
    "a command that ignores SIGTERM does not keep the repository check from running when hallpass is ended",
  ignore: tool("git"),
  async fn() {
    const s = await scratch();
    try {
      const out = `${s.outside}/markers`;
      await Deno.mkdir(out);
      await setUp(s.project, s.outside);
      const script = [
        "trap '' TERM HUP INT",
        "mkdir init-sub && git -C init-sub init -q",
        `printf '#!/bin/sh\\necho hook >> ${out}/M\\n' > init-sub/.git/hooks/pre-commit`,
        "chmod +x init-sub/.git/hooks/pre-commit",
        "echo planted",
        "sleep 60",
      ].join("\n");
      const child = new Deno.Command(HALLPASS_ARGV[0], {
        args: [...HALLPASS_ARGV.slice(1), "--no-ask", "-q", "--", "/bin/sh", "-c", script],
        cwd: s.project,
        env: { ...GIT_ENV, HOME: s.outside },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const reader = child.stdout.getReader();
      let seen = "";
      while (!seen.includes("planted")) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      child.kill("SIGTERM");
      const [st, err] = await Promise.all([child.status, new Response(child.stderr).text()]);
      reader.releaseLock();
      await child.stdout.cancel().catch(() => {});
      assert(st.code !== 0 || st.signal !== null, "hallpass did not end");
      await git(`${s.project}/init-sub`, s.outside, "commit", "-q", "--allow-empty", "-m", "x");
      assert(!(await exists(`${out}/M`)), `git outside ran the sandbox's hook: ${err}`);
    } finally {
      await s.cleanup();
    }
  },
});

test({
  name:
    "a git directory prepared outside the project in an earlier session, pointed at in a later one, runs nothing",
  ignore: tool("git"),
  async fn() {
    const s = await scratch();
    try {
      // A tree outside the project the sandbox may write (--allow-path, or an agent's own directory).
      const zone = `${s.outside}/zone`, out = `${s.outside}/markers`;
      await Deno.mkdir(zone);
      await Deno.mkdir(out);
      await git(s.project, s.outside, "init", "-q");
      const run = (script: string) =>
        hallpass(["--no-ask", "-q", "--allow-path", zone, "--", "/bin/sh", "-c", script], {
          cwd: s.project,
          env: { ...GIT_ENV, HOME: s.outside },
        });
      // Session 1: a repository in the tree, with a hook; nothing of it is in the project.
      const r1 = await run(
        `git init -q ${zone}/prep && printf '#!/bin/sh\\necho hook >> ${out}/M\\n' > ${zone}/prep/.git/hooks/pre-commit` +
          ` && chmod +x ${zone}/prep/.git/hooks/pre-commit`,
      );
      assertEquals(r1.code, 0, r1.stderr);
      // Session 2 starts in a later second than the hook's ctime (the check's "during the session").
      const hookCtime = (await Deno.lstat(`${zone}/prep/.git/hooks/pre-commit`)).ctime!.getTime();
      while (Date.now() < hookCtime + 2_100) await new Promise((r) => setTimeout(r, 100));
      const r2 = await run(`mkdir sub && printf 'gitdir: ${zone}/prep/.git\\n' > sub/.git`);
      assertEquals(r2.code, 0, r2.stderr);
      // Control: a pointer made outside hallpass at the same git directory runs the hook.
      await Deno.mkdir(`${s.outside}/ctl`);
      await Deno.writeTextFile(`${s.outside}/ctl/.git`, `gitdir: ${zone}/prep/.git\n`);
      await git(`${s.outside}/ctl`, s.outside, "commit", "-q", "--allow-empty", "-m", "x");
      assert(await exists(`${out}/M`), "control: the prepared hook did not run bare");
      await Deno.remove(`${out}/M`);
      if (await exists(`${s.project}/sub/.git`)) {
        await git(`${s.project}/sub`, s.outside, "commit", "-q", "--allow-empty", "-m", "x");
      }
      assert(!(await exists(`${out}/M`)), `git outside ran the hook prepared earlier: ${r2.stderr}`);
      assert(r2.stderr.includes(`${s.project}/sub/.git points git at`), r2.stderr);
      assert(await exists(`${zone}/prep/.git/hooks/pre-commit`), "hallpass moved a file outside the project");
    } finally {
      await s.cleanup();
    }
  },
});
