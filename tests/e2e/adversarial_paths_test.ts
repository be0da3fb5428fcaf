/**
 * docs/threat-model.md guarantees attacked through paths: a racing thread flipping the path, symlinks out of the project
 * (and swapped after approval), hardlinks and renames across the project boundary, /proc/self/fd reopen,
 * /proc/self/cwd and /dev/fd names. The host file system is checked after each run.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileHelper, exists, hallpass, readQuestions, scratch, scratchAsker } from "./harness.ts";
import { engine, ENGINES } from "./engine.ts";

// Every test runs with the C fast path and with the mediator alone (HALLPASS_FAST_PATH=0); each hallpass run
// has its own record and asserts which engine answered it (tests/e2e/engine.ts).

const dir = (p: string) => p.slice(0, p.lastIndexOf("/"));

for (const [E, fast] of ENGINES) {
  Deno.test(`racing thread flipping the path between the project and outside: no write lands outside (${E})`, async () => {
    const adv = await compileHelper("adversary", ["-pthread"]);
    const s = await scratch();
    const e = await engine(fast, "race");
    try {
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--",
        adv,
        "race",
        `${s.project}/a`,
        `${s.outside}/x`,
        "4000",
      ], {
        cwd: s.project,
        env: e.env,
        timeoutMs: 150_000, // the race goes on past 4000 opens, up to 60 s, until it has happened
      });
      await e.check();
      const m = r.stdout.match(/race ok=(\d+) denied=(\d+) other=(\d+) outside=(\d+)/);
      assert(m, r.stdout + r.stderr);
      const [ok, denied, _other, outside] = m.slice(1).map(Number);
      assertEquals(
        outside,
        0,
        `fds opened outside the project: ${r.stdout}${
          r.stderr.split("\n").filter((l) => l.startsWith("race:")).join("\n")
        }`,
      );
      assert(!(await exists(`${s.outside}/x`)), "the outside file was created");
      assert(ok > 0, `the allowed path never opened: ${r.stdout}`);
      // The flipper did reach the supervisor with the outside path (otherwise the test proves nothing).
      assert(denied > 0, `no open was ever denied: the race never happened (${r.stdout})`);
    } finally {
      await s.cleanup();
    }
  });
}

for (const [E, fast] of ENGINES) {
  Deno.test(`symlink in the project pointing outside: denied under --no-ask; \`once\` asks about the real target (${E})`, async () => {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.outside}/target`, "orig");
      await Deno.symlink(`${s.outside}/target`, `${s.project}/link`);
      await Deno.symlink(`${s.outside}/new`, `${s.project}/dangling`);
      await Deno.symlink(s.outside, `${s.project}/dirlink`);
      const e = await engine(fast, "symlink");
      const r = await hallpass([
        "--no-ask",
        "--",
        "sh",
        "-c",
        "echo pwn > link; echo pwn > dangling; echo pwn > dirlink/f; echo done",
      ], {
        cwd: s.project,
        env: e.env,
      });
      await e.check();
      assertEquals(r.stdout, "done\n");
      assertEquals(await Deno.readTextFile(`${s.outside}/target`), "orig");
      assert(!(await exists(`${s.outside}/new`)));
      assert(!(await exists(`${s.outside}/f`)));
      assert(r.stderr.includes(`hallpass: denied write ${s.outside}/target by sh`), r.stderr);
      assert(r.stderr.includes(`hallpass: denied write ${s.outside}/f by sh`), r.stderr);

      const { ask, log } = await scratchAsker(s, "once");
      const e2 = await engine(fast, "symlink once");
      const r2 = await hallpass(["--ask-program", ask, "--", "sh", "-c", "echo allowed > link"], {
        cwd: s.project,
        env: e2.env,
      });
      await e2.check();
      assertEquals(r2.code, 0, r2.stderr);
      assertEquals(await Deno.readTextFile(`${s.outside}/target`), "allowed\n");
      const qs = (await readQuestions(log)).filter((q) => q.op === "write");
      assertEquals(qs.map((q) => q.target), [`${s.outside}/target`]);
      assert((await Deno.lstat(`${s.project}/link`)).isSymlink, "the link itself was replaced");
    } finally {
      await s.cleanup();
    }
  });
}

for (const [E, fast] of ENGINES) {
  Deno.test(`symlink swapped after approval: the approved file is written, never the new target (${E})`, async () => {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.outside}/approved`, "a");
      await Deno.writeTextFile(`${s.outside}/secret`, "s");
      await Deno.symlink(`${s.outside}/approved`, `${s.project}/l`);
      await Deno.mkdir(`${s.outside}/okdir`);
      await Deno.mkdir(`${s.outside}/secretdir`);
      await Deno.symlink(`${s.outside}/okdir`, `${s.project}/d`);
      // Both questions are pending (the ask program marks each), then the sandbox points the links elsewhere,
      // and only then the answer comes: no timing (a fixed 0.5 s for both writes to be asked could run out at
      // load, and a write asked after the swap would be asked about the new target). Each wait ends at 60 s.
      const ask = `${s.outside}/../slow.sh`;
      await Deno.writeTextFile(
        ask,
        `#!/bin/sh\ncat >> '${s.outside}/../q.jsonl'\ntouch '${s.project}/asked.'$$\n` +
          `i=0; while [ ! -e '${s.project}/swapped' ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done\n` +
          `echo once\n`,
      );
      await Deno.chmod(ask, 0o755);
      const script = `(echo pwn >> l) & (echo pwn > d/f) &
      i=0; while [ "$(ls | grep -c '^asked\\.')" -lt 2 ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done
      echo "pending $(ls | grep -c '^asked\\.')"
      ln -sfn '${s.outside}/secret' l; ln -sfn '${s.outside}/secretdir' d; touch swapped; wait; echo done`;
      const e = await engine(fast, "swapped after approval");
      const r = await hallpass(["--ask-program", ask, "--", "sh", "-c", script], {
        cwd: s.project,
        env: e.env,
        timeoutMs: 150_000,
      });
      await e.check();
      // "pending 2": the swap came while both writes waited for their answer (the race happened).
      assertEquals(r.stdout, "pending 2\ndone\n", r.stderr);
      assertEquals(await Deno.readTextFile(`${s.outside}/secret`), "s");
      assert(!(await exists(`${s.outside}/secretdir/f`)), "wrote into the swapped-in directory");
      // What was approved is what was written.
      assertEquals(await Deno.readTextFile(`${s.outside}/approved`), "apwn\n");
      assertEquals(await Deno.readTextFile(`${s.outside}/okdir/f`), "pwn\n");
    } finally {
      await s.cleanup();
    }
  });
}

for (const [E, fast] of ENGINES) {
  Deno.test(`hardlinks and renames across the project boundary are denied under --no-ask (${E})`, async () => {
    const tw = await compileHelper("try_write");
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.outside}/secret`, "s");
      await Deno.writeTextFile(`${s.outside}/out`, "o");
      await Deno.writeTextFile(`${s.project}/mine`, "m");
      const P = s.project, O = s.outside;
      const e = await engine(fast, "links and renames");
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--",
        tw,
        ...["link", `${O}/secret`, `${P}/hl`, ";"],
        ...["linkat", O, "secret", P, "hl2", "0", ";"],
        ...["rename", `${P}/mine`, `${O}/mine`, ";"], // out of the project
        ...["rename", `${O}/out`, `${P}/out`, ";"], // into the project
        ...["renameat2", P, "mine", O, "out", "exchange", ";"],
        ...["symlink", `${O}/secret`, `${P}/sl`, ";"], // allowed: a symlink in the project is just a name
        ...["open", `${P}/sl`, "wronly|trunc", "0", ";"], // but writing through it is not
      ], { cwd: P, env: e.env });
      await e.check();
      assertEquals(r.stdout.trim().split("\n").map((l) => l.split(" ").slice(0, 2).join(" ")), [
        "link EACCES",
        "linkat EACCES",
        "rename EACCES",
        "rename EACCES",
        "renameat2 EACCES",
        "symlink OK",
        "open EACCES",
      ]);
      assert(
        !(await exists(`${P}/hl`)) && !(await exists(`${P}/hl2`)),
        "an outside file was hardlinked into the project",
      );
      assertEquals(await Deno.readTextFile(`${P}/mine`), "m");
      assert(!(await exists(`${O}/mine`)));
      assertEquals(await Deno.readTextFile(`${O}/out`), "o");
      assert(!(await exists(`${P}/out`)));
      assertEquals(await Deno.readTextFile(`${O}/secret`), "s");
      assertEquals((await Deno.stat(`${O}/secret`)).nlink, 1);
    } finally {
      await s.cleanup();
    }
  });
}

for (const [E, fast] of ENGINES) {
  Deno.test(`/proc/self/fd, /dev/fd, /proc/PID/fd reopen for write of an outside file opened read-only (${E})`, async () => {
    const adv = await compileHelper("adversary");
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.outside}/ro`, "orig");
      await Deno.chmod(`${s.outside}/ro`, 0o644);
      const e = await engine(fast, "reopen");
      const r = await hallpass(["--no-ask", "-q", "--", adv, "reopen", `${s.outside}/ro`], {
        cwd: s.project,
        env: e.env,
      });
      await e.check();
      const got = Object.fromEntries(r.stdout.trim().split("\n").map((l) => l.split(" ")));
      assertEquals(got, {
        "reopen-proc-self": "EACCES",
        "reopen-dev-fd": "EACCES",
        "reopen-proc-pid": "EACCES",
        "reopen-thread-self": "EACCES",
        "reopen-truncate": "EACCES",
        "reopen-chmod": "EACCES",
      });
      assertEquals(await Deno.readTextFile(`${s.outside}/ro`), "orig");
      assertEquals((await Deno.stat(`${s.outside}/ro`)).mode! & 0o777, 0o644);
    } finally {
      await s.cleanup();
    }
  });
}

for (const [E, fast] of ENGINES) {
  Deno.test(`/proc/self/cwd and /dev/fd/N as directories mean the sandboxed process's own (${E})`, async () => {
    const tw = await compileHelper("try_write");
    const s = await scratch();
    try {
      const script =
        `cd '${s.outside}' && '${tw}' open /proc/self/cwd/x wronly\\|creat 0644 \\; mkdir /proc/self/cwd/d 0755
      cd '${s.project}' && '${tw}' open /proc/self/cwd/y wronly\\|creat 0644 yy
      exec 3<'${s.outside}' 4<'${s.project}'
      '${tw}' open /dev/fd/3/z wronly\\|creat 0644 \\; openat /dev/fd/3 z2 wronly\\|creat 0644 \\; open /dev/fd/4/w wronly\\|creat 0644 ww`;
      const e = await engine(fast, "/proc/self/cwd");
      const r = await hallpass(
        ["--no-ask", "-q", "--allow-exec", `${dir(tw)}/**`, "--", "sh", "-c", script],
        {
          cwd: s.project,
          env: e.env,
        },
      );
      await e.check();
      assertEquals(r.stdout.trim().split("\n").map((l) => l.split(" ").slice(0, 2).join(" ")), [
        "open EACCES",
        "mkdir EACCES",
        "open OK",
        "open EACCES",
        "openat EACCES",
        "open OK",
      ], r.stderr);
      for (const f of ["x", "d", "z", "z2"]) {
        assert(!(await exists(`${s.outside}/${f}`)), `${f} was created outside`);
      }
      assertEquals(await Deno.readTextFile(`${s.project}/y`), "yy");
      assertEquals(await Deno.readTextFile(`${s.project}/w`), "ww");
    } finally {
      await s.cleanup();
    }
  });
}

/**
 * The fast path (helper/fastpath/fastpath.c) continues creates in project directories by itself: a thread
 * swapping such a directory for a symlink to outside while others create files through it gets nothing
 * outside (the kernel's Landlock check stands behind every CONTINUE), and the same run without the fast
 * path agrees.
 */
const SWAP_DIR = `
import os, sys, threading, time
proj, out = sys.argv[1], sys.argv[2]
d = os.path.join(proj, "d")
os.mkdir(d)
stop = False
started = threading.Event()
def swap():
    i = 0
    started.set()
    while not stop:
        i += 1
        try:
            os.rename(d, os.path.join(proj, "old%d" % i))  # the real directory away
            os.symlink(out, d)                             # d -> outside
            os.unlink(d)
            os.mkdir(d)                                    # a real directory again
            time.sleep(0.001)
        except OSError:
            pass
threading.Thread(target=swap, daemon=True).start()
counts = {"ok": 0, "err": 0, "eacces": 0}
# 1500 creates each once the swapper runs, and on (up to 60 s) until one was refused: the race happened (at
# load the swapper may not run in between).
def create(k):
    started.wait()
    hard = time.time() + 60
    j = 0
    while j < 1500 or (counts["eacces"] == 0 and time.time() < hard):
        j += 1
        try:
            fd = os.open(os.path.join(d, "f%d_%d" % (k, j)), os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
            os.close(fd); counts["ok"] += 1
        except OSError as e:
            counts["err"] += 1
            if e.errno == 13: counts["eacces"] += 1
ts = [threading.Thread(target=create, args=(k,)) for k in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
stop = True
print("ok=%d err=%d eacces=%d" % (counts["ok"], counts["err"], counts["eacces"]))
`;

for (const [E, fast] of ENGINES) {
  Deno.test(`a project directory swapped for a symlink to outside while files are created through it (${E})`, async () => {
    const s = await scratch();
    const e = await engine(fast, "swapped directory");
    try {
      // In a directory that exists at start: the project's top is carved around .git and .hallpass
      // (lib/sandbox/plan.ts carveFloor), and creates there are performed by the supervisor, not continued.
      Deno.mkdirSync(`${s.project}/sub`);
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--",
        "/usr/bin/python3",
        "-c",
        SWAP_DIR,
        `${s.project}/sub`,
        s.outside,
      ], {
        cwd: s.project,
        env: e.env,
        timeoutMs: 150_000,
      });
      await e.check();
      assertEquals(r.code, 0, r.stderr);
      const m = r.stdout.match(/ok=(\d+) err=(\d+) eacces=(\d+)/);
      assert(
        m && Number(m[1]) + Number(m[2]) >= 4500,
        `${E}: ${r.stdout} ${r.stderr.slice(0, 500)}`,
      );
      // Some creates did go through the symlink (and were refused): the race happened. (How many succeed
      // depends on timing: the mediator keeps a directory's canonical path for 0.5 s.)
      assert(Number(m[3]) > 0, `${E}: no create was ever refused: ${r.stdout}`);
      const outside = [...Deno.readDirSync(s.outside)].map((e) => e.name);
      assertEquals(outside, [], `${E}: files created outside the project: ${outside.slice(0, 5)}`);
    } finally {
      await s.cleanup();
    }
  });
}

/**
 * The metadata calls (chmod, chown, utimensat) are never continued: Landlock does not cover them. The
 * supervisor performs them on its own copy of the program's fd (fd forms) or through a directory it opened
 * without symlinks (path forms) — the fast path in C as much as the mediator. Two threads attack that: one
 * swaps what the name or the fd number means, between a file in the project and a file outside, while others
 * change modes and times through it. The outside file must never change.
 */
const META_RACE = `
import os, sys, threading, time
proj, out = sys.argv[1], sys.argv[2]
victim = os.path.join(out, "victim")
inner = os.path.join(proj, "inner")
name = os.path.join(proj, "f")
open(inner, "w").close()
fd_out = os.open(victim, os.O_RDONLY)    # a read: never asked
fd_in = os.open(inner, os.O_RDONLY)
N = 100
os.dup2(fd_in, N)
open(name, "w").close()
stop = False
started = threading.Event()
def swap():
    i = 0
    started.set()
    while not stop:
        i += 1
        os.dup2(fd_out if i % 2 else fd_in, N)          # the fd number: outside, then inside again
        try:
            tmp = os.path.join(proj, "t%d" % (i % 2))
            if i % 2:
                os.symlink(victim, tmp)                  # the name: a symlink to outside ...
            else:
                open(tmp, "w").close()                   # ... then a plain file again
            os.replace(tmp, name)
        except OSError:
            pass
counts = {"ok": 0, "eacces": 0, "other": 0}
# 600 rounds each once the swapper runs, and on (up to 60 s) until calls were both allowed and refused: the race
# happened (at load the swapper may not run in between).
def meta(k):
    started.wait()
    hard = time.time() + 60
    j = -1
    while j < 599 or ((counts["ok"] == 0 or counts["eacces"] == 0) and time.time() < hard):
        j += 1
        for call in (lambda: os.chmod(N, 0o600 + (j % 2) * 0o44),
                     lambda: os.utime(N, ns=(j * 10**9, j * 10**9)),
                     lambda: os.chown(N, os.getuid(), os.getgid()),
                     lambda: os.chmod(name, 0o600 + (j % 2) * 0o44),
                     lambda: os.utime(name, ns=(j * 10**9, j * 10**9)),
                     lambda: os.chmod("/proc/self/fd/%d" % N, 0o666)):
            try:
                call(); counts["ok"] += 1
            except OSError as e:
                counts["eacces" if e.errno == 13 else "other"] += 1
t = threading.Thread(target=swap, daemon=True); t.start()
ts = [threading.Thread(target=meta, args=(k,)) for k in range(2)]
[x.start() for x in ts]; [x.join() for x in ts]
stop = True; t.join()
st = os.stat(victim)
print("ok=%d eacces=%d other=%d victim=%o,%d" % (counts["ok"], counts["eacces"], counts["other"],
      st.st_mode & 0o7777, st.st_mtime_ns))
`;

for (const [E, fast] of ENGINES) {
  Deno.test(`chmod, chown and utimensat while a thread swaps the fd number and the name to outside (${E})`, async () => {
    const s = await scratch();
    const e = await engine(fast, "metadata race");
    try {
      await Deno.writeTextFile(`${s.outside}/victim`, "");
      await Deno.chmod(`${s.outside}/victim`, 0o640);
      await Deno.utime(`${s.outside}/victim`, 1, 1);
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--",
        "/usr/bin/python3",
        "-c",
        META_RACE,
        s.project,
        s.outside,
      ], {
        cwd: s.project,
        env: e.env,
        timeoutMs: 150_000,
      });
      await e.check();
      assertEquals(r.code, 0, `${E}: ${r.stderr.slice(0, 800)}`);
      const m = r.stdout.match(/ok=(\d+) eacces=(\d+) other=(\d+) victim=(\d+),(\d+)/);
      assert(m, `${E}: ${r.stdout} ${r.stderr.slice(0, 500)}`);
      // The race happened: some calls went through (on the project's file), some were refused (outside).
      assert(Number(m[1]) > 0 && Number(m[2]) > 0, `${E}: ${r.stdout}`);
      assertEquals(
        [m[4], m[5]],
        ["640", "1000000000"],
        `${E}: the outside file changed: ${r.stdout}`,
      );
    } finally {
      await s.cleanup();
    }
  });
}
