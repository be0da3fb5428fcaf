/**
 * The fast path checked against the one decision. With HALLPASS_FASTPATH_RECORD=FILE, the C fast path
 * (helper/fastpath/fastpath.c) appends every answer it gives to FILE, and the supervisor appends, whenever it
 * hands the fast path new roots, the context its decisions are made in. `replay()` (pure) rebuilds from every
 * recorded answer the typed Request (lib/supervisor/decode.ts) the mediator would have decoded, runs it through
 * `decide()` itself (lib/supervisor/decide.ts; `decideConnect()` for connects and sends) and lists each answer
 * the mediator would not have given. tests/e2e/fast_replay_test.ts drives real workloads and fails on any.
 * What is not a Request (see replayRequest) is checked against what the mediator answers without deciding.
 *
 * Lines (tab-separated, one write each, several hallpass processes may share the file):
 *   C <hallpass pid> <JSON of RecordedContext>
 *   F <hallpass pid> <syscall nr> <answer> <canonical path>...
 *   H <hallpass pid> <syscall nr>                 (a call handed to the mediator)
 *   S <hallpass pid> <continued> <handed to the mediator> <performed> <refused>   (a fast path handle freed)
 * answers: continue, perform (a write outside the floor, or chmod/chown/utimensat, done by the fast path), exec
 * (a program run), errno:N (an exec of what is not there or cannot run; a connect to a unix socket path that is
 * not there: "unix PATH"; a write whose directory is not there), net (a connect or send performed: "ip4|ip6 ADDR
 * PORT", "netlink PID GROUPS", "none": to the connected peer, "other": another family), bind (a non-unix bind continued), cwd (chdir/fchdir
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
import { decide, decideConnect, type DecideContext, type Decision, inFloor } from "./decide.ts";
import type { ConnectTarget } from "../policy/connect_dest.ts";
import type { Request } from "./decode.ts";
import type { NetKind } from "./connect.ts";
import type { Notification } from "../../ffi/notify.ts";

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
  /** --allow-privileged-files. */
  allowPrivilegedFiles?: boolean;
  /** Read-protected paths (lib/policy/secrets.ts): a rename or link may not carry one. */
  readProtected?: { protect: string[]; readable: string[] };
  /** The project: nothing is renamed into it from outside (moved_in.ts). */
  project?: string;
  /** An agent's files kept in place (lib/sandbox/agent_start_files.ts). */
  inPlace?: string[];
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
    allowPrivilegedFiles: c.allowPrivilegedFiles,
    readProtected: c.readProtected,
    project: c.project,
    inPlace: c.inPlace,
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

/**
 * What decide() learns from the file system, in a replay: nothing (the record holds what the fast path saw).
 * No path under /proc is another process's to the fast path: it answers none (helper/fastpath/fastpath.c), so
 * any recorded answer there disagrees. Whether a name exists matters only to what a question would have been
 * instead (a no-op fails as the kernel would), never to continue or perform (mediatorAnswer says what is
 * there). A script's interpreter: the one
 * the fast path recorded with the exec (mediatorAnswer), one level deep.
 */
export const REPLAY_LOOK: DecideContext["look"] = {
  exists: () => false,
  otherProcess: (p) => p.startsWith("/proc/"),
  interpreterOf: () => null,
};

function decider(c: RecordedContext): DecideContext {
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
    allowPrivileged: c.allowPrivilegedFiles === true,
    container: false, // the fast path never runs in a container (context.ts fastRoots)
    readProtected: c.readProtected,
    project: c.project,
    inPlace: c.inPlace,
    mediate: c.mediate,
    look: REPLAY_LOOK,
  };
}

/** A notification as decide() reads it: the call's number, no arguments (the record holds none), no thread. */
function notification(nr: number): Notification {
  return { id: 0n, tid: 0, nr, arch: 0, args: [0n, 0n, 0n, 0n, 0n, 0n] };
}

/**
 * The open flags a replayed open is decided with. The record holds no flags: these are an open that writes
 * and may create, the kind the fast path answers (it hands O_TMPFILE and setuid/setgid modes to the mediator).
 * So the rules on reading a read-protected file (O_RDWR) and on privileged modes are not checked by the
 * replay (docs/development.md).
 */
const REPLAY_OPEN_FLAGS = 0o1 /* O_WRONLY */ | 0o100; /* O_CREAT */

/**
 * The typed Request (lib/supervisor/decode.ts) a recorded answer stands for, or null when the mediator decides
 * it without one: a chdir or credentials change (continued, only seen), a bind that is not a unix socket path
 * (continued), an exec while execs are not mediated (continued), a connect or send (decideConnect, below), and
 * the kernel's own errors found while decoding (a write whose directory is not there, a unix socket path that
 * is not there).
 */
export function replayRequest(
  syscall: string,
  nr: number,
  answer: string,
  paths: readonly string[],
): Request | string {
  const n = notification(nr);
  if (syscall === "execve") {
    if (paths.length < 1) return "no program";
    const e = answer.startsWith("errno:") ? Number(answer.slice(6)) : 0;
    // What the kernel refuses to run (decode.ts runErrno: found on the file system, only the errno recorded).
    if (e && ![2, 13, 20].includes(e)) return `${syscall} answered ${answer}`;
    return { op: "exec", n, at: false, end: { path: paths[0], anon: false }, runErrno: e };
  }
  const call = WRITE_CALLS.find((c) => c.name === syscall);
  if (!call) return `${syscall} is no write call`;
  const ends = call.path2 !== undefined ? 2 : 1;
  if (paths.length !== ends) return `${paths.length} paths for ${ends} ends`;
  return {
    op: "write",
    n,
    call,
    ends: paths.map((path) => ({ path, anon: false })),
    // The fast path answers only path forms it read and resolved itself, or (fchmod, fchown) fds it copied.
    fdCopy: call.path < 0 ? 0 : -1,
    flags: call.kind === "open" ? REPLAY_OPEN_FLAGS : 0,
    atFlags: 0,
  };
}

/** A decision as the word the fast path records (continue, perform, exec, errno:N, net), or what it is instead. */
export function answerOf(d: Decision, op: Request["op"] | "net"): string {
  switch (d.answer) {
    case "continue":
      return op === "exec" ? "exec" : "continue";
    case "perform":
      return op === "net" ? "net" : "perform";
    case "fail":
      return `errno:${d.errno}`;
    case "deny":
      return `deny${d.errno ? ` errno:${d.errno}` : ""} (${d.shown})`;
    case "ask":
      return `ask (${d.end})`;
    case "pty":
      return `pty, else ${answerOf(d.otherwise, op)}`;
  }
}

/**
 * What the mediator answers to the recorded call, as the same word the fast path records, or why it would
 * not have answered at all: decide() on the Request the record stands for (decideConnect for a connect or
 * send), else the mediator's own answer to what it does not decide.
 */
export function mediatorAnswer(
  d: DecideContext,
  syscall: string,
  answer: string,
  paths: readonly string[],
  nr = -1,
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
      // Not a unix socket path (decode.ts decodeBind "other"): continued before any decision.
      return syscall === "bind" ? "bind" : `${syscall} is not a bind`;
    case "net": {
      if (!["connect", "sendto", "sendmsg", "sendmmsg"].includes(syscall)) {
        return `${syscall} is not a connect or send`;
      }
      // The destination: "ip4 ADDR PORT", "ip6 ADDR PORT", "netlink PID GROUPS" (a netlink socket's), "other"
      // (a family the kernel refuses on an IP socket) or "none" (a send to the connected peer); the connect was
      // not the sandbox's own socket.
      const [fam, addr, port] = (paths[0] ?? "").split(" ");
      // A netlink address naming a process or group: refused before any decision (connect.ts prepare).
      if (fam === "netlink" && (addr !== "0" || port !== "0")) return "errno:1";
      const target: ConnectTarget | null = fam === "ip4" || fam === "ip6"
        ? { family: fam === "ip4" ? "inet" : "inet6", proto: "tcp", addr, port: Number(port) }
        : fam === "other" || fam === "none" || fam === "netlink"
        ? null
        : { family: "unix", path: paths[0]?.startsWith("unix ") ? paths[0].slice(5) : undefined };
      if (target?.family === "unix") return `the rules decide ${paths[0] ?? "(no destination)"}`;
      const shown = paths[0] ?? "(no destination)";
      return answerOf(decideConnect(syscall as NetKind, target, false, d, shown), "net");
    }
  }
  if (answer.startsWith("errno:") && syscall !== "execve") {
    // The kernel's own error, found while decoding, before any decision: not a Request.
    const e = Number(answer.slice(6));
    if (syscall === "connect" || syscall === "sendto") {
      // A unix socket path that is not there: the kernel's ENOENT/ENOTDIR (connect.ts prepare).
      return (paths[0] ?? "").startsWith("unix /") && [2, 20].includes(e)
        ? answer
        : `${syscall} answered ${answer}`;
    }
    if (WRITE_CALLS.some((c) => c.name === syscall)) {
      // A path whose directory is not there (a walk that met no symlink first): the kernel's walk error
      // (lib/supervisor/resolve.ts kernelWalkError, a DecodeError).
      return [2, 20].includes(e) && paths.length > 0 ? answer : `${syscall} answered ${answer}`;
    }
    return `${syscall} answered ${answer}`;
  }
  const req = replayRequest(syscall, nr, answer, paths);
  if (typeof req === "string") return req;
  if (req.op === "exec" && !d.mediate.exec) {
    // Every exec is continued, before decoding: the kernel then fails what it cannot run, with the same errno.
    return req.runErrno ? answer : "exec";
  }
  // The fast path recorded the program and, for a script, its interpreter (one level; deeper: the mediator).
  // A write is taken to change something (it was answered as one): what it makes is not there yet, everything
  // else is, so what would have asked shows as a question, not as the kernel's error for a no-op.
  const made = req.op === "write" && ["mkdir", "mknod", "symlink", "link"].includes(req.call.kind)
    ? paths[paths.length - 1]
    : null;
  const look = req.op === "exec"
    ? { ...d.look, interpreterOf: (p: string) => (p === paths[0] ? paths[1] ?? null : null) }
    : { ...d.look, exists: (p: string) => p !== made };
  return answerOf(decide(req, { ...d, look }), req.op);
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
  const ctx = new Map<string, DecideContext>();
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
    const want = mediatorAnswer(d, syscall, answer, paths, Number(nr));
    if (want !== answer) {
      out.disagreements.push(`${syscall} ${paths.join(" → ")}: fast path ${answer}, mediator ${want}`);
    }
  }
  return out;
}
