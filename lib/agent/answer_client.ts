/**
 * `hallpass answer`: answering the questions of `hallpass agent` from a terminal (docs/kubernetes.md).
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

import type { Answer, ContainerIdentity } from "../types.ts";
import { type BarState, handleKey, initialScopeIndex, layout, render } from "../ui/prompt_bar.ts";
import { KeyReader } from "../ui/key_reader.ts";
import { displayWidth, truncateEnd, visible } from "../ui/sanitize.ts";
import { formatDuration } from "../policy/duration.ts";
import { getTermios, getWinSize, isatty, makeRaw, readWhenReady, setTermios } from "../../ffi/pty.ts";
import { DEFAULT_FOR_MS, loadTokens, podLabel } from "./answer_service.ts";
import { ProcessHooks } from "../ui/process_hooks.ts";
import { AgentFeed, keyOf, merged, type RemoteQuestion } from "./agent_feed.ts";
import { parseAnswerLine } from "../ask/answer_line.ts";
import { errorLine } from "../cli/error_line.ts";

/** Options of {@linkcode answerMain}: the agents' URLs, the token (given or in a file), the JSON mode. */
export interface AnswerOptions {
  agents: string[];
  token?: string;
  tokenFile?: string;
  /** Questions as JSON lines on stdout, answers as lines on stdin (no terminal). */
  json?: boolean;
}

export const DEFAULT_AGENT = "http://127.0.0.1:7474";
/** Keys sooner than this after a question appears are ignored (as in the workstation bar). */
export const ARM_MS = 300;

export const ANSWER_HELP = `usage: hallpass answer [--agent URL]... [--token-file PATH] [--json]

Answers the questions of hallpass agents (hallpass agent) from this terminal: the oldest pending question of
all of them is shown in a bar at the bottom, with the pod and the node it comes from.

  --agent URL          an agent's question service (default ${DEFAULT_AGENT}); repeat it for several nodes
  --json               no terminal: each question is one JSON line on stdout, each line on stdin answers one:
                       "ID once", "ID deny", "ID for 10m [SCOPE]", "ID always [SCOPE]", "ID never [SCOPE]"
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
  const agents: string[] = [];
  let tokenFile: string | undefined;
  let json = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { help: ANSWER_HELP };
    if (arg === "--json") {
      json = true;
      continue;
    }
    const m = /^(--agent|--token-file)(?:=(.*))?$/s.exec(arg);
    if (!m) return { error: `unknown argument ${JSON.stringify(visible(arg.slice(0, 60)))} (see --help)` };
    let value = m[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) return { error: `${m[1]} needs a value` };
      value = argv[++i];
    }
    if (value === "") return { error: `${m[1]} needs a non-empty value` };
    if (m[1] === "--agent") {
      const url = checkAgentUrl(value);
      if (typeof url !== "string") return url;
      if (agents.includes(url)) return { error: `--agent ${url} given twice` };
      agents.push(url);
    } else {
      if (tokenFile !== undefined) return { error: "--token-file given twice" };
      tokenFile = value;
    }
  }
  if (agents.length === 0) agents.push(DEFAULT_AGENT);
  tokenFile ??= env.HALLPASS_TOKEN_FILE || undefined;
  if (tokenFile !== undefined) return { agents, tokenFile, json };
  const token = env.HALLPASS_TOKEN?.trim();
  if (token) return { agents, token, json };
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
    console.error(`hallpass answer: ${errorLine((e as Error).message)}`);
    return 2;
  }
  if (o.json) return await answerJson(o.agents, token);
  if (!isatty(0) || !isatty(1)) {
    console.error(
      "hallpass answer: needs a terminal (stdin and stdout); --json and the web page work without one",
    );
    return 2;
  }
  const tui = new AnswerTui(o.agents, token);
  try {
    return await tui.run();
  } catch (e) {
    tui.restore();
    console.error(`hallpass answer: internal error: ${errorLine((e as Error).message)}`);
    return 1;
  }
}

export { type RemoteQuestion, toRemoteQuestion } from "./agent_feed.ts";

// ------------------------------------------------------------------ drawing (pure)

/** What the screen shows. */
export interface AnswerView {
  /** The question on screen, or null (then `status` is the bottom line). */
  bar: BarState | null;
  /** Its container, its node (when several agents are followed), and how long until it is denied (ms). */
  container?: ContainerIdentity;
  node?: string;
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
export function barLines(v: AnswerView, cols: number, rows = 0): string[] {
  if (!v.bar) return [truncateEnd(v.status, cols)];
  const w = Math.max(cols, 1);
  const left = v.leftMs === undefined
    ? ""
    : `  (denied in ${formatDuration(Math.ceil(v.leftMs / 1000) * 1000)})`;
  const node = v.node ? `  node: ${visible(v.node)}` : "";
  const pod = truncateEnd(
    `pod: ${visible(podLabel(v.container ?? v.bar.question.container!))}${node}${left}`,
    w,
  );
  const above = [...(v.problem ? [truncateEnd(v.problem, w)] : []), pod];
  // A short terminal: the workstation bar keeps the target and the keys (prompt_bar.ts layout), the pod line above.
  return [...above, ...layout(v.bar, w, rows > 0 ? Math.max(rows - above.length, 1) : 0)];
}

/**
 * The whole screen: the title and the history from the top, the bar (or the status line) over the bottom rows,
 * drawn by the prompt bar's own {@linkcode render}. Every row is rewritten (padded, never erased with EL).
 */
export function frame(v: AnswerView, rows: number, cols: number): string {
  if (rows <= 0 || cols <= 0) return "";
  const bar = barLines(v, cols, rows);
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

const SIGNALS: Deno.Signal[] = ["SIGTERM", "SIGHUP", "SIGINT"];

class AnswerTui {
  readonly #agents: string[];
  readonly #feeds: AgentFeed[];
  readonly #quit = new AbortController();
  #exitCode = 0;
  #fatal: string | null = null;
  #saved: ReturnType<typeof getTermios> | null = null;
  #restored = false;
  readonly #hooks = new ProcessHooks();

  /** Answered here (keyOf); hidden until the agent's list drops them. */
  readonly #hidden = new Set<string>();
  #bar: BarState | null = null;
  #shown: RemoteQuestion | null = null;
  #shownAt = 0;
  #status: string;
  readonly #history: string[] = [];
  #size = { rows: 24, cols: 80 };
  #lastSize = "";

  constructor(agents: string[], token: string) {
    this.#agents = agents;
    this.#feeds = agents.map((a) => new AgentFeed(a, token, "answer", this.#quit.signal));
    this.#status = `hallpass answer: connecting to ${this.#where()}…`;
  }

  #where(): string {
    return this.#agents.length === 1 ? visible(this.#agents[0]) : `${this.#agents.length} agents`;
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
    const loops = Promise.all([...this.#feeds.map((f) => this.#follow(f)), this.#inputLoop()]);
    await new Promise<void>((r) => this.#quit.signal.addEventListener("abort", () => r(), { once: true }));
    clearInterval(tick);
    await Promise.race([loops, new Promise((r) => setTimeout(r, 500))]);
    this.restore();
    if (this.#fatal) console.error(`hallpass answer: ${errorLine(this.#fatal)}`);
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

  async #follow(feed: AgentFeed): Promise<void> {
    const refused = await feed.follow(() => {
      const live = new Set(merged(this.#feeds).map(keyOf));
      for (const k of this.#hidden) if (!live.has(k)) this.#hidden.delete(k);
      this.#update();
    });
    if (refused) this.#stop(1, refused);
  }

  async #send(rq: RemoteQuestion, answer: Answer): Promise<void> {
    const q = rq.question;
    const feed = this.#feeds.find((f) => f.url === rq.agent);
    if (!feed) return;
    const what = `${podLabel(rq.container)}  ${q.op} ${q.target}`;
    const r = await feed.send(rq, answer);
    if (this.#quit.signal.aborted) return;
    if (r.ok) {
      const scope = answer.scope !== undefined ? ` ${answer.scope}` : "";
      const dur = answer.durationMs !== undefined ? ` ${formatDuration(answer.durationMs)}` : "";
      this.#note(`${answer.kind}${dur}${scope}  ${what}`);
    } else if (r.status === 404) {
      this.#note(`already answered or timed out: ${what}`);
    } else if (r.status === 409) {
      this.#note(`not answered: the agent has another question under this id (restarted?): ${what}`);
    } else {
      this.#hidden.delete(keyOf(rq));
      this.#note(
        r.status === 0
          ? `could not send the answer (${r.error}): ${what}`
          : `the agent refused the answer (${r.error}): ${what}`,
      );
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
    return merged(this.#feeds).filter((q) => !this.#hidden.has(keyOf(q)));
  }

  /** The first problem of any feed (an agent unreachable), for the status or above the bar. */
  #problem(): string | undefined {
    const p = this.#feeds.find((f) => f.problem)?.problem;
    return p === undefined ? undefined : `hallpass answer: ${p}  [q] quit`;
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
      if (
        this.#shown === null || keyOf(this.#shown) !== keyOf(head) || this.#shown.digest !== head.digest
      ) {
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
    this.#status = this.#problem() ??
      `hallpass answer: connected to ${this.#where()}, ${
        qs.length ? `${qs.length} question${qs.length > 1 ? "s" : ""}` : "no questions"
      }  [q] quit`;
    this.#draw();
  }

  #skewOf(q: RemoteQuestion): number {
    return this.#feeds.find((f) => f.url === q.agent)?.skew ?? 0;
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
        node: this.#shown && this.#feeds.length > 1 ? this.#shown.node || this.#shown.agent : undefined,
        leftMs: this.#shown ? this.#shown.expiresAt - (Date.now() + this.#skewOf(this.#shown)) : undefined,
        status: this.#status,
        problem: this.#bar ? this.#problem() : undefined,
        history: this.#history,
        title: `hallpass answer · ${this.#where()} · [q] quit`,
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
    // One reader for the session: a terminal reply or mouse report split across reads is still never keys
    // (lib/ui/key_reader.ts), and only a read holding one key alone may allow.
    const reader = new KeyReader();
    while (!this.#quit.signal.aborted) {
      const chunk = await readWhenReady(0, { signal: this.#quit.signal, sliceMs: 100 });
      if (chunk === null) {
        this.#stop(0); // a hang-up
        return;
      }
      const tokens = reader.feed(chunk);
      const keys = tokens.flatMap((t) => t.kind === "key" ? [t.key] : []);
      this.#onKeys(keys, tokens.length === 1 && keys.length === 1);
    }
  }

  #onKeys(keys: string[], alone: boolean): void {
    for (const key of keys) {
      if (key === "q" || key === "\x03") {
        this.#stop(0);
        return;
      }
      const state = this.#bar;
      const shown = this.#shown;
      if (!state || !shown) continue;
      if (performance.now() - this.#shownAt < ARM_MS) continue;
      const r = handleKey(state, key);
      if (r.answer && !alone && r.answer.kind !== "deny") continue;
      if (r.answer) {
        // [D]: this one and every other waiting from the same process (same container, same pid).
        const targets = r.denyAllFromPid
          ? this.#visible().filter((x) =>
            x.agent === shown.agent && x.container.id === shown.container.id &&
            x.question.pid === shown.question.pid
          )
          : [shown];
        for (const t of targets) {
          this.#hidden.add(keyOf(t));
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

// ------------------------------------------------------------------ --json: for programs

/**
 * `hallpass answer --json`: every question of every agent, once, as a JSON line on stdout (`{"event":
 * "question", "agent", "node", "id", "digest", …the agent's listed fields}`); each line on stdin answers one
 * (`ID ANSWER`, ANSWER in the ask-program grammar: once, deny, for DURATION [SCOPE], always [SCOPE], never
 * [SCOPE]) and gets a line back (`{"event": "answered", "id", "ok", "error"?}`). Ends at the end of stdin (0) or
 * when an agent refuses the token (1).
 */
async function answerJson(agents: string[], token: string): Promise<number> {
  const stop = new AbortController();
  const feeds = agents.map((a) => new AgentFeed(a, token, "api", stop.signal));
  const printed = new Set<string>();
  const out = (o: unknown) => writeOut(jsonLine(o));
  let code = 0;
  // An agent that cannot be reached is said on stderr when that starts or changes, and when it is reached again:
  // stdout stays the JSON lines.
  const problems = new Map<AgentFeed, string | undefined>();
  const onChange = () => {
    for (const f of feeds) {
      if (f.problem === problems.get(f)) continue;
      if (f.problem !== undefined) console.error(`hallpass answer: ${errorLine(f.problem)}`);
      else if (problems.get(f) !== undefined) {
        console.error(`hallpass answer: ${errorLine(f.url)}: reached again`);
      }
      problems.set(f, f.problem);
    }
    for (const q of merged(feeds)) {
      if (printed.has(keyOf(q))) continue;
      printed.add(keyOf(q));
      out({
        event: "question",
        agent: q.agent,
        node: q.node,
        digest: q.digest,
        ...q.question,
        expiresAt: q.expiresAt,
      });
    }
    const live = new Set(merged(feeds).map(keyOf));
    for (const k of printed) if (!live.has(k)) printed.delete(k);
  };
  const follows = feeds.map(async (f) => {
    const refused = await f.follow(onChange);
    if (refused) {
      console.error(`hallpass answer: ${errorLine(refused)}`);
      code = 1;
      stop.abort();
    }
  });
  const reading = (async () => {
    const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).pipeThrough(lineSplitter());
    for await (const line of lines) {
      if (stop.signal.aborted) break;
      const m = /^\s*(\d{1,16})\s+(.+)$/.exec(line);
      if (!m) {
        if (line.trim()) out({ event: "answered", ok: false, error: "expected: ID ANSWER (e.g. 42 once)" });
        continue;
      }
      const id = Number(m[1]);
      const matches = merged(feeds).filter((q) => q.question.id === id);
      if (matches.length !== 1) {
        out({
          event: "answered",
          id,
          ok: false,
          error: matches.length ? "ambiguous id" : "no such question pending",
        });
        continue;
      }
      const rq = matches[0];
      const a = parseAnswerLine(m[2], rq.question, "api");
      if ("error" in a) {
        out({ event: "answered", id, ok: false, error: a.error });
        continue;
      }
      const feed = feeds.find((f) => f.url === rq.agent)!;
      const r = await feed.send(rq, a);
      out(
        r.ok
          ? { event: "answered", id, ok: true, answer: a.kind }
          : { event: "answered", id, ok: false, error: r.error },
      );
    }
    stop.abort();
  })();
  await Promise.race([reading, Promise.all(follows)]);
  stop.abort();
  await Promise.allSettled(follows);
  return code;
}

/**
 * One JSON line that is safe on a terminal: besides what JSON escapes (C0), the C1 controls, DEL, bidi controls
 * and line separators an agent's texts may hold are written as `\uXXXX` (they occur only inside strings there).
 */
export function jsonLine(o: unknown): string {
  return JSON.stringify(o).replace(
    /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  ) + "\n";
}

function lineSplitter(): TransformStream<string, string> {
  let rest = "";
  return new TransformStream({
    transform(chunk, c) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      for (const p of parts) c.enqueue(p);
      if (rest.length > 65536) rest = ""; // a line that long is no answer
    },
    flush(c) {
      if (rest) c.enqueue(rest);
    },
  });
}
