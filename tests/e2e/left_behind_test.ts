/**
 * Nothing left behind that runs outside the sandbox (docs/threat-model.md, "What is left behind to run
 * outside"): git's hooks and configuration, hallpass's own project rules, setuid/setgid programs, file
 * capabilities and device nodes. Each attack is judged from outside: by running git *outside* the sandbox
 * afterwards and looking for the marker a planted hook would leave, by the files' contents and modes. Each
 * has a control without hallpass that shows the attack works on this machine. Runs as root and as
 * hallpass-test (tests/run_all.sh).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, bare, exists, hallpass, isRoot, readQuestions, scratch } from "./harness.ts";
import { engineRunner } from "./engine.ts";
import { git, GIT_ENV } from "../helpers/git.ts";

/** A project that is a git repository with one commit. */
async function repo(): Promise<{ project: string; outside: string; cleanup: () => Promise<void> }> {
  const s = await scratch();
  await git(s.project, "init", "-q");
  await Deno.mkdir(`${s.project}/src`);
  await Deno.writeTextFile(`${s.project}/src/a.txt`, "a\n");
  await git(s.project, "add", "-A");
  await git(s.project, "commit", "-q", "-m", "one");
  return s;
}

/** Runs a shell script in the sandbox (no asking), with the git identity and a safe PATH. */
function sandboxSh(project: string, script: string, extra: string[] = []): ReturnType<typeof hallpass> {
  return hallpass(["--no-ask", "-q", ...extra, "--", "/bin/sh", "-c", script], {
    cwd: project,
    env: { ...GIT_ENV, HOME: project },
  });
}

/** git commit outside the sandbox; true when a hook the sandbox planted ran (its marker exists). */
async function hookRanOutside(project: string, marker: string): Promise<boolean> {
  await Deno.writeTextFile(`${project}/src/b.txt`, `${Math.random()}\n`);
  await git(project, "add", "-A");
  await git(project, "commit", "-q", "-m", "outside");
  await git(project, "status");
  return await exists(marker);
}

// Each attack plants a command that creates MARKER when git runs it outside.
const ATTACKS: { name: string; script: string }[] = [
  {
    name: "write a hook",
    script: `printf '#!/bin/sh\\ntouch MARKER\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
  },
  {
    name: "cp a hook in",
    script: `printf '#!/bin/sh\\ntouch MARKER\\n' > src/h; chmod +x src/h; cp src/h .git/hooks/pre-commit`,
  },
  {
    name: "rename a hook in",
    script: `printf '#!/bin/sh\\ntouch MARKER\\n' > src/h; chmod +x src/h; mv src/h .git/hooks/pre-commit`,
  },
  {
    name: "hard link a hook in",
    script: `printf '#!/bin/sh\\ntouch MARKER\\n' > src/h; chmod +x src/h; ln src/h .git/hooks/pre-commit`,
  },
  {
    name: "through a symlinked directory",
    script:
      `ln -s ../.git/hooks src/hk; printf '#!/bin/sh\\ntouch MARKER\\n' > src/hk/pre-commit; chmod +x src/hk/pre-commit`,
  },
  {
    name: "hooks directory renamed away and replaced",
    script:
      `mv .git/hooks .git/old; mkdir .git/hooks && printf '#!/bin/sh\\ntouch MARKER\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
  },
  { name: "git config core.fsmonitor", script: `git config core.fsmonitor 'touch MARKER; false'` },
  {
    name: "git config core.hooksPath",
    script:
      `mkdir -p src/hooks && printf '#!/bin/sh\\ntouch MARKER\\n' > src/hooks/pre-commit && chmod +x src/hooks/pre-commit; git config core.hooksPath src/hooks`,
  },
  {
    name: "git config alias and pager through a rewritten config",
    script:
      `cp .git/config src/c; printf '[core]\\n\\tpager = touch MARKER\\n\\tfsmonitor = touch MARKER\\n' >> src/c; mv src/c .git/config`,
  },
  {
    name: "info/attributes with a filter",
    script:
      `mkdir -p .git/info; echo '* filter=x' > .git/info/attributes; git config filter.x.clean 'touch MARKER; cat'`,
  },
  {
    name: ".git replaced by a .git file",
    script:
      `mkdir -p src/g/hooks; cp -r .git/objects .git/refs .git/HEAD src/g/; printf '#!/bin/sh\\ntouch MARKER\\n' > src/g/hooks/pre-commit; chmod +x src/g/hooks/pre-commit; mv .git src/real; echo "gitdir: src/g" > .git`,
  },
];

for (const a of ATTACKS) {
  Deno.test(`left behind: ${a.name} — denied, and git outside runs nothing of the sandbox's`, async () => {
    // Control: without hallpass, the same script makes git run the planted command outside.
    const c = await repo();
    try {
      const marker = `${c.outside}/marker`;
      await bare(["/bin/sh", "-c", a.script.replaceAll("MARKER", marker)], {
        cwd: c.project,
        env: { ...GIT_ENV, HOME: c.project },
      });
      assert(await hookRanOutside(c.project, marker), `control: the attack does not work here (${a.name})`);
    } finally {
      await c.cleanup();
    }
    const s = await repo();
    try {
      const marker = `${s.outside}/marker`;
      const config = await Deno.readTextFile(`${s.project}/.git/config`);
      const r = await sandboxSh(s.project, a.script.replaceAll("MARKER", marker));
      assert(r.stderr.includes("hallpass: denied write"), `nothing was denied: ${r.stderr}`);
      assertEquals(await Deno.readTextFile(`${s.project}/.git/config`), config, "the config changed");
      assert(
        !(await hookRanOutside(s.project, marker)),
        `git outside ran the sandbox's command: ${r.stderr}`,
      );
    } finally {
      await s.cleanup();
    }
  });
}

Deno.test("left behind: ordinary work in a repository goes on without a question (git add, commit, branch, gc)", async () => {
  const s = await repo();
  try {
    const r = await sandboxSh(
      s.project,
      `set -e; mkdir -p build src/x; echo b > build/o; echo c > src/x/c; echo d > top.txt; git add -A; git commit -q -m two; git branch feature; git checkout -q feature; git gc -q; rm -rf build; mkdir build; echo e > build/o; echo ok`,
    );
    assertEquals(r.code, 0, r.stderr);
    assert(r.stdout.includes("ok"), r.stdout + r.stderr);
    assertEquals(r.stderr, "", "something was denied");
    assertEquals((await git(s.project, "log", "--oneline")).out.trim().split("\n").length, 2);
    assertEquals(await Deno.readTextFile(`${s.project}/build/o`), "e\n");
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: a file at the project's top replaced outside during the session stays writable", async () => {
  const s = await repo();
  try {
    await Deno.writeTextFile(`${s.project}/README`, "0\n");
    const run = sandboxSh(
      s.project,
      `echo a >> README; mkdir newdir; while [ ! -e ${s.outside}/flag ]; do sleep 0.05; done; echo b >> README && echo c > newdir/f && echo ok`,
    );
    const end = Date.now() + 20_000;
    while (!(await Deno.readTextFile(`${s.project}/README`)).includes("a") && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
    }
    // The person's editor saves README: a new file renamed over the old one (a new inode).
    await Deno.writeTextFile(`${s.project}/README.tmp`, "edited\n");
    await Deno.rename(`${s.project}/README.tmp`, `${s.project}/README`);
    await Deno.writeTextFile(`${s.outside}/flag`, "");
    const r = await run;
    assertEquals(r.code, 0, r.stderr);
    assert(r.stdout.includes("ok"), r.stdout + r.stderr);
    assertEquals(await Deno.readTextFile(`${s.project}/README`), "edited\nb\n");
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: the question names why (git runs this outside the sandbox) and offers the protected scope", async () => {
  const s = await repo();
  try {
    const ask = await askProgram(s.outside, "deny");
    const r = await hallpass([
      "--ask-program",
      ask,
      "-q",
      "--",
      "/bin/sh",
      "-c",
      "echo x > .git/hooks/post-checkout",
    ], {
      cwd: s.project,
      env: { ...GIT_ENV, HOME: s.project },
    });
    assert(r.code !== 0);
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals(qs.length, 1, JSON.stringify(qs));
    assertEquals(qs[0].warning, "git runs this outside the sandbox");
    assertEquals((qs[0].scopes as string[])[0], `${s.project}/.git/hooks/**`);
    assert(!(await exists(`${s.project}/.git/hooks/post-checkout`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: a rule naming the protected path allows it on purpose", async () => {
  const s = await repo();
  try {
    const r = await sandboxSh(s.project, "echo '#!/bin/sh' > .git/hooks/pre-push", [
      "--allow-path",
      `${s.project}/.git/hooks`,
    ]);
    assertEquals(r.code, 0, r.stderr);
    assert(await exists(`${s.project}/.git/hooks/pre-push`));
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: renames and links of .git, .git/hooks, .git/config at either end", async () => {
  const cases = [
    "mv .git src/g",
    "mv .git/hooks src/h",
    "mv .git/config src/c",
    "ln .git/config src/c",
    "echo '[core]' > src/c; mv src/c .git/config",
    "echo '[core]' > src/c; ln -f src/c .git/config",
    "mkdir src/h; mv -T src/h .git/hooks",
    "ln -sfn /tmp .git/hooks",
    'python3 -c \'import ctypes,os; l=ctypes.CDLL(None); os.mkdir("src/x"); print(l.renameat2(-100, b"src/x", -100, b".git/hooks", 2))\'',
  ];
  const s = await repo();
  try {
    const before = [...Deno.readDirSync(`${s.project}/.git/hooks`)].map((e) => e.name).sort();
    const config = await Deno.readTextFile(`${s.project}/.git/config`);
    for (const c of cases) {
      const r = await sandboxSh(s.project, c);
      assert(r.stderr.includes("hallpass: denied write"), `${c}: not denied: ${r.stderr}`);
      assert(Deno.lstatSync(`${s.project}/.git`).isDirectory, `${c}: .git moved`);
      assert(Deno.lstatSync(`${s.project}/.git/hooks`).isDirectory, `${c}: hooks moved`);
      assertEquals([...Deno.readDirSync(`${s.project}/.git/hooks`)].map((e) => e.name).sort(), before, c);
      assertEquals(await Deno.readTextFile(`${s.project}/.git/config`), config, c);
      assertEquals(Deno.statSync(`${s.project}/.git/config`).nlink, 1, `${c}: config got a second name`);
    }
  } finally {
    await s.cleanup();
  }
});

/**
 * The core of the race-safety: the fast path continues creates in project directories, and Landlock stands
 * behind each CONTINUE. A thread swaps a project directory for a symlink to .git/hooks for seconds while
 * others create hook files through it: nothing may land in .git/hooks (a hole in the Landlock floor), with
 * and without the fast path. Control: without hallpass, files land there.
 */
const HOOK_RACE = `
import os, sys, threading, time
proj = sys.argv[1]
d = os.path.join(proj, "src", "d")
hooks = os.path.join(proj, ".git", "hooks")
os.mkdir(d)
stop = False
started = threading.Event()
def swap():
    i = 0
    started.set()
    while not stop:
        i += 1
        try:
            os.rename(d, os.path.join(proj, "src", "old%d" % i))
            os.symlink(hooks, d)
            time.sleep(0.0005)
            os.unlink(d)
            os.mkdir(d)
        except OSError:
            pass
threading.Thread(target=swap, daemon=True).start()
n = {"ok": 0, "err": 0}
def create(k):
    # 3 s once the swapper runs, and on (up to 60 s) until a create went through: at load it may not run.
    started.wait()
    end = time.time() + 3
    hard = end + 57
    j = 0
    while time.time() < end or (n["ok"] == 0 and time.time() < hard):
        j += 1
        for name in ("pre-commit", "post-checkout", "f%d_%d" % (k, j)):
            try:
                fd = os.open(os.path.join(d, name), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o755)
                os.write(fd, b"#!/bin/sh\\ntouch " + sys.argv[2].encode() + b"\\n")
                os.close(fd); n["ok"] += 1
            except OSError:
                n["err"] += 1
ts = [threading.Thread(target=create, args=(k,)) for k in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
stop = True
print("ok=%d err=%d" % (n["ok"], n["err"]))
`;

Deno.test("left behind: a thread swapping a project directory for a symlink to .git/hooks for seconds", async () => {
  const c = await repo();
  try {
    // It is a race: 3 s tries until it has landed, up to 60 s (at load one try may never swap at the right time).
    const planted = () =>
      [...Deno.readDirSync(`${c.project}/.git/hooks`)].filter((e) => !e.name.endsWith(".sample"));
    for (const end = Date.now() + 60_000; planted().length === 0 && Date.now() < end;) {
      await Deno.remove(`${c.project}/src/d`, { recursive: true }).catch(() => {});
      await bare(["/usr/bin/python3", "-c", HOOK_RACE, c.project, `${c.outside}/m`], { cwd: c.project });
    }
    assert(planted().length > 0, "control: the race never reached .git/hooks without hallpass");
  } finally {
    await c.cleanup();
  }
  for (const fast of ["1", "0"]) {
    const s = await repo();
    try {
      const before = [...Deno.readDirSync(`${s.project}/.git/hooks`)].map((e) => e.name).sort();
      const r = await engineRunner(fast === "1", "left behind")([
        "--no-ask",
        "-q",
        "--",
        "/usr/bin/python3",
        "-c",
        HOOK_RACE,
        s.project,
        `${s.outside}/m`,
      ], {
        cwd: s.project,
        timeoutMs: 120_000,
      });
      assertEquals(r.code, 0, r.stderr);
      const m = /ok=(\d+) err=(\d+)/.exec(r.stdout);
      assert(m && Number(m[1]) + Number(m[2]) > 0, `fast=${fast}: ${r.stdout}`);
      // With the fast path, creates through the real directory are continued (the path under attack); without
      // it the mediator keeps a directory's canonical path for a while, and under load may deny them all.
      if (fast === "1") assert(Number(m[1]) > 0, `no create went through at all: ${r.stdout}`);
      const after = [...Deno.readDirSync(`${s.project}/.git/hooks`)].map((e) => e.name).sort();
      assertEquals(after, before, `fast=${fast}: files landed in .git/hooks`);
      assert(!(await hookRanOutside(s.project, `${s.outside}/m`)), `fast=${fast}: a hook ran outside`);
    } finally {
      await s.cleanup();
    }
  }
});

Deno.test("left behind: a linked worktree — its .git file, the main repository's hooks and its worktree config", async () => {
  const s = await repo();
  try {
    const wt = `${s.outside}/wt`;
    assertEquals((await git(s.project, "worktree", "add", "-q", wt)).code, 0);
    // The worktree is the project; the main repository is allowed as a path (so only protection stops it).
    const cases = [
      `printf '#!/bin/sh\\ntouch ${s.outside}/m\\n' > ${s.project}/.git/hooks/pre-commit; chmod +x ${s.project}/.git/hooks/pre-commit`,
      `echo "gitdir: ${s.outside}/evil" > .git`,
      `git config --worktree core.fsmonitor 'touch ${s.outside}/m' || git config core.fsmonitor 'touch ${s.outside}/m'`,
    ];
    const dotgit = await Deno.readTextFile(`${wt}/.git`);
    for (const c of cases) {
      const r = await sandboxSh(wt, c, ["--allow-path", `${s.project}`]);
      assert(r.stderr.includes("hallpass: denied write"), `${c}: not denied: ${r.stderr}`);
      assertEquals(await Deno.readTextFile(`${wt}/.git`), dotgit, c);
    }
    await Deno.writeTextFile(`${wt}/w.txt`, "w\n");
    await git(wt, "add", "-A");
    await git(wt, "commit", "-q", "-m", "wt");
    assert(!(await exists(`${s.outside}/m`)), "a hook ran outside");
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: a submodule — its hooks and config under .git/modules, its .git file", async () => {
  const s = await repo();
  try {
    const sub = `${s.outside}/subsrc`;
    await Deno.mkdir(sub);
    await git(sub, "init", "-q");
    await Deno.writeTextFile(`${sub}/s.txt`, "s\n");
    await git(sub, "add", "-A");
    await git(sub, "commit", "-q", "-m", "s");
    const add = await git(
      s.project,
      "-c",
      "protocol.file.allow=always",
      "submodule",
      "add",
      "-q",
      sub,
      "sub",
    );
    assertEquals(add.code, 0, add.out);
    const modules = `${s.project}/.git/modules/sub`;
    const dotgit = await Deno.readTextFile(`${s.project}/sub/.git`);
    const cases = [
      `printf '#!/bin/sh\\ntouch ${s.outside}/m\\n' > .git/modules/sub/hooks/pre-commit; chmod +x .git/modules/sub/hooks/pre-commit`,
      `cd sub && git config core.fsmonitor 'touch ${s.outside}/m'`,
      `echo "gitdir: ../src" > sub/.git`,
    ];
    const config = await Deno.readTextFile(`${modules}/config`);
    for (const c of cases) {
      const r = await sandboxSh(s.project, c);
      assert(r.stderr.includes("hallpass: denied write"), `${c}: not denied: ${r.stderr}`);
    }
    assertEquals(await Deno.readTextFile(`${modules}/config`), config);
    assertEquals(await Deno.readTextFile(`${s.project}/sub/.git`), dotgit);
    await Deno.writeTextFile(`${s.project}/sub/t.txt`, "t\n");
    await git(`${s.project}/sub`, "add", "-A");
    await git(`${s.project}/sub`, "commit", "-q", "-m", "t");
    assert(!(await exists(`${s.outside}/m`)), "a hook ran outside");
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: core.hooksPath inside the project is protected like .git/hooks", async () => {
  const s = await repo();
  try {
    await Deno.mkdir(`${s.project}/.githooks`);
    await git(s.project, "config", "core.hooksPath", ".githooks");
    const r = await sandboxSh(
      s.project,
      `printf '#!/bin/sh\\ntouch ${s.outside}/m\\n' > .githooks/pre-commit; chmod +x .githooks/pre-commit`,
    );
    assert(r.stderr.includes("hallpass: denied write"), r.stderr);
    assert(!(await hookRanOutside(s.project, `${s.outside}/m`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: a file the repository's config includes is protected like the config", async () => {
  // Control: without hallpass, the included file's fsmonitor runs at the next git status outside.
  const c = await repo();
  try {
    await git(c.project, "config", "include.path", "../shared.gitconfig");
    await Deno.writeTextFile(
      `${c.project}/shared.gitconfig`,
      `[core]\n\tfsmonitor = touch ${c.outside}/m; false\n`,
    );
    assert(
      await hookRanOutside(c.project, `${c.outside}/m`),
      "control: git does not run an included fsmonitor",
    );
  } finally {
    await c.cleanup();
  }
  const s = await repo();
  try {
    await Deno.writeTextFile(`${s.project}/shared.gitconfig`, "[user]\n\tname = t\n");
    await git(s.project, "config", "include.path", "../shared.gitconfig");
    const before = await Deno.readTextFile(`${s.project}/shared.gitconfig`);
    const r = await sandboxSh(
      s.project,
      `printf '[core]\\n\\tfsmonitor = touch ${s.outside}/m; false\\n' >> shared.gitconfig`,
    );
    assert(r.stderr.includes("hallpass: denied write"), r.stderr);
    assertEquals(await Deno.readTextFile(`${s.project}/shared.gitconfig`), before);
    assert(!(await hookRanOutside(s.project, `${s.outside}/m`)));
  } finally {
    await s.cleanup();
  }
});

// ---- hallpass's own project rules (issue: the project's rules are not the sandbox's to change)

Deno.test("left behind: the project's .hallpass/rules cannot be rewritten, renamed away or replaced", async () => {
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.project}/.hallpass`);
    await Deno.mkdir(`${s.project}/secret`);
    const rules = `deny write ${s.project}/secret/**\n`;
    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, rules);
    const cases = [
      "echo z > .hallpass/rules",
      "echo '# nothing' > r; mv r .hallpass/rules",
      "mv .hallpass h2; mkdir .hallpass; echo '# nothing' > .hallpass/rules",
      "mv .hallpass/rules r",
      "ln .hallpass/rules r2",
      "rm -rf .hallpass",
      "ln -sfn /tmp .hallpass",
      "mkdir h3 && echo x > h3/rules && python3 -c \"import os; os.rename('h3', '.hallpass')\"",
    ];
    for (const c of cases) {
      const r = await sandboxSh(s.project, c);
      assert(r.stderr.includes("hallpass: denied write"), `${c}: not denied: ${r.stderr}`);
      assertEquals(await Deno.readTextFile(`${s.project}/.hallpass/rules`), rules, c);
      assert(Deno.lstatSync(`${s.project}/.hallpass`).isDirectory, c);
    }
    // The deny still holds in the next session.
    const r = await sandboxSh(s.project, "echo x > secret/f");
    assert(r.stderr.includes("hallpass: denied write"), r.stderr);
    assert(!(await exists(`${s.project}/secret/f`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: a notice at start when the project rules changed since hallpass last ran there", async () => {
  const s = await scratch();
  try {
    const env = { HOME: s.outside, XDG_CONFIG_HOME: `${s.outside}/config` };
    const run = () => hallpass(["--no-ask", "--", "/bin/true"], { cwd: s.project, env });
    assertEquals((await run()).stderr, "", "first run: nothing to compare with");
    await Deno.mkdir(`${s.project}/.hallpass`);
    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, "deny write ./x\n");
    const r1 = await run();
    assert(
      r1.stderr.includes(`${s.project}/.hallpass/rules appeared since hallpass last ran here`),
      r1.stderr,
    );
    assertEquals((await run()).stderr, "", "unchanged: no notice");
    await Deno.writeTextFile(`${s.project}/.hallpass/rules`, "deny write ./y\n");
    const r2 = await run();
    assertEquals(r2.stderr.trim().split("\n").length, 1, r2.stderr);
    assert(
      r2.stderr.includes(`${s.project}/.hallpass/rules changed since hallpass last ran here`),
      r2.stderr,
    );
  } finally {
    await s.cleanup();
  }
});

// ---- no privilege left behind

const PRIV = `
import os, sys, ctypes
libc = ctypes.CDLL(None, use_errno=True)
def t(name, f):
    try:
        f(); print(name, "OK")
    except OSError as e:
        print(name, "errno", e.errno)
def c(name, r):
    print(name, "OK" if r == 0 else "errno %d" % ctypes.get_errno())
open("f1", "w").close(); open("f2", "w").close(); open("f3", "w").close(); os.mkdir("d1")
t("chmod-suid", lambda: os.chmod("f1", 0o4755))
t("chmod-sgid", lambda: os.chmod("f2", 0o2755))
t("chmod-sgid-dir", lambda: os.chmod("d1", 0o2755))
fd = os.open("f3", os.O_RDONLY)
t("fchmod-suid", lambda: os.fchmod(fd, 0o4755))
c("fchmodat2-suid", libc.syscall(452, -100, b"f3", 0o6755, 0))
t("open-suid", lambda: os.close(os.open("f4", os.O_CREAT | os.O_WRONLY, 0o4755)))
c("creat-sgid", -1 if libc.creat(b"f5", 0o2755) < 0 else 0)
t("mknod-chr", lambda: os.mknod("null", 0o666 | 0o020000, os.makedev(1, 3)))
t("mknod-blk", lambda: os.mknod("loop", 0o666 | 0o060000, os.makedev(7, 0)))
t("mknod-reg-suid", lambda: os.mknod("f6", 0o4755 | 0o100000))
cap = bytes.fromhex("0100000202000000000000000000000000000000")  # VFS_CAP_REVISION_2, cap_dac_override
t("setxattr-capability", lambda: os.setxattr("f1", "security.capability", cap))
t("setxattr-trusted", lambda: os.setxattr("f1", "trusted.x", b"1"))
t("setxattr-user", lambda: os.setxattr("f1", "user.x", b"1"))
`;

function results(out: string): Record<string, string> {
  const r: Record<string, string> = {};
  for (const l of out.trim().split("\n")) {
    const i = l.indexOf(" ");
    r[l.slice(0, i)] = l.slice(i + 1);
  }
  return r;
}

/** What is left in `dir`, judged from outside: modes with setuid/setgid, device nodes, capabilities. */
function leftBehind(dir: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    const st = Deno.lstatSync(`${dir}/${e.name}`);
    if ((st.mode ?? 0) & 0o6000) out.push(`${e.name}: mode ${((st.mode ?? 0) & 0o7777).toString(8)}`);
    if (st.isCharDevice || st.isBlockDevice) out.push(`${e.name}: device`);
  }
  // File capabilities, read from outside (what getcap reads): the security.capability attribute.
  const caps = new Deno.Command("/usr/bin/python3", {
    args: [
      "-c",
      "import os,sys\nfor n in os.listdir(sys.argv[1]):\n  p=os.path.join(sys.argv[1],n)\n  try: os.getxattr(p,'security.capability',follow_symlinks=False); print(n)\n  except OSError: pass",
      dir,
    ],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  const c = new TextDecoder().decode(caps.stdout).trim();
  if (c) out.push(`capabilities: ${c}`);
  return out;
}

Deno.test("left behind: setuid/setgid bits, file capabilities and device nodes are refused (EPERM) in the project", async () => {
  const c = await scratch();
  try {
    const r = await bare(["/usr/bin/python3", "-c", PRIV], { cwd: c.project });
    const got = results(r.stdout);
    // Control: bare, the privileged modes are set (devices and capabilities only as root).
    for (const k of ["chmod-suid", "chmod-sgid", "fchmod-suid", "open-suid", "mknod-reg-suid"]) {
      assertEquals(got[k], "OK", `control ${k}: ${r.stdout}${r.stderr}`);
    }
    if (isRoot()) {
      for (const k of ["mknod-chr", "mknod-blk", "setxattr-capability"]) {
        assertEquals(got[k], "OK", `control ${k}`);
      }
    }
    assert(leftBehind(c.project).length > 0, "control: nothing privileged was left");
  } finally {
    await c.cleanup();
  }
  for (const fast of ["1", "0"]) {
    const s = await scratch();
    try {
      const r = await engineRunner(fast === "1", "left behind")([
        "--no-ask",
        "-q",
        "--",
        "/usr/bin/python3",
        "-c",
        PRIV,
      ], {
        cwd: s.project,
      });
      const got = results(r.stdout);
      for (
        const k of [
          "chmod-suid",
          "chmod-sgid",
          "chmod-sgid-dir",
          "fchmod-suid",
          "fchmodat2-suid",
          "open-suid",
          "creat-sgid",
          "mknod-chr",
          "mknod-blk",
          "mknod-reg-suid",
          "setxattr-capability",
          "setxattr-trusted",
        ]
      ) {
        assertEquals(got[k], "errno 1", `fast=${fast} ${k}: ${r.stdout}\n${r.stderr}`);
      }
      assertEquals(leftBehind(s.project), [], `fast=${fast}`);
    } finally {
      await s.cleanup();
    }
  }
});

Deno.test("left behind: outside the project, an answer that allows the write still gets no setuid bit", async () => {
  const s = await scratch();
  try {
    const ask = await askProgram(s.project, "once");
    await Deno.writeTextFile(`${s.outside}/f`, "x");
    const r = await hallpass(["--ask-program", ask, "-q", "--", "/bin/chmod", "4755", `${s.outside}/f`], {
      cwd: s.project,
    });
    assert(r.code !== 0, r.stderr);
    assertEquals((Deno.statSync(`${s.outside}/f`).mode ?? 0) & 0o7777, 0o644);
  } finally {
    await s.cleanup();
  }
});

Deno.test("left behind: --allow-privileged-files lets a setuid bit through, in the project only", async () => {
  const s = await scratch();
  try {
    await Deno.writeTextFile(`${s.outside}/o`, "x");
    const r = await hallpass([
      "--no-ask",
      "-q",
      "--allow-privileged-files",
      "--",
      "/bin/sh",
      "-c",
      `echo x > f; chmod 4755 f; chmod 4755 ${s.outside}/o`,
    ], { cwd: s.project });
    assertEquals((Deno.statSync(`${s.project}/f`).mode ?? 0) & 0o7777, 0o4755, r.stderr);
    // Outside the floor it is still a write that asks (denied here): the option lifts only the refusal.
    assertEquals((Deno.statSync(`${s.outside}/o`).mode ?? 0) & 0o7777, 0o644, r.stderr);
  } finally {
    await s.cleanup();
  }
});
