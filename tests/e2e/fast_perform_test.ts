/**
 * Writes outside the Landlock floor that the fast path performs itself (helper/fastpath/fastpath.c
 * perform_write, lib/supervisor/fast_roots.ts fastPerformRegion): below a directory the sandbox makes at the
 * project's top (`node_modules/` in a fresh project), where Landlock grants nothing, the mediator performed
 * every call (~3-7x a continued one); now the C fast path does, as the mediator would. Each test runs with the
 * fast path and with the mediator alone and both must agree with a bare run; each run asserts which engine
 * answered (tests/e2e/engine.ts) and replays the fast path's answers through the mediator's decision.
 *
 * The attacks are judged from outside the sandbox: the directory swapped for a symlink to outside while files
 * are created, made, renamed and removed through it (control: without hallpass the same script writes
 * outside); a `.git` or `.hallpass` planted at the top from a directory made there; a hard link to a
 * protected file.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, exists, hallpass, scratch, snapshot } from "./harness.ts";
import { engine } from "./engine.ts";

const ENV = { PATH: "/usr/bin:/bin", LANG: "C" };

/** Creates, makes, moves, changes and removes below a directory made at the top; prints what it sees. */
const WORK = `umask 027 && mkdir nm nm/a && printf data > nm/a/f && mkdir -p nm/b/c && : > nm/b/c/g &&
chmod 640 nm/a/f && mv nm/a/f nm/b/f2 && ln -s f2 nm/b/link &&
echo more >> nm/b/link && touch -d @1000000000 nm/b/f2 && mkdir nm/b/c 2>/dev/null; echo mkdir=$? && rm nm/b/c/g && rmdir nm/b/c &&
: > top-file && chmod 600 top-file && mv top-file nm/moved && mkdir nm/x && mv nm/x nm/y &&
cd nm && printf rel > relative && mkdir sub && cd sub && printf deeper > ../sub2 && cd / &&
find "$P/nm" | sort | while read f; do stat -c "%n %A %s %Y" "$f" | sed "s|$P|P|; s| 1[7-9][0-9]\\{8\\}$| now|"; done`;

Deno.test("below a directory made at the project's top: the fast path performs what the mediator would", async () => {
  const outputs: string[] = [];
  const trees: unknown[] = [];
  for (const way of ["bare", "fast", "mediator"]) {
    const s = await scratch();
    try {
      const env = { ...ENV, P: s.project };
      let r;
      if (way === "bare") r = await bare(["/bin/sh", "-c", WORK], { cwd: s.project, env });
      else {
        const e = await engine(way === "fast", "below a new top directory");
        r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", WORK], {
          cwd: s.project,
          env: { ...env, ...e.env },
        });
        const rep = await e.check();
        if (way === "fast") {
          // open, mkdir, rename, unlink, rmdir, chmod and utimensat below nm/, performed by the fast path
          assert(
            (rep.byAnswer.perform ?? 0) >= 15,
            `the fast path performed too little: ${JSON.stringify(rep)}`,
          );
        }
      }
      assertEquals(r.code, 0, `${way}: ${r.stderr}`);
      outputs.push(r.stdout);
      trees.push(await snapshot(`${s.project}/nm`));
    } finally {
      await s.cleanup();
    }
  }
  assertEquals(outputs[1], outputs[0], "fast path vs bare");
  assertEquals(outputs[2], outputs[0], "mediator vs bare");
  assertEquals(trees[1], trees[0]);
  assertEquals(trees[2], trees[0]);
  assert(outputs[0].includes("P/nm/b/f2 -rw-r----- 9 1000000000"), outputs[0]);
});

/**
 * A thread swaps the directory made at the top for a symlink to outside (and back) while others create,
 * make, rename, remove and chmod through it. Without hallpass the same script changes the outside directory.
 */
const SWAP = `
import os, sys, threading, time
proj, out = sys.argv[1], sys.argv[2]
d = os.path.join(proj, "nm")
os.mkdir(d)
stop = False
started = threading.Event()
def swap():
    i = 0
    started.set()
    while not stop:
        i += 1
        try:
            os.rename(d, os.path.join(proj, "old%d" % i))
            os.symlink(out, d)
            time.sleep(0.0005)
            os.unlink(d)
            os.mkdir(d)
            open(os.path.join(d, "victim"), "w").close()
            os.mkdir(os.path.join(d, "vdir"))
            time.sleep(0.003)
        except OSError:
            pass
threading.Thread(target=swap, daemon=True).start()
counts = {"ok": 0, "err": 0, "eacces": 0}
def changed():  # without hallpass: the outside directory was written through the symlink
    try:
        return sorted(os.listdir(out)) != ["vdir", "victim"] or os.stat(os.path.join(out, "victim")).st_size != 4
    except OSError:
        return False
# 700 rounds each once the swapper runs, and on (up to 60 s) until the race happened: a call refused (EACCES),
# or (without hallpass) the outside changed. At load the swapper may not run in between.
def work(k):
    started.wait()
    hard = time.time() + 60
    j = -1
    while j < 699 or (not (counts["eacces"] or changed()) and time.time() < hard):
        j += 1
        for call in (
            lambda: os.close(os.open(os.path.join(d, "f%d_%d" % (k, j)), os.O_CREAT | os.O_WRONLY, 0o644)),
            lambda: os.close(os.open(os.path.join(d, "victim"), os.O_WRONLY | os.O_TRUNC)),
            lambda: os.mkdir(os.path.join(d, "m%d_%d" % (k, j))),
            lambda: os.rename(os.path.join(d, "vdir"), os.path.join(d, "r%d_%d" % (k, j))),
            lambda: os.unlink(os.path.join(d, "victim")),
            lambda: os.chmod(os.path.join(d, "victim"), 0o600),
        ):
            try:
                call(); counts["ok"] += 1
            except OSError as e:
                counts["err"] += 1
                if e.errno == 13: counts["eacces"] += 1
ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
[t.start() for t in ts]; [t.join() for t in ts]
stop = True
print("ok=%d err=%d eacces=%d" % (counts["ok"], counts["err"], counts["eacces"]))
`;

async function outsideSetup(out: string): Promise<void> {
  await Deno.writeTextFile(`${out}/victim`, "keep");
  await Deno.chmod(`${out}/victim`, 0o644);
  await Deno.mkdir(`${out}/vdir`);
}

Deno.test("a directory made at the top, swapped for a symlink to outside while it is written through", async () => {
  // Control: without hallpass the script does change the outside directory (the race is real).
  {
    const s = await scratch();
    try {
      await outsideSetup(s.outside);
      const before = await snapshot(s.outside);
      const r = await bare(["/usr/bin/python3", "-c", SWAP, s.project, s.outside], {
        cwd: s.project,
        env: ENV,
      });
      assertEquals(r.code, 0, r.stderr);
      assert(
        JSON.stringify(await snapshot(s.outside)) !== JSON.stringify(before),
        "control: outside unchanged",
      );
    } finally {
      await s.cleanup();
    }
  }
  for (const fast of [true, false]) {
    const s = await scratch();
    try {
      await outsideSetup(s.outside);
      const before = await snapshot(s.outside);
      const e = await engine(fast, "swap race");
      const r = await hallpass(
        ["--no-ask", "-q", "--", "/usr/bin/python3", "-c", SWAP, s.project, s.outside],
        {
          cwd: s.project,
          env: { ...ENV, ...e.env },
          timeoutMs: 120_000,
        },
      );
      const rep = await e.check();
      assertEquals(r.code, 0, `fast=${fast}: ${r.stderr.slice(0, 800)}`);
      const m = r.stdout.match(/ok=(\d+) err=(\d+) eacces=(\d+)/);
      assert(m, `fast=${fast}: ${r.stdout} ${r.stderr.slice(0, 500)}`);
      // The race happened: calls met the symlink (refused) and, with the fast path, others went through into
      // the real directory. (The mediator keeps a directory's canonical path for 0.5 s, so once it saw the
      // symlink it refuses for a while: it may refuse them all.)
      assert(Number(m[3]) > 0, `fast=${fast}: ${r.stdout}`);
      if (fast) {
        assert(Number(m[1]) > 0, `fast=${fast}: ${r.stdout}`);
        assert((rep.byAnswer.perform ?? 0) > 100, `fast path performed: ${JSON.stringify(rep.byAnswer)}`);
      }
      assertEquals(await snapshot(s.outside), before, `fast=${fast}: the outside directory changed`);
    } finally {
      await s.cleanup();
    }
  }
});

/**
 * What decides the next session or runs outside (`.git`, `.hallpass`, a protected file's inode) cannot be
 * planted from a directory made at the top: moving it there, or linking a protected file into it, asks
 * (here: denied, --no-ask) with either engine. A repository made below it is not protected (documented).
 */
Deno.test("planting .git or .hallpass at the top from a directory made there, and hard links, are refused", async () => {
  for (const fast of [true, false]) {
    const s = await scratch();
    try {
      const script = `mkdir g g/hooks && printf evil > g/hooks/pre-commit && chmod 755 g/hooks/pre-commit;
mv g .git; echo mv-git=$?; mkdir h && printf 'allow write /**' > h/rules; mv h .hallpass; echo mv-hp=$?;
mkdir .git; echo mkdir-git=$?; mkdir -p nm/.git/hooks && : > nm/.git/hooks/x; echo nested=$?`;
      const e = await engine(fast, "planting");
      const r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", script], {
        cwd: s.project,
        env: { ...ENV, ...e.env },
      });
      const rep = await e.check();
      const got = r.stdout.trim().split("\n");
      assertEquals(got, ["mv-git=1", "mv-hp=1", "mkdir-git=1", "nested=0"], `fast=${fast}: ${r.stderr}`);
      assert(
        !(await exists(`${s.project}/.git`)) && !(await exists(`${s.project}/.hallpass`)),
        `fast=${fast}`,
      );
      if (fast) {
        assert((rep.byAnswer.perform ?? 0) > 0, `fast path performed: ${JSON.stringify(rep.byAnswer)}`);
      }
    } finally {
      await s.cleanup();
    }
  }
  for (const fast of [true, false]) {
    const s = await scratch();
    try {
      await Deno.mkdir(`${s.project}/.git/hooks`, { recursive: true });
      await Deno.writeTextFile(`${s.project}/.git/config`, "[core]\n");
      const script = `mkdir nm && ln .git/config nm/c; echo ln=$?; printf x >> nm/c; ` +
        `ln -s ../.git/config nm/s; printf y >> nm/s; echo via-symlink=$?; mv .git/config nm/c2; echo mv=$?`;
      const e = await engine(fast, "hard links");
      const r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", script], {
        cwd: s.project,
        env: { ...ENV, ...e.env },
      });
      await e.check();
      assertEquals(
        r.stdout.trim().split("\n"),
        ["ln=1", "via-symlink=2", "mv=1"],
        `fast=${fast}: ${r.stderr}`,
      );
      assertEquals(await Deno.readTextFile(`${s.project}/.git/config`), "[core]\n", `fast=${fast}`);
    } finally {
      await s.cleanup();
    }
  }
});

/**
 * A read protection inside the project (`--protect`) carves the project's top for reads too: a name made
 * there during the session cannot be read back, and the mediator says so once. The fast path leaves such new
 * names to the mediator (the notice comes with either engine), performs what is below them, and never opens
 * the protected file for reading.
 */
Deno.test("a read-carved project top: the notice for a new name, the protected file, with either engine", async () => {
  const outs: string[] = [];
  for (const fast of [true, false]) {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.project}/secret.txt`, "s3cret");
      const script = `mkdir nm && printf a > nm/f && mkdir nm/d && mv nm/f nm/d/g && echo made=$?; ` +
        `(exec 3<>secret.txt) 2>/dev/null; echo rdwr=$?; cat nm/d/g >/dev/null 2>&1; echo readback=$?`;
      const e = await engine(fast, "read-carved top");
      const r = await hallpass([
        "--no-ask",
        "-q",
        "--protect",
        `${s.project}/secret.txt`,
        "--",
        "/bin/sh",
        "-c",
        script,
      ], {
        cwd: s.project,
        env: { ...ENV, ...e.env },
      });
      const rep = await e.check();
      if (fast) {
        assert((rep.byAnswer.perform ?? 0) >= 1, `fast path performed: ${JSON.stringify(rep)}`);
      }
      const notices = r.stderr.split("\n").filter((l) => l.includes("is new in")).map((l) =>
        l.replaceAll(s.project, "P")
      );
      outs.push(`${r.stdout}${notices.join("\n")}`);
      assertEquals(await Deno.readTextFile(`${s.project}/nm/d/g`), "a");
    } finally {
      await s.cleanup();
    }
  }
  assertEquals(outs[0], outs[1], "fast path vs mediator");
  assert(outs[0].startsWith("made=0\n"), outs[0]);
  assert(/rdwr=[1-9]/.test(outs[0]), outs[0]);
  assert(outs[0].includes("P/nm is new in P"), outs[0]);
});

/**
 * The fast path keeps a thread's umask with its credentials (lib/filter/filter_plan.ts traps umask() for that):
 * a shell changing its umask between creates in one process gets each file with the umask of its moment.
 */
Deno.test("umask changed between creates in one shell: each file's mode as bare", async () => {
  const script =
    `umask 077; mkdir nm; echo a > nm/f; umask 022; echo b > nm/g; (umask 002; echo c > nm/h); ` +
    `echo d > nm/i; mkdir nm/d; umask 0; echo e > nm/j; stat -c '%n %a' nm nm/f nm/g nm/h nm/i nm/d nm/j`;
  const outs: string[] = [];
  for (const way of ["bare", "fast", "mediator"]) {
    const s = await scratch();
    try {
      let r;
      if (way === "bare") r = await bare(["/bin/sh", "-c", script], { cwd: s.project, env: ENV });
      else {
        const e = await engine(way === "fast", "umask");
        r = await hallpass(["--no-ask", "-q", "--", "/bin/sh", "-c", script], {
          cwd: s.project,
          env: { ...ENV, ...e.env },
        });
        const rep = await e.check();
        if (way === "fast") assert((rep.byAnswer.perform ?? 0) >= 5, JSON.stringify(rep.byAnswer));
      }
      assertEquals(r.code, 0, `${way}: ${r.stderr}`);
      outs.push(r.stdout);
    } finally {
      await s.cleanup();
    }
  }
  assertEquals(outs[0], "nm 700\nnm/f 600\nnm/g 644\nnm/h 664\nnm/i 644\nnm/d 755\nnm/j 666\n");
  assertEquals(outs[1], outs[0], "fast path");
  assertEquals(outs[2], outs[0], "mediator");
});
