/**
 * Table tests of the write decision (lib/supervisor/decide.ts) and of the replay of the fast path's answers
 * (lib/supervisor/fast_replay.ts): every verdict (floor, allow, deny, ask), contents vs names, carved and
 * tainted floors, protected paths (one end and the `names` case), two-path ends, fd forms, exec and connect.
 */
import assert from "node:assert/strict";
import { Policy } from "../lib/policy/policy.ts";
import { parseRules } from "../lib/policy/rules_file.ts";
import { newGroupTable } from "../lib/policy/exec_groups.ts";
import type { PathScope, Rule } from "../lib/types.ts";
import { WRITE_CALLS } from "../lib/filter/syscall_table.ts";
import { taintedFloor } from "../lib/supervisor/fast_roots.ts";
import {
  decide,
  decideAnswered,
  decideConnect,
  type DecideContext,
  type Decision,
  execVerdict,
  inFloor,
  type Verdict,
  writeAnswer,
  writeVerdict,
} from "../lib/supervisor/decide.ts";
import {
  type BindRequest,
  type End,
  type ExecRequest,
  type ReadRequest,
  unreadableExec,
  type WriteRequest,
} from "../lib/supervisor/decode.ts";
import type { Notification } from "../ffi/notify.ts";
import type { ConnectTarget } from "../lib/policy/connect_dest.ts";
import type { NetKind } from "../lib/supervisor/connect.ts";
import { mediatorAnswer, replay, REPLAY_LOOK } from "../lib/supervisor/fast_replay.ts";
import type { ProtectedPath } from "../lib/policy/protected_paths.ts";

const BIN: Record<string, string> = { git: "/usr/bin/git" };

function rules(text: string): Rule[] {
  return parseRules(text, {
    file: "r",
    project: false,
    cwd: "/p",
    home: "/home/me",
    lookup: (p) => BIN[p] ?? null,
    now: Date.now(),
    groups: newGroupTable(),
  });
}

const RULES = rules(`
allow write /p/**
deny write /p/secret/**
allow write /out/ok
allow exec /usr/bin/**
deny exec /usr/bin/rm
`);
const FLOOR: PathScope[] = [
  { kind: "tree", path: "/p" },
  { kind: "tree", path: "/q" },
  { kind: "exact", path: "/dev/null" },
];
const PROTECTED: ProtectedPath[] = [
  { scope: { kind: "tree", path: "/q/.git/hooks" }, reason: "git runs this outside the sandbox" },
];
const RULES_Q = [...RULES, ...rules("allow write /q/**\nallow write /dev/null")];

function ctx(r: Rule[] = RULES_Q) {
  const policy = new Policy(r, { home: "/home/me", cwd: "/p", lookup: (p) => BIN[p] ?? null });
  return {
    policy,
    floor: FLOOR,
    tainted: taintedFloor(FLOOR, policy.pathEntries("write")),
    protected: PROTECTED,
    mediate: { exec: true, connect: true },
  };
}

Deno.test("inFloor: contents on the file or a tree above it; names need a tree strictly above", () => {
  const table: [string, boolean, boolean][] = [
    ["/q/a", true, true],
    ["/q/a", false, true],
    ["/q", true, true],
    ["/q", false, false], // the tree's own name is in its parent, outside it
    ["/dev/null", true, true],
    ["/dev/null", false, false],
    ["/qq/a", true, false], // a sibling that starts like the tree
    ["/elsewhere", true, false],
  ];
  for (const [path, contents, want] of table) {
    assert.equal(inFloor(FLOOR, path, contents), want, `${path} contents=${contents}`);
  }
});

Deno.test("writeVerdict: every verdict", () => {
  const c = ctx();
  const table: [string, boolean, boolean, Verdict][] = [
    ["/q/a/b", false, false, "floor"], // allowed, in an untainted floor tree
    ["/p/a", false, false, "allow"], // allowed, but /p holds a deny rule: performed, never continued
    ["/p/secret/k", true, false, "deny"],
    ["/out/ok", true, false, "allow"], // allowed outside the floor: performed
    ["/out/other", true, false, "ask"],
    ["/q", false, false, "allow"], // the floor tree's own name
    ["/dev/null", true, false, "floor"],
    ["/q/.git/hooks/pre-commit", true, false, "ask"], // protected: asks although a rule allows
    ["/q/.git", false, true, "ask"], // renaming a directory above a protected path
    ["/q/.git", false, false, "floor"], // ... but writing it by other calls does not touch it
  ];
  for (const [path, contents, names, want] of table) {
    assert.equal(writeVerdict(c, path, contents, names), want, path);
  }
});

Deno.test("writeAnswer: continue only for Landlock's calls, every end in the floor, no fd form", () => {
  const call = (n: string) => WRITE_CALLS.find((c) => c.name === n)!;
  const table: [string, Verdict[], boolean, string][] = [
    ["openat", ["floor"], false, "continue"],
    ["openat", ["allow"], false, "perform"],
    ["renameat2", ["floor", "floor"], false, "continue"],
    ["renameat2", ["floor", "allow"], false, "perform"], // one end outside the floor
    ["renameat2", ["floor", "ask"], false, "ask"],
    ["renameat2", ["ask", "deny"], false, "deny"], // a deny anywhere wins
    ["linkat", ["floor", "floor"], true, "perform"], // linkat(fd, "", AT_EMPTY_PATH): an fd form
    ["fchmodat", ["floor"], false, "perform"], // Landlock does not cover chmod
    ["fchmod", ["floor"], true, "perform"],
    ["unlinkat", ["deny"], false, "deny"],
  ];
  for (const [name, verdicts, fdForm, want] of table) {
    assert.equal(writeAnswer(call(name), verdicts, fdForm), want, `${name} ${verdicts}`);
  }
});

Deno.test("mediatorAnswer: the fast path's answers, one by one, through decide()", () => {
  const c = { ...ctx(), allowPrivileged: false, container: false, look: REPLAY_LOOK };
  const table: [string, string, string[], string][] = [
    ["openat", "continue", ["/q/f"], "continue"],
    ["openat", "continue", ["/p/f"], "perform"], // tainted floor
    ["openat", "continue", ["/dev/null"], "continue"],
    ["mkdirat", "continue", ["/q"], "perform"],
    ["renameat2", "continue", ["/q/a", "/q/b"], "continue"],
    ["renameat2", "continue", ["/q/a", "/out/x"], "ask (/out/x)"],
    ["renameat2", "continue", ["/q/a"], "1 paths for 2 ends"],
    ["fchmodat", "perform", ["/q/a"], "perform"],
    ["fchown", "perform", ["/q/a"], "perform"],
    ["utimensat", "perform", ["/p/secret/x"], "deny (/p/secret/x)"],
    ["execve", "exec", ["/usr/bin/git"], "exec"],
    ["execve", "exec", ["/usr/bin/rm"], "deny (/usr/bin/rm)"],
    ["execve", "exec", ["/usr/bin/env", "/opt/python"], "ask (/opt/python)"], // a script's interpreter
    [
      "execve",
      "exec",
      ["/usr/bin/ld-linux-x86-64.so.2"],
      // the policy: only a rule naming it
      "deny (/usr/bin/ld-linux-x86-64.so.2 (the dynamic loader as a program: allowed only by a rule naming it))",
    ],
    ["execve", "errno:2", ["/usr/bin/nothere"], "errno:2"],
    ["execve", "errno:1", ["/usr/bin/x"], "execve answered errno:1"],
    ["connect", "net", ["ip4 127.0.0.1 80"], "ask (ip4 127.0.0.1 80)"], // connects are mediated: the rules ask
    ["connect", "errno:2", ["unix /run/nscd/socket"], "errno:2"],
    ["mkdirat", "errno:2", ["/p/missing/x"], "errno:2"],
    ["openat", "errno:20", ["/p/file/x"], "errno:20"],
    ["openat", "errno:13", ["/p/x"], "openat answered errno:13"],
    ["connect", "errno:20", ["unix /etc/passwd/x"], "errno:20"],
    ["connect", "errno:13", ["unix /run/x"], "connect answered errno:13"],
    ["connect", "errno:2", ["ip4 127.0.0.1 80"], "connect answered errno:2"],
    ["bind", "bind", [], "bind"],
    ["chdir", "cwd", [], "cwd"],
    ["openat", "cwd", [], "openat is not a chdir"],
  ];
  for (const [syscall, answer, paths, want] of table) {
    assert.equal(mediatorAnswer(c, syscall, answer, paths), want, `${syscall} ${answer} ${paths}`);
  }
  const direct = { ...c, mediate: { exec: false, connect: false } };
  assert.equal(mediatorAnswer(direct, "connect", "net", ["ip4 127.0.0.1 80"]), "net");
  assert.equal(mediatorAnswer(direct, "sendto", "net", ["ip6 ::1 53"]), "net");
  assert.equal(mediatorAnswer(direct, "connect", "net", ["other"]), "net"); // the kernel refuses it on our copy
  // netlink to the kernel is performed; to another process or a group it is refused (EPERM) before deciding
  assert.equal(mediatorAnswer(direct, "sendto", "net", ["netlink 0 0"]), "net");
  assert.equal(mediatorAnswer(direct, "sendto", "net", ["netlink 4242 0"]), "errno:1");
  assert.equal(mediatorAnswer(direct, "sendmsg", "net", ["netlink 0 1"]), "errno:1");
  // a unix destination, or none recorded: the rules decide, never the fast path
  assert.equal(mediatorAnswer(direct, "connect", "net", ["unix /run/x"]), "the rules decide unix /run/x");
  assert.equal(mediatorAnswer(direct, "connect", "net", []), "the rules decide (no destination)");
  assert.equal(mediatorAnswer(direct, "execve", "exec", ["/usr/bin/rm"]), "exec"); // execs not mediated
  assert.equal(mediatorAnswer(direct, "execve", "errno:2", ["/usr/bin/nothere"]), "errno:2"); // the kernel's
  // decide()'s own rules, beyond the verdicts of the ends: a read-protected file carried to another name, a path
  // of another process
  const rp = { ...c, readProtected: { protect: ["/q/secret"], readable: [] } };
  assert.equal(
    mediatorAnswer(rp, "renameat2", "continue", ["/q/secret", "/q/x"]),
    "deny (a read-protected file: /q/secret → /q/x)",
  );
  assert.equal(mediatorAnswer(rp, "renameat2", "continue", ["/q/a", "/q/x"]), "continue");
  assert.equal(mediatorAnswer(c, "openat", "continue", ["/proc/1/root/q/a"]), "deny (/proc/1/root/q/a)");
});

/** A "C" line's JSON: the rules and floor of the tables above. */
function recordedContext(): string {
  return JSON.stringify({
    rules: RULES_Q,
    floor: FLOOR,
    protected: PROTECTED,
    home: "/home/me",
    cwd: "/p",
    pathEnv: "/usr/bin",
    mediate: { exec: true, connect: true },
  });
}

Deno.test("replay: context per hallpass process, and disagreements listed", () => {
  const context = recordedContext();
  const names = new Map([[257, "openat"], [59, "execve"]]);
  const text = [
    `C\t10\t${context}`,
    "F\t10\t257\tcontinue\t/q/a",
    "F\t10\t257\tcontinue\t/p/a",
    "F\t11\t257\tcontinue\t/q/a", // another process, without a context
    "F\t10\t59\texec\t/usr/bin/git",
    "",
  ].join("\n");
  const r = replay(text, names);
  assert.equal(r.answers, 4);
  assert.deepEqual(r.byAnswer, { continue: 3, exec: 1 });
  assert.equal(r.seen, 0);
  assert.equal(r.disagreements.length, 2);
  assert.match(r.disagreements[0], /openat \/p\/a: fast path continue, mediator perform/);
  assert.match(r.disagreements[1], /no context for hallpass 11/);
});

Deno.test("replay: a context cut short as hallpass exited, with the next record appended to it", () => {
  const context = recordedContext();
  const names = new Map([[257, "openat"]]);
  const text = [
    `C\t10\t${context}`,
    `C\t10\t${context.slice(0, 40)}F\t10\t257\tcontinue\t/p/a`, // cut, and the next answer right after
    "F\t10\t257\tcontinue\t/q/b",
    "S\t10\t2\t0\t0\t0",
    `C\t12\t${context.slice(0, 25)}`, // the last line: nothing after it
    "",
  ].join("\n");
  const r = replay(text, names);
  assert.equal(r.torn, 2);
  assert.equal(r.answers, 2);
  assert.equal(r.seen, 2);
  assert.deepEqual(r.disagreements, ["openat /p/a: fast path continue, mediator perform"]);
});

Deno.test("execVerdict: every verdict, scripts decided on their interpreters, anonymous programs ask", () => {
  const { policy } = ctx();
  const interp: Record<string, string> = {
    "/usr/bin/s1": "/usr/bin/python3", // allowed interpreter
    "/usr/bin/s2": "/opt/py", // an interpreter no rule allows
    "/usr/bin/s3": "/usr/bin/rm", // a denied interpreter
    "/usr/bin/s4": "/usr/bin/s1", // two levels
  };
  const of = (p: string) => interp[p] ?? null;
  const table: [string, boolean, string][] = [
    ["/usr/bin/git", false, "allow /usr/bin/git"],
    ["/usr/bin/rm", false, "deny /usr/bin/rm"],
    ["/opt/tool", false, "ask /opt/tool"],
    ["anon:/memfd:x (deleted)", true, "ask anon:/memfd:x (deleted)"],
    ["/usr/bin/s1", false, "allow /usr/bin/s1"],
    ["/usr/bin/s2", false, "ask /opt/py"],
    ["/usr/bin/s3", false, "deny /usr/bin/rm"],
    ["/usr/bin/s4", false, "allow /usr/bin/s4"],
  ];
  for (const [target, anon, want] of table) {
    const v = execVerdict(policy, target, anon, of);
    assert.equal(`${v.effect} ${v.at}`, want, target);
  }
  const loader = execVerdict(policy, "/usr/lib64/ld-linux-x86-64.so.2", false, of);
  assert.deepEqual(loader, { effect: "deny", at: "/usr/lib64/ld-linux-x86-64.so.2", loader: true });
});

// ---------------------------------------------------------------------------------------------------------------
// decide(): every op the mediator decides, every answer.

/** A DecideContext over ctx() with lookups from tables: what exists, /proc paths of other processes, scripts. */
function dctx(over: Partial<DecideContext> = {}): DecideContext {
  const c = ctx();
  const existing = new Set([
    "/q/there",
    "/out/there",
    "/q/dir",
    "/out/src",
    "/p/secret/old",
    "/dev/pts/3",
    "/dev/tty1",
  ]);
  const scripts: Record<string, string> = { "/usr/bin/s2": "/opt/py" };
  return {
    ...c,
    allowPrivileged: false,
    container: false,
    readProtected: { protect: ["/q/keys/id", "/home/me/.ssh"], readable: [] },
    look: {
      exists: (p) => existing.has(p),
      otherProcess: (p) => p.startsWith("/proc/1/"),
      interpreterOf: (p) => scripts[p] ?? null,
    },
    ...over,
  };
}

const notif = (args: number[] = []): Notification => {
  const a = [0n, 0n, 0n, 0n, 0n, 0n] as Notification["args"];
  args.forEach((v, i) => (a[i] = BigInt(v)));
  return { id: 1n, tid: 100, nr: 0, arch: 0, args: a };
};

function wreq(
  name: string,
  paths: string[],
  o: { flags?: number; args?: number[]; fd?: boolean; atFlags?: number } = {},
) {
  const call = WRITE_CALLS.find((c) => c.name === name)!;
  const ends: End[] = paths.map((p) =>
    p === "?"
      ? { path: "(a file name that is not UTF-8)", anon: false, unreadable: true }
      : p.startsWith("anon:")
      ? { path: p, anon: true }
      : { path: p, anon: false }
  );
  const req: WriteRequest = {
    op: "write",
    n: notif(o.args),
    call,
    ends,
    fdCopy: o.fd ? 99 : -1,
    flags: o.flags ?? 0,
    atFlags: o.atFlags ?? 0,
  };
  return req;
}

/** A decision in one short line, for the tables. */
function show(d: Decision): string {
  switch (d.answer) {
    case "continue":
      return d.at ? `continue ${d.at}` : "continue";
    case "perform":
      return `perform (${d.by})`;
    case "deny":
      return `deny${d.errno ? ` errno ${d.errno}` : ""}: ${d.shown}${d.suggest ? ` [${d.suggest}]` : ""}`;
    case "fail":
      return `fail ${d.errno}`;
    case "ask":
      return `ask ${d.end}${d.asking && d.asking > 1 ? ` (${d.asking} ends)` : ""}${d.warning ? " !" : ""}`;
    case "pty":
      return `pty, else ${show(d.otherwise)}`;
  }
}

const O_WRONLY = 0o1, O_RDWR = 0o2, O_CREAT = 0o100, O_EXCL = 0o200, O_TMPFILE = 0o20200000;

Deno.test("decide(write): every call kind and every answer", () => {
  const c = dctx();
  const table: [WriteRequest, string][] = [
    // continue: allowed, in an untainted floor tree, a call Landlock covers
    [wreq("openat", ["/q/a"], { flags: O_WRONLY | O_CREAT }), "continue"],
    [wreq("mkdirat", ["/q/d"]), "continue"],
    [wreq("unlinkat", ["/q/a"]), "continue"],
    [wreq("renameat2", ["/q/a", "/q/b"]), "continue"],
    [wreq("linkat", ["/q/a", "/q/b"]), "continue"],
    [wreq("symlinkat", ["/q/l"]), "continue"],
    [wreq("truncate", ["/q/a"]), "continue"],
    [wreq("mknodat", ["/q/fifo"], { args: [0, 0, 0o10644] }), "continue"],
    [wreq("openat", ["anon:pipe:[7]"], { flags: O_WRONLY }), "continue"], // a pipe through /proc/PID/fd
    // perform: allowed but Landlock does not cover the call, an fd form, a tainted floor, outside the floor
    [wreq("fchmodat", ["/q/a"], { args: [0, 0, 0o644] }), "perform (rule)"],
    [wreq("fchownat", ["/q/a"]), "perform (rule)"],
    [wreq("utimensat", ["/q/a"]), "perform (rule)"],
    [wreq("setxattr", ["/q/a"]), "deny errno 1: a security or trusted extended attribute: /q/a"], // name unread
    [wreq("removexattr", ["/q/a"]), "perform (rule)"],
    [wreq("fchmod", ["/q/a"], { fd: true, args: [0, 0o600] }), "perform (rule)"],
    [wreq("fchown", ["/q/a"], { fd: true }), "perform (rule)"],
    [wreq("linkat", ["/q/a", "/q/b"], { fd: true }), "perform (rule)"], // linkat(fd, "", …, AT_EMPTY_PATH)
    [wreq("openat", ["/p/a"], { flags: O_WRONLY }), "perform (rule)"], // /p holds a deny rule
    [wreq("openat", ["/out/ok"], { flags: O_WRONLY }), "perform (rule)"], // allowed outside the floor
    [wreq("renameat2", ["/q/a", "/out/ok"]), "perform (rule)"], // one end outside the floor
    [wreq("openat", ["/out/x"], { flags: O_TMPFILE | O_WRONLY }), "perform (unnamed temporary file)"],
    // deny: a rule, another process's /proc, privilege left behind, a read-protected file carried away
    [wreq("openat", ["/p/secret/k"], { flags: O_WRONLY }), "deny: /p/secret/k"],
    [wreq("renameat2", ["/q/a", "/p/secret/k"]), "deny: /q/a → /p/secret/k"],
    [wreq("renameat2", ["/p/secret/k", "/out/new"]), "deny: /p/secret/k → /out/new"], // deny beats ask
    [wreq("openat", ["/proc/1/mem"], { flags: O_WRONLY }), "deny: /proc/1/mem"],
    [wreq("fchmodat", ["/q/a"], { args: [0, 0, 0o4755] }), "deny errno 1: setuid/setgid bits: /q/a"],
    [
      wreq("openat", ["/q/a"], { flags: O_CREAT | O_WRONLY, args: [0, 0, O_CREAT | O_WRONLY, 0o2755] }),
      "deny errno 1: setuid/setgid bits: /q/a",
    ],
    [wreq("mknodat", ["/q/dev"], { args: [0, 0, 0o20644] }), "deny errno 1: a device node: /q/dev"],
    [wreq("renameat2", ["/q/keys/id", "/q/x"]), "deny: a read-protected file: /q/keys/id → /q/x"],
    [wreq("linkat", ["/q/keys", "/q/x"]), "deny: a read-protected file: /q/keys → /q/x"], // a directory holding one
    // an open that also reads a read-protected file, whatever the rules (only --allow-read lifts it)
    [
      wreq("openat", ["/q/keys/id"], { flags: O_RDWR }),
      "deny: opened for reading, a read-protected file: /q/keys/id",
    ],
    [
      wreq("openat", ["/q/keys/id"], { flags: O_CREAT }),
      "deny: opened for reading, a read-protected file: /q/keys/id",
    ],
    [wreq("openat", ["/q/keys/id"], { flags: O_WRONLY | O_CREAT }), "continue"], // writing only: Landlock's
    // fail: what would ask but cannot change anything, answered as the kernel would
    [wreq("mkdirat", ["/out/there"]), "fail 17"],
    [wreq("unlinkat", ["/out/gone"]), "fail 2"],
    [wreq("openat", ["/out/gone"], { flags: O_WRONLY }), "fail 2"],
    [wreq("openat", ["/out/there"], { flags: O_WRONLY | O_CREAT | O_EXCL }), "fail 17"],
    [wreq("renameat2", ["/out/gone", "/out/y"]), "fail 2"],
    [wreq("renameat2", ["/out/src", "/out/there"], { atFlags: 1 }), "fail 17"], // RENAME_NOREPLACE
    [wreq("renameat2", ["/out/src", "/out/none"], { atFlags: 2 }), "fail 2"], // RENAME_EXCHANGE
    [wreq("linkat", ["/q/a", "/out/there"]), "fail 17"],
    // ask: outside every rule; two ends; a protected path; another terminal
    [wreq("openat", ["/out/new"], { flags: O_WRONLY | O_CREAT }), "ask /out/new"],
    [wreq("renameat2", ["/out/src", "/out/y"]), "ask /out/y (2 ends)"],
    [wreq("renameat2", ["/out/src", "/q/y"]), "ask /out/src"], // only the source asks
    [
      wreq("openat", ["/q/.git/hooks/pre-commit"], { flags: O_WRONLY | O_CREAT }),
      "ask /q/.git/hooks/pre-commit !",
    ],
    [wreq("openat", ["/dev/tty1"], { flags: O_WRONLY }), "ask /dev/tty1 !"],
    [wreq("openat", ["/out/x"], { flags: O_WRONLY | O_CREAT, fd: false }), "ask /out/x"],
    // pty: the sandbox's own pty is performed, else what any other terminal gets
    [wreq("openat", ["/dev/pts/3"], { flags: O_WRONLY }), "pty, else ask /dev/pts/3 !"],
  ];
  for (const [req, want] of table) {
    assert.equal(show(decide(req, c)), want, `${req.call.name} ${req.ends.map((e) => e.path).join(" ")}`);
  }
  // Not UTF-8: only where Landlock decides anyway (no floor tree holds a deny rule), by a call it covers.
  assert.equal(show(decide(wreq("openat", ["?"]), dctx({ tainted: [] }))), "continue");
  assert.equal(show(decide(wreq("linkat", ["/q/a", "?"]), dctx({ tainted: [] }))), "continue");
  // ...but no directory made or renamed to such a name (the exit check could not look inside it)
  assert.equal(
    show(decide(wreq("renameat2", ["/q/a", "?"]), dctx({ tainted: [] }))),
    "deny: (a file name that is not UTF-8)",
  );
  assert.equal(
    show(decide(wreq("mkdirat", ["?"]), dctx({ tainted: [] }))),
    "deny: (a file name that is not UTF-8)",
  );
  assert.equal(show(decide(wreq("openat", ["?"]), c)), "deny: (a file name that is not UTF-8)"); // /p is tainted
  assert.equal(show(decide(wreq("fchmodat", ["?"]), c)), "deny: (a file name that is not UTF-8)");
  // --allow-privileged-files: an ordinary write; in a container, /dev/pts is the container's own.
  const priv = dctx({ allowPrivileged: true });
  assert.equal(show(decide(wreq("fchmodat", ["/q/a"], { args: [0, 0, 0o4755] }), priv)), "perform (rule)");
  assert.equal(
    show(decide(wreq("openat", ["/dev/pts/3"], { flags: O_WRONLY }), dctx({ container: true }))),
    "ask /dev/pts/3 !",
  );
});

Deno.test("decide(exec): continue, deny (a rule, the loader), ask (no rule, anonymous, an interpreter), fail", () => {
  const c = dctx();
  const ereq = (path: string, o: { anon?: boolean; runErrno?: number } = {}): ExecRequest => ({
    op: "exec",
    n: notif(),
    at: false,
    end: { path, anon: o.anon === true },
    runErrno: o.runErrno ?? 0,
  });
  const table: [ExecRequest, string][] = [
    [ereq("/usr/bin/git"), "continue /usr/bin/git"],
    [ereq("/usr/bin/rm"), "deny: /usr/bin/rm"],
    [
      ereq("/usr/lib64/ld-linux-x86-64.so.2"),
      "deny: /usr/lib64/ld-linux-x86-64.so.2 (the dynamic loader as a program: allowed only by a rule naming it) [/usr/lib64/ld-linux-x86-64.so.2]",
    ],
    [ereq("/opt/tool"), "ask /opt/tool"],
    [ereq("anon:/memfd:x (deleted)", { anon: true }), "ask anon:/memfd:x (deleted)"],
    [ereq("/usr/bin/s2"), "ask /opt/py"], // an allowed script whose interpreter no rule allows
    [ereq("/usr/bin/nothere", { runErrno: 2 }), "fail 2"],
    [unreadableExec(notif(), false), "deny: (a program name that is not UTF-8)"],
  ];
  for (const [req, want] of table) assert.equal(show(decide(req, c)), want, req.end.path);
});

Deno.test("decide(bind): a socket file is a write of a name", () => {
  const c = dctx();
  const breq = (path: string, exists = false, unreadable = false): BindRequest => ({
    op: "bind",
    n: notif(),
    end: { path, anon: false, unreadable },
    exists,
  });
  const table: [BindRequest, string][] = [
    [breq("/q/s.sock"), "perform (floor)"], // performed in the floor too: the sandbox's own socket is known
    [breq("/out/ok"), "perform (rule)"],
    [breq("/p/secret/s"), "deny: /p/secret/s"],
    [breq("/p/secret/s", true), "deny: /p/secret/s"], // denied before EADDRINUSE, as before
    [breq("/q/there", true), "fail 98"], // EADDRINUSE
    [breq("/out/s.sock"), "ask /out/s.sock"],
    [breq("(a socket path that is not UTF-8)", false, true), "deny: (a socket path that is not UTF-8)"],
  ];
  for (const [req, want] of table) assert.equal(show(decide(req, c)), want, req.end.path);
});

Deno.test("decide(read): a pod's protect profile: protected refused, everything else performed", () => {
  const open = WRITE_CALLS.find((c) => c.name === "openat")!;
  const c = dctx({
    container: true,
    readProtected: { protect: ["/secret", "/etc/shadow"], readable: ["/secret/public"] },
  });
  const rreq = (path: string, anon = false, unreadable = false): ReadRequest => ({
    op: "read",
    n: notif(),
    call: open,
    end: anon ? { path, anon, via: "/proc/7/fd/0" } : { path, anon, unreadable },
    flags: 0,
  });
  const table: [ReadRequest, string][] = [
    [rreq("/secret"), "deny: /secret"], // listing the directory too
    [rreq("/secret/key"), "deny: /secret/key"],
    [rreq("/secret/public"), "perform (read)"],
    [rreq("/secret/public/x"), "perform (read)"],
    [rreq("/etc/shadow"), "deny: /etc/shadow"],
    [rreq("/etc/shadowy"), "perform (read)"],
    [rreq("/etc/passwd"), "perform (read)"], // never continued: the path in memory could change
    [rreq("/"), "perform (read)"],
    [rreq("/proc/7/status"), "perform (read)"],
    [rreq("anon:pipe:[1]", true), "perform (read)"], // reopened through its /proc link
    [rreq("(a file name that is not UTF-8)", false, true), "deny: (a file name that is not UTF-8)"],
  ];
  for (const [req, want] of table) assert.equal(show(decide(req, c)), want, req.end.path);
});

Deno.test("decideConnect: performed, denied by a rule, asked", () => {
  const base = dctx({
    policy: new Policy(rules("allow connect 10.0.0.1:443\ndeny connect 10.0.0.2:443"), {
      home: "/home/me",
      cwd: "/p",
      lookup: () => null,
    }),
  });
  const tcp = (addr: string, port: number): ConnectTarget => ({ family: "inet", proto: "tcp", addr, port });
  const unix = (path: string): ConnectTarget => ({ family: "unix", path });
  const off = { ...base, mediate: { exec: true, connect: false } };
  const table: [string, NetKind, ConnectTarget | null, boolean, DecideContext, string][] = [
    ["no destination", "sendto", null, false, base, "perform (not a destination)"],
    ["loopback listener", "listen", tcp("127.0.0.1", 80), false, base, "perform (a loopback listener)"],
    ["own socket", "connect", unix("/q/s.sock"), true, base, "perform (the sandbox's own socket)"],
    [
      "not mediated",
      "connect",
      tcp("10.0.0.9", 443),
      false,
      off,
      "perform (network connects are not mediated)",
    ],
    ["a rule allows", "connect", tcp("10.0.0.1", 443), false, base, "perform (rule)"],
    ["a rule denies", "connect", tcp("10.0.0.2", 443), false, base, "deny: D [tcp:10.0.0.2:443]"],
    ["no rule", "connect", tcp("10.0.0.9", 443), false, base, "ask D"],
    ["unix, not mediated for IP", "connect", unix("/run/x.sock"), false, off, "ask D"], // unix: every mode
    ["a listener on all addresses", "listen", tcp("0.0.0.0", 80), false, base, "ask D"],
  ];
  for (const [what, kind, t, own, c, want] of table) {
    assert.equal(show(decideConnect(kind, t, own, c, "D")), want, what);
  }
});

Deno.test("decideAnswered: once grants what was shown; a scope that leaves an end out asks again, then denies", () => {
  const c = dctx();
  const call = (n: string) => WRITE_CALLS.find((x) => x.name === n)!;
  const e = (p: string): End => ({ path: p, anon: false });
  // once: every end, as performed (one is outside the floor) or continued (both in the floor)
  assert.equal(
    show(decideAnswered(c, call("renameat2"), [e("/out/src"), e("/out/y")], false, true, 2)),
    "perform (answer)",
  );
  assert.equal(
    show(decideAnswered(c, call("renameat2"), [e("/q/a"), e("/q/b")], false, true, 1)),
    "continue",
  );
  assert.equal(show(decideAnswered(c, call("fchmodat"), [e("/q/a")], false, true, 1)), "perform (answer)");
  // a scope that covers one of two asking ends: asked again about the other
  assert.equal(
    show(decideAnswered(c, call("renameat2"), [e("/q/a"), e("/out/y")], false, false, 2)),
    "ask /out/y",
  );
  // ... and an answer that covers nothing new denies
  assert.equal(
    show(decideAnswered(c, call("renameat2"), [e("/out/a"), e("/out/y")], false, false, 2)),
    "deny: /out/a → /out/y",
  );
  // a rule that denies an end meanwhile
  assert.equal(
    show(decideAnswered(c, call("renameat2"), [e("/q/a"), e("/p/secret/x")], false, true, 1)),
    "deny: /q/a → /p/secret/x",
  );
  // a bind (no write call): performed
  assert.equal(show(decideAnswered(c, null, [e("/q/s.sock")], false, true, 1)), "perform (answer)");
});

Deno.test("decide(write): nothing is renamed into the project from outside it where the supervisor performs it", () => {
  const table: [string, WriteRequest, string][] = [
    ["/p", wreq("renameat2", ["/q/a", "/q/b"]), "continue"], // outside, both ends
    ["/q", wreq("renameat2", ["/q/a", "/q/b"]), "continue"], // inside, both ends
    ["/p", wreq("renameat2", ["/q/a", "/p/a"]), "fail 18"], // in from the floor (/p is performed)
    ["/q", wreq("renameat2", ["/out/ok", "/q/x"]), "fail 18"], // in from a rule's path outside the floor
    ["/q", wreq("renameat2", ["/out/src", "/q/y"]), "ask /out/src"], // asked first (EACCES under --no-ask)...
    ["/p", wreq("renameat2", ["/p/a", "/q/b"]), "perform (rule)"], // out of the project
    ["/p", wreq("renameat2", ["/p/a", "/q/b"], { atFlags: 2 }), "fail 18"], // RENAME_EXCHANGE moves /q/b in
    ["/p", wreq("renameat2", ["/q/a", "/p/secret/k"]), "deny: /q/a → /p/secret/k"], // a deny still wins
    ["/p", wreq("linkat", ["/q/a", "/p/l"]), "perform (rule)"], // a link sets the file's ctime: the exit check's
    // Landlock decides a continued rename (a directory moved in gains a right: EXDEV; lib/sandbox/plan.ts).
    ["/q/in", wreq("renameat2", ["/q/a", "/q/in/a"]), "continue"],
  ];
  for (const [project, req, want] of table) {
    assert.equal(show(decide(req, dctx({ project }))), want, `${project}: ${req.ends.map((e) => e.path)}`);
  }
  // ...and refused once allowed; a continued one is Landlock's.
  const answered = (paths: string[], atFlags = 0) => {
    const r = wreq("renameat2", paths);
    return show(decideAnswered(dctx({ project: "/q" }), r.call, r.ends, false, true, 1, atFlags));
  };
  assert.equal(answered(["/out/src", "/q/y"]), "fail 18");
  assert.equal(answered(["/q/y", "/out/src"]), "perform (answer)");
  assert.equal(answered(["/q/y", "/out/src"], 2), "fail 18");
  assert.equal(answered(["/q/a", "/q/b"]), "continue");
});

Deno.test("decide(write): a rename over an agent's file kept in place fails with EXDEV (written in place then)", () => {
  const withIt = {
    ...dctx({ inPlace: ["/home/me/.a.json"] }),
    ...ctx([...RULES_Q, ...rules("allow write /home/me/.a.json*")]),
  };
  const without = { ...dctx(), ...ctx([...RULES_Q, ...rules("allow write /home/me/.a.json*")]) };
  const save = wreq("renameat2", ["/home/me/.a.json.tmp.1", "/home/me/.a.json"]);
  assert.equal(show(decide(save, withIt)), "fail 18");
  assert.equal(show(decide(save, without)), "perform (rule)");
  // only a rename onto it: away from it, and its temporary files, as before
  assert.equal(
    show(decide(wreq("renameat2", ["/home/me/.a.json", "/home/me/.a.json.bak"]), withIt)),
    "perform (rule)",
  );
  assert.equal(show(decide(wreq("openat", ["/home/me/.a.json"]), withIt)), "perform (rule)");
});
