/**
 * The supervisor side of hallpass-request (SPEC §6, docs/request-protocol.md): an exec of a magic path is
 * answered with an errno and never runs. Requests are decided with the same policy as the operations they
 * announce; grants they get are rules with a `request` source, so `release` removes exactly those.
 */
import type { Notification } from "../../ffi/notify.ts";
import { formatDest, parseConnectDest } from "../connect_dest.ts";
import { formatScope } from "../path_scope.ts";
import { decodeRequestBytes, type DecodedRequest, LINUX_ERRNO as E } from "../request_protocol.ts";
import type { Answer, Op, Question, Rule } from "../types.ts";
import type { Mediator } from "./mediator.ts";
import { baseDir, resolvePath } from "./resolve.ts";
import type { SessionConfig } from "./session_config.ts";
import { suggestScopes } from "../suggest_scope.ts";

interface PendingRequest {
  n: Notification;
  req: DecodedRequest;
  target: string;
}

export class RequestHandler {
  readonly #m: Mediator;
  readonly #cfg: SessionConfig;
  readonly #pending = new Map<number, PendingRequest>();
  #requestIds = 0;

  constructor(m: Mediator, cfg: SessionConfig) {
    this.#m = m;
    this.#cfg = cfg;
  }

  owns(qid: number): boolean {
    return this.#pending.has(qid);
  }

  handle(n: Notification, raw: Uint8Array): void {
    const d = decodeRequestBytes(raw);
    if (!d.ok) return this.#answer(n, E[d.errno], d.message);
    const req = d.request;
    if ((req.op === "exec" && !this.#cfg.mediate.exec) || (req.op === "connect" && !this.#cfg.mediate.connect)) {
      return this.#answer(n, E.ENOSYS, `${req.op} is not mediated`);
    }
    const target = this.#normalize(n, req);
    if (typeof target === "number") return this.#answer(n, target, "bad target");

    if (req.verb === "release") {
      const removed = this.#m.removeRules((r) =>
        r.source.kind === "request" && r.op === req.op && r.target === target
      );
      return this.#answer(n, removed > 0 ? E.ECANCELED : E.ESRCH, `release ${req.op} ${target}`);
    }

    const state = this.#state(req.op, target);
    if (req.verb === "check") {
      return this.#answer(
        n,
        state === "allow" ? E.EEXIST : state === "deny" ? E.EPERM : E.ENOMSG,
        `check ${req.op} ${target}`,
      );
    }
    if (state === "allow") return this.#answer(n, E.EEXIST, `already allowed: ${req.op} ${target}`);
    if (state === "deny") return this.#answer(n, E.EPERM, `a rule denies ${req.op} ${target}`);

    // Ask.
    const m = this.#m;
    const pid = m.proc.tgid(n.tid);
    const qid = m.nextQid();
    const scopes = req.op === "write" && !target.endsWith("/**")
      ? suggestScopes(target, { home: this.#cfg.home, project: this.#cfg.project }).scopes
      : [target];
    const q: Question = {
      id: qid,
      op: req.op,
      pid,
      name: m.proc.comm(pid),
      target,
      syscall: "request",
      chain: m.proc.chain(pid),
      suggestedScope: target,
      scopes: scopes.includes(target) ? scopes : [target, ...scopes],
      reason: req.reason,
      requestedForMs: req.forMs,
      requestTimeoutMs: req.timeoutMs,
    };
    this.#pending.set(qid, { n, req, target });
    m.postToMain({ t: "ask", q, key: `request\0${req.op}\0${target}\0${req.forMs ?? ""}` });
  }

  answer(qid: number, a: Answer): void {
    const p = this.#pending.get(qid);
    if (!p) return;
    this.#pending.delete(qid);
    const { n, req, target } = p;
    if (a.kind === "deny" || a.kind === "never") {
      if (a.kind === "never") {
        this.#m.addRule({ effect: "deny", op: req.op, target: a.scope ?? target, source: { kind: "answer", by: a.by } });
      }
      return this.#answer(n, a.by === "timeout" ? E.ETIMEDOUT : E.EPERM, `${req.op} ${target}: ${a.kind} by ${a.by}`);
    }
    const forMs = a.kind === "for" ? a.durationMs : req.forMs;
    const rule: Rule = {
      effect: "allow",
      op: req.op,
      target: a.scope ?? target,
      expiresAt: forMs !== undefined ? Date.now() + forMs : undefined,
      source: { kind: "request", requestId: ++this.#requestIds },
    };
    try {
      this.#m.addRule(rule);
    } catch {
      return this.#answer(n, E.EPERM, `bad scope in answer: ${a.scope}`);
    }
    this.#answer(n, E.EALREADY, `granted ${req.op} ${rule.target} by ${a.by}`);
  }

  #answer(n: Notification, errno: number, what: string): void {
    this.#m.answerRequest(n, errno);
    this.#m.logDecision({ pid: n.tid, op: "request", target: what, decision: `errno ${errno}`, by: "hallpass" });
  }

  /** The rule target a request names, or an errno. */
  #normalize(n: Notification, req: DecodedRequest): string | number {
    if (req.op === "connect") {
      try {
        const d = parseConnectDest(req.target);
        if (d.kind === "any") return E.EINVAL;
        return formatDest(d);
      } catch {
        return E.EINVAL;
      }
    }
    const tree = req.target.endsWith("/**");
    const raw = tree ? req.target.slice(0, -3) || "/" : req.target;
    if (req.op === "exec" && !raw.startsWith("/")) return E.EINVAL;
    let base = "/";
    if (!raw.startsWith("/")) {
      const b = baseDir(n.tid, -100);
      if (b.kind !== "path") return E.EINVAL;
      base = b.path;
    }
    const r = resolvePath(raw, base, true, n.tid, n.tid);
    if (r.kind !== "path") return E.EINVAL;
    return formatScope({ kind: tree ? "tree" : "exact", path: r.path });
  }

  /** Whether everything the scope covers is already allowed, partly denied, or would ask. */
  #state(op: Op, target: string): "allow" | "deny" | "ask" {
    const m = this.#m;
    const now = Date.now();
    if (op === "connect") {
      // A destination range is allowed when the policy allows its first address; a deny anywhere inside wins.
      const d = m.policy.decide("connect", target.replace(/\/\d+/, "").replace(/-\d+$/, ""), now);
      return d.effect;
    }
    const tree = target.endsWith("/**");
    const root = tree ? target.slice(0, -3) || "/" : target;
    const inside = (t: string) => {
      const p = t.endsWith("/**") ? t.slice(0, -3) : t;
      return p === root || (tree && p.startsWith(root === "/" ? "/" : root + "/"));
    };
    for (const r of m.policy.rules) {
      if (r.op === op && r.effect === "deny" && (r.expiresAt === undefined || r.expiresAt > now) && inside(r.target)) {
        return "deny";
      }
    }
    const d = m.policy.decide(op, tree ? `${root === "/" ? "" : root}/\u0001probe` : root, now);
    if (d.effect === "allow" && tree) {
      // The tree's root must be covered by the same or a wider allow, not only a narrower one.
      const dr = m.policy.decide(op, root, now);
      return dr.effect === "allow" ? "allow" : "ask";
    }
    return d.effect;
  }
}
