/**
 * Red team: the exit check of repositories below the top (lib/sandbox/nested_repos.ts) renames hooks and
 * configs aside by path. Another hallpass session's sandbox in the same project is still running then, and can
 * flip a directory on that path with a symlink to a repository of the person's outside the project
 * (RENAME_EXCHANGE, allowed in the project): renaming by path then moved the person's own hooks and config
 * (`config.hallpass-quarantined`) outside the project. Judged from outside: the person's repository keeps every
 * file; a control shows a rename by that path reaches the outside repository.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, HALLPASS_ARGV, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const HOOKS = 150;

/** Session B's program: flips d/w and d/x (a symlink to the person's repository) until `stop` exists. */
const FLIPPER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1] + "/d"
while not os.path.exists(sys.argv[1] + "/go"):
    time.sleep(0.01)
n = 0
while not os.path.exists(sys.argv[1] + "/stop") and n < 10000000:
    if libc.syscall(316, -100, (d + "/w").encode(), -100, (d + "/x").encode(), 2) != 0:
        print("exchange failed", ctypes.get_errno()); break
    n += 1
    if n == 100:
        open(sys.argv[1] + "/flipping", "w").close()
print("flips", n)
`;

test({
  name:
    "another session's sandbox flipping a directory for a symlink never makes the exit check move files outside",
  ignore: [tool("/usr/bin/python3"), tool("git")],
  async fn() {
    const s = await scratch();
    try {
      const theirs = `${s.outside}/w`;
      await new Deno.Command("git", { args: ["init", "-q", theirs], stdout: "null", stderr: "null" })
        .output();
      const names: string[] = [];
      for (let i = 0; i < HOOKS; i++) names.push(`h${i}`);
      for (const n of names) {
        await Deno.writeTextFile(`${theirs}/.git/hooks/${n}`, "#!/bin/sh\necho person\n");
      }
      // A repository-shaped directory in the project (d existed at start: in the floor), and its twin symlink.
      const fake = `${s.project}/d/w/.git`;
      await Deno.mkdir(`${fake}/hooks`, { recursive: true });
      await Deno.mkdir(`${fake}/objects`);
      await Deno.mkdir(`${fake}/refs`);
      await Deno.writeTextFile(`${fake}/HEAD`, "ref: refs/heads/main\n");
      await Deno.writeTextFile(`${fake}/config`, '[core]\n\tfsmonitor = "echo x"\n');
      for (const n of names) await Deno.writeTextFile(`${fake}/hooks/${n}`, "x\n");
      await Deno.symlink(theirs, `${s.project}/d/x`);
      await Deno.writeTextFile(`${s.outside}/flip.py`, FLIPPER);

      // Control: a rename by a path through the flipped name reaches the person's repository.
      await Deno.symlink(theirs, `${s.outside}/via`);
      await Deno.rename(`${s.outside}/via/.git/hooks/h0`, `${s.outside}/via/.git/hooks/h0.moved`);
      assert(await exists(`${theirs}/.git/hooks/h0.moved`), "control: the rename did not reach outside");
      await Deno.rename(`${theirs}/.git/hooks/h0.moved`, `${theirs}/.git/hooks/h0`);

      // Session B: the flipper, sandboxed, in the same project.
      const b = new Deno.Command(HALLPASS_ARGV[0], {
        args: [
          ...HALLPASS_ARGV.slice(1),
          "--no-ask",
          "-q",
          "--",
          "/usr/bin/python3",
          `${s.outside}/flip.py`,
          s.project,
        ],
        cwd: s.project,
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      // Session A: its sandbox rewrites the fake repository's files (so they are from its session), lets B
      // flip, and exits: its exit check races the flips. Again until an exit check has found the fake
      // repository (a walk that meets only the symlink finds nothing to move), up to 3 minutes.
      const touch = "for f in d/w/.git/config d/x/.git/config d/w/.git/hooks/* d/x/.git/hooks/*; do " +
        "touch $f 2>/dev/null; done; touch go; while [ ! -e flipping ]; do sleep 0.01; done";
      let found = false;
      let last = "";
      for (const end = Date.now() + 180_000; !found && Date.now() < end;) { // at load a try takes long
        const a = await hallpass(["--no-ask", "--", "/bin/sh", "-c", touch], {
          cwd: s.project,
          timeoutMs: 60_000,
        });
        last = a.stderr;
        found = /d\/[wx]\/\.git\/(hooks|config)/.test(a.stderr);
      }
      await Deno.writeTextFile(`${s.project}/stop`, "");
      const bo = await b.output();
      const bout = new TextDecoder().decode(bo.stdout);
      assert(
        /flips [1-9]/.test(bout),
        `session B did not flip: ${bout} ${new TextDecoder().decode(bo.stderr)}`,
      );
      assert(found, `no exit check found the repository: ${last}`);

      const left = [...Deno.readDirSync(`${theirs}/.git/hooks`)].map((e) => e.name).filter((n) =>
        !n.endsWith(".sample")
      ).sort();
      assertEquals(left, names.sort(), "the person's hooks were moved aside outside the project");
      assert(await exists(`${theirs}/.git/config`), "the person's repository config was moved aside");
    } finally {
      await s.cleanup();
    }
  },
});

/**
 * Session B's program for the lease case: rewrites the repository's config once session A runs (so it is
 * "changed during the session"), holds a write lease on it and ignores the SIGIO of a lease break: an open by
 * anyone else then waits for /proc/sys/fs/lease-break-time (45 s by default). A FIFO flipped in between the
 * check's lstat and its open held the exit forever the same way (by hand: 2 of 6 exits).
 */
const LEASER = `
import fcntl, os, signal, sys, time
signal.signal(signal.SIGIO, signal.SIG_IGN)
p = sys.argv[1]
while not os.path.exists(p + "/go"):
    time.sleep(0.01)
c = p + "/d/r/.git/config"
with open(c, "w") as f:
    f.write('[core]\\n\\tfsmonitor = "x"\\n')
fd = os.open(c, os.O_RDONLY)
fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
open(p + "/leased", "w").close()
while not os.path.exists(p + "/stop"):
    time.sleep(0.05)
`;

test({
  // The sandbox cannot take a lease (fcntl F_SETLEASE is refused: tests/e2e/sys_calls_test.ts); any other
  // process of the person's can, on a config a session wrote: the exit check's read must not wait for it.
  name:
    "a lease held on a repository's config (by a process outside the sandbox) never holds hallpass's exit",
  ignore: [tool("/usr/bin/python3"), tool("git")],
  async fn() {
    const s = await scratch();
    try {
      const g = `${s.project}/d/r/.git`;
      for (const d of ["objects", "refs", "hooks"]) await Deno.mkdir(`${g}/${d}`, { recursive: true });
      await Deno.writeTextFile(`${g}/HEAD`, "ref: refs/heads/main\n");
      await Deno.writeTextFile(`${g}/config`, "[core]\n\tx = 1\n");
      await Deno.writeTextFile(`${s.outside}/lease.py`, LEASER);
      const b = new Deno.Command("/usr/bin/python3", {
        args: [`${s.outside}/lease.py`, s.project],
        cwd: s.project,
        stdout: "null",
        stderr: "piped",
      }).spawn();
      try {
        const start = Date.now();
        const a = await hallpass(
          ["--no-ask", "--", "/bin/sh", "-c", "touch go; while [ ! -e leased ]; do sleep 0.01; done"],
          { cwd: s.project, timeoutMs: 40_000 },
        );
        assertEquals(
          a.code,
          0,
          `hallpass did not exit in ${Date.now() - start} ms (held by the lease): ${a.stderr}`,
        );
        assert(a.stderr.includes("d/r/.git/config"), `the config was not checked: ${a.stderr}`);
      } finally {
        await Deno.writeTextFile(`${s.project}/stop`, "");
        await b.output();
      }
    } finally {
      await s.cleanup();
    }
  },
});
