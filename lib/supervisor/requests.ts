/**
 * The supervisor side of hallpass-request (docs/request-protocol.md): an exec of a magic path is
 * answered with an errno and never runs. Requests are decided with the same policy as the operations they
 * announce; grants they get are rules with a `request` source, so `release` removes exactly those.
 */
import type { Notification } from "../../ffi/notify.ts";
import {
  type ConnectDest,
  type ConnectTarget,
  destSpecificity,
  formatDest,
  parseConnectDest,
} from "../policy/connect_dest.ts";
import { formatScope, isGlobTarget, scopeCovers } from "../policy/path_scope.ts";
import { type DecodedRequest, decodeRequestBytes } from "../policy/request_protocol.ts";
import { Errno as E } from "../../ffi/errors.ts";
import type { Answer, Op, Rule } from "../types.ts";
import type { Mediator } from "./mediator.ts";
import type { SessionConfig } from "./session_config.ts";
import { suggestScopes } from "../policy/suggest_scope.ts";
import { protectedHit } from "../policy/protected_paths.ts";

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
  /** The target each granted request named (the answer may have given a wider or narrower scope). */
  readonly #requested = new Map<number, string>();

  constructor(m: Mediator, cfg: SessionConfig) {
    this.#m = m;
    this.#cfg = cfg;
  }

  owns(qid: number): boolean {
    return this.#pending.has(qid);
  }

  /** Requests waiting for an answer. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Forgets the questions of requesters that are gone (killed while waiting, e.g. by `timeout`) and withdraws
   * them from the prompt, so that a later answer grants nothing nobody waits for. `alive` is the notification's
   * ID_VALID check; the mediator calls this from its periodic sweep (with pendingCount counted in its own).
   */
  withdrawDead(alive: (n: Notification) => boolean): void {
    for (const [qid, p] of this.#pending) {
      if (alive(p.n)) continue;
      this.#pending.delete(qid);
      this.#m.postToMain({ t: "withdraw", qid });
    }
  }

  handle(n: Notification, raw: Uint8Array): void {
    const d = decodeRequestBytes(raw);
    if (!d.ok) return this.#answer(n, E[d.errno], d.message);
    const req = d.request;
    if (
      (req.op === "exec" && !this.#cfg.mediate.exec) || (req.op === "connect" && !this.#cfg.mediate.connect)
    ) {
      return this.#answer(n, E.ENOSYS, `${req.op} is not mediated`);
    }
    const target = this.#normalize(n, req);
    if (typeof target === "number") return this.#answer(n, target, "bad target");

    if (req.verb === "release") {
      const ids: number[] = [];
      const removed = this.#m.removeRules((r) => {
        if (r.source.kind !== "request" || r.op !== req.op) return false;
        const hit = r.target === target || this.#requested.get(r.source.requestId) === target;
        if (hit) ids.push(r.source.requestId);
        return hit;
      });
      for (const id of ids) this.#requested.delete(id);
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
    const qid = m.questions.nextQid();
    const scopes = req.op === "write" && !target.endsWith("/**")
      ? suggestScopes(target, { home: this.#cfg.home, project: this.#cfg.project }).scopes
      : [target];
    const q = m.questions.build(qid, n.tid, {
      op: req.op,
      target,
      syscall: "request",
      suggestedScope: target,
      scopes: scopes.includes(target) ? scopes : [target, ...scopes],
      reason: req.reason,
      requestedForMs: req.forMs,
      requestTimeoutMs: req.timeoutMs,
    });
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
        const deny: Rule = {
          effect: "deny",
          op: req.op,
          target: a.scope ?? target,
          source: { kind: "answer", by: a.by },
        };
        try {
          this.#m.addRule(deny);
        } catch {
          // A scope that does not parse: deny this request only (the answer is still a deny).
        }
      }
      return this.#answer(
        n,
        a.by === "timeout" ? E.ETIMEDOUT : E.EPERM,
        `${req.op} ${target}: ${a.kind} by ${a.by}`,
      );
    }
    // "for" without a duration is the `[t]` default (as for other questions), never a grant for the session.
    const forMs = a.kind === "for" ? a.durationMs ?? req.forMs ?? 300_000 : req.forMs;
    const rule: Rule = {
      effect: "allow",
      op: req.op,
      target: a.scope ?? target,
      expiresAt: forMs !== undefined ? Date.now() + forMs : undefined,
      source: { kind: "request", requestId: ++this.#requestIds },
    };
    try {
      this.#m.addRule(rule);
      this.#requested.set(this.#requestIds, target);
    } catch {
      return this.#answer(n, E.EPERM, `bad scope in answer: ${a.scope}`);
    }
    this.#answer(n, E.EALREADY, `granted ${req.op} ${rule.target} by ${a.by}`);
  }

  #answer(n: Notification, errno: number, what: string): void {
    this.#m.answerRequest(n, errno);
    this.#m.logDecision({
      pid: n.tid,
      op: "request",
      target: what,
      decision: `errno ${errno}`,
      by: "hallpass",
    });
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
      const b = this.#m.fs.baseDir(n.tid, -100);
      if (b.kind !== "path") return E.EINVAL;
      base = b.path;
    }
    const r = this.#m.fs.resolvePath(raw, base, true, n.tid, n.tid, "lexical");
    if (r.kind !== "path") return E.EINVAL;
    // A glob is asked for as written: one reached through a symlink named otherwise would be a surprise.
    if (!tree && isGlobTarget(r.path) && !isGlobTarget(raw)) return E.EINVAL;
    return formatScope({ kind: tree ? "tree" : "exact", path: r.path });
  }

  /** Whether everything the scope covers is already allowed, partly denied, or would ask. */
  #state(op: Op, target: string): "allow" | "deny" | "ask" {
    const m = this.#m;
    const now = Date.now();
    if (op === "connect") return connectState(m, parseConnectDest(target), now);
    const tree = target.endsWith("/**");
    const root = tree ? target.slice(0, -3) || "/" : target;
    const inside = (t: string) => {
      const p = t.endsWith("/**") ? t.slice(0, -3) : t;
      return p === root || (tree && p.startsWith(root === "/" ? "/" : root + "/"));
    };
    for (const r of m.policy.rules) {
      if (
        r.op === op && r.effect === "deny" && (r.expiresAt === undefined || r.expiresAt > now) &&
        inside(r.target)
      ) {
        return "deny";
      }
    }
    const d = m.policy.decide(op, tree ? `${root === "/" ? "" : root}/\u0001probe` : root, now);
    // A protected path (lib/policy/protected_paths.ts) is not allowed by the rule that allows its surroundings.
    if (op === "write" && d.effect === "allow" && protectedHit(m.protectedPaths, root, false, d.rule)) {
      return "ask";
    }
    if (d.effect === "allow" && tree) {
      // The tree's root must be covered by the same or a wider allow, not only a narrower one.
      const dr = m.policy.decide(op, root, now);
      return dr.effect === "allow" ? "allow" : "ask";
    }
    return d.effect;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Connect requests name a set of destinations (a network, a port range, a socket folder), not one: the request
// is allowed only when one allow rule covers all of it and no deny inside it wins; it is denied when a deny rule
// decides some destination inside it.

type Inet = Extract<ConnectDest, { kind: "inet" }>;
const ANY_PORTS: [number, number] = [0, 65535];

function ports(d: Inet): [number, number] {
  return d.portLo === 0 ? ANY_PORTS : [d.portLo, d.portHi];
}

/** Whether the address set of `a` contains that of `b` (both of one family). */
function netContains(a: Inet, b: Inet): boolean {
  if (a.prefix > b.prefix) return false;
  for (let k = 0; k < 8; k++) if ((b.net[k] & a.mask[k]) !== a.net[k]) return false;
  return true;
}

/** Whether every destination of `b` is one of `a`. */
function destContains(a: ConnectDest, b: ConnectDest): boolean {
  if (a.kind === "any") return true;
  if (b.kind === "any") return false;
  if (a.kind === "unix") {
    if (b.kind !== "unix") return false;
    if (a.scope.kind === "exact") return b.scope.kind === "exact" && b.scope.path === a.scope.path;
    return scopeCovers(a.scope, b.scope.path);
  }
  if (a.kind === "abstract") {
    if (b.kind !== "abstract") return false;
    if (a.prefix) return b.name.startsWith(a.name);
    return !b.prefix && b.name === a.name;
  }
  if (b.kind !== "inet") return false;
  if (a.proto !== null && a.proto !== b.proto) return false;
  const [al, ah] = ports(a), [bl, bh] = ports(b);
  if (bl < al || bh > ah) return false;
  if (a.family === null) return true;
  return b.family === a.family && netContains(a, b);
}

/** The destinations `a` and `b` have in common (as a ConnectDest), or null when none. */
function intersect(a: ConnectDest, b: ConnectDest): ConnectDest | null {
  if (a.kind === "any") return b;
  if (b.kind === "any") return a;
  if (a.kind !== b.kind) return null;
  if (a.kind !== "inet" || b.kind !== "inet") {
    if (destContains(a, b)) return b;
    if (destContains(b, a)) return a;
    return null;
  }
  if (a.proto !== null && b.proto !== null && a.proto !== b.proto) return null;
  const [al, ah] = ports(a), [bl, bh] = ports(b);
  const lo = Math.max(al, bl), hi = Math.min(ah, bh);
  if (lo > hi) return null;
  let addr: Inet;
  if (a.family === null) addr = b;
  else if (b.family === null) addr = a;
  else if (a.family !== b.family) return null;
  else if (netContains(a, b)) addr = b;
  else if (netContains(b, a)) addr = a;
  else return null;
  const any = lo === 0 && hi === 65535;
  return {
    ...addr,
    proto: a.proto ?? b.proto,
    portLo: any ? 0 : Math.max(lo, 1),
    portHi: any ? 0 : hi,
  };
}

/** Some concrete destinations of `d` (its first and last port), to ask the policy about. */
function samples(d: ConnectDest): ConnectTarget[] {
  switch (d.kind) {
    case "any":
      return [{ family: "inet", proto: "tcp", addr: "0.0.0.0", port: 1 }];
    case "unix":
      return [{ family: "unix", path: d.scope.path }];
    case "abstract":
      return [{ family: "unix", abstract: d.name }];
    case "inet": {
      const family = d.family ?? "inet";
      const addr = d.family === null ? "0.0.0.0" : d.addr;
      const protos: ("tcp" | "udp")[] = d.proto ? [d.proto] : ["tcp", "udp"];
      const [lo, hi] = d.portLo === 0 ? [1, 65535] : [d.portLo, d.portHi];
      return protos.flatMap((proto) => [lo, hi].map((port) => ({ family, proto, addr, port })));
    }
  }
}

function connectState(m: Mediator, req: ConnectDest, now: number): "allow" | "deny" | "ask" {
  const live: { rule: Rule; dest: ConnectDest; spec: number }[] = [];
  for (const rule of m.policy.rules) {
    if (rule.op !== "connect" || (rule.expiresAt !== undefined && rule.expiresAt <= now)) continue;
    try {
      const dest = parseConnectDest(rule.target);
      live.push({ rule, dest, spec: destSpecificity(dest) });
    } catch { /* the policy refused it too */ }
  }
  const denies: { spec: number; overlap: ConnectDest }[] = [];
  for (const l of live) {
    if (l.rule.effect !== "deny") continue;
    const overlap = intersect(l.dest, req);
    if (overlap === null) continue;
    // A deny decides part of the request unless a more specific allow wins everywhere it does.
    for (const t of samples(overlap)) {
      if (m.policy.decide("connect", t, now).effect === "deny") return "deny";
    }
    denies.push({ spec: l.spec, overlap });
  }
  const covered = live.some((l) => l.rule.effect === "allow" && destContains(l.dest, req));
  if (!covered) return "ask";
  for (const d of denies) {
    const beaten = live.some((l) =>
      l.rule.effect === "allow" && l.spec > d.spec && destContains(l.dest, d.overlap)
    );
    if (!beaten) return "ask";
  }
  return "allow";
}
