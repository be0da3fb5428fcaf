// The Kubernetes seccomp profile (lib/agent/profile.ts) against the workstation filter plan it is made from: the
// same calls trapped under the same argument conditions, the same calls refused with the same errno. Both are
// run through a small evaluator with libseccomp's semantics (entries for one call are OR-ed, the args of one
// entry AND-ed; masked-equal is (arg & value) == valueTwo), on sample arguments.
import assert from "node:assert/strict";
import {
  DEFAULT_LISTENER_PATH,
  notifiedSyscalls,
  type OciSeccompProfile,
  type OciSyscall,
  parseProfileMetadata,
  profileMetadata,
  profileSyscalls,
  seccompProfile,
} from "../lib/agent/profile.ts";
import { type FilterEntry, filterPlan } from "../lib/filter/filter_plan.ts";
import { NEW_SYSCALL_NUMBERS, WRITE_CALLS } from "../lib/filter/syscall_table.ts";

type Verdict = "allow" | "notify" | `errno ${number}`;
const U64 = (1n << 64n) - 1n;

/** What the profile does with one call: libseccomp's reading of the OCI entries. */
function evalProfile(p: OciSeccompProfile, name: string, args: readonly bigint[]): Verdict {
  assert.equal(p.defaultAction, "SCMP_ACT_ALLOW");
  const hits = new Set<Verdict>();
  for (const e of p.syscalls) {
    if (!e.names.includes(name)) continue;
    const all = (e.args ?? []).every((a) => {
      const x = args[a.index] & U64, v = BigInt(a.value), v2 = BigInt(a.valueTwo ?? 0);
      switch (a.op) {
        case "SCMP_CMP_MASKED_EQ":
          return (x & v) === v2;
        case "SCMP_CMP_EQ":
          return x === v;
        case "SCMP_CMP_NE":
          return x !== v;
        case "SCMP_CMP_LT":
          return x < v;
        case "SCMP_CMP_LE":
          return x <= v;
        case "SCMP_CMP_GT":
          return x > v;
        case "SCMP_CMP_GE":
          return x >= v;
      }
    });
    if (all) hits.add(e.action === "SCMP_ACT_NOTIFY" ? "notify" : `errno ${e.errnoRet ?? 1}`);
  }
  // Our profile never lets two actions match one call; libseccomp would then pick by precedence.
  assert.ok(hits.size <= 1, `${name}(${args.join(", ")}): several actions match: ${[...hits]}`);
  return hits.size === 0 ? "allow" : [...hits][0];
}

const nameOf = (s: string | number) =>
  typeof s === "string" ? s : Object.entries(NEW_SYSCALL_NUMBERS).find(([, n]) => n === s)![0];

/** What the workstation filter does with the same call (the plan, as lib/sandbox/run.ts hands it to libseccomp). */
function evalPlan(plan: readonly FilterEntry[], name: string, args: readonly bigint[]): Verdict {
  const hits = new Set<Verdict>();
  for (const e of plan) {
    if (nameOf(e.syscall) !== name) continue;
    const all = (e.args ?? []).every((a) =>
      a.op === "eq"
        ? (args[a.arg] & U64) === a.value
        : a.op === "ne"
        ? (args[a.arg] & U64) !== a.value
        : a.op === "gt"
        ? (args[a.arg] & U64) > a.value
        : (args[a.arg] & a.mask!) === a.value
    );
    if (all) hits.add(e.action.kind === "notify" ? "notify" : `errno ${e.action.errno}`);
  }
  assert.ok(hits.size <= 1);
  return hits.size === 0 ? "allow" : [...hits][0];
}

/** A JSON round trip: what a runtime reads from the file. */
const asRead = (p: OciSeccompProfile): OciSeccompProfile => JSON.parse(JSON.stringify(p));

const SAMPLES: bigint[] = [
  0n,
  ...Array.from({ length: 32 }, (_, b) => 1n << BigInt(b)),
  0xffffffffn,
  0xffffffff00000000n,
  U64,
  0x5412n,
  0x541cn,
  0x1_0000_5412n,
  0x10000011n,
  0o2000000n | 0o100n,
];
const args = (i: number, v: bigint) => Array.from({ length: 6 }, (_, j) => (j === i ? v : 0n));

Deno.test("the profile traps and refuses exactly what the workstation filter does, argument for argument", () => {
  for (const connect of [false, true]) {
    const plan = filterPlan({ mediateConnect: connect });
    const profile = asRead(seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH, connect }));
    const names = new Set([...plan.map((e) => nameOf(e.syscall)), "read", "write", "close", "connect"]);
    for (const name of names) {
      for (let i = 0; i < 6; i++) {
        for (const v of SAMPLES) {
          const a = args(i, v);
          assert.equal(
            evalProfile(profile, name, a),
            evalPlan(plan, name, a),
            `${name} with arg ${i} = 0x${v.toString(16)} (connect ${connect})`,
          );
        }
      }
    }
    // No call of the plan is missing from the profile (and the profile names nothing else).
    const inProfile = new Set(profile.syscalls.flatMap((e) => e.names));
    assert.deepEqual(inProfile, new Set(plan.map((e) => nameOf(e.syscall))));
  }
});

Deno.test("open and openat are trapped only when their flags can write", () => {
  const p = asRead(seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH }));
  const O_WRONLY = 0o1n, O_RDWR = 0o2n, O_CREAT = 0o100n, O_TRUNC = 0o1000n, O_APPEND = 0o2000n;
  const O_CLOEXEC = 0o2000000n, O_DIRECTORY = 0o200000n, O_NONBLOCK = 0o4000n, O_PATH = 0o10000000n;
  const cases: [string, bigint, Verdict][] = [
    ["O_RDONLY|O_CLOEXEC", O_CLOEXEC, "allow"],
    ["O_RDONLY", 0n, "allow"],
    ["O_RDONLY|O_DIRECTORY|O_NONBLOCK|O_CLOEXEC", O_DIRECTORY | O_NONBLOCK | O_CLOEXEC, "allow"],
    ["O_PATH", O_PATH, "allow"],
    ["O_RDONLY|O_APPEND (cannot write)", O_APPEND, "allow"],
    ["O_WRONLY", O_WRONLY, "notify"],
    ["O_RDWR|O_CREAT", O_RDWR | O_CREAT, "notify"],
    ["O_TRUNC only", O_TRUNC, "notify"],
    ["O_CREAT only", O_CREAT, "notify"],
    ["O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, "notify"],
    // The kernel reads flags as an int: high bits alone are still O_RDONLY, and a write bit below them counts.
    ["high 32 bits only", 0xffffffff00000000n, "allow"],
    ["high bits | O_WRONLY", 0xffffffff00000000n | O_WRONLY, "notify"],
  ];
  for (const [what, flags, want] of cases) {
    assert.equal(
      evalProfile(p, "openat", [0xffffff9cn, 0x1000n, flags, 0o644n, 0n, 0n]),
      want,
      `openat ${what}`,
    );
    assert.equal(evalProfile(p, "open", [0x1000n, flags, 0o644n, 0n, 0n, 0n]), want, `open ${what}`);
    // The flags are read from the right argument: write bits in another one change nothing.
    assert.equal(
      evalProfile(p, "openat", [O_WRONLY, O_RDWR, flags, O_TRUNC, 0n, 0n]),
      want,
      `openat ${what}`,
    );
  }
  assert.equal(evalProfile(p, "creat", [0x1000n, 0o644n, 0n, 0n, 0n, 0n]), "notify");
  assert.equal(evalProfile(p, "openat2", [0n, 0n, 0n, 0n, 0n, 0n]), "errno 38");
});

Deno.test("terminal injection, user namespaces and the bypasses are refused with the workstation's errno", () => {
  const p = asRead(seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH }));
  const CLONE_NEWUSER = 0x10000000n, CLONE_NEWNS = 0x20000n, SIGCHLD = 17n;
  const THREAD_FLAGS = 0x3d0f00n; // what pthread_create passes to clone
  const cases: [string, bigint[], Verdict][] = [
    ["ioctl", [0n, 0x5412n], "errno 1"], // TIOCSTI
    ["ioctl", [0n, 0x1_0000_5412n], "errno 1"], // high bits ignored by the kernel (CVE-2019-10063)
    ["ioctl", [0n, 0x541cn], "errno 1"], // TIOCLINUX
    ["ioctl", [0n, 0x5401n], "allow"], // TCGETS
    ["ioctl", [0n, 0x5413n], "allow"], // TIOCGWINSZ
    ["clone", [CLONE_NEWUSER | SIGCHLD], "errno 1"],
    ["clone", [THREAD_FLAGS], "allow"],
    ["clone", [SIGCHLD], "allow"],
    ["unshare", [CLONE_NEWUSER | CLONE_NEWNS], "errno 1"],
    ["unshare", [CLONE_NEWNS], "errno 1"],
    ["unshare", [0x400n /* CLONE_FILES */], "allow"],
    ["clone", [CLONE_NEWNS | SIGCHLD], "errno 1"],
    ["reboot", [0xfee1deadn, 0x28121969n, 0x1234567n], "errno 1"],
    ["bpf", [0n], "errno 1"],
    ["open_tree_attr", [0n], "errno 1"],
    ["keyctl", [0n], "notify"],
    ["add_key", [0n], "notify"],
    ["setpriority", [0n, 0n, 10n], "allow"], // self
    ["setpriority", [0n, 4321n, 10n], "notify"],
    ["setpriority", [2n, 0n, 10n], "errno 1"], // PRIO_USER
    ["setpriority", [0x1_0000_0001n, 0n, 10n], "errno 1"], // PRIO_PGRP, high bits ignored by the kernel
    ["prlimit64", [0n, 1n, 0x1000n], "allow"],
    ["prlimit64", [4321n, 1n, 0n, 0x1000n], "allow"], // reading another's limit
    ["prlimit64", [4321n, 1n, 0x1000n], "notify"],
    ["sched_setaffinity", [4321n, 8n, 0x1000n], "notify"],
    ["ioprio_set", [3n, 0n, 0n], "errno 1"], // IOPRIO_WHO_USER
    ["ioctl", [3n, 0x40086602n], "notify"], // FS_IOC_SETFLAGS
    ["ioctl", [3n, 0x1_4008_6602n], "notify"],
    ["ioctl", [3n, 0x80086601n], "allow"], // FS_IOC_GETFLAGS
    ["ioctl", [3n, 0x40049409n], "notify"], // FICLONE
    ["ioctl", [3n, 0xc0045877n], "errno 1"], // FIFREEZE
    ["clone3", [0x1000n, 88n], "errno 38"],
    ["setns", [3n, 0n], "errno 1"],
    ["io_uring_setup", [8n, 0x1000n], "errno 38"],
    ["io_uring_enter", [3n], "errno 38"],
    ["io_uring_register", [3n], "errno 38"],
    ["open_by_handle_at", [3n, 0x1000n, 0n], "errno 1"],
    ["userfaultfd", [0n], "errno 1"],
    ["setxattrat", [0n], "errno 38"],
    ["removexattrat", [0n], "errno 38"],
    ["file_setattr", [0n], "errno 38"],
    ["execve", [0x1000n, 0x2000n, 0x3000n], "notify"],
    ["execveat", [3n, 0x1000n], "notify"],
    ["bind", [3n, 0x1000n, 110n], "notify"],
    ["fchmodat2", [3n, 0x1000n, 0o755n, 0n], "notify"],
    ["read", [0n, 0x1000n, 10n], "allow"],
    ["write", [1n, 0x1000n, 10n], "allow"],
    ["connect", [3n, 0x1000n, 16n], "notify"], // local IPC is decided in every mode (lib/policy/socket_policy.ts)
    ["sendto", [3n, 0x1000n, 10n, 0n, 0n, 0n], "allow"], // send(2): the connected peer
    ["sendto", [3n, 0x1000n, 10n, 0n, 0x2000n, 16n], "notify"],
    ["listen", [3n, 5n], "allow"],
    ["socket", [40n, 1n, 0n], "allow"],
  ];
  for (const [name, a, want] of cases) {
    const full = [...a, ...Array(6 - a.length).fill(0n)];
    assert.equal(evalProfile(p, name, full), want, `${name}(${a.map((x) => "0x" + x.toString(16))})`);
  }
  const withConnect = asRead(seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH, connect: true }));
  for (const name of ["connect", "sendmsg", "sendmmsg"]) {
    assert.equal(evalProfile(withConnect, name, [3n, 0n, 0n, 0n, 0n, 0n]), "notify", name);
    assert.equal(evalProfile(p, name, [3n, 0n, 0n, 0n, 0n, 0n]), "notify", name);
  }
  assert.equal(evalProfile(withConnect, "listen", [3n, 5n, 0n, 0n, 0n, 0n]), "notify");
  // Under connect mediation sockets of undecided families and types are refused (lib/policy/socket_policy.ts).
  for (
    const a of [[40n, 1n, 0n], [17n, 3n, 0n], [2n, 3n, 255n], [2n, 1n, 132n], [16n, 3n, 2n], [
      2n | (1n << 32n),
      1n,
      0n,
    ]]
  ) {
    assert.equal(evalProfile(withConnect, "socket", [...a, 0n, 0n, 0n]), "errno 13", `socket(${a})`);
  }
  for (const a of [[1n, 1n, 0n], [2n, 1n, 0n], [10n, 2n, 17n], [16n, 3n, 0n], [2n, 0x80801n, 6n]]) {
    assert.equal(evalProfile(withConnect, "socket", [...a, 0n, 0n, 0n]), "allow", `socket(${a})`);
  }
});

Deno.test("every write call of the syscall table is trapped, and every trapped call is named for the agent", () => {
  for (const connect of [false, true]) {
    const p = seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH, connect });
    const notified = notifiedSyscalls({ connect });
    const fromProfile = new Set(
      p.syscalls.filter((e) => e.action === "SCMP_ACT_NOTIFY").flatMap((e) => e.names),
    );
    assert.deepEqual(new Set(notified), fromProfile);
    assert.equal(new Set(notified).size, notified.length, "no name twice");
    for (const c of WRITE_CALLS) assert.ok(notified.includes(c.name), `${c.name} is not trapped`);
    for (const s of ["execve", "execveat", "bind", "openat", "fchmodat2"]) assert.ok(notified.includes(s), s);
    for (const s of ["read", "write", "close", "clone3"]) assert.ok(!notified.includes(s), s);
    assert.ok(notified.includes("connect") && notified.includes("sendmmsg") && notified.includes("sendto"));
    assert.equal(notified.includes("listen"), connect);
  }
  assert.deepEqual(notifiedSyscalls(), notifiedSyscalls({ connect: false }));
});

Deno.test("the profile's shape: allow by default, the two release architectures, the listener, safe numbers", () => {
  const p = seccompProfile({ listenerPath: "/run/x/agent.sock" });
  assert.equal(p.defaultAction, "SCMP_ACT_ALLOW");
  // 32-bit x86, x32 and 32-bit ARM are left out on purpose: their calls get the bad-architecture action.
  assert.deepEqual(p.architectures, ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"]);
  assert.equal(p.listenerPath, "/run/x/agent.sock");
  assert.equal(p.listenerMetadata, "hallpass/1 mediate=write,exec");
  for (const e of p.syscalls) {
    assert.ok(e.names.length > 0);
    assert.equal(e.errnoRet !== undefined, e.action === "SCMP_ACT_ERRNO", JSON.stringify(e));
    const idx = (e.args ?? []).map((a) => a.index);
    assert.equal(
      new Set(idx).size,
      idx.length,
      `${e.names}: one argument compared twice (runc would OR them)`,
    );
    for (const a of e.args ?? []) {
      assert.ok(Number.isSafeInteger(a.value) && Number.isSafeInteger(a.valueTwo ?? 0), JSON.stringify(a));
      assert.ok(a.index >= 0 && a.index <= 5);
    }
  }
  // Entries differing only by name are merged; the file stays short.
  const keys = p.syscalls.map((e) => JSON.stringify({ ...e, names: undefined }));
  assert.equal(new Set(keys).size, keys.length);
  assert.ok(p.syscalls.length < 80, `${p.syscalls.length} entries`);
  assert.throws(() => seccompProfile({ listenerPath: "agent.sock" }), /absolute/);
});

Deno.test("listenerMetadata says what the profile traps; a given one is passed through", () => {
  assert.equal(profileMetadata(), "hallpass/1 mediate=write,exec");
  assert.equal(profileMetadata({ connect: true }), "hallpass/1 mediate=write,exec,connect");
  assert.deepEqual(parseProfileMetadata(profileMetadata())?.mediate, new Set(["write", "exec"]));
  assert.deepEqual(
    parseProfileMetadata(profileMetadata({ connect: true }))?.mediate,
    new Set(["write", "exec", "connect"]),
  );
  for (
    const bad of [
      "",
      "hallpass/2 mediate=write,exec",
      "hallpass/1 mediate=write",
      "hallpass/1 mediate=write,exec,x",
    ]
  ) {
    assert.equal(parseProfileMetadata(bad), null, bad);
  }
  const p = seccompProfile({
    listenerPath: DEFAULT_LISTENER_PATH,
    listenerMetadata: "cluster=prod",
    connect: true,
  });
  assert.equal(p.listenerMetadata, "cluster=prod");
  assert.equal(
    seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH, connect: true }).listenerMetadata,
    profileMetadata({ connect: true }),
  );
});

Deno.test("what the OCI format cannot say exactly is refused, not written approximately", () => {
  const entry = (e: Partial<FilterEntry>): FilterEntry => ({
    syscall: "ioctl",
    action: { kind: "errno", errno: 1 },
    why: "test",
    ...e,
  });
  // Two comparisons of one argument: runc and crun would OR them.
  assert.throws(
    () =>
      profileSyscalls([entry({
        args: [
          { arg: 1, op: "masked_eq", mask: 0xffn, value: 1n },
          { arg: 1, op: "masked_eq", mask: 0xff00n, value: 0x100n },
        ],
      })]),
    /argument 1/,
  );
  // A value a JSON number cannot hold exactly.
  assert.throws(
    () => profileSyscalls([entry({ args: [{ arg: 0, op: "eq", value: 1n << 60n }] })]),
    /exactly/,
  );
  // A number with no name.
  assert.throws(() => profileSyscalls([entry({ syscall: 9999 })]), /9999/);
  // Numbers the plan uses for new calls come out as names; eq stays eq.
  const out: OciSyscall[] = profileSyscalls([
    entry({ syscall: 452, action: { kind: "notify" } }),
    entry({ args: [{ arg: 0, op: "eq", value: 7n }] }),
  ]);
  assert.deepEqual(out, [
    { names: ["fchmodat2"], action: "SCMP_ACT_NOTIFY" },
    {
      names: ["ioctl"],
      action: "SCMP_ACT_ERRNO",
      errnoRet: 1,
      args: [{ index: 0, value: 7, op: "SCMP_CMP_EQ" }],
    },
  ]);
});
