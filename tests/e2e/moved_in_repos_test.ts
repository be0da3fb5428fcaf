/**
 * A repository prepared outside the project in one session — in a tree the sandbox may write (`--allow-path`, an
 * agent's directory), with a hook — and moved into the project in the next (docs/threat-model.md "Repositories
 * below the top"). Its files keep their old ctimes, so the exit check would read the hook as older than the
 * session and leave it; git run there outside would run it. hallpass refuses every such move of a directory
 * (EXDEV: `mv` copies instead, and the copy's hook is new) — renames the kernel makes (Landlock) and those the
 * supervisor performs, a whole repository, only its `.git`, only its `hooks`, RENAME_EXCHANGE — and a hook
 * linked in is new (a link sets its ctime). Judged by running git outside after the second session, with a bare
 * control that shows each move runs the hook without hallpass; on both engines (fast path and mediator, whose
 * answers are replayed against decide()).
 *
 * @module
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, compileHelper, exists, hallpass, scratch } from "./harness.ts";
import { engine } from "./engine.ts";
import { test, tool } from "../helpers/skip.ts";
import { GIT_ENV, gitAt } from "../helpers/git.ts";

/** Each move: where its repository ends up in the project (the name of its marker too). */
const MOVED = ["top", "src/sub", "made", "src/g2", "existing", "src/x", "topx", "src/linked"] as const;

/** Session 1, in the zone: a repository per move (a hooks directory for one), each hook leaving `out/M.NAME`. */
function prepare(zone: string, out: string): string {
  const hook = (dir: string, name: string) =>
    `printf '#!/bin/sh\\necho hook >> ${out}/M.${
      name.replace("/", "_")
    }\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`;
  const lines = ["set -e"];
  for (const name of MOVED) {
    const r = `${zone}/${name.replace("/", "_")}`;
    lines.push(`git init -q ${r}`, hook(`${r}/.git/hooks`, name));
  }
  lines.push(`mkdir ${zone}/hk`, hook(`${zone}/hk`, "existing"));
  return lines.join("\n");
}

/**
 * Session 2, in the project: the moves. `tw` prints one line per exchange (renameat2 RENAME_EXCHANGE); `mv`
 * falls back to copying when a rename says EXDEV.
 */
function moveIn(zone: string, tw: string): string {
  const z = (name: string) => `${zone}/${name.replace("/", "_")}`;
  return [
    "set -e",
    `mv ${z("top")} top`, // to the project's top: performed by the supervisor
    `mv ${z("src/sub")} src/sub`, // into a directory there at start: continued (Landlock)
    `mkdir made && mv ${z("made")}/.git made/.git`, // only .git, into a directory made at the top: performed
    `mkdir src/g2 && mv ${z("src/g2")}/.git src/g2/.git`, // only .git: continued
    `rm -rf existing/.git/hooks && mv ${zone}/hk existing/.git/hooks`, // only hooks, into a repository there
    // RENAME_EXCHANGE of an empty directory in the project with the repository outside: continued, performed.
    `mkdir src/x topx`,
    `${tw} renameat2 ${zone} src_x . src/x exchange \\; renameat2 ${zone} topx . topx exchange`,
    `[ -d src/x/.git ] || cp -a ${z("src/x")}/. src/x/`,
    `[ -d topx/.git ] || cp -a ${z("topx")}/. topx/`,
    // A hook linked in from the repository outside, into one made here.
    `git init -q src/linked && ln -f ${
      z("src/linked")
    }/.git/hooks/pre-commit src/linked/.git/hooks/pre-commit`,
  ].join("\n");
}

async function setUp(dir: string, home: string): Promise<void> {
  await Deno.mkdir(`${dir}/src`, { recursive: true });
  await gitAt(dir, home, "init", "-q");
  await Deno.mkdir(`${dir}/existing`);
  await gitAt(`${dir}/existing`, home, "init", "-q");
}

/** git run outside in each place a repository was moved to, the way a person would: the markers left. */
async function commitEverywhere(dir: string, home: string, out: string): Promise<string[]> {
  for (const name of MOVED) {
    const r = await gitAt(`${dir}/${name}`, home, "commit", "-q", "--allow-empty", "-m", "x");
    assertEquals(r.code, 0, `git commit in ${name}: ${r.out}`);
  }
  const found: string[] = [];
  for await (const e of Deno.readDir(out)) found.push(e.name);
  return found.sort();
}

/** Waits until a later second than the newest hook's ctime has begun (the check's "during the session"). */
async function pastHooks(zone: string): Promise<void> {
  const ctime = (await Deno.lstat(`${zone}/hk/pre-commit`)).ctime!.getTime();
  while (Date.now() < ctime + 2_100) await new Promise((r) => setTimeout(r, 100));
}

for (const fast of [true, false]) {
  test({
    name: `a repository prepared outside the project and moved in later runs nothing outside (${
      fast ? "fast path" : "mediator"
    })`,
    ignore: tool("git"),
    async fn() {
      const tw = await compileHelper("try_write");
      const s = await scratch();
      try {
        const env = { ...GIT_ENV, HOME: s.outside };
        // Control: the same two steps without hallpass; git run in each place runs the prepared hook.
        const ctl = `${s.outside}/ctl`, ctlZone = `${s.outside}/ctl-zone`, ctlOut = `${s.outside}/ctl-out`;
        await Deno.mkdir(ctlZone);
        await Deno.mkdir(ctlOut);
        await setUp(ctl, s.outside);
        const c1 = await bare(["/bin/sh", "-c", prepare(ctlZone, ctlOut)], { cwd: ctl, env });
        assertEquals(c1.code, 0, c1.stderr);
        const c2 = await bare(["/bin/sh", "-c", moveIn(ctlZone, tw)], { cwd: ctl, env });
        assertEquals(c2.code, 0, c2.stderr);
        assertEquals(c2.stdout.trim().split("\n"), ["renameat2 OK", "renameat2 OK"]);
        assertEquals(
          await commitEverywhere(ctl, s.outside, ctlOut),
          MOVED.map((n) => `M.${n.replace("/", "_")}`).sort(),
          "control: a prepared hook did not run bare",
        );

        const zone = `${s.outside}/zone`, out = `${s.outside}/out`;
        await Deno.mkdir(zone);
        await Deno.mkdir(out);
        await setUp(s.project, s.outside);
        const run = async (script: string) => {
          const e = await engine(fast, "moved in");
          const args = ["--no-ask", "-q", "--allow-path", zone, "--allow-exec", tw];
          const r = await hallpass([...args, "--", "/bin/sh", "-c", script], {
            cwd: s.project,
            env: { ...env, ...e.env },
          });
          await e.check();
          return r;
        };
        const r1 = await run(prepare(zone, out));
        assertEquals(r1.code, 0, r1.stderr);
        await pastHooks(zone);
        const r2 = await run(moveIn(zone, tw));
        assertEquals(r2.code, 0, r2.stderr);
        for (const name of MOVED) {
          assert(await exists(`${s.project}/${name}/.git/HEAD`), `${name}: the repository is not there`);
        }
        assertEquals(
          await commitEverywhere(s.project, s.outside, out),
          [],
          `a prepared hook ran: ${r2.stderr}`,
        );
        // No directory came in by a rename (each was copied, or linked: new files to the check).
        assertEquals(r2.stdout.trim().split("\n"), ["renameat2 EXDEV", "renameat2 EXDEV"]);
        assert(r2.stderr.includes("moved to"), `nothing was said: ${r2.stderr}`);
        // The person's repository there at start kept its ordinary config.
        assert(!r2.stderr.includes("existing/.git/config"), r2.stderr);
      } finally {
        await s.cleanup();
      }
    },
  });
}

for (const fast of [true, false]) {
  test({
    name: `a repository prepared in the project without HEAD and completed later runs nothing outside (${
      fast ? "fast path" : "mediator"
    })`,
    ignore: tool("git"),
    async fn() {
      const s = await scratch();
      try {
        const env = { ...GIT_ENV, HOME: s.outside };
        const hook = (dir: string, out: string) =>
          `printf '#!/bin/sh\\necho hook >> ${out}/M\\n' > ${dir}/pre-commit && chmod +x ${dir}/pre-commit`;
        // Session 1: a git directory with a hook but no HEAD (not a repository yet: the exit check sees none).
        const prepare = (out: string) =>
          `set -e; git init -q x; rm x/.git/HEAD; ${hook("x/.git/hooks", out)}`;
        // Session 2: HEAD, and it is one.
        const complete = "echo 'ref: refs/heads/master' > x/.git/HEAD";
        // Control: the same two steps without hallpass run the hook.
        const ctl = `${s.outside}/ctl`, ctlOut = `${s.outside}/ctl-out`;
        await Deno.mkdir(ctlOut);
        await Deno.mkdir(ctl);
        assertEquals((await bare(["/bin/sh", "-c", prepare(ctlOut)], { cwd: ctl, env })).code, 0);
        assertEquals((await bare(["/bin/sh", "-c", complete], { cwd: ctl, env })).code, 0);
        assertEquals(
          (await gitAt(`${ctl}/x`, s.outside, "commit", "-q", "--allow-empty", "-m", "x")).code,
          0,
        );
        assert(await exists(`${ctlOut}/M`), "control: the prepared hook did not run bare");

        const out = `${s.outside}/out`;
        await Deno.mkdir(out);
        await gitAt(s.project, s.outside, "init", "-q");
        const run = async (script: string) => {
          const e = await engine(fast, "completed");
          const r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", script], {
            cwd: s.project,
            env: { ...env, ...e.env },
          });
          await e.check();
          assertEquals(r.code, 0, r.stderr);
          return r;
        };
        await run(prepare(out));
        const ctime = (await Deno.lstat(`${s.project}/x/.git/hooks/pre-commit`)).ctime!.getTime();
        while (Date.now() < ctime + 2_100) await new Promise((r) => setTimeout(r, 100));
        const r2 = await run(complete);
        const c = await gitAt(`${s.project}/x`, s.outside, "commit", "-q", "--allow-empty", "-m", "x");
        assertEquals(c.code, 0, c.out);
        assert(!(await exists(`${out}/M`)), `git outside ran the hook prepared earlier: ${r2.stderr}`);
        assert(r2.stderr.includes("x/.git/hooks/pre-commit is a hook in a repository whose HEAD"), r2.stderr);
      } finally {
        await s.cleanup();
      }
    },
  });
}
