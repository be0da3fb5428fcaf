/**
 * Attacks found by the red team that the area tests did not try (docs/threat-model.md, "How each promise is
 * tested"). Each is judged from outside the sandbox, with a control that shows the attack works without
 * hallpass on this machine. Runs as root and as hallpass-test (tests/run_all.sh).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, compileHelper, exists, hallpass, ROOT, scratch } from "./harness.ts";
import { probeAsync, test, tool } from "../helpers/skip.ts";
import { git, GIT_ENV } from "../helpers/git.ts";

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

/**
 * file_setattr(2) (Linux 6.17) changes a file's flags by path: the new form of FS_IOC_FSSETXATTR, newer than
 * the filter's list of write calls. It went through on an outside file (judged by file_getattr outside).
 */
const setattrNeed = probeAsync("file_setattr", async () => {
  const s = await scratch();
  try {
    const bin = await compileHelper("redteam");
    const f = `${s.outside}/probe`;
    await Deno.writeTextFile(f, "x\n");
    const r = await bare([bin, "setattr", f]);
    if (r.stdout.trim() !== "ok") return `file_setattr does not work here (${r.stdout.trim()})`;
    return undefined;
  } finally {
    await s.cleanup();
  }
});

for (const fast of ["1", "0"]) {
  test({
    name: `file_setattr on a file outside changes nothing (fast path ${fast})`,
    ignore: await setattrNeed,
    async fn() {
      const s = await scratch();
      try {
        const bin = await compileHelper("redteam");
        const f = `${s.outside}/f`;
        await Deno.writeTextFile(f, "x\n");
        const before = (await bare([bin, "getattr", f])).stdout.trim();
        const r = await hallpass(["--no-ask", "-q", "--allow-exec", bin, "--", bin, "setattr", f], {
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
        });
        const after = (await bare([bin, "getattr", f])).stdout.trim();
        assertEquals(after, before, `the flags changed from outside's view: ${r.stdout} ${r.stderr}`);
        assert(r.stdout.includes("setattr: "), `the call did not fail in the sandbox: ${r.stdout}`);
      } finally {
        await s.cleanup();
      }
    },
  });
}

/**
 * A process outside the sandbox changed through its /proc files: with `--allow-path /proc/PID/**` (what the
 * exit summary used to suggest for a denied `/proc/PID/mem`), the sandbox set an outside process's
 * oom_score_adj. Judged by reading it outside.
 */
test({
  name: "an outside process's /proc files are not writable, whatever the rules say",
  async fn() {
    const s = await scratch();
    const victim = new Deno.Command("sleep", { args: ["60"], stdout: "null", stderr: "null" }).spawn();
    try {
      const adj = `/proc/${victim.pid}/oom_score_adj`;
      // Control: without hallpass the same user can raise it.
      const c = await bare(["/bin/sh", "-c", `echo 7 > ${adj}`]);
      assertEquals((await Deno.readTextFile(adj)).trim(), "7", `control: ${c.stderr}`);
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--allow-path",
        `/proc/${victim.pid}/**`,
        "--",
        "/bin/sh",
        "-c",
        `echo 999 > ${adj}`,
      ], { cwd: s.project });
      assertEquals((await Deno.readTextFile(adj)).trim(), "7", `outside process changed: ${r.stderr}`);
      assert(r.stderr.includes("Permission denied"), `the write did not fail with EACCES: ${r.stderr}`);
    } finally {
      victim.kill("SIGKILL");
      await victim.status;
      await s.cleanup();
    }
  },
});

/**
 * A write answer lifted a read protection: the supervisor performs an allowed rename or link without Landlock,
 * so `ln ~/.ssh/id_ed25519 k` (or `mv ~/.ssh proj/ssh2`) answered "once" gave the key a readable name in the
 * project. Only `--allow-read` lifts a protection. The home is made below the real $HOME (protections below
 * /tmp are not kept); judged by what the sandbox printed and by the key still at its place outside.
 */
test({
  name: "a write answer never carries a credential out of its read protection (link, rename, exchange)",
  async fn() {
    const s = await scratch();
    const base = await Deno.makeTempDir({ dir: Deno.env.get("HOME") ?? "/tmp", prefix: "hallpass-redteam-" });
    try {
      const home = `${base}/home`;
      await Deno.mkdir(`${home}/.ssh`, { recursive: true });
      const key = `${home}/.ssh/id_ed25519`;
      await Deno.writeTextFile(key, "SECRET-KEY\n");
      const ask = `${s.outside}/ask.sh`;
      await Deno.writeTextFile(ask, "#!/bin/sh\ncat >/dev/null\necho once\n");
      await Deno.chmod(ask, 0o755);
      const exchange = `import ctypes; l = ctypes.CDLL(None, use_errno=True); ` +
        `l.renameat2(-100, b'${home}/.ssh', -100, b'${s.project}/x', 2)`;
      await Deno.mkdir(`${s.project}/x`);
      const script = [
        `ln ${key} k1; cat k1`,
        `mv ${home}/.ssh ${s.project}/ssh2; cat ssh2/id_ed25519`,
        `/usr/bin/python3 -c "${exchange}"; cat x/id_ed25519`,
        // Control inside: an ordinary rename in the project, answered the same way, goes through.
        `echo plain > a; mv a b && cat b`,
      ].join("; ");
      const r = await hallpass(["--ask-program", ask, "-q", "--", "/bin/sh", "-c", script], {
        cwd: s.project,
        env: { HOME: home, PATH: Deno.env.get("PATH")! },
      });
      assert(!r.stdout.includes("SECRET-KEY"), `the key was read in the sandbox: ${r.stdout}`);
      assert(r.stdout.includes("plain"), `the ordinary rename did not go through: ${r.stdout} ${r.stderr}`);
      assertEquals(await Deno.readTextFile(key), "SECRET-KEY\n", "the key left its place");
    } finally {
      await s.cleanup();
      await Deno.remove(base, { recursive: true });
    }
  },
});

/**
 * A performed open lifted a read protection: an open that also reads (O_RDWR, O_RDONLY|O_CREAT,
 * O_RDWR|O_APPEND) is trapped as a write, and when the supervisor performs it — a file directly in the project's
 * top (a carved directory), or outside the floor after an answer to the *write* question — it handed the
 * sandbox a readable fd without Landlock's read check. Under --no-ask with `--protect` of a file at the
 * project's top (no answer at all), and with an ask program answering "once" for a key in ~/.ssh. Judged by
 * what the sandbox printed; control: the plain O_RDONLY open is refused (the protection is in force).
 */
for (const fast of ["1", "0"]) {
  test({
    name: `a write open never reads a read-protected file (O_RDWR, O_RDONLY|O_CREAT; fast path ${fast})`,
    async fn() {
      const s = await scratch();
      const base = await Deno.makeTempDir({
        dir: Deno.env.get("HOME") ?? "/tmp",
        prefix: "hallpass-redteam-",
      });
      try {
        const home = `${base}/home`, project = `${base}/project`;
        await Deno.mkdir(`${home}/.ssh`, { recursive: true });
        await Deno.mkdir(project);
        const key = `${home}/.ssh/id_ed25519`, env = `${project}/secrets.env`;
        await Deno.writeTextFile(key, "SECRET-KEY\n");
        await Deno.writeTextFile(env, "SECRET-ENV\n");
        const ask = `${s.outside}/ask.sh`;
        await Deno.writeTextFile(ask, "#!/bin/sh\ncat >/dev/null\necho once\n");
        await Deno.chmod(ask, 0o755);
        const py = (path: string) =>
          "import os\n" +
          `for name, fl in [("ro", os.O_RDONLY), ("rw", os.O_RDWR), ("ro-creat", os.O_RDONLY | os.O_CREAT),\n` +
          `                 ("rw-append", os.O_RDWR | os.O_APPEND)]:\n` +
          "    try:\n" +
          `        fd = os.open("${path}", fl); print(name, os.pread(fd, 40, 0))\n` +
          "    except OSError as e: print(name, 'refused', e.errno)\n";
        const runs = [
          ["--no-ask", "--protect", env, "--", "/usr/bin/python3", "-c", py(env)],
          ["--ask-program", ask, "--", "/usr/bin/python3", "-c", py(key)],
        ];
        for (const args of runs) {
          const r = await hallpass(["-q", ...args], {
            cwd: project,
            env: { HOME: home, PATH: Deno.env.get("PATH")!, HALLPASS_FAST_PATH: fast },
          });
          assert(r.stdout.includes("ro refused 13"), `control: the protection is not in force: ${r.stdout}`);
          assert(!r.stdout.includes("SECRET"), `a protected file was read through a write open: ${r.stdout}`);
        }
        assertEquals(await Deno.readTextFile(env), "SECRET-ENV\n");
        assertEquals(await Deno.readTextFile(key), "SECRET-KEY\n");
      } finally {
        await s.cleanup();
        await Deno.remove(base, { recursive: true });
      }
    },
  });
}

/**
 * hallpass's own lines carried names the sandbox chose raw to the person's terminal (after the pty, outside the
 * output filter): a file made in $HOME under a name a builtin glob allows without a question (less's history,
 * `~/.lesshs*`), or a repository directory in the project, named `X ESC ] 52 ; c ; … BEL`, set the clipboard
 * from the notice, the exit summary and the repository check. Judged on hallpass's stderr bytes; control: the
 * files were made (the names reached those lines).
 */
test({
  name: "names the sandbox chooses never reach the terminal raw in hallpass's own lines",
  ignore: tool("git"),
  async fn() {
    const base = await Deno.makeTempDir({ dir: Deno.env.get("HOME") ?? "/tmp", prefix: "hallpass-redteam-" });
    try {
      const home = `${base}/home`, project = `${base}/project`;
      await Deno.mkdir(`${home}/.ssh`, { recursive: true });
      await Deno.mkdir(project);
      const osc = "\x1b]52;c;UFdORUQ=\x07";
      const py = "import os, subprocess\n" +
        `open(os.environ['HOME'] + '/.lesshsX${osc}', 'w').write('x')\n` +
        `d = 'r${osc}'\nsubprocess.run(['git', 'init', '-q', d])\n` +
        "open(d + '/.git/hooks/pre-commit', 'w').write('x')\n";
      const r = await hallpass(["--no-ask", "--", "/usr/bin/python3", "-c", py], {
        cwd: project,
        env: { HOME: home, PATH: Deno.env.get("PATH")! },
      });
      assert(
        await exists(`${home}/.lesshsX\x1b]52;c;UFdORUQ=\x07`),
        `control: the file was not made: ${r.stderr}`,
      );
      assert(r.stderr.includes("lesshsX") && r.stderr.includes("pre-commit"), r.stderr);
      assert(
        // deno-lint-ignore no-control-regex
        !/[\x07\x1b\x9b\x9d]/.test(r.stderr),
        `a raw control in hallpass's lines: ${JSON.stringify(r.stderr)}`,
      );
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  },
});

/**
 * ~/.ssh as a link into /tmp: a protection below a directory everyone creates files in is not kept (carving
 * /tmp would make every new temporary file unreadable), and the key was read without a word at start (only
 * `hallpass rules` said it). The limit stays; the start now names it. Judged on the key read (the limit, as
 * control) and hallpass's stderr.
 */
test({
  name: "a protection a link moves below /tmp is named at start, not dropped silently",
  async fn() {
    const base = await Deno.makeTempDir({ dir: Deno.env.get("HOME") ?? "/tmp", prefix: "hallpass-redteam-" });
    const keys = await Deno.makeTempDir({ dir: "/tmp", prefix: "hallpass-redteam-keys-" });
    try {
      const home = `${base}/home`, project = `${base}/project`;
      await Deno.mkdir(home);
      await Deno.mkdir(project);
      await Deno.writeTextFile(`${keys}/id_ed25519`, "SECRET-KEY\n");
      await Deno.symlink(keys, `${home}/.ssh`);
      const r = await hallpass(["--no-ask", "--", "cat", `${home}/.ssh/id_ed25519`], {
        cwd: project,
        env: { HOME: home, PATH: Deno.env.get("PATH")! },
      });
      assert(
        r.stdout.includes("SECRET-KEY"),
        `control: the key below /tmp is protected after all: ${r.stderr}`,
      );
      assert(r.stderr.includes(`NOT protected this session`) && r.stderr.includes(keys), r.stderr);
    } finally {
      await Deno.remove(base, { recursive: true });
      await Deno.remove(keys, { recursive: true });
    }
  },
});

/**
 * The record of what the sandbox did, rewritten by it: with `--log` in the project, the sandbox truncated the
 * log and appended a forged line. Judged from the log's contents outside afterwards.
 */
for (const fast of ["1", "0"]) {
  test({
    name: `a --log file in the project cannot be rewritten by the sandbox (fast path ${fast})`,
    async fn() {
      const s = await scratch();
      try {
        const log = `${s.project}/hallpass.log`;
        const script = [
          `echo x > ${s.outside}/denied`, // something to log
          `: > ${log}`,
          `printf '{"f\\157rged":true}\\n' >> ${log}`, // the word is not in the command line the log shows
          `mv ${log} ${s.project}/gone.log`,
          `rm -f ${log}`,
          "true",
        ].join("; ");
        const r = await hallpass(["--no-ask", "-q", "--log", log, "--", "/bin/sh", "-c", script], {
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
        });
        const text = await Deno.readTextFile(log);
        assert(!text.includes("forged"), `a forged line in the log: ${text}`);
        assert(
          text.includes(`${s.outside}/denied`),
          `the denial is no longer in the log: ${text} ${r.stderr}`,
        );
      } finally {
        await s.cleanup();
      }
    },
  });
}

/**
 * An `--ask-program` in the project, rewritten by the sandbox, answered the sandbox's own questions: it wrote
 * outside. Judged by the file outside and the ask program's contents afterwards.
 */
for (const how of ["rewrite", "rename over"]) {
  test({
    name: `an --ask-program in the project cannot be replaced by the sandbox (${how})`,
    async fn() {
      const s = await scratch();
      try {
        const ask = `${s.project}/ask.sh`;
        const original = "#!/bin/sh\ncat >/dev/null\necho deny\n";
        await Deno.writeTextFile(ask, original);
        await Deno.chmod(ask, 0o755);
        const evil = `printf '#!/bin/sh\\ncat >/dev/null\\necho always\\n'`;
        const replace = how === "rewrite"
          ? `${evil} > ${ask}`
          : `${evil} > e.sh; chmod +x e.sh; mv e.sh ${ask}`;
        const r = await hallpass(
          ["--ask-program", "./ask.sh", "-q", "--", "/bin/sh", "-c", `${replace}; echo x > ${s.outside}/f`],
          { cwd: s.project },
        );
        assertEquals(await Deno.readTextFile(ask), original, `the ask program was replaced: ${r.stderr}`);
        assert(!(await exists(`${s.outside}/f`)), `the write outside went through: ${r.stderr}`);
      } finally {
        await s.cleanup();
      }
    },
  });
}

/**
 * The checkout hallpass runs from, inside the project (an agent working on a tree that holds hallpass's own
 * build): the sandbox could rewrite build/hallpass-launcher, which the next session runs before any sandbox
 * exists. Judged by a probe file in build/ after the run (removed afterwards).
 */
test({
  name: "hallpass's own checkout is not writable from a session whose project holds it",
  async fn() {
    const probe = `${ROOT}/build/redteam-probe-${crypto.randomUUID()}`;
    try {
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--project",
        ROOT,
        "--",
        "/bin/sh",
        "-c",
        `echo x > ${probe}`,
      ], {
        cwd: ROOT,
      });
      assert(!(await exists(probe)), `the sandbox wrote into hallpass's own build/: ${r.stderr}`);
    } finally {
      await Deno.remove(probe).catch(() => {});
    }
  },
});

/**
 * Terminals outside /dev/pts: a virtual console (what is typed there), its screen memory (/dev/vcs*: what it
 * shows), the console, serial terminals. Root opens them all, read-only opens are never trapped. Judged by the
 * open in the sandbox against a bare control that opens the same nodes.
 */
const CONSOLES = ["/dev/tty1", "/dev/vcs1", "/dev/vcsa1", "/dev/console", "/dev/ttyS0", "/dev/tty0"];
const openScript = `import os, sys
for p in sys.argv[1:]:
    try:
        os.close(os.open(p, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)); print(p, "OPENED")
    except OSError as e:
        print(p, e.errno)`;
const consolesNeed = probeAsync("consoles", async () => {
  if (!(await exists("/usr/bin/python3"))) return "/usr/bin/python3 is not installed";
  const r = await bare(["/usr/bin/python3", "-c", openScript, ...CONSOLES]);
  return r.stdout.includes("OPENED") ? undefined : "no console or virtual terminal this user can open here";
});

test({
  name: "consoles, virtual terminals and their screens are not readable from the sandbox",
  ignore: await consolesNeed,
  async fn() {
    const s = await scratch();
    try {
      const ctl = (await bare(["/usr/bin/python3", "-c", openScript, ...CONSOLES])).stdout;
      const opened = ctl.split("\n").filter((l) => l.endsWith("OPENED")).map((l) => l.split(" ")[0]);
      const r = await hallpass(["--no-ask", "-q", "--", "/usr/bin/python3", "-c", openScript, ...opened], {
        cwd: s.project,
      });
      assert(!r.stdout.includes("OPENED"), `opened in the sandbox: ${r.stdout}`);
      assertEquals(
        r.stdout.trim().split("\n").length,
        opened.length,
        `not every node was tried: ${r.stdout}`,
      );
    } finally {
      await s.cleanup();
    }
  },
});
