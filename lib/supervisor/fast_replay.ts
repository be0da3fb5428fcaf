/**
 * The fast path checked against the one decision. With HALLPASS_FASTPATH_RECORD=FILE, the C fast path
 * (helper/fastpath/fastpath.c) appends every answer it gives to FILE, and the supervisor appends, whenever it
 * hands the fast path new roots, the context its decisions are made in. `replay()` (pure) runs every recorded
 * answer through the TypeScript decision (lib/supervisor/decide.ts, lib/policy/policy.ts) and lists each answer the
 * mediator would not have given. tests/e2e/fast_replay_test.ts drives real workloads and fails on any.
 *
 * Lines (tab-separated, one write each, several hallpass processes may share the file):
 *   C <hallpass pid> <JSON of RecordedContext>
 *   F <hallpass pid> <syscall nr> <answer> <canonical path>...
 *   H <hallpass pid> <syscall nr>                 (a call handed to the mediator)
 *   S <hallpass pid> <continued> <handed to the mediator> <performed> <refused>   (a fast path handle freed)
 * answers: continue, perform (a write outside the floor, or chmod/chown/utimensat, done by the fast path), exec
 * (a program run), errno:N (an exec of what is not there or cannot run; a connect to a unix socket path that is
 * not there: "unix PATH"; a write whose directory is not there), net (a connect or send performed: "ip4|ip6 ADDR
 * PORT", "none": to the connected peer, "other": netlink), bind (a non-unix bind continued), cwd (chdir/fchdir
 * continued), creds (setuid, capset... continued).
 *
 * @module
 */
import { Policy } from "../policy/policy.ts";
import { groupTableOf } from "../policy/exec_groups.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import type { PathScope, Rule } from "../types.ts";
import type { ProtectedPath } from "../policy/protected_paths.ts";
import { CREDENTIAL_CALLS, WRITE_CALLS } from "../filter/syscall_table.ts";
import { taintedFloor } from "./fast_roots.ts";
import { execVerdict, inFloor, writeAnswer, type WriteContext, writeVerdict } from "./decide.ts";
import type { ConnectTarget } from "../policy/connect_dest.ts";
import { netVerdict } from "../policy/socket_policy.ts";

/** What the fast path's decisions are replayed against: the parts of the session config the decision reads. */
export interface RecordedContext {
  rules: Rule[];
  groups?: Record<string, string[]>;
  floor: PathScope[];
  protected?: ProtectedPath[];
  home: string;
  cwd: string;
  pathEnv: string;
  mediate: { exec: boolean; connect: boolean };
}

/** Appends the context to $HALLPASS_FASTPATH_RECORD, when set (a test's switch; nothing otherwise). */
export function recordContext(c: RecordedContext): void {
  const file = Deno.env.get("HALLPASS_FASTPATH_RECORD");
  if (!file) return;
  const ctx: RecordedContext = {
    // Infinity (no expiry) is not JSON: a rule without expiresAt means the same.
    rules: c.rules.map((r) => (r.expiresAt === Infinity ? { ...r, expiresAt: undefined } : r)),
    groups: c.groups,
    floor: c.floor,
    protected: c.protected ?? [],
    home: c.home,
    cwd: c.cwd,
    pathEnv: c.pathEnv,
    mediate: c.mediate,
  };
  try {
    const f = Deno.openSync(file, { append: true, create: true, mode: 0o600 });
    try {
      f.writeSync(new TextEncoder().encode(`C\t${Deno.pid}\t${JSON.stringify(ctx)}\n`));
    } finally {
      f.close();
    }
  } catch { /* a test's record: never stops a session */ }
}

interface Decider extends WriteContext {
  mediate: { exec: boolean; connect: boolean };
}

function decider(c: RecordedContext): Decider {
  const policy: Policy = new Policy(c.rules, {
    home: c.home,
    cwd: c.cwd,
    lookup: (p) => lookupInPath(p, c.pathEnv),
    isWritable: (p) => inFloor(c.floor, p) || policy.decide("write", p, Date.now()).effect === "allow",
    groups: groupTableOf(c.groups),
  });
  return {
    policy,
    floor: c.floor,
    tainted: taintedFloor(c.floor, policy.pathEntries("write")),
    protected: c.protected ?? [],
    mediate: c.mediate,
  };
}

/**
 * What the mediator answers to the recorded call, as the same word the fast path records, or why it would
 * not have answered at all.
 */
export function mediatorAnswer(
  d: Decider,
  syscall: string,
  answer: string,
  paths: readonly string[],
): string {
  switch (answer) {
    case "cwd":
      return syscall === "chdir" || syscall === "fchdir" ? "cwd" : `${syscall} is not a chdir`;
    case "creds":
      // continued, only seen: the fast path forgets which threads' credentials it checked
      return (CREDENTIAL_CALLS as readonly string[]).includes(syscall)
        ? "creds"
        : `${syscall} changes no credentials`;
    case "bind":
      return syscall === "bind" ? "bind" : `${syscall} is not a bind`;
    case "net": {
      if (!["connect", "sendto", "sendmsg", "sendmmsg"].includes(syscall)) {
        return `${syscall} is not a connect or send`;
      }
      // The destination: "ip4 ADDR PORT", "ip6 ADDR PORT", "other" (netlink, or a family the kernel refuses on
      // an IP socket) or "none" (a send to the connected peer); performed by the mediator too only when
      // netVerdict says so without a question.
      const [fam, addr, port] = (paths[0] ?? "").split(" ");
      const target: ConnectTarget | null = fam === "ip4" || fam === "ip6"
        ? { family: fam === "ip4" ? "inet" : "inet6", proto: "tcp", addr, port: Number(port) }
        : fam === "other" || fam === "none"
        ? null
        : { family: "unix", path: paths[0]?.startsWith("unix ") ? paths[0].slice(5) : undefined };
      const v = netVerdict(target, { mediateConnect: d.mediate.connect, ownSocket: false });
      if (v === "perform") return "net";
      if (target?.family !== "unix" && d.mediate.connect) return "ask (connects are mediated)";
      return `the rules decide ${paths[0] ?? "(no destination)"}`;
    }
    case "exec": {
      if (syscall !== "execve") return `${syscall} is not execve`;
      if (!d.mediate.exec) return "exec"; // every exec is continued
      if (paths.length < 1) return "no program";
      // The fast path recorded the program and, for a script, its interpreter (one level; deeper: the mediator).
      const v = execVerdict(d.policy, paths[0], false, (p) => (p === paths[0] ? paths[1] ?? null : null));
      if (v.effect !== "allow") return `${v.effect} (exec ${v.at})`;
      return "exec";
    }
  }
  if (answer.startsWith("errno:")) {
    // Nothing runs: the kernel's own errno for a program that is not there or cannot run.
    const e = Number(answer.slice(6));
    if (syscall === "connect" || syscall === "sendto") {
      // A unix socket path that is not there: the kernel's ENOENT/ENOTDIR, before any decision.
      return (paths[0] ?? "").startsWith("unix /") && [2, 20].includes(e)
        ? answer
        : `${syscall} answered ${answer}`;
    }
    if (WRITE_CALLS.some((c) => c.name === syscall)) {
      // A path whose directory is not there (a walk that met no symlink first): the kernel's walk error, answered
      // before any decision (lib/supervisor/resolve.ts kernelWalkError).
      return [2, 20].includes(e) && paths.length > 0 ? answer : `${syscall} answered ${answer}`;
    }
    return syscall === "execve" && [2, 13, 20].includes(e) ? answer : `${syscall} answered ${answer}`;
  }
  const call = WRITE_CALLS.find((c) => c.name === syscall);
  if (!call) return `${syscall} is no write call`;
  const ends = call.path2 !== undefined ? 2 : 1;
  if (paths.length !== ends) return `${paths.length} paths for ${ends} ends`;
  const contents = call.kind === "open" || call.kind === "truncate";
  const names = call.kind === "rename" || call.kind === "link";
  const verdicts = paths.map((p) => writeVerdict(d, p, contents, names));
  // The fast path answers only path forms it read and resolved itself, or fds it copied: either way the
  // fd forms are never continued, and it records them as performed.
  return writeAnswer(call, verdicts, answer === "perform" && call.path < 0);
}

export interface ReplayResult {
  /** How many answers of the fast path were replayed, by answer. */
  answers: number;
  byAnswer: Record<string, number>;
  /** One line per answer the mediator would not have given. */
  disagreements: string[];
  /** How many notifications the fast path saw (its counters, "S" lines): 0 when it never ran. */
  seen: number;
  /** The calls it handed to the mediator ("H" lines), by name. */
  handed: Record<string, number>;
  /** Contexts cut short (written as hallpass exited): the answers after one use the context before it. */
  torn: number;
}

/** Replays a record (see the module comment). `nrName`: the native architecture's syscall names by number. */
export function replay(text: string, nrName: ReadonlyMap<number, string>): ReplayResult {
  const ctx = new Map<string, Decider>();
  const out: ReplayResult = { answers: 0, byAnswer: {}, disagreements: [], seen: 0, handed: {}, torn: 0 };
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line) continue;
    const f = line.split("\t");
    if (f[0] === "C") {
      const json = f.slice(2).join("\t");
      try {
        ctx.set(f[1], decider(JSON.parse(json)));
      } catch {
        // A context cut short: the supervisor's Worker was writing it as hallpass exited (a write the kernel
        // ends early for a dying process). The next record was appended right after the cut: JSON has no raw
        // tab, so the first one is that record's, one character after its start. Its answers are replayed
        // against the context before (a wider new context fails the test; nothing is skipped).
        out.torn++;
        const tab = json.indexOf("\t");
        if (tab > 0) lines.splice(i + 1, 0, json.slice(tab - 1));
      }
      continue;
    }
    if (f[0] === "H" && f.length === 3) {
      const name = nrName.get(Number(f[2])) ?? `syscall ${f[2]}`;
      out.handed[name] = (out.handed[name] ?? 0) + 1;
      continue;
    }
    if (f[0] === "S" && f.length === 6) {
      out.seen += f.slice(2).reduce((a, n) => a + Number(n), 0);
      continue;
    }
    if (f[0] !== "F" || f.length < 4) {
      out.disagreements.push(`unreadable line: ${line}`);
      continue;
    }
    const [, pid, nr, answer, ...paths] = f;
    out.answers++;
    out.byAnswer[answer] = (out.byAnswer[answer] ?? 0) + 1;
    const d = ctx.get(pid);
    if (!d) {
      out.disagreements.push(`no context for hallpass ${pid}: ${line}`);
      continue;
    }
    const syscall = nrName.get(Number(nr)) ?? `syscall ${nr}`;
    const want = mediatorAnswer(d, syscall, answer, paths);
    if (want !== answer) {
      out.disagreements.push(`${syscall} ${paths.join(" → ")}: fast path ${answer}, mediator ${want}`);
    }
  }
  return out;
}
