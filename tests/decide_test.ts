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
import { execVerdict, inFloor, type Verdict, writeAnswer, writeVerdict } from "../lib/supervisor/decide.ts";
import { mediatorAnswer, replay } from "../lib/supervisor/fast_replay.ts";
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

Deno.test("mediatorAnswer: the fast path's answers, one by one", () => {
  const c = ctx();
  const table: [string, string, string[], string][] = [
    ["openat", "continue", ["/q/f"], "continue"],
    ["openat", "continue", ["/p/f"], "perform"], // tainted floor
    ["openat", "continue", ["/dev/null"], "continue"],
    ["mkdirat", "continue", ["/q"], "perform"],
    ["renameat2", "continue", ["/q/a", "/q/b"], "continue"],
    ["renameat2", "continue", ["/q/a", "/out/x"], "ask"],
    ["renameat2", "continue", ["/q/a"], "1 paths for 2 ends"],
    ["fchmodat", "perform", ["/q/a"], "perform"],
    ["fchown", "perform", ["/q/a"], "perform"],
    ["utimensat", "perform", ["/p/secret/x"], "deny"],
    ["execve", "exec", ["/usr/bin/git"], "exec"],
    ["execve", "exec", ["/usr/bin/rm"], "deny (exec /usr/bin/rm)"],
    ["execve", "exec", ["/usr/bin/env", "/opt/python"], "ask (exec /opt/python)"], // a script's interpreter
    [
      "execve",
      "exec",
      ["/usr/bin/ld-linux-x86-64.so.2"],
      "deny (exec /usr/bin/ld-linux-x86-64.so.2)", // the policy: only a rule naming it
    ],
    ["execve", "errno:2", ["/usr/bin/nothere"], "errno:2"],
    ["execve", "errno:1", ["/usr/bin/x"], "execve answered errno:1"],
    ["connect", "net", ["ip4 127.0.0.1 80"], "ask (connects are mediated)"],
    ["connect", "errno:2", ["unix /run/nscd/socket"], "errno:2"],
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
  // a unix destination, or none recorded: the rules decide, never the fast path
  assert.equal(mediatorAnswer(direct, "connect", "net", ["unix /run/x"]), "the rules decide unix /run/x");
  assert.equal(mediatorAnswer(direct, "connect", "net", []), "the rules decide (no destination)");
  assert.equal(mediatorAnswer(direct, "execve", "exec", ["/usr/bin/rm"]), "exec"); // execs not mediated
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
