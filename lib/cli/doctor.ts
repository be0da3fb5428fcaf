/**
 * `hallpass doctor`: what this kernel and machine support, what is missing, and what to do about it.
 * Each check is a probe of the real thing (a system call, a library, the launcher), not a version guess.
 */
import { landlockAbi } from "../../ffi/landlock.ts";
import { notifSizes, userNotifAvailable } from "../../ffi/notify.ts";
import { libseccompVersion } from "../../ffi/seccomp.ts";
import { launcherPath } from "../sandbox/run.ts";
import { reportingStatusNow } from "../floor/refused_reads.ts";

/** The capabilities a root-run sandbox keeps (helper/launcher/launcher.c KEEP_CAPS). */
export const ROOT_KEEPS = [
  "CHOWN",
  "DAC_OVERRIDE",
  "FOWNER",
  "FSETID",
  "KILL",
  "SETGID",
  "SETUID",
  "NET_BIND_SERVICE",
  "AUDIT_WRITE",
];

export interface Check {
  name: string;
  ok: boolean;
  /** Not needed, but something is weaker without it. */
  optional?: boolean;
  value: string;
  /** What breaks without it, and what to do. */
  advice?: string;
}

function kernelAtLeast(rel: string, major: number, minor: number): boolean {
  const m = /^(\d+)\.(\d+)/.exec(rel);
  if (!m) return false;
  const [a, b] = [Number(m[1]), Number(m[2])];
  return a > major || (a === major && b >= minor);
}

export function runChecks(): Check[] {
  const checks: Check[] = [];
  const rel = Deno.osRelease();
  checks.push({
    name: "kernel",
    ok: kernelAtLeast(rel, 5, 19),
    value: `Linux ${rel} (${Deno.build.arch})`,
    advice: "hallpass needs Linux ≥ 5.19 (seccomp user notification with ADDFD and WAIT_KILLABLE_RECV)",
  });
  const abi = landlockAbi();
  checks.push({
    name: "Landlock",
    ok: abi >= 1,
    value: abi ? `ABI ${abi}` : "not available",
    advice: abi
      ? undefined
      : "the write floor needs Landlock: boot with lsm=...,landlock (CONFIG_SECURITY_LANDLOCK=y); hallpass refuses to run without it",
  });
  checks.push({
    name: "read protection",
    ok: abi >= 1,
    value: abi >= 1
      ? `credential files unreadable (Landlock ABI ${abi}): \`hallpass rules\` lists them`
      : "not enforced: no Landlock",
    advice: abi >= 1
      ? undefined
      : "SSH keys, cloud tokens and the rest of the list would be readable: Landlock (Linux ≥ 5.13) is needed",
  });
  if (abi >= 1) {
    // Whether a refused read can be named to the person (lib/floor/refused_reads.ts).
    const rs = reportingStatusNow(abi);
    checks.push({
      name: "refused reads reported",
      ok: rs.ok,
      optional: true,
      value: rs.ok
        ? "yes: from the kernel's audit records (one line each, and in the exit summary)"
        : `no: ${rs.why}`,
      advice: rs.ok
        ? undefined
        : "the program still gets EACCES, but hallpass cannot name the refused file; `hallpass rules read PATH` " +
          "names the rule (as root with audit on, hallpass names each)",
    });
    checks.push({
      name: "Landlock ABI ≥ 3 (truncate)",
      ok: abi >= 3,
      optional: true,
      value: abi >= 3 ? "yes" : "no",
      advice: abi >= 3
        ? undefined
        : "truncation of files outside the project is not refused by the kernel floor (Linux ≥ 6.2)",
    });
    checks.push({
      name: "Landlock ABI ≥ 6 (scoped IPC)", // signals and abstract unix sockets; a name fits its column (32)
      ok: abi >= 6,
      optional: true,
      value: abi >= 6 ? "yes" : "no",
      advice: abi >= 6
        ? undefined
        : "the sandbox can signal your other processes (hallpass included), and its connects to abstract unix " +
          "sockets rest on hallpass's decision alone; Linux ≥ 6.12 closes this",
    });
  }
  if (abi >= 1) {
    checks.push({
      name: "Landlock execute floor",
      ok: true,
      value: "in force under --no-ask (and without a terminal): only allowed programs can run",
      advice: undefined,
    });
  }
  checks.push({
    name: "root in the sandbox keeps",
    ok: true,
    value: `${ROOT_KEEPS.join(", ")} (no other capability; system-wide calls refused)`,
  });
  const notif = userNotifAvailable();
  const sizes = notif ? notifSizes() : null;
  checks.push({
    name: "seccomp user notification",
    ok: notif && sizes !== null && sizes.notif === 80 && sizes.resp === 24,
    value: sizes ? `yes (notif ${sizes.notif}, resp ${sizes.resp}, data ${sizes.data} bytes)` : "no",
    advice: "needed for every question; kernel ≥ 5.19 with CONFIG_SECCOMP_FILTER",
  });
  checks.push({
    name: "ADDFD (emulated opens)",
    ok: kernelAtLeast(rel, 5, 14),
    value: kernelAtLeast(rel, 5, 14) ? "yes" : "no",
    advice: "allowed writes outside the project are emulated with SECCOMP_IOCTL_NOTIF_ADDFD (Linux ≥ 5.14)",
  });
  let lsv = "missing";
  try {
    lsv = libseccompVersion();
  } catch {
    // not installed
  }
  checks.push({
    name: "libseccomp",
    ok: lsv !== "missing",
    value: lsv === "missing" ? "libseccomp.so.2 not found" : lsv,
    advice: "install it: apt-get install libseccomp2 (Debian/Ubuntu), dnf install libseccomp (Fedora)",
  });
  let launcher = "not found";
  let lok = false;
  try {
    const p = launcherPath();
    const out = new Deno.Command(p, { args: ["--version"], stdout: "piped", stderr: "piped" }).outputSync();
    lok = out.success;
    launcher = lok ? `${new TextDecoder().decode(out.stdout).trim()} (${p})` : `fails (${p})`;
  } catch (e) {
    launcher = `cannot run: ${(e as Error).message}`;
  }
  checks.push({ name: "launcher", ok: lok, value: launcher, advice: "rebuild with `make` (needs musl-gcc)" });
  let yama = "n/a";
  try {
    yama = Deno.readTextFileSync("/proc/sys/kernel/yama/ptrace_scope").trim();
  } catch {
    // no Yama
  }
  checks.push({
    name: "Yama ptrace_scope",
    ok: yama === "n/a" || Number(yama) <= 1,
    value: yama,
    advice:
      "ptrace_scope 2 or 3 stops hallpass reading the sandbox's arguments (process_vm_readv); set it to 1",
  });
  return checks;
}

export function essentialOk(checks: Check[]): boolean {
  return checks.every((c) => c.ok || c.optional);
}

export function formatChecks(checks: Check[]): string[] {
  const out: string[] = [];
  for (const c of checks) {
    const mark = c.ok ? "ok  " : c.optional ? "warn" : "FAIL";
    out.push(`${mark}  ${c.name.padEnd(32)} ${c.value}`);
    if (!c.ok && c.advice) out.push(`      → ${c.advice}`);
  }
  out.push(
    essentialOk(checks)
      ? "hallpass can run here."
      : "hallpass cannot run here: it refuses to run a command unprotected. Fix the FAIL lines above.",
  );
  return out;
}
