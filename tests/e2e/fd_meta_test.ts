/**
 * Metadata calls on an fd (docs/threat-model.md, "Writes"): fchmod, fchown and futimens act on whatever file
 * the fd names, and neither seccomp (which sees a number) nor Landlock (which has no right for them) can tell
 * which; the supervisor (fast path or mediator) decides on the file itself, on its own copy of the fd. Each
 * attack here is a way to hold an fd of a file outside the project — opened read-only, dup'd, re-opened
 * through /proc, inherited (`--keep-fds`), received over a socket, or swapped in at the number while another
 * thread calls — plus the setuid/setgid bits on a file the sandbox may write. Judged from outside (the files'
 * mode, owner, times); each has a bare control that shows the attack works without hallpass. Both engines.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, HALLPASS_ARGV, isRoot, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { engine as engineOf, engineRunner, ENGINES } from "./engine.ts";

const ignore = [tool("python3")];
const PY = "/usr/bin/python3";
/** hallpass's argv for a shell command line (the inherited and received cases start it from a shell). */
const HALLPASS_SH = HALLPASS_ARGV.map((a) => `'${a}'`).join(" ");

/**
 * The sandboxed program: argv[1] the attack, argv[2] the outside file, argv[3] a file in the project. Prints
 * one "NAME=0" (done) or "NAME=ERRNO" line per call it makes. "race" prints the counts of its two outcomes.
 */
const ATTACKS = String.raw`
import os, sys, socket, threading, time
what, out, proj = sys.argv[1], sys.argv[2], sys.argv[3]
def t(name, f):
    try:
        f(); print(name + "=0")
    except OSError as e:
        print(name + "=" + str(e.errno))
def meta(name, fd):
    t(name + "-fchmod", lambda: os.fchmod(fd, 0o777))
    t(name + "-futimens", lambda: os.utime(fd, (1, 1)))
    if os.getuid() == 0: t(name + "-fchown", lambda: os.fchown(fd, 4242, 4242))
if what == "readonly":
    meta("ro", os.open(out, os.O_RDONLY))
elif what == "dup":
    fd = os.open(out, os.O_RDONLY)
    meta("dup", os.dup(fd))
    t("proc-chmod", lambda: os.chmod("/proc/self/fd/%d" % fd, 0o777))
    meta("reopen", os.open("/proc/self/fd/%d" % fd, os.O_RDONLY))
elif what == "inherited":
    meta("ro3", 3)
    meta("wr4", 4)
elif what == "received":
    s = socket.socket(fileno=9)
    msg, anc, flags, addr = s.recvmsg(1, socket.CMSG_LEN(4))
    fd = int.from_bytes(anc[0][2][:4], "little")
    meta("scm", fd)
elif what == "setid":
    fd = os.open(proj, os.O_WRONLY)
    t("setuid", lambda: os.fchmod(fd, 0o4755))
    t("setgid", lambda: os.fchmod(fd, 0o2755))
    t("plain", lambda: os.fchmod(fd, 0o700))
elif what == "race":
    p = os.open(proj, os.O_WRONLY)
    o = os.open(out, os.O_RDONLY)
    N = 100
    os.dup2(p, N)
    stop = False
    started = threading.Event()
    def flip():
        started.set()
        while not stop:
            os.dup2(o, N); os.dup2(p, N)
    th = threading.Thread(target=flip); th.start(); started.wait()
    done = refused = 0
    end = time.time() + 60
    while time.time() < end and not (done and refused):
        try:
            os.fchmod(N, 0o777 if done % 2 == 0 else 0o700); done += 1
        except OSError:
            refused += 1
        if os.stat(out).st_mode & 0o777 == 0o777: break
    stop = True; th.join()
    print("done=%d refused=%d" % (done, refused))
`;

const T0 = 1_500_000_000;

async function plant(file: string): Promise<void> {
  await Deno.writeTextFile(file, "orig");
  await Deno.chmod(file, 0o644);
  await Deno.utime(file, T0, T0);
}

async function state(file: string) {
  const s = await Deno.stat(file);
  return { mode: s.mode! & 0o7777, uid: s.uid, mtime: s.mtime!.getTime() / 1000 };
}

/** The command line that runs an attack, given the run's prefix (nothing for bare, hallpass's argv). */
function command(what: string, out: string, proj: string, prefix: string): string[] {
  const run = `${prefix} ${PY} -c "$0" ${what} ${out} ${proj}`;
  if (what === "inherited") return ["sh", "-c", `exec 3<${out} 4>>${out}; ${run}`, ATTACKS];
  if (what === "received") {
    // An outside process sends the program an fd of the outside file over a socket pair it inherited.
    const sender = String.raw`
import os, socket, subprocess, sys
a, b = socket.socketpair()
os.dup2(b.fileno(), 9)
p = subprocess.Popen(["sh", "-c", sys.argv[1], sys.argv[2]], pass_fds=(9,))
os.close(9); b.close()
fd = os.open(sys.argv[3], os.O_RDONLY)
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd.to_bytes(4, "little"))])
sys.exit(p.wait())
`;
    return [PY, "-c", sender, run, ATTACKS, out];
  }
  return ["sh", "-c", run, ATTACKS];
}

const OUTSIDE_CASES: [string, string[]][] = [
  ["an fd opened read-only", ["readonly"]],
  ["a dup'd fd and the fd re-opened through /proc/self/fd", ["dup"]],
  ["fds inherited with --keep-fds (read-only and for appending)", ["inherited"]],
  ["an fd received over a socket (SCM_RIGHTS)", ["received"]],
];

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "fd metadata");
  /** A command line that starts hallpass itself (it passes fds on), checked as engineRunner does. */
  const hpShell = async (what: string, out: string, proj: string, cwd: string) => {
    const e = await engineOf(fast, "fd metadata");
    const r = await bare(command(what, out, proj, `${HALLPASS_SH} --no-ask -q --keep-fds --`), {
      cwd,
      env: { ...Deno.env.toObject(), ...e.env },
    });
    await e.check();
    return r;
  };
  for (const [name, [what]] of OUTSIDE_CASES) {
    test({
      name: `fd metadata (${engine}): ${name} of a file outside changes nothing outside`,
      ignore,
      fn: async () => {
        const s = await scratch();
        try {
          const out = `${s.outside}/file`, proj = `${s.project}/mine`;
          await plant(out);
          await plant(proj);
          const before = await state(out);
          // Control: without hallpass every call changes the outside file.
          const c = await bare(command(what, out, proj, ""), { cwd: s.project });
          assert(/=0$/m.test(c.stdout), `control: ${c.stdout}${c.stderr}`);
          assert(!/=[1-9]/.test(c.stdout), `control: ${c.stdout}${c.stderr}`);
          const changed = await state(out);
          assert(changed.mode === 0o777 && changed.mtime === 1, `control: ${JSON.stringify(changed)}`);
          await plant(out);
          if (isRoot()) await Deno.chown(out, 0, 0);
          const r = what === "inherited" || what === "received"
            ? await hpShell(what, out, proj, s.project)
            : await hp(["--no-ask", "-q", "--", ...command(what, out, proj, "")], { cwd: s.project });
          assert(/=[1-9]/.test(r.stdout), `${r.stdout}${r.stderr}`);
          assert(!/=0$/m.test(r.stdout), `a call succeeded: ${r.stdout}${r.stderr}`);
          assertEquals(await state(out), before);
        } finally {
          await s.cleanup();
        }
      },
    });
  }

  test({
    name:
      `fd metadata (${engine}): fchmod with setuid/setgid on a project file is refused, a plain mode is not`,
    ignore,
    fn: async () => {
      const s = await scratch();
      try {
        const proj = `${s.project}/mine`;
        await plant(proj);
        const c = await bare(command("setid", "/nonexistent", proj, ""), { cwd: s.project });
        assertEquals(c.stdout, "setuid=0\nsetgid=0\nplain=0\n", c.stderr);
        await plant(proj);
        const r = await hp(["--no-ask", "-q", "--", ...command("setid", "/nonexistent", proj, "")], {
          cwd: s.project,
        });
        assert(/^setuid=[1-9]/m.test(r.stdout) && /^setgid=[1-9]/m.test(r.stdout), r.stdout + r.stderr);
        assert(/^plain=0$/m.test(r.stdout), r.stdout + r.stderr);
        assertEquals((await state(proj)).mode, 0o700);
      } finally {
        await s.cleanup();
      }
    },
  });

  test({
    name: `fd metadata (${engine}): the fd number swapped between a project file and an outside one while ` +
      `another thread calls fchmod`,
    ignore,
    fn: async () => {
      const s = await scratch();
      try {
        const out = `${s.outside}/file`, proj = `${s.project}/mine`;
        await plant(out);
        await plant(proj);
        // Control: without hallpass the race reaches the outside file.
        const c = await bare(command("race", out, proj, ""), { cwd: s.project, timeoutMs: 120_000 });
        assertEquals((await state(out)).mode, 0o777, `control: ${c.stdout}${c.stderr}`);
        await plant(out);
        const before = await state(out);
        const r = await hp(["--no-ask", "-q", "--", ...command("race", out, proj, "")], {
          cwd: s.project,
          timeoutMs: 120_000,
        });
        // Both outcomes happened: the project file's mode was changed, the outside file's was refused.
        const m = /done=(\d+) refused=(\d+)/.exec(r.stdout);
        assert(m && Number(m[1]) > 0 && Number(m[2]) > 0, `the race did not happen: ${r.stdout}${r.stderr}`);
        assertEquals(await state(out), before);
      } finally {
        await s.cleanup();
      }
    },
  });
}
