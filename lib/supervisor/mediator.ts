/**
 * The supervisor's decisions on trapped system calls, orchestrated: one notification goes
 *   decode.ts (read once into a typed Request: each path end canonical or marked unreadable, our fd copy)
 *   → decide.ts (the answer, pure: continue, perform, deny, fail as the kernel would, ask)
 *   → respond.ts (the only code that answers the kernel, and counts) with perform.ts/emulate.ts (performed
 *     here, on our own copy of what was decided, as the caller), questions.ts (asked, answered later by id)
 *     and report.ts (the log, the denial lines).
 * Every sandboxed process is hostile: what it passes is read once and never trusted again; CONTINUE only where
 * the kernel re-checks (Landlock's floor, no deny rule in it); anything unreadable, malformed, unknown or
 * unanswered is denied, and ID_VALID is checked after reading its memory and before acting
 * (docs/threat-model.md). The Worker never waits for a person.
 */
import { getRemoteFd, type Notification, type NotifyFd } from "../../ffi/notify.ts";
import type { FastRoots } from "../../ffi/fastpath.ts";
import type { Policy } from "../policy/policy.ts";
import { isGlobTarget } from "../policy/path_scope.ts";
import type { Answer, Op, Rule } from "../types.ts";
import type { ProtectedPath } from "../policy/protected_paths.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import type { SessionConfig, ToMain } from "./session_config.ts";
import { ProcInfo } from "./proc_info.ts";
import { type NetKind, NetMediator } from "./connect.ts";
import { RequestHandler } from "./requests.ts";
import { SysCalls } from "./sys_calls.ts";
import { openOwnPty } from "./other_terminals.ts";
import { Respond } from "./respond.ts";
import { Emulate } from "./emulate.ts";
import {
  decodeBind,
  decodeExec,
  decodeWrite,
  openFlags,
  readExecPath,
  type Trapped,
  trappedCalls,
} from "./decode.ts";
import { decide, decideAnswered, decideConnect, type Decision, endVerdict } from "./decide.ts";
import { type Pending, Questions, syscallOf } from "./questions.ts";
import { Context } from "./context.ts";
import type { Resolver } from "./resolve.ts";
import { Report } from "./report.ts";
import { Perform } from "./perform.ts";
import { RuntimeSetup } from "./runtime_setup.ts";
import { ReadOpens } from "./read_open.ts";
import { formatTarget } from "../policy/connect_dest.ts";
import { Errno } from "../../ffi/errors.ts";

export class Mediator {
  readonly respond: Respond;
  readonly #cfg: SessionConfig;
  readonly #nfd: NotifyFd;
  readonly #post: (m: ToMain) => void;
  /** The rules, the floor, and the DecideContext (lib/supervisor/context.ts). */
  readonly #context: Context;
  /** What each trapped system call number is (lib/supervisor/decode.ts trappedCalls). */
  readonly #byNr: Map<number, Trapped>;
  readonly net: NetMediator;
  /** Questions and the calls waiting for their answers (lib/supervisor/questions.ts). */
  readonly questions: Questions;
  /** Performs allowed calls (lib/supervisor/emulate.ts). */
  readonly #emulate: Emulate;
  readonly #report: Report;
  readonly #reads: ReadOpens;
  /** A container's runtime, while its setup runs (lib/supervisor/runtime_setup.ts). */
  readonly #setup: RuntimeSetup | null;
  readonly proc: ProcInfo;
  readonly #requests: RequestHandler;
  /** Other processes, keyrings, file ioctls (lib/supervisor/sys_calls.ts). */
  readonly #sys: SysCalls;
  /** Performs allowed calls and answers them (lib/supervisor/perform.ts). */
  readonly #perform: Perform;
  readonly #tgid = (tid: number) => this.proc.tgid(tid);

  constructor(cfg: SessionConfig, nfd: NotifyFd, post: (m: ToMain) => void, readonly fs: Resolver) {
    this.#cfg = cfg;
    this.#nfd = nfd;
    this.respond = new Respond(nfd);
    this.#post = post;
    this.#setup = cfg.container && cfg.container.setupDone !== true ? new RuntimeSetup(cfg.commandPid) : null;
    this.#context = new Context(cfg, fs);
    this.#byNr = trappedCalls();
    this.net = new NetMediator(nfd, this.respond, cfg.mediate.connect, fs);
    this.proc = new ProcInfo(cfg.commandPid);
    this.#report = new Report(cfg, this.proc, post, this.policy);
    const allowPrivileged = cfg.allowPrivilegedFiles === true;
    this.#emulate = new Emulate(nfd, this.respond, this.proc, this.net, allowPrivileged, fs.view);
    this.#reads = new ReadOpens(nfd, fs, this.respond, this.#emulate, this.#report, this.proc, this.#context);
    const writable = (p: string) =>
      this.policy.decide("write", p, Date.now()).effect === "allow" || this.#context.inFloor(p);
    this.questions = new Questions(cfg, this.proc, post, this.respond, this.net, nfd, writable, fs.view);
    this.#perform = new Perform({
      cfg,
      respond: this.respond,
      emulate: this.#emulate,
      report: this.#report,
      questions: this.questions,
      context: this.#context,
      net: this.net,
      post,
    });
    this.#requests = new RequestHandler(this, cfg);
    this.#sys = new SysCalls({
      nfd,
      policy: this.policy,
      launcherPid: cfg.launcherPid,
      container: cfg.container !== undefined,
      allowKeyring: cfg.allowKeyring === true,
      tgid: this.#tgid,
      respond: this.respond,
      asCaller: (tid, fn) => this.#emulate.asCaller(tid, fn),
      denied: (n, syscall, op, target, suggest) =>
        this.#report.sysDenied(n.tid, syscall, op, target, suggest),
    });
  }

  get policy(): Policy {
    return this.#context.policy;
  }

  /** Paths that ask even where a rule allows (lib/policy/protected_paths.ts). */
  get protectedPaths(): readonly ProtectedPath[] {
    return this.#context.protectedPaths;
  }

  get config(): SessionConfig {
    return this.#cfg;
  }

  /** What the fast path may decide by itself (lib/supervisor/context.ts); `rootsVersion` says when it changed. */
  fastRoots(): FastRoots {
    return this.#context.fastRoots(this.#report.logging);
  }

  get rootsVersion(): number {
    return this.#context.rootsVersion;
  }

  addRule(rule: Rule): void {
    this.#context.addRule(rule);
  }

  removeRules(pred: (r: Rule) => boolean): number {
    return this.#context.removeRules(pred);
  }

  /** Handles one notification: answers it now, or posts a question and answers later. */
  handle(n: Notification): void {
    this.respond.stats.notifications++;
    const h = this.#byNr.get(n.nr);
    try {
      if (this.#setup?.passes(n.tid)) return this.respond.continue(n);
      if (h === undefined) {
        if (!this.#sys.handle(n)) this.#deny(n, "unknown", `syscall ${n.nr}`, "write", "filter");
      } else if (h === "cwd") {
        this.respond.continue(n); // chdir/fchdir: trapped only so that the fast path knows when a cwd changes
      } else if (h === "execve" || h === "execveat") this.#exec(n, h === "execveat");
      else if (h === "bind") this.#bind(n);
      else if (typeof h === "string") this.#connect(n, h);
      else this.#write(n, h);
    } catch (e) {
      // The caller is gone (its thread exited while this was decided, e.g. its /proc entry vanished): there is
      // no call left to answer, and nothing was denied to anyone. Else fail closed: the call does not go through.
      if (!this.respond.denyIfValid(n)) return;
      this.#report.failed(n.tid, e);
    }
  }

  #write(n: Notification, c: WriteCall): void {
    if (this.#reads.handles(n, c)) return; // read-only opens: a pod's protect profile (read_open.ts)
    const req = decodeWrite(this.fs, this.#nfd, n, c, this.#tgid);
    if (req.op === "error") return this.respond.error(n, req.errno);
    const p: Pending = { n, op: "write", call: c, targets: req.ends, fdCopy: req.fdCopy, qid: 0 };
    this.#apply(p, decide(req, this.#context.ctx), c.name);
  }

  #exec(n: Notification, at: boolean): void {
    const read = readExecPath(this.#nfd, n, at);
    if (read.kind === "request") return this.#requests.handle(n, read.raw);
    if (!this.#cfg.mediate.exec) return this.respond.continue(n, true);
    if (read.kind === "error") return this.respond.error(n, read.errno);
    const req = decodeExec(this.fs, n, at, read, this.#tgid);
    if (req.op === "error") return this.respond.error(n, req.errno);
    if (req.runErrno) return this.respond.error(n, req.runErrno); // answered as the kernel would
    if (!this.respond.valid(n)) return;
    const p: Pending = {
      n,
      op: "exec",
      call: null,
      targets: [req.end],
      fdCopy: -1,
      exec: true,
      execAt: at,
      qid: 0,
    };
    this.#apply(p, decide(req, this.#context.ctx), at ? "execveat" : "execve");
  }

  /** bind(2): a unix socket path is a write (performed here, lib/supervisor/emulate.ts); an abstract name too. */
  #bind(n: Notification): void {
    const b = decodeBind(this.fs, this.#nfd, n);
    if (b.kind === "other") return this.respond.continue(n);
    if (b.kind === "abstract") return this.#emulate.bindAbstract(n, b.addr, b.len);
    if (b.kind === "error") return this.respond.error(n, b.errno);
    const p: Pending = { n, op: "write", call: null, targets: [b.req.end], fdCopy: -1, qid: 0 };
    const d = decide(b.req, this.#context.ctx);
    if (d.answer === "perform" || d.answer === "ask") {
      const fd = getRemoteFd(this.proc.tgid(n.tid), Number(BigInt.asIntN(32, n.args[0])));
      if (fd < 0) return this.respond.error(n, -fd);
      p.bindFd = fd;
    }
    this.#apply(p, d, "bind");
  }

  /** connect, sends with a destination, listen: lib/supervisor/connect.ts prepares and performs. */
  #connect(n: Notification, kind: NetKind): void {
    const d = this.net.prepare(n, kind, this.proc.tgid(n.tid));
    if (d.kind === "continue") return this.respond.continue(n, true);
    if (d.kind === "fail") return this.respond.error(n, d.errno);
    if (!this.respond.valid(n)) return this.net.release(d.op);
    const p: Pending = {
      n,
      op: "connect",
      call: null,
      targets: [{ path: d.display, anon: false }],
      fdCopy: -1,
      qid: 0,
    };
    p.net = d.op;
    if (d.target) {
      p.dest = d.target;
      p.suggest = formatTarget(d.target);
    }
    this.#apply(p, decideConnect(kind, d.target, d.own === true, this.#context.ctx, d.display), kind);
  }

  /** Gives decision `d` for pending call `p`. `by`: an answer's word for an allowed call (else the rule's). */
  #apply(p: Pending, d: Decision, syscall: string, by?: string): void {
    const n = p.n;
    switch (d.answer) {
      case "pty": {
        const flags = p.call ? openFlags(n, p.call) : 0;
        if (openOwnPty(this.respond, n, flags, p.targets[0].path, this.#cfg.launcherPid)) return;
        return this.#apply(p, d.otherwise, syscall, by);
      }
      case "continue": {
        if (d.at !== undefined && d.at !== p.targets[0].path) p.targets = [{ path: d.at, anon: false }];
        // With --log, name the process before answering: once answered, it may exit at once.
        const who = this.#report.who(n.tid);
        this.respond.continue(n);
        if (!who) return;
        const target = p.targets.map((t) => t.path).join(" → ");
        const rec = p.exec ? { op: "exec", target } : { op: "write", syscall, target };
        this.#report.line({ ...who, ...rec, decision: "allow", by: by ?? "rule" });
        return;
      }
      case "perform":
        return this.#perform.perform(p, by ?? d.by);
      case "fail":
        this.questions.release(p);
        return this.respond.error(n, d.errno);
      case "deny":
        this.questions.release(p);
        return this.#deny(n, syscall, d.shown, p.op, d.by ?? by ?? "rule", d.suggest, d.errno);
      case "ask":
        if (p.exec && d.end !== p.targets[0].path) p.targets = [{ path: d.end, anon: false }]; // an interpreter
        if (d.asking !== undefined) p.asking = d.asking;
        if (d.warning !== undefined) p.warning = d.warning;
        if (d.suggest !== undefined) p.suggest = d.suggest;
        if (d.scopes !== undefined) p.scopes = d.scopes;
        if (this.#cfg.noAsk) return this.#denyUnasked(p, syscall);
        return this.questions.ask(p, d.end, syscall);
    }
  }

  /** Tries the opens waiting for a FIFO's reader again. */
  retryWaiting(): void {
    this.#perform.retryWaiting();
  }

  /** Denies the call (EACCES unless `errno`) and reports it (lib/supervisor/report.ts). */
  #deny(
    n: Notification,
    syscall: string,
    target: string,
    op: Op,
    by: string,
    suggest?: string,
    errno: number = Errno.EACCES,
  ): void {
    const who = this.#report.denying(n.tid); // before answering: once answered, it may exit at once
    this.respond.deny(n, errno);
    // For a write, the suggestion is about the end that asks, else the first outside the floor.
    const ctx = this.#context.ctx;
    const end = (ends: string[]) =>
      ends.find((t) => endVerdict(ctx, { path: t, anon: false }, false) === "ask") ??
        ends.find((t) => !this.#context.inFloor(t)) ?? ends[0];
    this.#report.denied(who, syscall, target, op, by, suggest, end);
  }

  /** --no-ask: what would ask is denied here, without a round trip to the main thread. */
  #denyUnasked(p: Pending, syscall: string): void {
    this.questions.release(p);
    this.#deny(p.n, syscall, p.targets.map((t) => t.path).join(" → "), p.op, "no-ask", p.suggest);
  }

  /** The main thread's answer to question `qid`. */
  answer(qid: number, a: Answer): void {
    // The log lines written while the answer is applied name the question they come from.
    this.#report.answering = qid;
    try {
      if (this.#requests.owns(qid)) return this.#requests.answer(qid, a);
      const p = this.questions.take(qid);
      if (!p) return;
      try {
        this.#answer(p, a);
      } catch (e) {
        // Fail closed, as handle() does: the call does not go through, the session goes on.
        this.questions.release(p);
        if (!this.respond.denyIfValid(p.n)) return; // the caller is gone: nothing to answer or report
        this.#report.line({
          pid: p.n.tid,
          op: p.op,
          target: "?",
          decision: "deny",
          by: "error",
          error: String(e),
        });
      }
    } finally {
      this.#report.answering = undefined;
    }
  }

  #answer(p: Pending, a: Answer): void {
    if (!this.respond.valid(p.n)) return this.questions.release(p);
    if (a.kind === "for" || a.kind === "always" || a.kind === "never") {
      const target = a.scope ?? p.asked ?? p.targets[0].path;
      try {
        // A name with a `*` in it would become a glob rule covering its neighbours (`~/.bash*`): refused.
        if (isGlobTarget(target) && p.targets.some((t) => isGlobTarget(t.path))) throw new Error("glob");
        this.addRule({
          effect: a.kind === "never" ? "deny" : "allow",
          op: p.op,
          target,
          expiresAt: a.kind === "for" ? Date.now() + (a.durationMs ?? 300_000) : undefined,
          source: { kind: "answer", by: a.by },
        });
      } catch {
        // A scope that does not parse is a bad answer: deny.
        this.questions.release(p);
        return this.#deny(p.n, syscallOf(p), p.targets[0].path, p.op, a.by);
      }
    }
    if (a.kind === "deny" || a.kind === "never") {
      this.questions.release(p);
      return this.#deny(p.n, syscallOf(p), p.targets.map((t) => t.path).join(" → "), p.op, a.by, p.suggest);
    }
    // Allowed by the answer. `once` grants what the bar showed (every end of a rename or link); a grant with a
    // scope (`[t]`, `[a]`) covers an end only if the end is inside it: an end it leaves out is asked again.
    if (p.exec || p.net) return this.#perform.perform(p, a.by);
    const once = a.kind === "once";
    const at = p.call?.atFlags !== undefined ? Number(p.n.args[p.call.atFlags] & 0xffffffffn) : 0;
    const d = decideAnswered(this.#context.ctx, p.call, p.targets, p.fdCopy >= 0, once, p.asking ?? 1, at);
    this.#apply(p, d, syscallOf(p), a.by);
  }

  /** A process died or the session ends: forget its questions. */
  withdrawDead(): void {
    this.questions.withdrawDead();
    this.#requests.withdrawDead((n) => this.respond.valid(n));
  }

  /** Questions waiting for an answer (operations and hallpass-request requests), and opens waiting for a FIFO. */
  get pendingCount(): number {
    return this.questions.size + this.#requests.pendingCount + this.#perform.waiting;
  }

  /** Answers a request made with hallpass-request. */
  answerRequest(n: Notification, errno: number): void {
    this.respond.error(n, errno);
  }

  postToMain(m: ToMain): void {
    this.#post(m);
  }

  logDecision(rec: Record<string, unknown>): void {
    this.#report.line(rec);
  }

  close(): void {
    this.#perform.close();
    this.questions.close();
    this.#report.close();
  }
}
