/**
 * One agent's question list, followed by long-polling (docs/kubernetes-answering.md), and answers sent to it.
 * `hallpass answer` runs one feed per `--agent` and merges them: one bar, or one JSON stream, for many nodes.
 *
 * Everything an agent sends is checked field by field ({@linkcode toRemoteQuestion}); a failure is a few words
 * in {@linkcode AgentFeed.problem}, never a stack.
 */
import type { Answer, ContainerIdentity, Op, Question } from "../types.ts";
import { visible } from "../ui/sanitize.ts";
import { readAtMost } from "./bounded_body.ts";
import { hmacKey, MAX_SKEW_MS, signRequest } from "./signed_request.ts";

const POLL_WAIT_S = 25;
/** The largest question list read from an agent (its own list is bounded far below: 1024 bounded questions). */
export const MAX_LIST_BYTES = 32 << 20;
/** The largest reply to an answer read from an agent. */
const MAX_REPLY_BYTES = 64 << 10;

/** A response body as text, at most `max` bytes: an agent that sends more is refused, never held in memory. */
async function boundedText(r: Response, max: number): Promise<string> {
  const all = await readAtMost(r.body, max);
  if (all === null) throw new Error(`the agent sent more than ${max >> 10} KiB`);
  return new TextDecoder().decode(all);
}
const RETRY_MS = 2000;

/** A question as listed by an agent, as a client needs it. */
export interface RemoteQuestion {
  question: Question;
  container: ContainerIdentity;
  expiresAt: number;
  askedAt: number;
  /** The agent's digest of the question as listed: the answer carries it, and a change re-arms the bar. */
  digest: string;
  /** The agent (its URL) and the node it runs on, as it says. */
  agent: string;
  node: string;
}

const str = (x: unknown): x is string => typeof x === "string";
const strs = (x: unknown): x is string[] => Array.isArray(x) && x.every(str);
export const num = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const OPS_SET = new Set<unknown>(["write", "exec", "connect"]);

/** One listed question, checked field by field; null when anything needed is missing or of the wrong type. */
export function toRemoteQuestion(x: unknown, agent = "", node = ""): RemoteQuestion | null {
  if (typeof x !== "object" || x === null) return null;
  const o = x as Record<string, unknown>;
  const c = o.container as Record<string, unknown> | null;
  if (!num(o.id) || !num(o.pid) || !num(o.expiresAt) || !OPS_SET.has(o.op) || !str(o.digest)) return null;
  if (!str(o.name) || !str(o.target) || !str(o.syscall) || !strs(o.chain)) return null;
  if (!str(o.suggestedScope) || !strs(o.scopes)) return null;
  if (typeof c !== "object" || c === null || ![c.namespace, c.pod, c.container, c.id].every(str)) return null;
  const container = {
    namespace: c.namespace,
    pod: c.pod,
    container: c.container,
    id: c.id,
  } as ContainerIdentity;
  const question: Question = {
    id: o.id,
    op: o.op as Op,
    pid: o.pid,
    name: o.name,
    target: o.target,
    syscall: o.syscall,
    chain: o.chain,
    suggestedScope: o.suggestedScope,
    scopes: o.scopes,
    container,
  };
  if (strs(o.argv)) question.argv = o.argv;
  if (str(o.exe)) question.exe = o.exe;
  if (strs(o.paths) && o.paths.length === 2) question.paths = [o.paths[0], o.paths[1]];
  if (str(o.reason)) question.reason = o.reason;
  if (str(o.warning)) question.warning = o.warning;
  if (num(o.requestedForMs) && o.requestedForMs > 0) question.requestedForMs = o.requestedForMs;
  const askedAt = num(o.askedAt) ? o.askedAt : 0;
  return { question, container, expiresAt: o.expiresAt, askedAt, digest: o.digest, agent, node };
}

/** A fetch failure in a few words ("connection refused"), never a stack. */
export function describe(e: unknown): string {
  // Deno's fetch says "fetch failed" and puts the reason in `cause`.
  const cause = e instanceof Error && e.cause instanceof Error ? ` ${e.cause.message}` : "";
  const m = (e instanceof Error ? e.message : String(e)) + cause;
  if (e instanceof DOMException && (e.name === "TimeoutError" || e.name === "AbortError")) {
    return "no answer in time";
  }
  for (
    const [re, text] of [
      [/connection refused/i, "connection refused"],
      [/no route to host/i, "no route to host"],
      [/dns error|name or service not known|failed to lookup/i, "unknown host"],
      [/connection reset/i, "connection reset"],
      [/timed out/i, "timed out"],
      [/certificate|tls/i, "TLS error"],
    ] as const
  ) if (re.test(m)) return text;
  return visible(m.split("\n")[0]).slice(0, 100);
}

/** What became of an answer sent to an agent. */
export type SendResult =
  | { ok: true }
  | { ok: false; status: number; error: string };

/** One agent followed: its pending questions, its problem if any; answers go to it. */
export class AgentFeed {
  readonly url: string;
  readonly #headers: Record<string, string>;
  /** The token as an HMAC key: requests are signed, the token itself is never sent (signed_request.ts). */
  readonly #key: Promise<CryptoKey>;
  readonly #stop: AbortSignal;
  questions: RemoteQuestion[] = [];
  /** Why the list is not current (the agent unreachable), or undefined. */
  problem: string | undefined;
  /** The clock difference: the agent's `now` minus ours. */
  skew = 0;
  node = "";

  constructor(url: string, token: string, client: string, stop: AbortSignal) {
    this.url = url;
    this.#headers = { "x-hallpass-client": client };
    this.#key = hmacKey(token);
    this.#stop = stop;
  }

  async #fetch(path: string, init: RequestInit, timeoutMs: number): Promise<Response> {
    const method = init.method ?? "GET";
    const body = typeof init.body === "string" ? init.body : "";
    const authorization = await signRequest(
      await this.#key,
      Math.round(Date.now() + this.skew),
      method,
      path.split("?")[0],
      body,
    );
    return await fetch(this.url + path, {
      ...init,
      headers: { ...this.#headers, authorization, ...(init.headers as Record<string, string> | undefined) },
      signal: AbortSignal.any([this.#stop, AbortSignal.timeout(timeoutMs)]),
    });
  }

  /**
   * Follows the list until stopped: `changed` after each new list or problem. Resolves with an error text when
   * the agent refuses the token (401), which no retry mends; else when stopped.
   */
  async follow(changed: () => void): Promise<string | undefined> {
    let version: number | null = null;
    let clockTried = false;
    while (!this.#stop.aborted) {
      try {
        const path = version === null
          ? "/api/questions"
          : `/api/questions?wait=${POLL_WAIT_S}&after=${version}`;
        const r = await this.#fetch(path, {}, (POLL_WAIT_S + 10) * 1000);
        if (r.status === 401) {
          // A clock far from the agent's makes the signature stale: take the agent's time once and try again.
          let now: unknown;
          try {
            now = JSON.parse(await boundedText(r, MAX_REPLY_BYTES)).now;
          } catch { /* not JSON */ }
          if (!clockTried && num(now) && Math.abs(now - Date.now() - this.skew) > MAX_SKEW_MS / 2) {
            clockTried = true;
            this.skew = now - Date.now();
            continue;
          }
          return `the agent at ${this.url} refused the token (HTTP 401); check --token-file`;
        }
        if (!r.ok) {
          await r.body?.cancel();
          throw new Error(`HTTP ${r.status}`);
        }
        const list = JSON.parse(await boundedText(r, MAX_LIST_BYTES)) as Record<string, unknown>;
        if (
          typeof list !== "object" || list === null || !num(list.version) || !Array.isArray(list.questions)
        ) throw new Error("not a question list");
        version = list.version;
        if (num(list.now)) this.skew = list.now - Date.now();
        if (str(list.node)) this.node = list.node;
        this.questions = list.questions.map((q) => toRemoteQuestion(q, this.url, this.node))
          .filter((q): q is RemoteQuestion => q !== null);
        this.problem = undefined;
        changed();
      } catch (e) {
        if (this.#stop.aborted) return;
        version = null;
        this.problem = `cannot reach ${visible(this.url)} (${describe(e)}); retrying every ${
          RETRY_MS / 1000
        }s`;
        changed();
        await new Promise<void>((r) => {
          const t = setTimeout(r, RETRY_MS);
          this.#stop.addEventListener("abort", () => {
            clearTimeout(t);
            r();
          }, { once: true });
        });
      }
    }
  }

  /** Sends `answer` for the question as it was shown (its id and digest). */
  async send(rq: RemoteQuestion, answer: Answer): Promise<SendResult> {
    const body: Record<string, unknown> = { id: rq.question.id, digest: rq.digest, kind: answer.kind };
    if (answer.durationMs !== undefined) body.durationMs = answer.durationMs;
    if (answer.scope !== undefined) body.scope = answer.scope;
    try {
      const r = await this.#fetch("/api/answer", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }, 15_000);
      const text = await boundedText(r, MAX_REPLY_BYTES);
      if (r.ok) return { ok: true };
      let error = `HTTP ${r.status}`;
      try {
        error += `: ${JSON.parse(text).error}`;
      } catch { /* not JSON */ }
      return { ok: false, status: r.status, error };
    } catch (e) {
      return { ok: false, status: 0, error: describe(e) };
    }
  }
}

/** The questions of several feeds, oldest first (by the time each agent says it was asked). */
export function merged(feeds: AgentFeed[]): RemoteQuestion[] {
  return feeds.flatMap((f) => f.questions).sort((a, b) => a.askedAt - b.askedAt);
}

/** A question's key across agents: ids are an agent's own. */
export const keyOf = (q: RemoteQuestion) => `${q.agent} ${q.question.id}`;
