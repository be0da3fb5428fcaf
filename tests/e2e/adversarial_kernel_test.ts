/**
 * docs/threat-model.md "Other processes, keyrings, ioctls and system-wide calls" and "The terminal", attacked the way a hostile program would, with tests/helpers/adversary.c:
 * system calls the filter must refuse outright, foreign ABIs, terminal injection, namespaces, signals and
 * ptrace aimed at hallpass and its launcher, and the supervisor killed mid-run.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileHelper, exists, hallpass, HALLPASS_ARGV, isRoot, scratch, waitFor } from "./harness.ts";
import { landlockAbi, probe, probeAsync, step, test, tool } from "../helpers/skip.ts";

function lines(out: string): Record<string, string> {
  const m: Record<string, string> = {};
  for (const l of out.split("\n")) {
    const [k, ...v] = l.split(" ");
    if (k) m[k] = v.join(" ");
  }
  return m;
}

/**
 * Controls, run first and without hallpass: does this kernel have the ABI at all? Where it does not, the
 * test that needs it is reported skipped with the reason (HALLPASS_TEST_MISSING=ia32,x32,io_uring forces it).
 */
async function control(what: string, ok: RegExp): Promise<string | undefined> {
  const adv = await compileHelper("adversary");
  const dir = await Deno.makeTempDir({ prefix: "hallpass-control-" });
  try {
    const out = await new Deno.Command(adv, { args: [what, `${dir}/f`], stdout: "piped", stderr: "piped" })
      .output();
    const text = new TextDecoder().decode(out.stdout).trim();
    if (ok.test(text) && await exists(`${dir}/f`)) return undefined;
    return `this kernel lacks it (without hallpass: ${
      text.replaceAll("\n", ", ") || (out.signal ? `killed by ${out.signal}` : `exit ${out.code}, no output`)
    })`;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
const ia32 = await probeAsync(
  "ia32",
  async () =>
    Deno.build.arch !== "x86_64"
      ? `IA-32 int 0x80 exists only on x86_64 (this is ${Deno.build.arch})`
      : (await control("int80", /^int80-open OK/m))?.replace("this kernel lacks it", "no IA-32 emulation"),
);
const x32 = await probeAsync(
  "x32",
  async () =>
    Deno.build.arch !== "x86_64"
      ? `the x32 ABI exists only on x86_64 (this is ${Deno.build.arch})`
      : (await control("x32", /^x32-openat OK/m))?.replace("this kernel lacks it", "no x32 ABI"),
);
const ioUring = await probeAsync("io_uring", async () => {
  const adv = await compileHelper("adversary");
  const out = await new Deno.Command(adv, { args: ["io_uring"], stdout: "piped" }).output();
  const text = new TextDecoder().decode(out.stdout).trim();
  return /^io_uring_setup OK/m.test(text)
    ? undefined
    : `io_uring unavailable here (without hallpass: ${text})`;
});

// Without hallpass, may a process make a user namespace (the control for the namespace test)?
const userns = await probeAsync("userns", async () => {
  const adv = await compileHelper("adversary");
  const dir = await Deno.makeTempDir({ prefix: "hallpass-control-" });
  try {
    const out = await new Deno.Command(adv, { args: ["unshare", dir], stdout: "piped" }).output();
    const m = lines(new TextDecoder().decode(out.stdout));
    return m["unshare-user"] === "OK"
      ? undefined
      : `no user namespaces here without hallpass (${m["unshare-user"]})`;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
// Signals to processes outside the sandbox are refused by Landlock's signal scope.
const signalScope = await landlockAbi(6, "the signal scope");
// Yama (kernel.yama.ptrace_scope) already forbids a non-root process to ptrace its ancestors: then the
// ptrace/pidfd_getfd/mem parts would pass without hallpass.
const ancestorPtrace = probe("yama", () => {
  let scope = 0;
  try {
    scope = Number(Deno.readTextFileSync("/proc/sys/kernel/yama/ptrace_scope").trim());
  } catch { /* no Yama */ }
  if (scope >= 3 || (scope >= 1 && !isRoot())) {
    return `Yama ptrace_scope=${scope} already forbids ptrace of an ancestor without hallpass`;
  }
  return undefined;
});

async function runAdversary(cwd: string, ...a: string[]): Promise<Record<string, string>> {
  const adv = await compileHelper("adversary");
  return lines((await hallpass(["--no-ask", "-q", "--", adv, ...a], { cwd })).stdout);
}

Deno.test("always-denied calls: openat2, open_by_handle_at, userfaultfd", async () => {
  const s = await scratch();
  try {
    // Targets inside the project: the kernel would allow these writes, so only the filter stops them.
    assertEquals(await runAdversary(s.project, "openat2", `${s.project}/o2`), { openat2: "ENOSYS" });
    const h = await runAdversary(s.project, "open_by_handle_at", `${s.outside}`);
    assertEquals(h.open_by_handle_at, "EPERM");
    assertEquals(await runAdversary(s.project, "userfaultfd"), {
      userfaultfd: "EPERM",
      "userfaultfd-user": "EPERM",
    });
    assert(!(await exists(`${s.project}/o2`)), "o2 was created in the project");
  } finally {
    await s.cleanup();
  }
});

test({ name: "always-denied calls: io_uring_setup is ENOSYS", ignore: ioUring }, async () => {
  const s = await scratch();
  try {
    assertEquals(await runAdversary(s.project, "io_uring"), { io_uring_setup: "ENOSYS" });
  } finally {
    await s.cleanup();
  }
});

test({ name: "foreign ABI: x32 openat and mkdir are ENOSYS, nothing created", ignore: x32 }, async () => {
  const s = await scratch();
  try {
    for (const dir of [s.outside, s.project]) {
      assertEquals(await runAdversary(s.project, "x32", `${dir}/x32`), {
        "x32-openat": "ENOSYS",
        "x32-mkdir": "ENOSYS",
      });
      assert(!(await exists(`${dir}/x32`)), `x32 was created in ${dir}`);
    }
  } finally {
    await s.cleanup();
  }
});

test(
  { name: "foreign ABI: IA-32 int 0x80 open and mkdir are ENOSYS, nothing created", ignore: ia32 },
  async () => {
    const s = await scratch();
    try {
      for (const dir of [s.outside, s.project]) {
        assertEquals(await runAdversary(s.project, "int80", `${dir}/i80`), {
          "int80-open": "ENOSYS",
          "int80-mkdir": "ENOSYS",
        });
        assert(!(await exists(`${dir}/i80`)), `i80 was created in ${dir}`);
      }
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test("terminal injection: TIOCSTI and TIOCLINUX, also with high bits set, are EPERM", async () => {
  const adv = await compileHelper("adversary");
  const s = await scratch();
  try {
    const r = await hallpass(["--no-ask", "-q", "--", adv, "tiocsti", "0"], { cwd: s.project, stdin: "" });
    assertEquals(lines(r.stdout), {
      tiocsti: "EPERM",
      "tiocsti-highbits": "EPERM",
      tioclinux: "EPERM",
      "tioclinux-highbits": "EPERM",
    });
  } finally {
    await s.cleanup();
  }
});

test(
  { name: "terminal injection on a real terminal (script(1)): still EPERM", ignore: tool("script") },
  async () => {
    const adv = await compileHelper("adversary");
    const s = await scratch();
    try {
      const cmd = [
        ...HALLPASS_ARGV,
        "--no-ask",
        "-q",
        "--",
        adv,
        "tiocsti",
        "0",
      ]
        .map((a) => `'${a}'`).join(" ");
      const out = await new Deno.Command("script", {
        args: ["-qec", cmd, "/dev/null"],
        cwd: s.project,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout).replaceAll("\r", "");
      assert(text.includes("tiocsti EPERM"), text);
      assert(text.includes("tiocsti-highbits EPERM"), text);
    } finally {
      await s.cleanup();
    }
  },
);

test({
  name: "namespaces: no user namespace (unshare, clone, clone3); no mounts even where unshare(NEWNS) works",
  ignore: userns,
}, async () => {
  const adv = await compileHelper("adversary");
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.outside}/mnt`);
    await Deno.writeTextFile(`${s.outside}/mnt/keep`, "keep");
    const r = lines(
      (await hallpass(["--no-ask", "-q", "--", adv, "unshare", `${s.outside}/mnt`], { cwd: s.project }))
        .stdout,
    );
    assertEquals(r["unshare-user"], "EPERM");
    assertEquals(r["clone-newuser"], "EPERM");
    assert(r["clone3-newuser"] === "ENOSYS" || r["clone3-newuser"] === "EPERM", r["clone3-newuser"]);
    // unshare(CLONE_NEWNS) is refused by the filter, root included (lib/filter/filter_sys.ts); Landlock would forbid
    // every mount anyway.
    assertEquals(r["unshare-ns"], "EPERM");
    assertEquals(r["mount-tmpfs"], "EPERM");
    assertEquals(r["mount-bind"], "EPERM");
    assertEquals(await Deno.readTextFile(`${s.outside}/mnt/keep`), "keep");
  } finally {
    await s.cleanup();
  }
});

Deno.test("hallpass and its launcher cannot be signalled, ptraced, pidfd'd or have their memory written", async (t) => {
  const adv = await compileHelper("adversary");
  const s = await scratch();
  try {
    const r = await hallpass(["--no-ask", "-q", "--", adv, "attack-ancestors"], { cwd: s.project });
    assertEquals(r.code, 0, r.stderr); // hallpass survived and reported the command's status
    const m = lines(r.stdout);
    for (const who of ["launcher", "hallpass"]) assert(Number(m[`${who}-pid`]) > 1, r.stdout);
    await step(t, { name: "kill and pidfd_send_signal: EPERM", ignore: signalScope }, () => {
      for (const who of ["launcher", "hallpass"]) {
        for (const k of ["kill0", "killTERM", "killKILL", "pidfd-signal"]) {
          assertEquals(m[`${who}-${k}`], "EPERM", `${who} ${k}: ${r.stdout}`);
        }
      }
    });
    await step(
      t,
      { name: "ptrace, pidfd_getfd: EPERM; /proc/PID/mem: EACCES", ignore: ancestorPtrace },
      () => {
        for (const who of ["launcher", "hallpass"]) {
          for (const k of ["ptrace", "pidfd-getfd"]) {
            assertEquals(m[`${who}-${k}`], "EPERM", `${who} ${k}: ${r.stdout}`);
          }
          assertEquals(m[`${who}-memwrite`], "EACCES");
        }
      },
    );
  } finally {
    await s.cleanup();
  }
});

function procAlive(pid: number): boolean {
  try {
    const st = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) [ZX] /.test(st);
  } catch {
    return false;
  }
}

/** Pids of live processes whose command line mentions `marker`. */
function pidsMentioning(marker: string): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cl = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (cl.includes(marker) && procAlive(Number(e.name))) out.push(Number(e.name));
    } catch { /* gone */ }
  }
  return out;
}

Deno.test("supervisor killed with SIGKILL: every sandboxed process dies, a setsid double-forked one too; nothing writes after", async () => {
  const adv = await compileHelper("adversary");
  const s = await scratch();
  const helperDir = adv.slice(0, adv.lastIndexOf("/"));
  try {
    const ask = `${s.outside}/../slow-ask.sh`;
    await Deno.writeTextFile(ask, "#!/bin/sh\ncat >/dev/null\nsleep 30\necho once\n");
    await Deno.chmod(ask, 0o755);
    const pidfile = `${s.project}/daemon.pid`;
    const ticks = `${s.project}/ticks`;
    const script = `${adv} daemon ${pidfile} ${ticks}
      (echo pending > ${s.outside}/pending) &
      while :; do echo x >> ${s.project}/loop; sleep 0.05; done`; // the pending write waits for an answer
    const child = new Deno.Command(HALLPASS_ARGV[0], {
      args: [
        ...HALLPASS_ARGV.slice(1),
        "--ask-program",
        ask,
        "--allow-exec",
        `${helperDir}/**`,
        "--",
        "sh",
        "-c",
        script,
      ],
      cwd: s.project,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    assert(
      await waitFor(
        async () =>
          (await exists(pidfile)) && (await Deno.readTextFile(ticks).catch(() => "")).split("\n").length > 3,
        20_000,
      ),
      "the daemon never started",
    );
    const daemonPid = Number((await Deno.readTextFile(pidfile)).trim());
    assert(procAlive(daemonPid));
    const before = pidsMentioning(s.project);
    assert(before.length >= 2, `sandboxed processes: ${before}`);

    child.kill("SIGKILL");
    await child.status;
    const allDead = await waitFor(
      () => pidsMentioning(s.project).length === 0 && !procAlive(daemonPid),
      20_000, // dead is the promise, not how fast a loaded machine gets there
    );
    assert(
      allDead,
      `still alive after the supervisor died: ${pidsMentioning(s.project)} daemon ${procAlive(daemonPid)}`,
    );
    const t1 = await Deno.readTextFile(ticks);
    const l1 = await Deno.readTextFile(`${s.project}/loop`);
    await new Promise((r) => setTimeout(r, 500));
    assertEquals(await Deno.readTextFile(ticks), t1, "the daemon kept writing");
    assertEquals(await Deno.readTextFile(`${s.project}/loop`), l1, "the loop kept writing");
    assert(!(await exists(`${s.outside}/pending`)), "the pending write went through");
  } finally {
    await s.cleanup();
  }
});

// The supervisor reads every path from the real root. After a chroot into a directory the sandbox wrote, a
// root-run program's "/usr/bin/x" would be the jail's copy while the decision was about the system's: chroot is
// refused by the filter. (As root, the control shows the kernel would allow it.)
Deno.test("chroot is refused: paths always name the files that were decided", async () => {
  const s = await scratch();
  try {
    await Deno.mkdir(`${s.project}/jail`);
    const script = "import os, sys\ntry:\n    os.chroot(sys.argv[1]); print('chroot OK')\n" +
      "except OSError as e:\n    print('chroot errno', e.errno)";
    const r = await hallpass(
      ["--no-ask", "-q", "--", "/usr/bin/python3", "-c", script, `${s.project}/jail`],
      {
        cwd: s.project,
      },
    );
    assertEquals(r.stdout.trim(), "chroot errno 1", r.stderr);
    if (isRoot()) {
      const ctl = await new Deno.Command("/usr/bin/python3", {
        args: ["-c", script, `${s.project}/jail`],
        stdout: "piped",
      }).output();
      assertEquals(new TextDecoder().decode(ctl.stdout).trim(), "chroot OK");
    }
  } finally {
    await s.cleanup();
  }
});
