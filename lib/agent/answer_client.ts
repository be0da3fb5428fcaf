/**
 * `hallpass answer`: answering the questions of `hallpass agent` from a terminal (SPEC §8).
 *
 * It long-polls the agent's question service (docs/kubernetes-answering.md) and shows the oldest pending question
 * in the workstation's prompt bar (lib/ui/prompt_bar.ts: the same lines, look and keys), with one more line on
 * top naming the pod. The screen is the terminal's alternate screen: the bar at the bottom, the answers given
 * here above it; when no question waits, one status line. `q` or Ctrl-C quits and puts the terminal back.
 *
 * Threat model: every text of a question comes from a container and goes through `visible()` (the bar's layout
 * does it for its lines; the pod line and the history here do it too). The agent's JSON is checked field by
 * field; what does not fit is dropped, never drawn. Keys arriving within {@linkcode ARM_MS} of a question
 * appearing are ignored (a key meant for the last question must not answer the next one unseen). The terminal
 * is restored on every way out: `q`, Ctrl-C, SIGTERM/SIGHUP/SIGINT, a hang-up, an error.
 */

import type { Answer, ContainerIdentity, Op, Question } from "../types.ts";
import { type BarState, handleKey, initialScopeIndex, layout, render, splitKeys } from "../ui/prompt_bar.ts";
import { displayWidth, truncateEnd, visible } from "../ui/sanitize.ts";
import { formatDuration } from "../duration.ts";
import { getTermios, getWinSize, isatty, makeRaw, readWhenReady, setTermios } from "../../ffi/pty.ts";
import { DEFAULT_FOR_MS, loadTokens, podLabel } from "./answer_service.ts";
import { ProcessHooks } from "../ui/process_hooks.ts";

/** Options of {@linkcode answerMain}: the agent's URL and the token, given or in a file. */
export interface AnswerOptions {
  agent: string;
  token?: string;
  tokenFile?: string;
}

export const DEFAULT_AGENT = "http://127.0.0.1:7474";
/** Keys sooner than this after a question appears are ignored (as in the workstation bar). */
export const ARM_MS = 300;
const POLL_WAIT_S = 25;
const RETRY_MS = 2000;

export const ANSWER_HELP = `usage: hallpass answer [--agent URL] [--token-file PATH]

Answers the questions of a hallpass agent (hallpass agent) from this terminal: the oldest pending question is
shown in a bar at the bottom, with the pod it comes from.

  --agent URL          the agent's question service (default ${DEFAULT_AGENT})
  --token-file PATH    a file holding your token (default $HALLPASS_TOKEN_FILE, else the token in
                       $HALLPASS_TOKEN)
  -h, --help           this text

keys: [o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [D] deny all from that process
      arrow keys: the scope [t], [a] and [n] cover  ·  q or Ctrl-C: quit
exit: 0 quit · 1 the agent refused the token · 2 an unusable token file or no terminal · 125 bad arguments`;

/**
 * Turns `hallpass answer`'s arguments (and the environment's defaults) into options, `{help}` or `{error}`.
 * Reads no file: {@linkcode answerMain} reads the token file.
 */
export function parseAnswerArgs(
  argv: string[],
  env: Record<string, string | undefined> = Deno.env.toObject(),
): AnswerOptions | { help: string } | { error: string } {
  let agent: string | undefined;
  let tokenFile: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { help: ANSWER_HELP };
    const m = /^(--agent|--token-file)(?:=(.*))?$/s.exec(arg);
    if (!m) return { error: `unknown argument ${JSON.stringify(visible(arg.slice(0, 60)))} (see --help)` };
    let value = m[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) return { error: `${m[1]} needs a value` };
      value = argv[++i];
    }
    if (value === "") return { error: `${m[1]} needs a non-empty value` };
    if (m[1] === "--agent") {
      if (agent !== undefined) return { error: "--agent given twice" };
      agent = value;
    } else {
      if (tokenFile !== undefined) return { error: "--token-file given twice" };
      tokenFile = value;
    }
  }
  const url = checkAgentUrl(agent ?? DEFAULT_AGENT);
  if (typeof url !== "string") return url;
  tokenFile ??= env.HALLPASS_TOKEN_FILE || undefined;
  if (tokenFile !== undefined) return { agent: url, tokenFile };
  const token = env.HALLPASS_TOKEN?.trim();
  if (token) return { agent: url, token };
  return { error: "no token: give --token-file PATH, or set HALLPASS_TOKEN_FILE or HALLPASS_TOKEN" };
}

function checkAgentUrl(text: string): string | { error: string } {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return { error: `--agent ${JSON.stringify(visible(text))}: not a URL (e.g. ${DEFAULT_AGENT})` };
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    return { error: "--agent: an http:// or https:// URL" };
  }
  if (u.username || u.password || u.search || u.hash) {
    return { error: "--agent: no user, query or fragment in the URL (the token goes in --token-file)" };
  }
  return u.href.replace(/\/+$/, "");
}

/** The one token of a token file (`TOKEN` or `NAME TOKEN`). */
async function readToken(o: AnswerOptions): Promise<string> {
  if (o.token !== undefined) return o.token;
  if (o.tokenFile === undefined) throw new Error("no token given");
  const tokens = await loadTokens(o.tokenFile);
  if (tokens.size !== 1) {
    throw new Error(
      `token file ${o.tokenFile}: holds ${tokens.size} tokens; hallpass answer needs one (yours)`,
    );
  }
  return [...tokens.keys()][0];
}

/**
 * Runs `hallpass answer` until the person quits. Returns the exit status (0 quit, 1 the token was refused,
 * 2 no token or no terminal); prints one line on stderr for each failure, never a stack trace.
 */
export async function answerMain(o: AnswerOptions): Promise<number> {
  let token: string;
  try {
    token = await readToken(o);
  } catch (e) {
    console.error(`hallpass answer: ${(e as Error).message}`);
    return 2;
  }
  if (!isatty(0) || !isatty(1)) {
    console.error("hallpass answer: needs a terminal (stdin and stdout); the web page works without one");
    return 2;
  }
  const tui = new AnswerTui(o.agent, token);
  try {
    return await tui.run();
  } catch (e) {
    tui.restore();
    console.error(`hallpass answer: internal error: ${(e as Error).message}`);
    return 1;
  }
}

// ------------------------------------------------------------------ the agent's JSON

/** A question as listed by the agent, as the bar needs it. */
export interface RemoteQuestion {
  question: Question;
  container: ContainerIdentity;
  expiresAt: number;
  /** The agent's digest of the question as listed: the answer carries it, and a change re-arms the bar. */
  digest: string;
}

const str = (x: unknown): x is string => typeof x === "string";
const strs = (x: unknown): x is string[] => Array.isArray(x) && x.every(str);
const num = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
const OPS_SET = new Set<unknown>(["write", "exec", "connect"]);

/** One listed question, checked field by field; null when anything needed is missing or of the wrong type. */
export function toRemoteQuestion(x: unknown): RemoteQuestion | null {
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
  if (strs(o.paths)) question.paths = o.paths;
  if (str(o.reason)) question.reason = o.reason;
  if (str(o.warning)) question.warning = o.warning;
  if (num(o.requestedForMs) && o.requestedForMs > 0) question.requestedForMs = o.requestedForMs;
  return { question, container, expiresAt: o.expiresAt, digest: o.digest };
}

// ------------------------------------------------------------------ drawing (pure)

/** What the screen shows. */
export interface AnswerView {
  /** The question on screen, or null (then `status` is the bottom line). */
  bar: BarState | null;
  /** Its container and how long until it is denied (ms). */
  container?: ContainerIdentity;
  leftMs?: number;
  /** The connection, in one line. */
  status: string;
  /** Shown above the bar too while something is wrong (e.g. the agent is unreachable). */
  problem?: string;
  /** The answers given here, oldest first. */
  history: string[];
  title: string;
}

/** The bar's lines: the pod line, then the workstation bar's own lines. */
export function barLines(v: AnswerView, cols: number): string[] {
  if (!v.bar) return [truncateEnd(v.status, cols)];
  const w = Math.max(cols, 1);
  const left = v.leftMs === undefined
    ? ""
    : `  (denied in ${formatDuration(Math.ceil(v.leftMs / 1000) * 1000)})`;
  const pod = truncateEnd(`pod: ${visible(podLabel(v.container ?? v.bar.question.container!))}${left}`, w);
  return [...(v.problem ? [truncateEnd(v.problem, w)] : []), pod, ...layout(v.bar, w)];
}

/**
 * The whole screen: the title and the history from the top, the bar (or the status line) over the bottom rows,
 * drawn by the prompt bar's own {@linkcode render}. Every row is rewritten (padded, never erased with EL).
 */
export function frame(v: AnswerView, rows: number, cols: number): string {
  if (rows <= 0 || cols <= 0) return "";
  const bar = barLines(v, cols);
  const free = Math.max(rows - bar.length, 0);
  const top = free > 0 ? [v.title, ...(free > 1 ? v.history.slice(-(free - 1)) : [])] : [];
  let out = "";
  for (let r = 0; r < free; r++) {
    const text = truncateEnd(top[r] ?? "", cols);
    out += `\x1b[${r + 1};1H\x1b[0m${text}${" ".repeat(cols - displayWidth(text))}`;
  }
  return out + render(bar, rows, cols, "reverse");
}

// ------------------------------------------------------------------ the terminal UI

const enc = new TextEncoder();

function writeOut(text: string): void {
  let bytes = enc.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
}

/** A fetch failure in a few words ("connection refused"), never a stack. */
function describe(e: unknown): string {
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

const SIGNALS: Deno.Signal[] = ["SIGTERM", "SIGHUP", "SIGINT"];

class AnswerTui {
  readonly #agent: string;
  readonly #headers: Record<string, string>;
  readonly #quit = new AbortController();
  #exitCode = 0;
  #fatal: string | null = null;
  #saved: ReturnType<typeof getTermios> | null = null;
  #restored = false;
  readonly #hooks = new ProcessHooks();

  #questions: RemoteQuestion[] = [];
  /** Answered here; hidden until the agent's list drops them. */
  readonly #hidden = new Set<number>();
  #skew = 0;
  #bar: BarState | null = null;
  #shown: RemoteQuestion | null = null;
  #shownAt = 0;
  #status: string;
  #problem: string | undefined;
  readonly #history: string[] = [];
  #size = { rows: 24, cols: 80 };
  #lastSize = "";

  constructor(agent: string, token: string) {
    this.#agent = agent;
    this.#headers = { authorization: `Bearer ${token}`, "x-hallpass-client": "answer" };
    this.#status = `hallpass answer: connecting to ${visible(agent)}…`;
  }

  async run(): Promise<number> {
    this.#saved = getTermios(0);
    setTermios(0, makeRaw(this.#saved));
    this.#hooks.onFatal(() => this.restore());
    for (const sig of SIGNALS) this.#hooks.onSignal(sig, () => this.#stop(0));
    this.#hooks.onSignal("SIGWINCH", () => this.#draw());
    writeOut("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J"); // the alternate screen, no cursor
    this.#draw();
    const tick = setInterval(() => this.#bar && this.#draw(), 1000);
    const loops = Promise.all([this.#pollLoop(), this.#inputLoop()]);
    await new Promise<void>((r) => this.#quit.signal.addEventListener("abort", () => r(), { once: true }));
    clearInterval(tick);
    await Promise.race([loops, new Promise((r) => setTimeout(r, 500))]);
    this.restore();
    if (this.#fatal) console.error(`hallpass answer: ${this.#fatal}`);
    return this.#exitCode;
  }

  /** Puts the terminal back (main screen, cursor, modes). Idempotent; safe from signal and error handlers. */
  restore(): void {
    if (this.#restored) return;
    this.#restored = true;
    this.#quit.abort();
    try {
      writeOut("\x1b[0m\x1b[?25h\x1b[?1049l");
    } catch { /* the terminal is gone */ }
    if (this.#saved) {
      try {
        setTermios(0, this.#saved);
      } catch { /* not a terminal any more */ }
    }
    this.#hooks.removeAll();
  }

  #stop(code: number, fatal?: string): void {
    if (this.#quit.signal.aborted) return;
    this.#exitCode = code;
    if (fatal) this.#fatal = fatal;
    this.#quit.abort();
  }

  // ---------------------------------------------------------------- the agent

  #fetch(path: string, init: RequestInit, timeoutMs: number): Promise<Response> {
    return fetch(this.#agent + path, {
      ...init,
      headers: { ...this.#headers, ...(init.headers as Record<string, string> | undefined) },
      signal: AbortSignal.any([this.#quit.signal, AbortSignal.timeout(timeoutMs)]),
    });
  }

  async #pollLoop(): Promise<void> {
    let version: number | null = null;
    while (!this.#quit.signal.aborted) {
      try {
        const path = version === null
          ? "/api/questions"
          : `/api/questions?wait=${POLL_WAIT_S}&after=${version}`;
        const r = await this.#fetch(path, {}, (POLL_WAIT_S + 10) * 1000);
        if (r.status === 401) {
          await r.body?.cancel();
          this.#stop(1, `the agent at ${this.#agent} refused the token (HTTP 401); check --token-file`);
          return;
        }
        if (!r.ok) {
          await r.body?.cancel();
          throw new Error(`HTTP ${r.status}`);
        }
        const list = await r.json() as Record<string, unknown>;
        if (!num(list.version) || !Array.isArray(list.questions)) throw new Error("not a question list");
        version = list.version;
        if (num(list.now)) this.#skew = list.now - Date.now();
        this.#questions = list.questions.map(toRemoteQuestion).filter((q): q is RemoteQuestion => q !== null);
        const live = new Set(this.#questions.map((q) => q.question.id));
        for (const id of this.#hidden) if (!live.has(id)) this.#hidden.delete(id);
        this.#problem = undefined;
        this.#update();
      } catch (e) {
        if (this.#quit.signal.aborted) return;
        version = null;
        this.#problem = `hallpass answer: cannot reach ${visible(this.#agent)} (${
          describe(e)
        }); retrying every ${RETRY_MS / 1000}s  [q] quit`;
        this.#update();
        await new Promise<void>((r) => {
          const t = setTimeout(r, RETRY_MS);
          this.#quit.signal.addEventListener("abort", () => {
            clearTimeout(t);
            r();
          }, { once: true });
        });
      }
    }
  }

  async #send(rq: RemoteQuestion, answer: Answer): Promise<void> {
    const q = rq.question;
    const body: Record<string, unknown> = { id: q.id, digest: rq.digest, kind: answer.kind };
    if (answer.durationMs !== undefined) body.durationMs = answer.durationMs;
    if (answer.scope !== undefined) body.scope = answer.scope;
    const what = `${podLabel(rq.container)}  ${q.op} ${q.target}`;
    try {
      const r = await this.#fetch("/api/answer", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }, 15_000);
      const text = await r.text();
      if (r.ok) {
        const scope = answer.scope !== undefined ? ` ${answer.scope}` : "";
        const dur = answer.durationMs !== undefined ? ` ${formatDuration(answer.durationMs)}` : "";
        this.#note(`${answer.kind}${dur}${scope}  ${what}`);
      } else if (r.status === 404) {
        this.#note(`already answered or timed out: ${what}`);
      } else if (r.status === 409) {
        this.#note(`not answered: the agent has another question under this id (restarted?): ${what}`);
      } else {
        this.#hidden.delete(q.id);
        let why = `HTTP ${r.status}`;
        try {
          why += `: ${JSON.parse(text).error}`;
        } catch { /* not JSON */ }
        this.#note(`the agent refused the answer (${why}): ${what}`);
      }
    } catch (e) {
      if (this.#quit.signal.aborted) return;
      this.#hidden.delete(q.id);
      this.#note(`could not send the answer (${describe(e)}): ${what}`);
    }
    this.#update();
  }

  #note(line: string): void {
    const t = new Date().toTimeString().slice(0, 8);
    this.#history.push(`${t}  ${visible(line)}`);
    if (this.#history.length > 200) this.#history.splice(0, this.#history.length - 200);
  }

  // ---------------------------------------------------------------- the bar

  #visible(): RemoteQuestion[] {
    return this.#questions.filter((q) => !this.#hidden.has(q.question.id));
  }

  /** Brings the bar in line with the list: the oldest question, the counts, or the idle status. */
  #update(): void {
    const qs = this.#visible();
    const head = qs[0] ?? null;
    if (!head) {
      this.#bar = null;
      this.#shown = null;
    } else {
      // Another question, or the same id with other text (another agent at this address): drawn and armed anew.
      if (this.#shown?.question.id !== head.question.id || this.#shown.digest !== head.digest) {
        const q = head.question;
        this.#bar = {
          question: q,
          queued: 0,
          scopeIndex: initialScopeIndex(q),
          forMs: q.requestedForMs ?? DEFAULT_FOR_MS,
        };
        this.#shownAt = performance.now();
      }
      this.#shown = head;
      const bar = this.#bar!;
      bar.question = head.question; // the same id and digest: only its times may change
      bar.queued = qs.length - 1;
      bar.sameProcessQueued = qs.filter((x) =>
        x !== head && x.container.id === head.container.id && x.question.pid === head.question.pid
      ).length;
    }
    this.#status = this.#problem ??
      `hallpass answer: connected to ${visible(this.#agent)}, ${
        qs.length ? `${qs.length} question${qs.length > 1 ? "s" : ""}` : "no questions"
      }  [q] quit`;
    this.#draw();
  }

  #draw(): void {
    if (this.#restored) return;
    const size = getWinSize(1) ?? this.#size;
    const key = `${size.rows}x${size.cols}`;
    let out = "";
    if (key !== this.#lastSize) out += "\x1b[H\x1b[2J"; // resized: nothing of the old layout may stay
    this.#lastSize = key;
    this.#size = size;
    out += frame(
      {
        bar: this.#bar,
        container: this.#shown?.container,
        leftMs: this.#shown ? this.#shown.expiresAt - (Date.now() + this.#skew) : undefined,
        status: this.#status,
        problem: this.#bar ? this.#problem : undefined,
        history: this.#history,
        title: `hallpass answer · ${visible(this.#agent)} · [q] quit`,
      },
      size.rows,
      size.cols,
    );
    try {
      writeOut(out);
    } catch {
      this.#stop(0); // the terminal is gone
    }
  }

  async #inputLoop(): Promise<void> {
    const decoder = new TextDecoder();
    while (!this.#quit.signal.aborted) {
      const chunk = await readWhenReady(0, { signal: this.#quit.signal, sliceMs: 100 });
      if (chunk === null) {
        this.#stop(0); // a hang-up
        return;
      }
      this.#onKeys(decoder.decode(chunk, { stream: true }));
    }
  }

  #onKeys(text: string): void {
    for (const key of splitKeys(text)) {
      if (key === "q" || key === "\x03") {
        this.#stop(0);
        return;
      }
      const state = this.#bar;
      const shown = this.#shown;
      if (!state || !shown) continue;
      if (performance.now() - this.#shownAt < ARM_MS) continue;
      const r = handleKey(state, key);
      if (r.answer) {
        // [D]: this one and every other waiting from the same process (same container, same pid).
        const targets = r.denyAllFromPid
          ? this.#visible().filter((x) =>
            x.container.id === shown.container.id && x.question.pid === shown.question.pid
          )
          : [shown];
        for (const t of targets) {
          this.#hidden.add(t.question.id);
          this.#send(t, t === shown ? r.answer : { kind: "deny", by: "answer" });
        }
        this.#update();
      } else if (r.redraw) {
        this.#bar = r.state;
        this.#draw();
      }
    }
  }
}
