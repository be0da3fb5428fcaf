/**
 * Calls aimed at other processes, keyrings, file-changing ioctls, system-wide calls and root's capabilities
 * (lib/filter/filter_sys.ts, lib/supervisor/sys_calls.ts, the launcher's drop_capabilities; docs/threat-model.md).
 * Each effect is judged from outside the sandbox (/proc/PID/limits, the nice value, the affinity, lsattr, the
 * keyring searched by a process outside), with a control that runs the same probe without hallpass. As root
 * and as hallpass-test (tests/run_all.sh); the root-only parts say so.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileHelper, hallpass, isRoot, scratch } from "./harness.ts";
import { test } from "../helpers/skip.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };
const dec = new TextDecoder();
const probe = () => compileHelper("sysprobe", ["-pthread"]);

async function bareProbe(args: string[], cwd = "/"): Promise<string> {
  const out = await new Deno.Command(await probe(), { args, cwd, stdout: "piped", stderr: "piped" }).output();
  return dec.decode(out.stdout).trim();
}

async function inside(
  args: string[],
  cwd: string,
  extra: string[] = [],
): Promise<{ out: string; err: string }> {
  const r = await hallpass(["--no-ask", ...extra, "--", await probe(), ...args], { cwd, env: ENV });
  return { out: r.stdout.trim(), err: r.stderr };
}

/** A process outside the sandbox (a sleep of the test's own user), and what can be read of it. */
function outsider() {
  const child = new Deno.Command("sleep", { args: ["120"], stdout: "null", stderr: "null" }).spawn();
  const pid = child.pid;
  const status = () => Deno.readTextFileSync(`/proc/${pid}/status`);
  return {
    pid,
    fsize: () => /^Max file size\s+(\S+)/m.exec(Deno.readTextFileSync(`/proc/${pid}/limits`))![1],
    nice: () => Number(Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ")[16]),
    cpus: () => /^Cpus_allowed_list:\s*(\S+)/m.exec(status())![1],
    policy: () => Number(Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ")[38]),
    stop: async () => {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

Deno.test("calls that change another process: refused (EPERM) for a process outside, allowed for the sandbox's own", async () => {
  const s = await scratch();
  const o = outsider();
  const o2 = outsider();
  try {
    const before = { fsize: o.fsize(), nice: o.nice(), cpus: o.cpus(), policy: o.policy() };
    const cpu = Number(before.cpus.split(/[-,]/)[0]);
    const calls: [string, string[]][] = [
      ["prlimit", [String(o.pid), "0"]],
      ["nice", [String(o.pid), "19"]],
      ["nice-user", ["19"]],
      ["affinity", [String(o.pid), String(cpu)]],
      ["sched", [String(o.pid)]],
      ["ioprio", [String(o.pid), "7"]],
      ["pidfd", [String(o.pid)]],
      ["kcmp", [String(o.pid)]],
      ["madvise", [String(o.pid)]],
      ["migrate", [String(o.pid)]],
    ];
    for (const [call, args] of calls) {
      const r = await inside([call, ...args], s.project);
      assertEquals(r.out, "EPERM", `${call}: ${r.err}`);
    }
    // Judged from outside: nothing changed.
    assertEquals({ fsize: o.fsize(), nice: o.nice(), cpus: o.cpus(), policy: o.policy() }, before);
    // Control: the same calls without hallpass change a process outside (a second one, left as it was above).
    assertEquals(await bareProbe(["prlimit", String(o2.pid), "0"]), "ok");
    assertEquals(await bareProbe(["nice", String(o2.pid), "19"]), "ok");
    assertEquals([o2.fsize(), o2.nice()], ["0", 19]);
    // The sandbox's own processes: a child it forks is reniced as usual.
    assertEquals((await inside(["child-nice", "7"], s.project)).out, "ok 7");
  } finally {
    await o.stop();
    await o2.stop();
    await s.cleanup();
  }
});

Deno.test("keyrings: add_key refused (EPERM) unless --allow-keyring; the user's keyring is unchanged", async () => {
  const s = await scratch();
  const name = `hallpass-test-${crypto.randomUUID().slice(0, 8)}`;
  try {
    const r = await inside(["add-key", name], s.project);
    assertEquals(r.out, "EPERM", r.err);
    assert(r.err.includes("keyring"), r.err);
    // Judged from outside: no such key in the user keyring.
    const found = await bareProbe(["find-key", name]);
    assert(found !== "ok", found);
    const allowed = await inside(["add-key", name], s.project, ["--allow-keyring"]);
    assertEquals(allowed.out, "ok", allowed.err);
    assertEquals(await bareProbe(["find-key", name]), "ok");
  } finally {
    await s.cleanup();
  }
});

/** lsattr's flags of a file, from outside. */
async function attrs(p: string): Promise<string> {
  const out = await new Deno.Command("lsattr", { args: ["-d", p], stdout: "piped", stderr: "piped" })
    .output();
  return dec.decode(out.stdout).split(" ")[0];
}

Deno.test("file ioctls: FS_IOC_SETFLAGS/SETVERSION on a read-only fd outside are refused; in the project allowed", async () => {
  const s = await scratch();
  try {
    const out = `${s.outside}/victim`, mine = `${s.project}/mine`;
    await Deno.writeTextFile(out, "x");
    await Deno.writeTextFile(mine, "x");
    const before = await attrs(out);
    assertEquals((await inside(["setflags", out, "80" /* FS_NOATIME_FL: +A */], s.project)).out, "EPERM");
    assertEquals((await inside(["setversion", out, "7"], s.project)).out, "EPERM");
    assertEquals(await attrs(out), before);
    // In the project (the rules allow writing it): performed.
    assertEquals((await inside(["setflags", mine, "80"], s.project)).out, "ok");
    assert((await attrs(mine)).includes("A"), await attrs(mine));
    // Control: without hallpass the same read-only fd sets the flag on the outside file.
    assertEquals(await bareProbe(["setflags", out, "80"]), "ok");
    assert((await attrs(out)).includes("A"));
  } finally {
    await s.cleanup();
  }
});

Deno.test("file ioctls: a thread swapping the fd (dup2) for 3 s never gets the flag onto the outside file", async () => {
  const s = await scratch();
  try {
    const out = `${s.outside}/victim`, mine = `${s.project}/mine`;
    await Deno.writeTextFile(out, "x");
    await Deno.writeTextFile(mine, "x");
    const r = await inside(["setflags-race", mine, out, "3"], s.project, ["-q"]);
    assert(/^ok \d+/.test(r.out), r.err);
    assert(!(await attrs(out)).includes("A"), `the outside file got +A: ${await attrs(out)}`);
    assert((await attrs(mine)).includes("A"));
    // Control: without hallpass the swapped fd receives the flag.
    await bareProbe(["setflags-race", mine, out, "1"]);
    assert((await attrs(out)).includes("A"));
  } finally {
    await s.cleanup();
  }
});

Deno.test("system-wide calls are refused (EPERM), as root too", async () => {
  const s = await scratch();
  try {
    for (const call of ["reboot", "sethostname", "bpf", "syslog", "unshare-ns", "raw-socket"]) {
      assertEquals((await inside([call], s.project)).out, "EPERM", call);
    }
    assertEquals((await inside(["mknod-block", `${s.project}/blk`], s.project)).out, "EPERM");
  } finally {
    await s.cleanup();
  }
});

test({
  name: "root: the sandbox keeps only the file-work capabilities; reboot reaches the kernel without hallpass",
  ignore: isRoot() ? undefined : { reason: "needs root (the capability sets of a root-run sandbox)" },
}, async () => {
  const s = await scratch();
  try {
    const caps = (await inside(["caps"], s.project)).out;
    const KEEP = (1n << 0n) | (1n << 1n) | (1n << 3n) | (1n << 4n) | (1n << 5n) | (1n << 6n) | (1n << 7n) |
      (1n << 10n) | (1n << 29n);
    for (const set of ["CapBnd", "CapEff", "CapPrm"]) {
      const v = BigInt("0x" + new RegExp(`^${set}:\\s*([0-9a-f]+)`, "m").exec(caps)![1]);
      assertEquals(v, KEEP, `${set} ${v.toString(16)}`);
    }
    assert(/^CapAmb:\s*0+$/m.test(caps) && /^CapInh:\s*0+$/m.test(caps), caps);
    // Control: without hallpass, root's reboot with a bad magic reaches the kernel (EINVAL, not EPERM).
    assertEquals(await bareProbe(["reboot"]), "EINVAL");
    // chown of a file in the project (tar x restoring owners) still works.
    const r = await hallpass(["--no-ask", "--", "sh", "-c", "touch f && chown 1234:1234 f"], {
      cwd: s.project,
      env: ENV,
    });
    assertEquals(r.code, 0, r.stderr);
    assertEquals(Deno.statSync(`${s.project}/f`).uid, 1234);
  } finally {
    await s.cleanup();
  }
});

Deno.test("file leases: F_SETLEASE is refused (a read lease on a file outside would make its writers outside wait)", async () => {
  const s = await scratch();
  try {
    const victim = `${s.outside}/rc`;
    await Deno.writeTextFile(victim, "x\n");
    // A read lease on a file the program may only read; a writer outside then waits for the lease break.
    const py = `import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    print("leased")
except OSError as e:
    print("refused", e.errno)
fcntl.fcntl(os.open(sys.argv[2], os.O_RDONLY), fcntl.F_GETFL)  # other fcntl calls go on as before
print("getfl ok")`;
    const control = await new Deno.Command("/usr/bin/python3", {
      args: ["-c", py, victim, victim],
      stdout: "piped",
    })
      .output();
    assertEquals(
      new TextDecoder().decode(control.stdout),
      "leased\ngetfl ok\n",
      "control: the lease works bare",
    );
    const r = await hallpass(["--no-ask", "-q", "--", "/usr/bin/python3", "-c", py, victim, victim], {
      cwd: s.project,
    });
    assertEquals(r.stdout, "refused 13\ngetfl ok\n", r.stderr);
  } finally {
    await s.cleanup();
  }
});
