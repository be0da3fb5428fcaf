/**
 * The one decision: `decide(request, context)` gives the answer to a decoded call (lib/supervisor/decode.ts):
 * continue, perform, deny, fail as the kernel would, or ask. Pure: what it needs from the file system (does a
 * name exist, a script's interpreter, is a /proc path another process's) comes through the context's lookups,
 * so that tests/decide_test.ts tables every op and verdict. Shared by the mediator (lib/supervisor/mediator.ts)
 * and the replay of the fast path's answers (lib/supervisor/fast_replay.ts), so that the C fast path
 * (helper/fastpath/fastpath.c) is checked against the very code the mediator runs.
 *
 * @module
 */
import type { Policy } from "../policy/policy.ts";
import { scopeCovers } from "../policy/path_scope.ts";
import type { PathScope } from "../types.ts";
import { protectedHit, type ProtectedPath } from "../policy/protected_paths.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import { isDynamicLoader } from "../policy/loader.ts";
import { formatScope } from "../policy/path_scope.ts";
import { privilegedRefusal, privilegedXattr } from "../policy/privileged_bits.ts";
import { type ConnectTarget, formatTarget } from "../policy/connect_dest.ts";
import { isLoopback, netVerdict } from "../policy/socket_policy.ts";
import type { NetKind } from "./connect.ts";
import type { BindRequest, End, ExecRequest, ReadRequest, Request, WriteRequest } from "./decode.ts";
import { ANOTHER_TERMINAL, isPtyPath, isTerminalPath } from "./other_terminals.ts";
import { movesIntoProject } from "./moved_in.ts";
import { Errno } from "../../ffi/errors.ts";

/**
 * floor: allowed, and Landlock lets the sandbox make it itself (a CONTINUE is safe for a call it covers);
 * allow: allowed, performed by the supervisor; deny; ask.
 */
export type Verdict = "floor" | "allow" | "deny" | "ask";

/** What a write is decided against. The arrays may be the mediator's own (it changes its floor). */
export interface WriteContext {
  policy: Policy;
  /** The Landlock write floor. */
  floor: readonly PathScope[];
  /** Floor trees holding a deny rule (fast_roots.ts taintedFloor): allowed writes there are performed. */
  tainted: readonly PathScope[];
  /** lib/policy/protected_paths.ts: ask even where a rule allows. */
  protected: readonly ProtectedPath[];
}

/**
 * Whether Landlock lets the sandbox make this write itself. `contents` (open, truncate): a rule on the file or
 * a tree above it; any other call changes a name in the parent directory, which a tree must cover (a tree's
 * own top is a name in a directory outside it: a carved one, or outside the floor).
 */
export function inFloor(floor: readonly PathScope[], path: string, contents = true): boolean {
  for (const f of floor) {
    if (
      contents
        ? scopeCovers(f, path)
        : f.kind === "tree" && path.length > f.path.length && scopeCovers(f, path)
    ) {
      return true;
    }
  }
  return false;
}

/** Whether no deny rule lies in the floor tree holding `path` (else an allowed write there is performed). */
export function floorSafe(tainted: readonly PathScope[], path: string): boolean {
  for (const f of tainted) if (scopeCovers(f, path)) return false;
  return true;
}

/**
 * The verdict on writing the canonical `path`. `contents`: the call writes a file's contents (open,
 * truncate); `names`: it moves or makes a name (rename, link), so a protected path below counts too.
 */
export function writeVerdict(
  ctx: WriteContext,
  path: string,
  contents: boolean,
  names = false,
  now = Date.now(),
): Verdict {
  const d = ctx.policy.decide("write", path, now);
  if (d.effect === "allow") {
    if (ctx.protected.length > 0 && protectedHit(ctx.protected, path, names, d.rule)) return "ask";
    return inFloor(ctx.floor, path, contents) && floorSafe(ctx.tainted, path) ? "floor" : "allow";
  }
  return d.effect;
}

/** What the mediator answers a write call with the verdicts on its ends. */
export type WriteAnswer = "continue" | "perform" | "deny" | "ask";

/**
 * The answer to a write call given its ends' verdicts: a deny anywhere denies, an ask asks, and an allowed
 * call is continued only when every end is in the floor, Landlock covers the call and it is not an fd form
 * (nothing in the kernel would re-check an fd's file); otherwise it is performed here.
 */
export function writeAnswer(call: WriteCall, verdicts: readonly Verdict[], fdForm: boolean): WriteAnswer {
  if (verdicts.includes("deny")) return "deny";
  if (verdicts.includes("ask")) return "ask";
  return call.landlock && !fdForm && verdicts.every((v) => v === "floor") ? "continue" : "perform";
}

/** The verdict on an exec: `at` is the program it is about (the script's interpreter when that decided). */
export interface ExecVerdict {
  effect: "allow" | "deny" | "ask";
  at: string;
  /** Denied as the dynamic loader run as a program (lib/policy/loader.ts): said why. */
  loader?: boolean;
}

/**
 * The verdict on running `target` (canonical; `anon`: a memfd or deleted file, which no rule can name: it
 * asks). An allowed script is decided on its `#!` interpreter too, up to the kernel's 4 levels, so an allowed
 * script cannot start a program that would have asked. `interpreterOf` reads a file's `#!` interpreter,
 * canonical (null: not a script).
 */
export function execVerdict(
  policy: Policy,
  target: string,
  anon: boolean,
  interpreterOf: (path: string) => string | null,
  now = Date.now(),
): ExecVerdict {
  const d = !anon && target.startsWith("/") ? policy.decide("exec", target, now).effect : "ask";
  if (d === "allow" && !anon) {
    let script = target;
    for (let level = 0; level < 4; level++) {
      const interp = interpreterOf(script);
      if (interp === null) break;
      const di = policy.decide("exec", interp, now).effect;
      if (di !== "allow") return { effect: di, at: interp };
      script = interp;
    }
  }
  if (d === "deny" && !anon && isDynamicLoader(target)) return { effect: "deny", at: target, loader: true };
  return { effect: d, at: target };
}

// ---------------------------------------------------------------------------------------------------------------
// decide(): every op the mediator decides.

/** The answer to a call. */
export type Decision =
  /** CONTINUE: the kernel runs the call (`at`: for an exec, the program decided on). */
  | { answer: "continue"; at?: string }
  /** Performed here (lib/supervisor/emulate.ts, connect.ts); `by`: what allowed it (the log's word). */
  | { answer: "perform"; by: string }
  /** Refused (EACCES, or `errno`): `shown` is what the denial line names. */
  | { answer: "deny"; shown: string; errno?: number; suggest?: string; by?: string }
  /** The error the kernel itself would give, without a question (a no-op, a program that is not there). */
  | { answer: "fail"; errno: number }
  /** A question about `end`; the rest is what the bar shows beyond the usual. */
  | {
    answer: "ask";
    end: string;
    /** For a rename or link: how many ends ask. */
    asking?: number;
    warning?: string;
    suggest?: string;
    scopes?: string[];
  }
  /** An open of a pty: performed when it is the sandbox's own (other_terminals.ts openOwnPty), else `otherwise`. */
  | { answer: "pty"; otherwise: Decision };

/** What decide() reads besides the request. The lookups are the only way it learns about the file system. */
export interface DecideContext extends WriteContext {
  /** --allow-privileged-files. */
  allowPrivileged: boolean;
  /** `hallpass agent`: paths are the container's. */
  container: boolean;
  /** The project (canonical): nothing is renamed into it from outside by the supervisor (moved_in.ts). */
  project?: string;
  /** Read-protected paths (lib/policy/secrets.ts): a rename or link may not carry one to another name. */
  readProtected?: { protect: readonly string[]; readable: readonly string[] };
  /** An agent's files kept in place: a rename over one fails with EXDEV (lib/sandbox/agent_start_files.ts). */
  inPlace?: readonly string[];
  mediate: { exec: boolean; connect: boolean };
  look: {
    /** Something is at `path` (in the caller's view: a container's root). */
    exists(path: string): boolean;
    /** A `/proc/PID/…` path of a process outside the sandbox. */
    otherProcess(path: string): boolean;
    /** A script's `#!` interpreter, canonical, as thread `tid` would run it; null: not a script. */
    interpreterOf(path: string, tid: number): string | null;
  };
}

/** The verdict on one end of a write. `contents`: open/truncate; `names`: rename/link (see writeVerdict). */
export function endVerdict(ctx: DecideContext, e: End, contents: boolean, names = false): Verdict {
  if (e.anon) return "floor"; // a pipe or socket reached through /proc/PID/fd: no file system change
  if (e.path.startsWith("/proc/") && ctx.look.otherProcess(e.path)) return "deny";
  return writeVerdict(ctx, e.path, contents, names);
}

export function decide(req: Request, ctx: DecideContext): Decision {
  switch (req.op) {
    case "write":
      return decideWrite(req, ctx);
    case "exec":
      return decideExec(req, ctx);
    case "bind":
      return decideBind(req, ctx);
    case "read":
      return decideRead(req, ctx);
  }
}

/**
 * A read-only open (trapped only by the Kubernetes agent's protect profile: there is no Landlock floor). A
 * read-protected path (lib/agent/pod_reads.ts) is refused; any other open is performed here, never continued
 * (lib/supervisor/read_open.ts): a CONTINUE would let the kernel read the path from the caller's memory and walk
 * it again, and a path rewritten or a symlink swapped in between would reach a protected file. The performed
 * open walks the canonical path decided without following symlinks; a pipe or socket reached through
 * /proc/PID/fd is reopened through that link (no process of the pod holds a protected file's fd to put there:
 * every open comes here). The pod's own /proc is read as before (the kernel's own checks, as the caller). A
 * name that is not UTF-8 cannot be matched: refused.
 */
export function decideRead(req: ReadRequest, ctx: DecideContext): Decision {
  const e = req.end;
  if (e.unreadable) return { answer: "deny", shown: e.path, by: "protect" };
  if (!e.anon && readProtectedAt(ctx, e.path)) return { answer: "deny", shown: e.path, by: "protect" };
  return { answer: "perform", by: "read" };
}

const { EPERM, ENOENT, EEXIST, EADDRINUSE } = Errno;
const O_CREAT = 0o100, O_EXCL = 0o200, O_TMPFILE = 0o20200000;
const CONTINUE: Decision = { answer: "continue" };

function shownEnds(ends: readonly End[]): string {
  return ends.map((e) => e.path).join(" → ");
}

/**
 * A write: refused outright when it would leave privilege behind or carry a read-protected file to another
 * name; else each end's verdict (a deny anywhere denies, an ask asks, an allowed call continues only where
 * Landlock re-checks it: writeAnswer). What would ask but cannot change anything is answered as the kernel
 * would, and an unnamed temporary file is performed.
 */
export function decideWrite(req: WriteRequest, ctx: DecideContext): Decision {
  const c = req.call, ends = req.ends;
  if (ends.some((e) => e.unreadable)) {
    // Names that are not UTF-8 cannot be shown or matched faithfully: they go through only where Landlock
    // decides anyway (the floor) - the kernel checks the real bytes - and are denied elsewhere. No directory is
    // made or renamed to such a name: hallpass's exit check could not look inside it for a repository whose
    // hooks git would run outside (lib/sandbox/nested_repos.ts).
    if (c.landlock && ctx.tainted.length === 0 && c.kind !== "mkdir" && c.kind !== "rename") return CONTINUE;
    return { answer: "deny", shown: "(a file name that is not UTF-8)" };
  }
  // Nothing that leaves privilege behind (setuid/setgid, devices, capabilities), wherever it is.
  const priv = ctx.allowPrivileged ? null : (privilegedRefusal(c, req.n.args) ??
    (c.kind === "setxattr" && privilegedXattr(req.xattrName ?? "security.?")
      ? "a security or trusted extended attribute"
      : null));
  if (priv !== null) return { answer: "deny", shown: `${priv}: ${shownEnds(ends)}`, errno: EPERM };
  // A rename or link that would carry a read-protected file (or a directory holding one) to another name: the
  // name it gets is not protected, so no answer can allow it (only --allow-read can lift a protection).
  if ((c.kind === "rename" || c.kind === "link") && carriesProtected(ctx, ends[0].path)) {
    return { answer: "deny", shown: `a read-protected file: ${shownEnds(ends)}` };
  }
  // An open that would read (O_RDWR, or O_RDONLY with O_CREAT) a read-protected file: Landlock refuses it to a
  // continued call; an open performed here must not hand out a readable fd either, whatever the rules or an
  // answer to a write question say (only --allow-read lifts a protection).
  if (c.kind === "open" && (req.flags & 3) !== 1 && readProtectedAt(ctx, ends[0].path)) {
    return { answer: "deny", shown: `opened for reading, a read-protected file: ${ends[0].path}` };
  }
  const contents = c.kind === "open" || c.kind === "truncate";
  const names = c.kind === "rename" || c.kind === "link";
  const verdicts = ends.map((e) => endVerdict(ctx, e, contents, names));
  const planted = plantedUnderBuiltin(req, ctx, verdicts);
  if (planted) {
    return { answer: "deny", shown: `where a builtin rule allows only files made there: ${planted}` };
  }
  const w = writeAnswer(c, verdicts, req.fdCopy >= 0);
  let d: Decision;
  if (w === "continue") return CONTINUE;
  if (w === "deny") return { answer: "deny", shown: shownEnds(ends) };
  if (w === "perform") return performOrRefuse(ctx, c.kind, req.atFlags, ends, "rule");
  if (c.kind === "open" && (req.flags & O_TMPFILE) === O_TMPFILE) {
    // An unnamed temporary file (O_TMPFILE; SQLite's and Rust's temp files in /tmp, /var/tmp): no name appears
    // outside, and giving it one later (linkat) is a write of its own, decided like any other. Performed.
    d = { answer: "perform", by: "unnamed temporary file" };
  } else {
    // A call that cannot change anything (mkdir of what exists, unlink of what does not) is answered as the
    // kernel would, without a question: `mkdir -p ~` must not ask.
    const noop = req.fdCopy < 0 || c.kind === "link" ? noopErrno(req, ctx) : 0;
    d = noop ? { answer: "fail", errno: noop } : askWrite(ctx, req, verdicts, names);
  }
  // A pty the sandbox opened itself (through /dev/ptmx) is its own; any other terminal asks.
  // (Not in a container: its /dev/pts is its own devpts instance, and its paths are not ours.)
  if (!ctx.container && c.kind === "open" && verdicts[0] === "ask" && isPtyPath(ends[0].path)) {
    return { answer: "pty", otherwise: d };
  }
  return d;
}

function askWrite(ctx: DecideContext, req: WriteRequest, verdicts: Verdict[], names: boolean): Decision {
  const end = askedEnd(req.ends, verdicts);
  const d: Decision = { answer: "ask", end, asking: verdicts.filter((v) => v === "ask").length };
  const why = protectedAt(ctx, req.ends.find((e) => e.path === end)!, names);
  if (why) {
    d.warning = why.reason;
    d.suggest = formatScope(why.scope);
    d.scopes = [...new Set([formatScope(why.scope), end])];
  } else if (req.call.kind === "open" && isTerminalPath(end)) {
    // A terminal number is reused: never offer more than this one terminal, and never for good.
    d.warning = ANOTHER_TERMINAL;
    d.suggest = end;
    d.scopes = [end];
  }
  return d;
}

/**
 * After an answer that allowed a write (`once` grants what the bar showed; a scope covers an end only if the
 * end is inside it): each end is decided again. An end a scope left out is asked again, once per end; an
 * answer that covers nothing new denies. `atFlags`: the call's flags argument (renameat2's), when it has one.
 */
export function decideAnswered(
  ctx: DecideContext,
  call: WriteRequest["call"] | null,
  ends: readonly End[],
  fdForm: boolean,
  once: boolean,
  askingBefore: number,
  atFlags = 0,
): Decision {
  const contents = call?.kind === "open" || call?.kind === "truncate";
  const verdicts = ends.map((e) =>
    endVerdict(ctx, e, contents, call?.kind === "rename" || call?.kind === "link")
  );
  if (verdicts.includes("deny")) return { answer: "deny", shown: shownEnds(ends), by: "rule" };
  if (!once && verdicts.includes("ask")) {
    const asking = verdicts.filter((v) => v === "ask").length;
    if (asking >= askingBefore) return { answer: "deny", shown: shownEnds(ends) };
    return { answer: "ask", end: askedEnd(ends, verdicts), asking };
  }
  const floor = verdicts.every((v) => v === "floor");
  if (call && call.landlock && !fdForm && floor) return CONTINUE;
  return performOrRefuse(ctx, call?.kind ?? "", atFlags, ends, "answer");
}

/**
 * Performed here, unless it is a rename into the project from outside it (moved_in.ts): EXDEV, as Landlock
 * answers a continued one that moves a directory; or a rename over an agent's file kept in place: EXDEV too.
 */
function performOrRefuse(
  ctx: DecideContext,
  kind: string,
  atFlags: number,
  ends: readonly End[],
  by: string,
): Decision {
  if (movesIntoProject(kind, atFlags, ends, ctx.project)) return { answer: "fail", errno: Errno.EXDEV };
  if (kind === "rename" && ends.length === 2 && ctx.inPlace?.includes(ends[1].path)) {
    return { answer: "fail", errno: Errno.EXDEV }; // the agent writes it in place, and can read it back
  }
  return { answer: "perform", by };
}

/** EEXIST or ENOENT when the call would fail that way before changing anything, else 0. */
function noopErrno(req: WriteRequest, ctx: DecideContext): number {
  const c = req.call, ends = req.ends;
  const t = ends[ends.length - 1]; // the created end for link/rename
  if (t.anon) return 0;
  const exists = ctx.look.exists(t.path);
  switch (c.kind) {
    case "mkdir":
    case "mknod":
    case "symlink":
    case "link":
      return exists ? EEXIST : 0;
    case "open":
      if (!exists && !(req.flags & O_CREAT)) return ENOENT;
      if (exists && (req.flags & O_CREAT) && (req.flags & O_EXCL)) return EEXIST;
      return 0;
    case "unlink":
    case "rmdir":
    case "truncate":
    case "chmod":
    case "chown":
    case "utime":
    case "setxattr":
    case "removexattr":
      return exists ? 0 : ENOENT;
    case "rename": {
      if (ends.length !== 2) return 0;
      if (!ctx.look.exists(ends[0].path)) return ENOENT;
      // renameat2: RENAME_NOREPLACE onto an existing name, RENAME_EXCHANGE with a missing one (`mv` tries
      // NOREPLACE first, then a plain rename: one question, not two).
      if ((req.atFlags & 1 /* RENAME_NOREPLACE */) && exists) return EEXIST;
      if ((req.atFlags & 2 /* RENAME_EXCHANGE */) && !exists) return ENOENT;
      return 0;
    }
  }
  return 0;
}

const under = (p: string, dir: string) => p === dir || p.startsWith(dir === "/" ? "/" : dir + "/");

/** `path` is read-protected (and not made readable), or holds a read-protected path below it. */
/**
 * A symlink (or a FIFO, socket or device node) made outside the floor where only a builtin rule for single files
 * or a glob allows it, or a rename or link into such a name from another directory: those rules are for the
 * files programs outside keep there (less's ~/.lesshsQ, bash's history temp file), and a program that later
 * writes such a name follows what was planted (less wrote its history through ~/.lesshsQ -> ~/.bashrc). The
 * temporary siblings those rules are for are renamed within their directory. A recipe's tree (`~/.codex/**`) is
 * the agent's own state, where it makes links of its own (docs/threat-model.md "Agent recipes"). A rule of the
 * person's or an answer still decides. Returns the planted path, or null.
 */
function plantedUnderBuiltin(
  req: WriteRequest,
  ctx: DecideContext,
  verdicts: readonly Verdict[],
): string | null {
  const c = req.call, ends = req.ends, made = ends[ends.length - 1];
  const dirOf = (p: string) => p.slice(0, p.lastIndexOf("/")) || "/";
  const planted = c.kind === "symlink" || c.kind === "mknod" ||
    ((c.kind === "rename" || c.kind === "link") && ends.length === 2 &&
      dirOf(ends[0].path) !== dirOf(made.path));
  if (!planted || made.anon || verdicts[verdicts.length - 1] !== "allow") return null;
  const rule = ctx.policy.decide("write", made.path, Date.now()).rule;
  return rule?.source.kind === "builtin" && !rule.target.endsWith("/**") ? made.path : null;
}

function carriesProtected(ctx: DecideContext, path: string): boolean {
  const rp = ctx.readProtected;
  if (!rp) return false;
  if (rp.protect.some((p) => under(p, path) && p !== path)) return true; // a directory holding one
  return readProtectedAt(ctx, path);
}

/** `path` is at or below a read-protected path and not made readable again below it. */
function readProtectedAt(ctx: DecideContext, path: string): boolean {
  const rp = ctx.readProtected;
  if (!rp) return false;
  let best = -1;
  for (const p of rp.protect) if (under(path, p) && p.length > best) best = p.length;
  if (best < 0) return false;
  return !rp.readable.some((r) => under(path, r) && r.length > best);
}

/** The protected path an allowed write of `e` touches, if any (for the bar's reason). */
function protectedAt(ctx: DecideContext, e: End, names: boolean): ProtectedPath | null {
  if (e.anon || ctx.protected.length === 0) return null;
  const d = ctx.policy.decide("write", e.path, Date.now());
  return d.effect === "allow" ? protectedHit(ctx.protected, e.path, names, d.rule) : null;
}

/**
 * The end of a write a question is about: for two paths (rename, link) the destination when it asks (the file
 * that changes: an atomic save `x.tmp.1 → x` is about `x`), else the first end that asks.
 */
export function askedEnd(ends: readonly End[], verdicts: readonly Verdict[]): string {
  const last = ends.length - 1;
  return verdicts[last] === "ask" ? ends[last].path : ends[verdicts.indexOf("ask")].path;
}

/**
 * An exec: a program name that is not UTF-8 is denied, a program the kernel would not run fails as it would;
 * else execVerdict (scripts, the loader).
 */
export function decideExec(req: ExecRequest, ctx: DecideContext): Decision {
  if (req.end.unreadable) return { answer: "deny", shown: req.end.path };
  if (req.runErrno) return { answer: "fail", errno: req.runErrno };
  const target = req.end.path;
  const v = execVerdict(ctx.policy, target, req.end.anon, (s) => ctx.look.interpreterOf(s, req.n.tid));
  if (v.effect === "allow") return { answer: "continue", at: v.at };
  if (v.loader) {
    // Say why: the loader would run its first argument, which no exec decision sees (lib/policy/loader.ts).
    const shown = `${target} (the dynamic loader as a program: allowed only by a rule naming it)`;
    return { answer: "deny", shown, suggest: target };
  }
  if (v.effect === "deny") return { answer: "deny", shown: v.at };
  return { answer: "ask", end: v.at };
}

/**
 * bind(2) of a unix socket to a path, decided as a write of a name. Performed here in the floor too, so that
 * the socket the sandbox made is known as its own (connects to it need no question: lib/policy/socket_policy.ts)
 * only once it exists.
 */
export function decideBind(req: BindRequest, ctx: DecideContext): Decision {
  if (req.end.unreadable) return { answer: "deny", shown: req.end.path };
  const v = endVerdict(ctx, req.end, false);
  if (v === "deny") return { answer: "deny", shown: req.end.path };
  if (req.exists) return { answer: "fail", errno: EADDRINUSE }; // as the kernel would say
  if (v === "ask") return { answer: "ask", end: req.end.path };
  return { answer: "perform", by: v === "floor" ? "floor" : "rule" };
}

/**
 * A connect, a send with a destination, or a listen (lib/supervisor/connect.ts prepared it): performed when
 * it has no destination, is a loopback listener, or lib/policy/socket_policy.ts says so; else the rules decide.
 */
export function decideConnect(
  kind: NetKind,
  t: ConnectTarget | null,
  own: boolean,
  ctx: Pick<DecideContext, "policy" | "mediate">,
  display: string,
): Decision {
  if (t === null) return { answer: "perform", by: "not a destination" }; // a connected peer, netlink, socketpair
  if (kind === "listen") {
    // Trapped under --mediate connect only: a listener on a reachable address lets other hosts in.
    if (isLoopback(t)) return { answer: "perform", by: "a loopback listener" };
  } else if (netVerdict(t, { mediateConnect: ctx.mediate.connect, ownSocket: own }) === "perform") {
    return { answer: "perform", by: own ? "the sandbox's own socket" : "network connects are not mediated" };
  }
  const d = ctx.policy.decide("connect", t, Date.now()).effect;
  if (d === "allow") return { answer: "perform", by: "rule" };
  if (d === "deny") return { answer: "deny", shown: display, suggest: formatTarget(t) };
  return { answer: "ask", end: display };
}
