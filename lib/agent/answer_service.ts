/**
 * The question service of `hallpass agent` (docs/kubernetes.md): what no rule decides waits here until a person answers it
 * over HTTP — `hallpass answer` in a terminal, or the web page — or the timeout denies it.
 *
 * Threat model:
 * * Untrusted: every text of a question (process names, command lines, paths, reasons, warnings, and the pod and
 *   container names too: whoever creates a pod names it). The JSON carries them exactly; the `shown` copies and
 *   the web page make control characters, escape sequences and bidi controls visible, and the page only ever
 *   puts text into the document as text (`textContent`), never as HTML.
 * * Untrusted: every HTTP request until its bearer token matched one of the tokens (compared in constant time);
 *   bodies are bounded (64 KiB) and checked field by field before anything changes.
 * * Authoritative: the agent's calls to {@linkcode AnswerService.backend}'s `ask`, the token file, the clock.
 * * Fails closed: a question nobody answers is denied at its deadline; closing the service denies what waits;
 *   a malformed answer changes nothing.
 * * Not protected here: the token and the questions travel in clear over plain HTTP. Put TLS in front of it, or
 *   reach it through `kubectl port-forward`; the service listens exactly on the address it is given.
 *
 * @example
 * ```ts
 * const tokens = await loadTokens("/etc/hallpass/tokens");
 * const svc = await AnswerService.start({ listen: "127.0.0.1:7474", tokens, timeoutMs: 120_000, logPath: null,
 *   warn: (l) => console.error(l) });
 * const ask = svc.backend(); // the AskBackend the agent gives every container's supervisor
 * const answer = await ask.ask(question, signal); // { kind: "once", by: "web:alice" }, or a deny
 * await svc.close();
 * ```
 */

import type { Answer, AnswerKind, ContainerIdentity, Question } from "../types.ts";
import type { AskBackend } from "../ask/backend.ts";
import { UsageError } from "../types.ts";
import { visible } from "../ui/sanitize.ts";
import { who } from "../ui/prompt_bar.ts";
import { type HttpLimits, HttpServer } from "./http_server.ts";
import { Sha256 } from "../util/sha256.ts";
import { readAtMost } from "./bounded_body.ts";
import { SCHEME, SignatureCheck } from "./signed_request.ts";

/** Options of {@linkcode AnswerService.start}. */
export interface AnswerServiceOptions {
  /** `HOST:PORT` (`[::1]:PORT` for IPv6); port 0 picks a free one (see {@linkcode AnswerService.address}). */
  listen: string;
  /** token → who holds it (a name for `by` and the log). */
  tokens: Map<string, string>;
  /** An unanswered question is denied after this long (a question's own shorter `requestTimeoutMs` wins). */
  timeoutMs: number;
  /** Decision log (one JSON line each), appended to; null: the lines go to `warn`. */
  logPath: string | null;
  /** One line for the agent's stderr. */
  warn: (line: string) => void;
  /** How long a withdrawn question waits for the kernel's re-sent call. Default 3 s. */
  graceMs?: number;
  /** Questions waiting in all; beyond, new ones are denied at once (`by: "flood"`). Default 1024. */
  maxPending?: number;
  /** Questions one container may have waiting; beyond, its new ones are denied at once. Default 64. */
  maxPerContainer?: number;
  /** The first question id (default: a random one; tests set it to show what the digest refuses). */
  firstId?: number;
  /** Connection bounds of the HTTP server (lib/agent/http_server.ts has the defaults). */
  httpLimits?: Partial<HttpLimits>;
}

/** Bodies larger than this are refused with 413. */
export const MAX_BODY = 64 * 1024;
/** The longest long-poll (`wait=`), in seconds. */
export const MAX_WAIT_S = 60;
/** The `[t]` duration when an answer gives none (and the question requested none). */
export const DEFAULT_FOR_MS = 5 * 60_000;
const ANSWER_KINDS: readonly AnswerKind[] = ["once", "for", "always", "deny", "never"];
const NODE = (() => {
  try {
    return Deno.env.get("HALLPASS_NODE_NAME") || Deno.hostname();
  } catch {
    return "";
  }
})();
const NO_CONTAINER: ContainerIdentity = { namespace: "", pod: "", container: "", id: "" };

/**
 * A pending question as the API lists it (`GET /api/questions`): the question's own fields (lib/types.ts
 * documents them), with the service's id, times and state, and the texts made safe to show.
 */
export interface ListedQuestion extends
  Pick<
    Question,
    | "pid"
    | "name"
    | "exe"
    | "paths"
    | "op"
    | "target"
    | "argv"
    | "syscall"
    | "chain"
    | "suggestedScope"
    | "scopes"
    | "reason"
    | "warning"
    | "requestedForMs"
  > {
  /**
   * The service's id for it: stays the same when the kernel re-sends the call (see the module doc); unique across
   * agent instances (a random start).
   */
  id: number;
  /** What an answer must carry: {@linkcode questionDigest} of this question as listed. */
  digest: string;
  /** When it was first asked and when it will be denied (ms since the epoch, the agent's clock). */
  askedAt: number;
  expiresAt: number;
  /** False while it is withdrawn (no process waits on it) and kept for the kernel's re-sent call. */
  waiting: boolean;
  container: ContainerIdentity;
  /** The same texts made safe to display (control characters and bidi controls made visible). */
  shown: {
    pod: string;
    name: string;
    /** Who asks, as the terminal bar says it: the kernel's executable, then the name it gives itself. */
    who: string;
    target: string;
    chain: string[];
    scopes: string[];
    reason?: string;
    warning?: string;
  };
}

/** `GET /api/questions`: the pending questions, oldest first, and the list's version for long-polling. */
export interface QuestionList {
  version: number;
  now: number;
  /** The node the agent runs on: `$HALLPASS_NODE_NAME` (the DaemonSet sets it), else the host name. */
  node: string;
  questions: ListedQuestion[];
}

interface Waiter {
  resolve: (a: Answer) => void;
  signal: AbortSignal;
  onAbort: () => void;
  view: Set<Waiter>;
}

interface Pending {
  id: number;
  /** The question as listed (fields that do not change), made once, and its digest. */
  listed: Omit<ListedQuestion, "waiting" | "expiresAt">;
  key: string;
  question: Question;
  container: ContainerIdentity;
  askedAt: number;
  expiresAt: number;
  waiters: Waiter[];
  timer: ReturnType<typeof setTimeout>;
  grace?: ReturnType<typeof setTimeout>;
}

/** `namespace/pod container`, or `(no pod) ID` for a container the runtime gave no pod for. Not sanitized. */
export function podLabel(c: ContainerIdentity): string {
  if (!c.namespace && !c.pod) return `(no pod) ${c.container || c.id.slice(0, 12) || "?"}`;
  return `${c.namespace || "?"}/${c.pod || "?"} ${c.container || "?"}`;
}

/**
 * Reads a token file: one token a line, `NAME TOKEN` or just `TOKEN` (named `token`); blank lines and `#`
 * comments are skipped. Tokens are at least 16 printable characters without spaces; names are letters, digits
 * and `._@-`. Throws a {@linkcode UsageError} naming the file and line for anything else.
 */
export async function loadTokens(path: string): Promise<Map<string, string>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    throw new UsageError(
      `token file ${path}: ${e instanceof Deno.errors.NotFound ? "not found" : (e as Error).message}`,
    );
  }
  const tokens = new Map<string, string>();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === "" || line.startsWith("#")) continue;
    const where = `token file ${path}:${i + 1}`;
    const words = line.split(/\s+/);
    if (words.length > 2) {
      throw new UsageError(`${where}: expected "NAME TOKEN" or "TOKEN", got ${words.length} words`);
    }
    const [name, token] = words.length === 2 ? words : ["token", words[0]];
    if (!/^[A-Za-z0-9._@-]{1,64}$/.test(name)) {
      throw new UsageError(
        `${where}: a name is 1-64 letters, digits or ._@- (got ${JSON.stringify(visible(name))})`,
      );
    }
    if (!/^[\x21-\x7e]+$/.test(token)) {
      throw new UsageError(`${where}: a token is printable ASCII without spaces`);
    }
    if (token.length < 16) {
      throw new UsageError(`${where}: token too short (${token.length} characters; at least 16)`);
    }
    if (token.length > 1024) throw new UsageError(`${where}: token too long (at most 1024 characters)`);
    if (tokens.has(token)) throw new UsageError(`${where}: the same token appears twice`);
    tokens.set(token, name);
  }
  if (tokens.size === 0) throw new UsageError(`token file ${path}: no tokens in it`);
  return tokens;
}

/** Splits `HOST:PORT` / `[V6]:PORT`. */
function parseListen(listen: string): { hostname: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new UsageError(`listen address ${JSON.stringify(listen)}: expected HOST:PORT`);
  }
  return { hostname: m[1] ?? m[2], port };
}

const enc = new TextEncoder();

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(text)));
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** The question service. One per agent; every container's supervisor asks through {@linkcode backend}. */
export class AnswerService {
  readonly #opts: Required<AnswerServiceOptions>;
  readonly #digests: [Uint8Array, string][];
  /** `hallpass answer`'s signed requests (lib/agent/signed_request.ts). */
  readonly #signed: SignatureCheck;
  readonly #pending = new Map<number, Pending>();
  readonly #byKey = new Map<string, Pending>();
  #server: HttpServer | null = null;
  /**
   * Ids start at a random point of a 2^50 range: a client of an agent that restarted (or of another agent behind
   * the same address) names an id no question of this one has, and its answer is refused (404), never applied
   * to another question. The digest each answer carries refuses the rest (see {@linkcode questionDigest}).
   */
  #nextId: number;
  #version = 0;
  #changed = Promise.withResolvers<void>();
  #closed = false;
  #log: Deno.FsFile | null = null;

  private constructor(opts: AnswerServiceOptions, digests: [Uint8Array, string][], signed: SignatureCheck) {
    const given = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined));
    this.#opts = {
      graceMs: 3000,
      maxPending: 1024,
      maxPerContainer: 64,
      httpLimits: {},
      firstId: randomIdBase(),
      ...given,
    } as Required<AnswerServiceOptions>;
    this.#nextId = this.#opts.firstId;
    this.#digests = digests;
    this.#signed = signed;
  }

  /** Opens the log and listens. Throws a {@linkcode UsageError} for a bad address or no tokens. */
  static async start(opts: AnswerServiceOptions): Promise<AnswerService> {
    const svc = await AnswerService.create(opts);
    await svc.listen();
    return svc;
  }

  /**
   * The service without its HTTP server yet: questions can be asked (they wait), nobody can answer them until
   * {@linkcode listen}. The agent creates it before taking containers over from a running agent, which gives
   * the address up only then.
   */
  static async create(opts: AnswerServiceOptions): Promise<AnswerService> {
    if (opts.tokens.size === 0) throw new UsageError("the answer service needs at least one token");
    parseListen(opts.listen);
    const digests: [Uint8Array, string][] = [];
    for (const [token, who] of opts.tokens) digests.push([await sha256(token), who]);
    const svc = new AnswerService(opts, digests, await SignatureCheck.create(opts.tokens));
    if (opts.logPath !== null) {
      svc.#log = await Deno.open(opts.logPath, { append: true, create: true, mode: 0o600 });
    }
    return svc;
  }

  /**
   * Listens on the service's address. `waitMs`: while the address is in use, try again for that long (the agent
   * being handed over releases it at the end of the hand-over). Throws a {@linkcode UsageError}.
   */
  async listen(waitMs = 0): Promise<void> {
    const { hostname, port } = parseListen(this.#opts.listen);
    const until = Date.now() + waitMs;
    for (;;) {
      try {
        this.#server = HttpServer.listen({ hostname, port }, (req) => this.#handle(req), this.#opts.warn, {
          maxBody: MAX_BODY,
          ...this.#opts.httpLimits,
        });
        return;
      } catch (e) {
        if (e instanceof Deno.errors.AddrInUse && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        this.#log?.close();
        this.#log = null;
        throw new UsageError(`cannot listen on ${this.#opts.listen}: ${(e as Error).message}`);
      }
    }
  }

  /** Where it listens (the real port when 0 was asked for). */
  get address(): { hostname: string; port: number } {
    const a = this.#server!.addr;
    return { hostname: a.hostname, port: a.port };
  }

  /**
   * An {@linkcode AskBackend} for the agent. Each call gives a new view: its `close()` withdraws only the questions
   * asked through it (e.g. when a container's supervisor ends); the service itself stays up.
   */
  backend(): AskBackend {
    const mine = new Set<Waiter>();
    return {
      name: "answer-service",
      ask: (q, signal) => this.#ask(q, signal, mine),
      close: () => {
        for (const w of [...mine]) w.onAbort();
      },
    };
  }

  /** HTTP connections open now (bounded: lib/agent/http_server.ts). */
  get connectionsOpen(): number {
    return this.#server?.connections ?? 0;
  }

  /** Questions waiting now (withdrawn ones in their grace included). */
  get pending(): number {
    return this.#pending.size;
  }

  /** Denies everything pending, stops listening, closes the log. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const p of [...this.#pending.values()]) this.#decide(p, { kind: "deny", by: "agent-closed" });
    this.#bump(); // wakes every long-poll (they answer 503 once closed)
    await this.#server?.close();
    this.#log?.close();
    this.#log = null;
  }

  // ------------------------------------------------------------------ questions

  #ask(q: Question, signal: AbortSignal, view: Set<Waiter>): Promise<Answer> {
    if (this.#closed) return Promise.resolve({ kind: "deny", by: "agent-closed" });
    if (signal.aborted) return Promise.resolve({ kind: "deny", by: "withdrawn" });
    const container = q.container ?? NO_CONTAINER;
    // What joins a waiting question gets its answer: everything the person is shown of the call is in the key
    // (an exec's arguments, a request's duration and reason), so another call asks on its own.
    const key = JSON.stringify([
      container.id,
      q.pid,
      q.op,
      q.target,
      q.syscall,
      q.argv ?? null,
      q.paths ?? null,
      q.requestedForMs ?? null,
      q.reason ?? null,
      q.warning ?? null,
    ]);
    let p = this.#byKey.get(key);
    if (p) {
      // The same operation again: the kernel's re-sent call after a withdrawal, or another thread of the same
      // process. It joins the question people already see; its deadline stays.
      if (p.grace !== undefined) {
        clearTimeout(p.grace);
        p.grace = undefined;
        this.#bump();
      }
    } else {
      const fromContainer = [...this.#pending.values()].filter((x) => x.container.id === container.id).length;
      if (this.#pending.size >= this.#opts.maxPending || fromContainer >= this.#opts.maxPerContainer) {
        const answer: Answer = { kind: "deny", by: "flood" };
        this.#logDecision(this.#nextId++, q, container, answer, false);
        return Promise.resolve(answer);
      }
      const now = Date.now();
      let wait = this.#opts.timeoutMs;
      if (q.requestTimeoutMs !== undefined && q.requestTimeoutMs < wait) {
        wait = Math.max(q.requestTimeoutMs, 0);
      }
      const id = this.#nextId++;
      const created: Pending = {
        id,
        listed: listedOf(id, now, q, container),
        key,
        question: q,
        container,
        askedAt: now,
        expiresAt: now + wait,
        waiters: [],
        timer: setTimeout(() => this.#decide(created, { kind: "deny", by: "timeout" }), wait),
      };
      p = created;
      this.#pending.set(id, p);
      this.#byKey.set(key, p);
      this.#bump();
    }
    const entry = p;
    return new Promise<Answer>((resolve) => {
      const w: Waiter = {
        resolve,
        signal,
        view,
        onAbort: () => this.#withdraw(entry, w),
      };
      signal.addEventListener("abort", w.onAbort, { once: true });
      entry.waiters.push(w);
      view.add(w);
    });
  }

  /** The asker gave up (the kernel interrupted the call): deny it; keep the question for a re-sent call. */
  #withdraw(p: Pending, w: Waiter): void {
    const i = p.waiters.indexOf(w);
    if (i < 0) return;
    p.waiters.splice(i, 1);
    w.view.delete(w);
    w.signal.removeEventListener("abort", w.onAbort);
    w.resolve({ kind: "deny", by: "withdrawn" });
    if (p.waiters.length === 0 && this.#pending.get(p.id) === p) {
      p.grace = setTimeout(() => this.#remove(p), this.#opts.graceMs);
      this.#bump();
    }
  }

  #remove(p: Pending): void {
    clearTimeout(p.timer);
    if (p.grace !== undefined) clearTimeout(p.grace);
    if (this.#pending.get(p.id) === p) this.#pending.delete(p.id);
    if (this.#byKey.get(p.key) === p) this.#byKey.delete(p.key);
    this.#bump();
  }

  /** Answers every waiter of `p`, logs the decision, takes `p` off the list. */
  #decide(p: Pending, answer: Answer): boolean {
    const applied = p.waiters.length > 0;
    this.#remove(p);
    for (const w of p.waiters) {
      w.signal.removeEventListener("abort", w.onAbort);
      w.view.delete(w);
      w.resolve(answer);
    }
    p.waiters = [];
    this.#logDecision(p.id, p.question, p.container, answer, applied);
    return applied;
  }

  #logDecision(id: number, q: Question, c: ContainerIdentity, a: Answer, applied: boolean): void {
    const line = JSON.stringify({
      time: new Date().toISOString(),
      event: "answer",
      id,
      question: q.id,
      container: c,
      pid: q.pid,
      name: q.name,
      op: q.op,
      target: q.target,
      decision: a.kind,
      ...(a.durationMs !== undefined ? { durationMs: a.durationMs } : {}),
      ...(a.scope !== undefined ? { scope: a.scope } : {}),
      by: a.by,
      applied,
    });
    if (!this.#log) {
      this.#opts.warn(line);
      return;
    }
    try {
      const bytes = enc.encode(line + "\n");
      let off = 0;
      while (off < bytes.length) off += this.#log.writeSync(bytes.subarray(off));
    } catch (e) {
      this.#opts.warn(`hallpass agent: decision log ${this.#opts.logPath}: ${(e as Error).message}; ${line}`);
    }
  }

  #bump(): void {
    this.#version++;
    this.#changed.resolve();
    this.#changed = Promise.withResolvers<void>();
  }

  #list(): QuestionList {
    const questions = [...this.#pending.values()].sort((a, b) => a.id - b.id).map((p) => ({
      ...p.listed,
      expiresAt: p.expiresAt,
      waiting: p.waiters.length > 0,
    }));
    return { version: this.#version, now: Date.now(), node: NODE, questions };
  }

  // ------------------------------------------------------------------ HTTP

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    try {
      if (url.pathname === "/" && (req.method === "GET" || req.method === "HEAD")) return page();
      // A signed request (hallpass answer) signs its body: read it first.
      const auth = req.headers.get("authorization") ?? "";
      const signed = auth.startsWith(SCHEME + " ");
      const body = signed && req.method === "POST" ? await readBody(req, MAX_BODY) : undefined;
      const who = signed
        ? await this.#signed.check(auth, req.method, url.pathname, body ?? "")
        : await this.#authenticate(req);
      if (who === null) {
        return json(401, { error: "a valid token is needed: Authorization: Bearer TOKEN", now: Date.now() }, {
          "www-authenticate": 'Bearer realm="hallpass"',
        });
      }
      if (url.pathname === "/api/questions") {
        if (req.method !== "GET") throw new HttpError(405, "use GET");
        return await this.#getQuestions(url);
      }
      if (url.pathname === "/api/answer") {
        if (req.method !== "POST") throw new HttpError(405, "use POST");
        return await this.#postAnswer(req, who, body);
      }
      throw new HttpError(404, "no such endpoint");
    } catch (e) {
      if (e instanceof HttpError) return json(e.status, { error: e.message });
      throw e;
    }
  }

  /** The name of the token the request carries, or null. Every known token is compared, in constant time. */
  async #authenticate(req: Request): Promise<string | null> {
    const m = /^Bearer +([\x21-\x7e]{1,1024}) *$/i.exec(req.headers.get("authorization") ?? "");
    if (!m) return null;
    const d = await sha256(m[1]);
    let who: string | null = null;
    for (const [digest, name] of this.#digests) {
      let diff = 0;
      for (let i = 0; i < digest.length; i++) diff |= digest[i] ^ d[i];
      if (diff === 0) who = name;
    }
    return who;
  }

  async #getQuestions(url: URL): Promise<Response> {
    const waitText = url.searchParams.get("wait");
    const afterText = url.searchParams.get("after");
    if (waitText !== null || afterText !== null) {
      if (waitText === null || afterText === null) throw new HttpError(400, "wait and after go together");
      if (!/^\d{1,6}(\.\d{1,3})?$/.test(waitText)) throw new HttpError(400, "wait: seconds, e.g. wait=25");
      if (!/^-?\d{1,15}$/.test(afterText)) throw new HttpError(400, "after: the version of the last list");
      const waitMs = Math.min(Number(waitText), MAX_WAIT_S) * 1000;
      if (Number(afterText) === this.#version && waitMs > 0 && !this.#closed) {
        // (A client that went away is noticed only when this returns: at most MAX_WAIT_S later.)
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([this.#changed.promise, new Promise<void>((r) => timer = setTimeout(r, waitMs))]);
        clearTimeout(timer);
      }
    }
    if (this.#closed) throw new HttpError(503, "the agent is shutting down");
    return json(200, this.#list());
  }

  async #postAnswer(req: Request, who: string, signedBody?: string): Promise<Response> {
    const body = signedBody ?? await readBody(req, MAX_BODY);
    let data: unknown;
    try {
      data = JSON.parse(body);
    } catch {
      throw new HttpError(400, "the body is not JSON");
    }
    if (typeof data !== "object" || data === null || Array.isArray(data)) {
      throw new HttpError(400, "expected an object {id, digest, kind, durationMs?, scope?}");
    }
    const o = data as Record<string, unknown>;
    if (typeof o.id !== "number" || !Number.isSafeInteger(o.id)) {
      throw new HttpError(400, "id: a question id");
    }
    if (typeof o.kind !== "string" || !ANSWER_KINDS.includes(o.kind as AnswerKind)) {
      throw new HttpError(400, `kind: one of ${ANSWER_KINDS.join(", ")}`);
    }
    const kind = o.kind as AnswerKind;
    if (o.durationMs !== undefined) {
      if (kind !== "for") throw new HttpError(400, `durationMs goes with kind "for" only`);
      if (typeof o.durationMs !== "number" || !Number.isSafeInteger(o.durationMs) || o.durationMs <= 0) {
        throw new HttpError(400, "durationMs: a positive whole number of milliseconds");
      }
      if (o.durationMs > 366 * 86_400_000) throw new HttpError(400, "durationMs: at most 366 days");
    }
    if (o.scope !== undefined) {
      if (kind === "once" || kind === "deny") throw new HttpError(400, `"${kind}" takes no scope`);
      if (typeof o.scope !== "string") throw new HttpError(400, "scope: one of the question's scopes");
    }
    if (typeof o.digest !== "string") {
      throw new HttpError(
        400,
        "digest: the digest of the question as it was listed (the question you were shown)",
      );
    }
    const p = this.#pending.get(o.id);
    if (!p) {
      throw new HttpError(
        404,
        `no pending question ${o.id} (answered, timed out, never asked, or the agent restarted)`,
      );
    }
    if (o.digest !== p.listed.digest) {
      throw new HttpError(
        409,
        `question ${o.id} is not the question you were shown (it changed, or another agent answers at this address): nothing was answered; reload`,
      );
    }
    const q = p.question;
    let scope: string | undefined;
    if (kind === "for" || kind === "always" || kind === "never") {
      scope = (o.scope as string | undefined) ?? q.suggestedScope;
      if (!q.scopes.includes(scope) && scope !== q.suggestedScope) {
        throw new HttpError(400, "scope: not one of the question's scopes");
      }
    }
    const client = req.headers.get("x-hallpass-client");
    const by = `${client === "web" || client === "answer" ? client : "api"}:${who}`;
    const answer: Answer = { kind, by };
    if (kind === "for") {
      answer.durationMs = (o.durationMs as number | undefined) ?? q.requestedForMs ?? DEFAULT_FOR_MS;
    }
    if (scope !== undefined) answer.scope = scope;
    const applied = this.#decide(p, answer);
    return json(200, { ok: true, id: p.id, answer, applied });
  }
}

function randomIdBase(): number {
  const r = crypto.getRandomValues(new Uint32Array(2));
  return (r[0] % (1 << 18)) * 2 ** 32 + r[1] + 1; // below 2^50: room to count up, still a safe integer
}

/**
 * The digest of a question as a person is shown it: its id and every shown text, hashed. An answer must carry it
 * (`POST /api/answer {id, digest, …}`): an answer to what was shown is applied only to that.
 */
export function questionDigest(l: Omit<ListedQuestion, "waiting" | "expiresAt" | "digest">): string {
  const what = JSON.stringify([
    l.id,
    l.askedAt,
    l.container,
    l.pid,
    l.exe ?? null,
    l.op,
    l.target,
    l.paths ?? null,
    l.argv ?? null,
    l.syscall,
    l.shown,
  ]);
  return new Sha256().update(new TextEncoder().encode(what)).hex().slice(0, 32);
}

function listedOf(id: number, askedAt: number, q: Question, c: ContainerIdentity): Pending["listed"] {
  const out: Omit<ListedQuestion, "waiting" | "expiresAt" | "digest"> = {
    id,
    askedAt,
    container: { ...c },
    pid: q.pid,
    name: q.name,
    op: q.op,
    target: q.target,
    syscall: q.syscall,
    chain: [...q.chain],
    suggestedScope: q.suggestedScope,
    scopes: [...q.scopes],
    shown: {
      pod: visible(podLabel(c)),
      name: visible(q.name),
      who: who(q),
      // exec: the program and its arguments, as the terminal bar shows them.
      target: q.op === "exec" && q.argv && q.argv.length > 1
        ? [q.target, ...q.argv.slice(1)].map(visible).join(" ")
        : visible(q.target),
      chain: q.chain.map(visible),
      scopes: q.scopes.map(visible),
    },
  };
  if (q.argv) out.argv = [...q.argv];
  if (q.exe !== undefined) out.exe = q.exe;
  if (q.paths) out.paths = [...q.paths];
  if (q.reason !== undefined) {
    out.reason = q.reason;
    out.shown.reason = visible(q.reason);
  }
  if (q.warning !== undefined) {
    out.warning = q.warning;
    out.shown.warning = visible(q.warning);
  }
  if (q.requestedForMs !== undefined) out.requestedForMs = q.requestedForMs;
  return { ...out, digest: questionDigest(out) };
}

/** Reads at most `max` bytes of UTF-8; 413 beyond, 400 for bytes that are not UTF-8. */
async function readBody(req: Request, max: number): Promise<string> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > max) {
    throw new HttpError(413, `bodies are at most ${max} bytes`);
  }
  const all = await readAtMost(req.body, max);
  if (all === null) throw new HttpError(413, `bodies are at most ${max} bytes`);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(all);
  } catch {
    throw new HttpError(400, "the body is not UTF-8");
  }
}

const COMMON_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body) + "\n", {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...COMMON_HEADERS, ...extra },
  });
}

function page(): Response {
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18))));
  const csp = [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src 'nonce-${nonce}'`,
    "connect-src 'self'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return new Response(PAGE.replaceAll("{{NONCE}}", nonce), {
    status: 200,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": csp,
      ...COMMON_HEADERS,
    },
  });
}

/**
 * The web page: one document, no external assets. It reads the token from the URL fragment (never sent to the
 * server), keeps it in sessionStorage and takes it out of the address bar, sends it as a header, long-polls the
 * list, and builds every element with `textContent` from the `shown` texts.
 */
const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hallpass: questions</title>
<style nonce="{{NONCE}}">
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #f4f4f4; color: #111; }
header { background: #1d3b6a; color: #fff; padding: 8px 16px; }
header h1 { font-size: 16px; margin: 0; display: inline; }
#status { margin-left: 16px; }
main { padding: 12px 16px; }
.q { background: #fff; border: 1px solid #ccc; border-radius: 6px; padding: 10px 12px; margin-bottom: 12px; }
.q.withdrawn { opacity: 0.6; }
.pod { font-weight: 600; color: #1d3b6a; }
.what { margin-top: 2px; }
.target, .chain, .scope-line { font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all; }
.target { background: #eef; padding: 4px 6px; margin: 4px 0; }
.chain { color: #444; }
.warning { color: #a00; font-weight: 600; }
.reason { color: #555; font-style: italic; }
.meta { color: #666; font-size: 12px; }
.keys { margin-top: 8px; display: flex; flex-wrap: wrap; gap: 6px; align-items: center; }
button { font: inherit; padding: 3px 10px; cursor: pointer; }
button.deny { color: #900; }
select { font: inherit; max-width: 100%; }
#empty, #needed { color: #555; }
</style>
</head>
<body>
<header><h1>hallpass</h1><span id="status">starting…</span></header>
<main>
<p id="needed" hidden>Token needed: open this page as <code>http://HOST:PORT/#token=YOUR_TOKEN</code>
(the part after <code>#</code> stays in the browser; it is sent only as a header).</p>
<p id="empty" hidden>No questions.</p>
<div id="list"></div>
</main>
<script nonce="{{NONCE}}">
"use strict";
(function () {
  const VERB = { write: "write", exec: "run", connect: "connect to" };
  const ARM_MS = 400;
  const DURATIONS = [["1m", 60000], ["5m", 300000], ["15m", 900000], ["1h", 3600000], ["8h", 28800000]];
  const $ = (id) => document.getElementById(id);
  const status = (text) => { $("status").textContent = text; };
  let token = null;
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    try { sessionStorage.setItem("hallpass-token", token); } catch (_) {}
    history.replaceState(null, "", location.pathname);
  } else {
    try { token = sessionStorage.getItem("hallpass-token"); } catch (_) {}
  }
  if (!token) {
    $("needed").hidden = false;
    status("token needed");
    document.body.dataset.state = "token-needed";
    return;
  }
  const headers = { "Authorization": "Bearer " + token, "X-Hallpass-Client": "web" };
  const cards = new Map();
  let version = -1;
  let skew = 0;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function card(q) {
    const c = el("div", "q");
    c.dataset.id = String(q.id);
    c.appendChild(el("div", "pod", q.shown.pod));
    c.appendChild(el("div", "what", q.shown.who + " wants to " + (VERB[q.op] || q.op)));
    if (q.shown.warning !== undefined) c.appendChild(el("div", "warning", "warning: " + q.shown.warning));
    if (q.shown.reason !== undefined) {
      c.appendChild(el("div", "reason", "reason (the program's words): \\u201c" + q.shown.reason + "\\u201d"));
    }
    c.appendChild(el("div", "target", q.shown.target));
    c.appendChild(el("div", "chain", (q.exe !== undefined ? "by (their words): " : "by: ") + q.shown.chain.join(" \\u2190 ")));
    const keys = el("div", "keys");
    const scope = el("select", "scope");
    scope.title = "the scope [for], [always] and [never] cover";
    q.scopes.forEach((s, i) => {
      const o = el("option", null, q.shown.scopes[i]);
      o.value = String(i);
      if (s === q.suggestedScope) o.selected = true;
      scope.appendChild(o);
    });
    const dur = el("select", "duration");
    let haveDefault = false;
    for (const [label, ms] of DURATIONS) {
      const o = el("option", null, label);
      o.value = String(ms);
      if (ms === (q.requestedForMs || 300000)) { o.selected = true; haveDefault = true; }
      dur.appendChild(o);
    }
    if (!haveDefault) {
      const o = el("option", null, Math.round(q.requestedForMs / 1000) + "s");
      o.value = String(q.requestedForMs);
      o.selected = true;
      dur.appendChild(o);
    }
    const button = (kind, label, cls) => {
      const b = el("button", cls || null, label);
      b.type = "button";
      b.dataset.kind = kind;
      b.addEventListener("click", () => answer(q, c, kind, scope, dur));
      keys.appendChild(b);
    };
    // A hallpass-request is granted as asked (its for=, else the session): the button says so.
    const asked = q.syscall !== "request" ? "allow once"
      : q.requestedForMs ? "allow for " + Math.round(q.requestedForMs / 1000) + "s" : "allow for the session";
    button("once", asked);
    button("for", "allow for");
    keys.appendChild(dur);
    button("always", "always");
    button("deny", "deny", "deny");
    button("never", "never", "deny");
    const sl = el("span", "scope-line", " scope: ");
    sl.appendChild(scope);
    keys.appendChild(sl);
    c.appendChild(keys);
    const meta = el("div", "meta");
    c.appendChild(meta);
    c._meta = meta;
    c._q = q;
    // Armed only after ARM_MS: a click meant for what was there before this card must not answer it.
    for (const b of c.querySelectorAll("button")) b.disabled = true;
    setTimeout(() => { for (const b of c.querySelectorAll("button")) b.disabled = false; }, ARM_MS);
    return c;
  }

  function updateMeta(c) {
    const q = c._q;
    const left = Math.max(0, Math.round((q.expiresAt - (Date.now() + skew)) / 1000));
    c._meta.textContent = "question " + q.id + " \\u00b7 " + q.syscall + " \\u00b7 denied in " + left + "s" +
      (q.waiting ? "" : " \\u00b7 withdrawn (the call was interrupted; kept for the re-sent call)");
    c.classList.toggle("withdrawn", !q.waiting);
  }

  async function answer(q, c, kind, scope, dur) {
    const body = { id: q.id, digest: q.digest, kind: kind };
    if (kind === "for") body.durationMs = Number(dur.value);
    if (kind === "for" || kind === "always" || kind === "never") body.scope = q.scopes[Number(scope.value)];
    for (const b of c.querySelectorAll("button")) b.disabled = true;
    try {
      const r = await fetch("/api/answer", {
        method: "POST",
        headers: Object.assign({ "Content-Type": "application/json" }, headers),
        body: JSON.stringify(body),
      });
      if (r.status === 404) status("question " + q.id + " was already answered or timed out");
      else if (r.status === 409) status("not answered: question " + q.id + " is not the one this card showed; the list is reloaded");
      else if (!r.ok) status("answer refused: HTTP " + r.status);
      if (r.status === 409) { c.remove(); cards.delete(q.id); version = -1; showEmpty(); return; }
      if (r.ok || r.status === 404) { c.remove(); cards.delete(q.id); showEmpty(); return; }
    } catch (e) {
      status("could not send the answer: " + e);
    }
    for (const b of c.querySelectorAll("button")) b.disabled = false;
  }

  function showEmpty() {
    $("empty").hidden = cards.size !== 0;
  }

  function apply(list) {
    skew = list.now - Date.now();
    const seen = new Set();
    for (const q of list.questions) {
      seen.add(q.id);
      let c = cards.get(q.id);
      if (c && c._q.digest !== q.digest) {
        // Not the question this card shows (another agent at this address, or a restart): a new card, armed anew.
        const fresh = card(q);
        c.replaceWith(fresh);
        c = fresh;
        cards.set(q.id, c);
      }
      if (!c) {
        c = card(q);
        cards.set(q.id, c);
        $("list").appendChild(c);
      }
      c._q = q;
      updateMeta(c);
    }
    for (const [id, c] of cards) if (!seen.has(id)) { c.remove(); cards.delete(id); }
    showEmpty();
  }

  async function poll() {
    for (;;) {
      try {
        const url = version < 0 ? "/api/questions" : "/api/questions?wait=25&after=" + version;
        const r = await fetch(url, { headers: headers });
        if (r.status === 401) {
          status("the agent refused the token");
          document.body.dataset.state = "token-refused";
          return;
        }
        if (!r.ok) throw new Error("HTTP " + r.status);
        const list = await r.json();
        version = list.version;
        apply(list);
        status("connected \\u00b7 " + (list.node ? "node " + list.node + " \\u00b7 " : "") +
          list.questions.length + " pending");
        document.body.dataset.state = "connected";
      } catch (e) {
        status("cannot reach the agent (" + e.message + "), retrying");
        document.body.dataset.state = "error";
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  }
  setInterval(() => { for (const c of cards.values()) updateMeta(c); }, 1000);
  poll();
})();
</script>
</body>
</html>
`;
