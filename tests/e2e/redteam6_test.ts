/**
 * Red team (session 5, sixth round). Each attack judged from outside the sandbox after the session, with a bare
 * control showing it works without hallpass on this kernel.
 *
 * Copilot's unpacked runtime: the `copilot` binary unpacks its JavaScript to
 * `~/.cache/copilot/pkg/PLATFORM/VERSION/` at its first start and runs it from there at every later start;
 * `--agent copilot` lets the sandbox write `~/.cache/copilot/**`. A line the sandbox adds to index.js (or a `pkg`
 * it turns into a symlink to a doctored copy) ran at the person's next `copilot -p` outside hallpass (checked by
 * hand with copilot 1.0.102, not logged in: the runtime loads before the login check). The judge is the real
 * copilot (tests/setup_agents.sh) run outside afterwards; lib/sandbox/copilot_runtime.ts.
 */
import { equal, ok as assert } from "node:assert/strict";
import { bare, compileHelper, hallpass, hallpassLines, isRoot, scratch, scratchHome } from "./harness.ts";
import { setupAgents } from "../agents/session.ts";
import { type Need, probe, test, tool } from "../helpers/skip.ts";

const SETUP = setupAgents(["copilot"]);
const COPILOT = SETUP.get("copilot");
const NEEDS_COPILOT: Need = COPILOT?.ok
  ? undefined
  : { reason: `agent copilot unavailable: ${COPILOT?.why ?? "not set up"}` };

function q(s: string): string {
  return `'${s.replaceAll("'", "'\\''")}'`;
}

function copilotEnv(home: string): Record<string, string> {
  const bin = COPILOT!.bin!;
  return { HOME: home, PATH: `${bin.slice(0, bin.lastIndexOf("/"))}:/usr/local/bin:/usr/bin:/bin` };
}

/** Runs copilot outside, as the person would after the session (`-p` loads the unpacked runtime). */
async function runCopilot(home: string, args: string[]): Promise<void> {
  const c = new Deno.Command("copilot", {
    args,
    env: copilotEnv(home),
    clearEnv: true,
    cwd: home,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const timer = setTimeout(() => c.kill("SIGKILL"), 90_000);
  try {
    await c.status;
  } finally {
    clearTimeout(timer);
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** The version directories copilot unpacked (`pkg/PLATFORM/VERSION`), relative to the home. */
async function versionDirs(home: string): Promise<string[]> {
  const out: string[] = [];
  const pkg = `${home}/.cache/copilot/pkg`;
  for await (const p of Deno.readDir(pkg)) {
    for await (const v of Deno.readDir(`${pkg}/${p.name}`)) {
      out.push(`.cache/copilot/pkg/${p.name}/${v.name}`);
    }
  }
  return out;
}

/** Waits until the second after the newest ctime below `dir` has passed (a session then starts after it). */
async function afterNewest(dir: string): Promise<void> {
  let newest = 0;
  const walk = async (d: string) => {
    for await (const e of Deno.readDir(d)) {
      const st = await Deno.lstat(`${d}/${e.name}`);
      newest = Math.max(newest, st.ctime!.getTime());
      if (st.isDirectory) await walk(`${d}/${e.name}`);
    }
  };
  await walk(dir);
  while (Date.now() < newest + 2_100) await new Promise((r) => setTimeout(r, 100));
}

/** The doctoring, as a shell script run in $HOME: a line after index.js's `#!` that makes `mark`. */
function doctor(file: string, mark: string): string {
  const line = `import * as __hp from "node:fs"; __hp.writeFileSync(${JSON.stringify(mark)}, "ran");`;
  return `sed -i ${q(`1a ${line}`)} ${file}`;
}

const CASES = [
  {
    name: "index.js of the unpacked runtime rewritten",
    script: (ver: string, mark: string) => doctor(`${ver}/index.js`, mark),
  },
  {
    name: "pkg replaced by a symlink to a doctored copy",
    script: (ver: string, mark: string) =>
      [
        "cp -a .cache/copilot/pkg .cache/copilot/stash",
        doctor(ver.replace("/pkg/", "/stash/") + "/index.js", mark),
        "rm -rf .cache/copilot/pkg",
        "ln -s stash .cache/copilot/pkg",
      ].join(" && "),
  },
];

for (const c of CASES) {
  test({
    name: `redteam6: copilot's unpacked runtime: ${c.name} under --agent copilot runs nothing outside later`,
    ignore: NEEDS_COPILOT,
    async fn() {
      const s = await scratchHome("hallpass-rt6-copilot-");
      try {
        const mark = `${s.outside}/copilot-ran-sandbox-code`;
        const ctl = `${s.outside}/ctl`;
        await Deno.mkdir(ctl);
        // The person used copilot before: its runtime is unpacked in each home.
        for (const h of [ctl, s.home]) await runCopilot(h, ["--version"]);
        const [ver] = await versionDirs(s.home);
        assert(ver, "copilot unpacked nothing");

        // Control: without hallpass the doctored runtime runs at the next start.
        const b = await bare(["sh", "-c", `cd "$HOME" && ${c.script(ver, mark)}`], { env: copilotEnv(ctl) });
        equal(b.code, 0, b.stderr);
        await runCopilot(ctl, ["-p", "hi"]);
        assert(await exists(mark), "control: copilot did not run the doctored runtime");
        await Deno.remove(mark);

        // Session start strictly after the unpacking second (ctime says what the session changed).
        await afterNewest(`${s.home}/.cache/copilot`);
        const r = await hallpass(
          ["--no-ask", "--agent", "copilot", "--", "sh", "-c", `cd "$HOME" && ${c.script(ver, mark)}`],
          { cwd: s.project, env: copilotEnv(s.home) },
        );
        equal(r.code, 0, r.stderr);
        await runCopilot(s.home, ["-p", "hi"]);
        assert(!(await exists(mark)), `copilot outside ran what the sandbox wrote:\n${r.stderr}`);
        equal(
          hallpassLines(r).filter((l) => l.includes("copilot started without hallpass")).length,
          1,
          r.stderr,
        );
      } finally {
        await s.cleanup();
      }
    },
  });
}

test({
  name: "redteam6: copilot's own runtime, and copilot run under hallpass, are left alone",
  ignore: NEEDS_COPILOT,
  async fn() {
    const s = await scratchHome("hallpass-rt6-copilot-own-");
    try {
      await runCopilot(s.home, ["--version"]);
      const [ver] = await versionDirs(s.home);
      await afterNewest(`${s.home}/.cache/copilot`);
      // copilot itself under its recipe: it makes and removes inuse.PID.* files in the version directory.
      const r = await hallpass(
        ["--no-ask", "--agent", "copilot", "--", "copilot", "-p", "hi"],
        { cwd: s.project, env: copilotEnv(s.home) },
      );
      equal(hallpassLines(r).filter((l) => l.includes("copilot started without")).length, 0, r.stderr);
      assert(await exists(`${s.home}/${ver}/index.js`), "the runtime was moved");
      assert(!(await exists(`${s.home}/.cache/copilot/pkg.hallpass-quarantined`)), r.stderr);
    } finally {
      await s.cleanup();
    }
  },
});

/**
 * System V IPC belongs to the IPC namespace: a process outside makes a shared memory segment and a message
 * queue (mode 0600, its own uid); in the host's namespace the sandbox attached to the segment by its key or
 * straight by its id and wrote it, and sent into the queue. The launcher gives the sandbox a namespace of its
 * own, which needs CAP_SYS_ADMIN: as root only (another user: a known limit, docs/threat-model.md).
 * Judged outside: the segment's bytes and the queue's message count.
 */
const IPC_PROGRAM = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
what, key, shmid, msqid = sys.argv[1], int(sys.argv[2], 0), int(sys.argv[3]), int(sys.argv[4])
IPC_CREAT, IPC_NOWAIT, IPC_RMID, SHM_RDONLY = 0o1000, 0o4000, 0, 0o10000
class Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 8)]
def attach(sid, flags=0):
    p = libc.shmat(sid, None, flags)
    return None if p in (None, ctypes.c_void_p(-1).value) else p
if what == "make":
    sid = libc.shmget(key, 4096, IPC_CREAT | 0o600)
    ctypes.memmove(attach(sid), b"SAFE", 4)
    print(sid, libc.msgget(key, IPC_CREAT | 0o600))
elif what == "attack":
    done = []
    for name, sid in (("by key", libc.shmget(key, 0, 0)), ("by id", shmid)):
        p = attach(sid) if sid >= 0 else None
        if p:
            ctypes.memmove(p, b"PWND", 4)
            done.append("shm " + name)
    m = Msg(1, b"pwned")
    for name, qid in (("by key", libc.msgget(key, 0)), ("by id", msqid)):
        if qid >= 0 and libc.msgsnd(qid, ctypes.byref(m), 8, IPC_NOWAIT) == 0:
            done.append("msg " + name)
    print(",".join(done) or "none")
elif what == "judge":
    m = Msg()
    got = libc.msgrcv(msqid, ctypes.byref(m), 8, 0, IPC_NOWAIT)
    print(ctypes.string_at(attach(shmid, SHM_RDONLY), 4).decode(), "message" if got >= 0 else "no-message")
else:
    libc.shmctl(shmid, IPC_RMID, None)
    libc.msgctl(msqid, IPC_RMID, None)
`;

for (const fast of ["1", "0"]) {
  test({
    name:
      `redteam6: another process's System V shared memory and message queue are out of reach (root, fast path ${fast})`,
    ignore: [
      tool("python3"),
      isRoot() ? undefined : {
        reason:
          "a new IPC namespace needs CAP_SYS_ADMIN: as another user the sandbox shares the host's (a known limit)",
      },
    ],
    async fn() {
      const s = await scratch();
      const prog = `${s.outside}/ipc.py`;
      await Deno.writeTextFile(prog, IPC_PROGRAM);
      const key = `0x${(0x52540000 + Math.floor(Math.random() * 0xffff)).toString(16)}`;
      const py = async (what: string, ids: string[]) => {
        const r = await bare(["/usr/bin/python3", prog, what, key, ...ids]);
        equal(r.code, 0, r.stderr);
        return r.stdout.trim();
      };
      let ids = ["-1", "-1"];
      try {
        // Control: without hallpass the attack reaches both.
        ids = (await py("make", ids)).split(" ");
        equal(await py("attack", ids), "shm by key,shm by id,msg by key,msg by id");
        equal(await py("judge", ids), "PWND message");
        await py("remove", ids);

        ids = (await py("make", ["-1", "-1"])).split(" ");
        const r = await hallpass(["--no-ask", "--", "/usr/bin/python3", prog, "attack", key, ...ids], {
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
        });
        equal(r.code, 0, r.stderr);
        equal(r.stdout.trim(), "none", r.stderr);
        equal(await py("judge", ids), "SAFE no-message");
      } finally {
        if (ids[0] !== "-1") await py("remove", ids).catch(() => {});
        await s.cleanup();
      }
    },
  });
}

/**
 * The supervisor under a flood: 64 threads writing outside without pause, and children SIGKILLed at random
 * points while their calls wait for a decision (the notification's process gone mid-decision). Judged outside:
 * nothing made there, the session still decides (a write in the project done, one outside denied), hallpass
 * ends with the command's status. Control: bare, the same program fills the directory.
 */
for (const fast of ["1", "0"]) {
  test({
    name:
      `redteam6: a flood of denied writes and children killed mid-call leave nothing outside (fast path ${fast})`,
    async fn() {
      const prog = await compileHelper("notify_flood", ["-pthread"]);
      const s = await scratch();
      try {
        const ctl = `${s.outside}/ctl`;
        const ctlOut = `${s.outside}/ctl-out`;
        await Deno.mkdir(ctl);
        await Deno.mkdir(ctlOut);
        const b = await bare([prog, ctlOut, ctl, "1"]);
        equal(b.code, 0, b.stderr);
        assert(b.stdout.includes("outside-after CREATED"), b.stdout);

        const out = `${s.outside}/out`;
        await Deno.mkdir(out);
        const r = await hallpass(["--no-ask", "-q", "--", prog, out, s.project, "4"], {
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
        });
        equal(r.code, 0, r.stderr);
        assert(/outside-ok 0 denied [1-9]\d* project-after ok/.test(r.stdout), r.stdout);
        assert(r.stdout.includes("outside-after Permission denied"), r.stdout);
        const made: string[] = [];
        for await (const e of Deno.readDir(out)) made.push(e.name);
        equal(made.length, 0, `made outside: ${made.slice(0, 5).join(" ")}`);
      } finally {
        await s.cleanup();
      }
    },
  });
}

/**
 * Python's user site-packages: `site` runs the `import` lines of every `*.pth` there, and imports a
 * `usercustomize` module, at every python3 start (unless -s/-I). A project that is `$HOME` (or `--allow-path
 * ~/.local`, what `pip install --user` needs) lets the sandbox write them; `python3 -c pass` outside is the
 * judge. A `.pth` of the person's that the session did not touch stays.
 */
for (const how of ["project = $HOME", "--allow-path ~/.local"]) {
  test({
    name: `redteam6: python3's .pth and usercustomize in the user site (${how}) run nothing outside later`,
    ignore: probe("python3 with a user site", () => {
      const r = new Deno.Command("/usr/bin/python3", {
        args: ["-c", "import site; print(site.ENABLE_USER_SITE)"],
      }).outputSync();
      return new TextDecoder().decode(r.stdout).trim() === "True" ? undefined : "python3's user site is off";
    }),
    async fn() {
      const s = await scratchHome("hallpass-rt6-pth-");
      try {
        const ver = new TextDecoder().decode(
          new Deno.Command("/usr/bin/python3", {
            args: ["-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
          }).outputSync().stdout,
        ).trim();
        const site = (home: string) => `${home}/.local/lib/python${ver}/site-packages`;
        const mark = (what: string) => `${s.outside}/python-ran-${what}`;
        const script = (home: string) =>
          [
            `mkdir -p ${q(site(home))}`,
            `echo 'import os; open(${JSON.stringify(mark("pth"))}, "w")' > ${q(`${site(home)}/zz-evil.pth`)}`,
            `echo 'import os; open(${JSON.stringify(mark("mine"))}, "w")' >> ${q(`${site(home)}/mine.pth`)}`,
            `echo 'open(${JSON.stringify(mark("usercustomize"))}, "w")' > ${
              q(`${site(home)}/usercustomize.py`)
            }`,
          ].join(" && ");
        const ran = async () => {
          const got: string[] = [];
          for (const w of ["pth", "mine", "usercustomize"]) {
            if (await exists(mark(w))) got.push(w);
            await Deno.remove(mark(w)).catch(() => {});
          }
          return got.join(",");
        };
        const python = (home: string) =>
          bare(["/usr/bin/python3", "-c", "pass"], { env: { HOME: home, PATH: "/usr/bin:/bin" } });
        const prepare = async (home: string) => {
          await Deno.mkdir(site(home), { recursive: true });
          await Deno.writeTextFile(`${site(home)}/mine.pth`, "# the person's own\n");
          await Deno.writeTextFile(`${site(home)}/untouched.pth`, "# the person's own, left alone\n");
        };

        // Control: bare, every file runs at the next python3.
        const ctl = `${s.outside}/ctl`;
        await prepare(ctl);
        const b = await bare(["sh", "-c", script(ctl)]);
        equal(b.code, 0, b.stderr);
        await python(ctl);
        equal(await ran(), "pth,mine,usercustomize", "control");

        await prepare(s.home);
        await afterNewest(`${s.home}/.local`);
        const args = how === "project = $HOME"
          ? ["--no-ask", "--", "sh", "-c", script(s.home)]
          : ["--no-ask", "--allow-path", `${s.home}/.local`, "--", "sh", "-c", script(s.home)];
        const r = await hallpass(args, {
          cwd: how === "project = $HOME" ? s.home : s.project,
          env: { HOME: s.home, PATH: "/usr/bin:/bin" },
        });
        equal(r.code, 0, r.stderr);
        await python(s.home);
        equal(await ran(), "", `python3 outside ran what the sandbox wrote:\n${r.stderr}`);
        equal(hallpassLines(r).filter((l) => l.includes("every python3")).length, 3, r.stderr);
        assert(await exists(`${site(s.home)}/untouched.pth`), "a .pth the session did not touch was moved");
      } finally {
        await s.cleanup();
      }
    },
  });
}

/**
 * More files programs run at their start, with the project `$HOME`: gdb runs `~/.gdbinit`'s `shell` lines (the
 * judge here: `gdb -batch` outside), readline's `~/.inputrc` can bind Enter to a macro that types a command,
 * psql runs `~/.psqlrc`'s `\!`, sqlite3 `~/.sqliterc`'s `.system`, fish a `functions/NAME.fish` for the command
 * NAME, zsh with oh-my-zsh everything under `~/.oh-my-zsh`, a desktop's menu a `~/.local/share/applications`
 * entry named as a system one, `xdg-open` the handler `~/.config/mimeapps.list` names (no desktop here to judge
 * those two: judged by the write). Protected paths (lib/policy/startup_files.ts):
 * under --no-ask none is written. Control: bare, each is written and gdb runs its line.
 */
test({
  name:
    "redteam6: ~/.gdbinit, ~/.inputrc, ~/.psqlrc, ~/.sqliterc, fish functions, ~/.oh-my-zsh, desktop entries are protected",
  ignore: tool("gdb"),
  async fn() {
    const s = await scratchHome("hallpass-rt6-rc-");
    try {
      const mark = `${s.outside}/gdb-ran`;
      const files = [
        [".gdbinit", `shell touch ${mark}`],
        [".inputrc", String.raw`"\C-m": " ; touch /tmp/x\n"`],
        [".psqlrc", String.raw`\! touch /tmp/x`],
        [".sqliterc", ".system touch /tmp/x"],
        [".config/fish/functions/ls.fish", "function ls; touch /tmp/x; end"],
        [".oh-my-zsh/custom/x.zsh", "touch /tmp/x"],
        [".local/share/applications/firefox.desktop", "[Desktop Entry]\nExec=sh -c 'touch /tmp/x'"],
        [".config/mimeapps.list", "[Default Applications]\nx-scheme-handler/https=firefox.desktop"],
      ];
      const script = files.map(([f, line]) =>
        `mkdir -p "$(dirname ${q(f)})" 2>/dev/null; printf '%s\\n' ${q(line)} >> ${q(f)}`
      ).join("; ") + "; true";
      const written = async (home: string) => {
        const got: string[] = [];
        for (const [f] of files) {
          if (await exists(`${home}/${f}`)) {
            got.push(f);
          }
        }
        return got.join(" ");
      };
      const gdb = (home: string) =>
        bare(["gdb", "-batch", "-ex", "quit"], { env: { HOME: home, PATH: "/usr/bin:/bin" }, cwd: home });

      const ctl = `${s.outside}/ctl`;
      await Deno.mkdir(ctl);
      const b = await bare(["sh", "-c", `cd "$HOME" && ${script}`], {
        env: { HOME: ctl, PATH: "/usr/bin:/bin" },
      });
      equal(b.code, 0, b.stderr);
      equal(
        await written(ctl),
        files.map(([f]) =>
          f
        ).join(" "),
        "control",
      );
      await gdb(ctl);
      assert(await exists(mark), "control: gdb did not run ~/.gdbinit");
      await Deno.remove(mark);

      for (const fast of ["1", "0"]) {
        const r = await hallpass(["--no-ask", "--", "sh", "-c", `cd "$HOME" && ${script}`], {
          cwd: s.home,
          env: { HOME: s.home, PATH: "/usr/bin:/bin", HALLPASS_FAST_PATH: fast },
        });
        equal(r.code, 0, r.stderr);
        equal(await written(s.home), "", `fast path ${fast}: written:\n${r.stderr}`);
        await gdb(s.home);
        assert(!(await exists(mark)), "gdb outside ran the sandbox's line");
      }
    } finally {
      await s.cleanup();
    }
  },
});

/**
 * Claude Code's "local" install lives in `~/.claude/local` (the person's `claude` alias or `$PATH` runs
 * `~/.claude/local/claude`, which claude 2.1 still knows), inside the recipe's `~/.claude/**`: the sandbox
 * rewrote the program the person runs next, outside hallpass. The agent's own program (its `$PATH` entry,
 * where it leads, its package, `~/.claude/local` when there) is a protected path. Judged by running that
 * `claude` outside afterwards; the session's ordinary state writes in `~/.claude` still go through.
 */
test({
  name: "redteam6: claude's local install in ~/.claude/local is not rewritten under --agent claude",
  async fn() {
    const s = await scratchHome("hallpass-rt6-claudelocal-");
    try {
      const mark = `${s.outside}/claude-ran-sandbox-code`;
      const install = async (home: string) => {
        await Deno.mkdir(`${home}/.claude/local`, { recursive: true });
        await Deno.writeTextFile(`${home}/.claude/local/claude`, "#!/bin/sh\necho the real claude\n");
        await Deno.chmod(`${home}/.claude/local/claude`, 0o755);
      };
      const env = (home: string) => ({ HOME: home, PATH: `${home}/.claude/local:/usr/bin:/bin` });
      const script = [
        `printf 'touch %s\\n' ${q(mark)} >> "$HOME/.claude/local/claude"`,
        `mkdir -p "$HOME/.claude/todos" && echo x > "$HOME/.claude/todos/t.json"`,
      ].join("; ");
      const runClaude = (home: string) => bare([`${home}/.claude/local/claude`], { env: env(home) });

      const ctl = `${s.outside}/ctl`;
      await install(ctl);
      const b = await bare(["sh", "-c", script], { env: env(ctl) });
      equal(b.code, 0, b.stderr);
      await runClaude(ctl);
      assert(await exists(mark), "control: the rewritten claude did not run");
      await Deno.remove(mark);

      await install(s.home);
      for (const fast of ["1", "0"]) {
        const r = await hallpass(["--no-ask", "--agent", "claude", "--", "sh", "-c", script], {
          cwd: s.project,
          env: { ...env(s.home), HALLPASS_FAST_PATH: fast },
        });
        await runClaude(s.home);
        assert(
          !(await exists(mark)),
          `fast path ${fast}: claude outside ran the sandbox's line:\n${r.stderr}`,
        );
        assert(
          await exists(`${s.home}/.claude/todos/t.json`),
          `fast path ${fast}: claude's state: ${r.stderr}`,
        );
        await Deno.remove(`${s.home}/.claude/todos/t.json`);
      }
    } finally {
      await s.cleanup();
    }
  },
});

/** husky 9's `_/h` (what `husky` writes), which every hook in `.husky/_` sources: it runs `.husky/HOOK`. */
const HUSKY_H = `#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n
[ ! -f "$s" ] && exit 0
i="\${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"
[ "\${HUSKY-}" = "0" ] && exit 0
export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?
[ $c != 0 ] && echo "husky - $n script failed (code $c)"
exit $c
`;

/**
 * Git hook managers run project files as hooks: husky 9 sets `core.hooksPath = .husky/_` and its hooks run
 * `.husky/pre-commit`, a file in the working tree, not in the hooks directory. The sandbox appended a line to it
 * and the person's next `git commit` outside ran it. The judge is that commit, outside.
 */
test({
  name: "redteam6: husky's .husky/pre-commit is a hook: the sandbox cannot change what git commit runs",
  ignore: [tool("git"), tool("sh")],
  async fn() {
    const s = await scratch();
    try {
      const mark = `${s.outside}/husky-ran-sandbox-code`;
      const git = (dir: string, ...args: string[]) =>
        bare(["git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
          env: { HOME: s.outside, PATH: "/usr/bin:/bin" },
        });
      const setup = async (dir: string) => {
        equal((await git(dir, "init", "-q")).code, 0);
        await Deno.mkdir(`${dir}/.husky/_`, { recursive: true });
        await Deno.writeTextFile(`${dir}/.husky/_/h`, HUSKY_H);
        await Deno.writeTextFile(`${dir}/.husky/_/pre-commit`, '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n');
        await Deno.chmod(`${dir}/.husky/_/pre-commit`, 0o755);
        await Deno.writeTextFile(`${dir}/.husky/pre-commit`, "echo the person lint\n");
        equal((await git(dir, "config", "core.hooksPath", ".husky/_")).code, 0);
      };
      const script = `printf 'touch %s\\n' ${q(mark)} >> .husky/pre-commit`;

      const ctl = `${s.outside}/ctl`;
      await Deno.mkdir(ctl);
      await setup(ctl);
      equal((await bare(["sh", "-c", script], { cwd: ctl })).code, 0);
      const c = await git(ctl, "commit", "-q", "--allow-empty", "-m", "x");
      equal(c.code, 0, c.stderr);
      assert(await exists(mark), "control: git commit did not run .husky/pre-commit");
      await Deno.remove(mark);

      await setup(s.project);
      for (const fast of ["1", "0"]) {
        const r = await hallpass(["--no-ask", "--", "sh", "-c", script], {
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
        });
        const g = await git(s.project, "commit", "-q", "--allow-empty", "-m", "x");
        equal(g.code, 0, g.stderr);
        assert(
          !(await exists(mark)),
          `fast path ${fast}: git commit outside ran the sandbox's line:\n${r.stderr}`,
        );
      }
    } finally {
      await s.cleanup();
    }
  },
});

/**
 * A raw disk holds every file on it: root in the sandbox read a key file in `~/.ssh` (unreadable by its path)
 * through the loop device it was attached to — on a machine, `/dev/sda` or a decrypted `/dev/mapper/…` the
 * same. Block devices are read holes (lib/floor/raw_disks.ts). Root only (losetup; a user cannot open a
 * block device anyway). Control: bare, the device reads the key.
 */
test({
  name: "redteam6: a protected file cannot be read through the raw disk it is on (root, loop device)",
  ignore: [
    tool("losetup"),
    isRoot() ? undefined : { reason: "needs root (losetup; block devices are root's)" },
  ],
  async fn() {
    const s = await scratchHome("hallpass-rt6-disk-");
    let loop = "";
    try {
      const secret = "hallpass-rt6-KEY-MATERIAL";
      await Deno.mkdir(`${s.home}/.ssh`, { mode: 0o700 });
      const img = `${s.home}/.ssh/vault.img`;
      await Deno.writeFile(img, new Uint8Array(1 << 20));
      const f = await Deno.open(img, { write: true });
      await f.write(new TextEncoder().encode(secret));
      f.close();
      const l = await bare(["losetup", "-f", "--show", img]);
      equal(l.code, 0, l.stderr);
      loop = l.stdout.trim();
      const read = `head -c ${secret.length} ${q(img)}; echo; head -c ${secret.length} ${q(loop)}; echo`;
      const b = await bare(["sh", "-c", read]);
      assert(b.stdout.split(secret).length === 3, `control: ${b.stdout}${b.stderr}`);
      for (const fast of ["1", "0"]) {
        const r = await hallpass(["--no-ask", "-q", "--", "sh", "-c", read], {
          cwd: s.project,
          env: { HOME: s.home, HALLPASS_FAST_PATH: fast },
        });
        assert(
          !r.stdout.includes(secret),
          `fast path ${fast}: the sandbox read the key:\n${r.stdout}${r.stderr}`,
        );
        assert(r.stderr.includes(loop), `fast path ${fast}: the device read was not refused:\n${r.stderr}`);
      }
    } finally {
      if (loop) await bare(["losetup", "-d", loop]);
      await s.cleanup();
    }
  },
});

/**
 * A command shadowed in `$PATH`: `~/.local/bin` comes before `/usr/bin` (Ubuntu's profile), so an `ls` the
 * sandbox puts there is what the person's next `ls` runs, in any directory. With the project `$HOME`, or
 * `--allow-path ~/.local` (`pip install --user`), the sandbox could. Checked at exit
 * (lib/sandbox/path_shadows.ts): such a shadow made in the session is moved aside; a new name stays. Judged by
 * running `ls` outside with that `$PATH`.
 */
for (const how of ["project = $HOME", "--allow-path ~/.local"]) {
  test({
    name: `redteam6: a command shadowed in an earlier $PATH directory (${how}) does not run outside later`,
    ignore: tool("ls"),
    async fn() {
      const s = await scratchHome("hallpass-rt6-shadow-");
      try {
        const mark = `${s.outside}/shadow-ran`;
        const env = (home: string) => ({ HOME: home, PATH: `${home}/.local/bin:/usr/bin:/bin` });
        const script = [
          `printf '#!/bin/sh\\ntouch %s\\n' ${q(mark)} > "$HOME/.local/bin/ls"`,
          `chmod +x "$HOME/.local/bin/ls"`,
          `printf '#!/bin/sh\\necho mine\\n' > "$HOME/.local/bin/hallpass-rt6-newtool"`,
          `chmod +x "$HOME/.local/bin/hallpass-rt6-newtool"`,
        ].join(" && ");
        const ls = (home: string) => bare(["sh", "-c", "ls >/dev/null"], { env: env(home), cwd: home });

        const ctl = `${s.outside}/ctl`;
        await Deno.mkdir(`${ctl}/.local/bin`, { recursive: true });
        equal((await bare(["sh", "-c", script], { env: env(ctl) })).code, 0);
        await ls(ctl);
        assert(await exists(mark), "control: the shadowing ls did not run");
        await Deno.remove(mark);

        await Deno.mkdir(`${s.home}/.local/bin`, { recursive: true });
        await afterNewest(`${s.home}/.local`);
        const args = how === "project = $HOME"
          ? ["--no-ask", "--", "sh", "-c", script]
          : ["--no-ask", "--allow-path", `${s.home}/.local`, "--", "sh", "-c", script];
        const r = await hallpass(args, {
          cwd: how === "project = $HOME" ? s.home : s.project,
          env: env(s.home),
        });
        equal(r.code, 0, r.stderr);
        await ls(s.home);
        assert(!(await exists(mark)), `ls outside ran the sandbox's program:\n${r.stderr}`);
        assert(await exists(`${s.home}/.local/bin/hallpass-rt6-newtool`), "a new command name was moved");
        equal(hallpassLines(r).filter((l) => l.includes("further along $PATH")).length, 1, r.stderr);
      } finally {
        await s.cleanup();
      }
    },
  });
}
