/**
 * The prompt bar as an {@linkcode AskBackend} (`terminal`): questions queue and are shown one at a time on the
 * bar of the terminal the command runs on (lib/ui/pty_session.ts is the host; prompt_bar.ts draws and reads keys).
 *
 * Threat model: every field of a question is hostile and is drawn only through `visible()`. A key that arrives
 * within `armDelayMs` of a question appearing is ignored (type-ahead meant for the program must not answer a
 * question the person has not seen), and only a read holding exactly one key may allow. A flood of questions is
 * bounded per process; the person can always answer, and `[D]` denies everything pending from a pid and
 * everything it asks later.
 */

import type { Answer, Question } from "../types.ts";
import type { AskBackend } from "./backend.ts";
import type { BarHost } from "../ui/pty_session.ts";
import { type BarState, handleKey, initialScopeIndex, layout } from "../ui/prompt_bar.ts";
import { visible } from "../ui/sanitize.ts";

export interface TerminalAskOptions {
  /** The `[t]` duration (`--for`); a hallpass-request's own `--for` wins. */
  forMs: number;
  /** `--ask-timeout`: an unanswered question is denied after this long (from when it was asked). */
  askTimeoutMs?: number;
  /** Pending questions one pid may have; beyond, new ones are denied at once. Default 64. */
  maxPerPid?: number;
  /** Pending questions in all; beyond, new ones are denied at once. Default 4096. */
  maxPending?: number;
  /** Keys arriving sooner than this after a question appears are ignored. Default 300 ms. */
  armDelayMs?: number;
}

const VERBS: Record<Question["op"], string> = { write: "write", exec: "run", connect: "connect to" };

/** The start time of process `pid` (field 22 of /proc/PID/stat), or undefined when it is gone. */
function startTime(pid: number): string | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

interface Waiter {
  resolve: (a: Answer) => void;
  signal: AbortSignal;
  onAbort: () => void;
}

interface Entry {
  key: string;
  question: Question;
  waiters: Waiter[];
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The prompt bar as an ask backend (`name` = `terminal`). Questions queue and are shown one at a time with the
 * number waiting. Identical pending questions (same pid, operation and target) share one answer: a person who
 * answers a question about one process never answers for another one unseen.
 */
export class TerminalAsk implements AskBackend {
  readonly name = "terminal";
  readonly #host: BarHost;
  readonly #opts: Required<Omit<TerminalAskOptions, "askTimeoutMs">> & { askTimeoutMs?: number };
  readonly #queue: Entry[] = [];
  #state: BarState | null = null;
  #shownAt = 0;
  #closed = false;
  /**
   * Pids the person denied everything from with `[D]`, with the process's start time: their later questions are
   * denied without asking until that process exits (a later process with the same pid is asked).
   */
  readonly #deniedPids = new Map<number, string>();
  /** What the last `[D]` did, shown on the bars that follow until the bar closes. */
  #notice: string | undefined;

  constructor(host: BarHost, opts: TerminalAskOptions) {
    this.#host = host;
    this.#opts = { maxPerPid: 64, maxPending: 4096, armDelayMs: 300, ...opts };
  }

  /** Questions waiting, the one on screen included. */
  get pending(): number {
    return this.#queue.length;
  }

  ask(q: Question, signal: AbortSignal): Promise<Answer> {
    if (this.#closed) return Promise.resolve({ kind: "deny", by: "terminal-closed" });
    if (signal.aborted) return Promise.resolve({ kind: "deny", by: "withdrawn" });
    const since = this.#deniedPids.get(q.pid);
    if (since !== undefined) {
      if (startTime(q.pid) === since) {
        this.#deniedQuietly(q);
        return Promise.resolve({ kind: "deny", by: "terminal" });
      }
      this.#deniedPids.delete(q.pid);
    }
    const key = JSON.stringify([q.pid, q.op, q.target]);
    let entry = this.#queue.find((e) => e.key === key);
    if (!entry) {
      const fromPid = this.#queue.filter((e) => e.question.pid === q.pid).length;
      if (fromPid >= this.#opts.maxPerPid || this.#queue.length >= this.#opts.maxPending) {
        return Promise.resolve({ kind: "deny", by: "flood" });
      }
      entry = { key, question: q, waiters: [] };
      this.#queue.push(entry);
      const e = entry;
      if (this.#opts.askTimeoutMs !== undefined) {
        e.timer = setTimeout(() => this.#settle(e, { kind: "deny", by: "timeout" }), this.#opts.askTimeoutMs);
      }
    }
    const e = entry;
    return new Promise<Answer>((resolve) => {
      const waiter: Waiter = {
        resolve,
        signal,
        onAbort: () => this.#withdraw(e, waiter),
      };
      signal.addEventListener("abort", waiter.onAbort, { once: true });
      e.waiters.push(waiter);
      this.#update();
    });
  }

  /** Denies everything pending and takes the bar down. */
  close(): Promise<void> {
    this.#closed = true;
    for (const e of [...this.#queue]) this.#settle(e, { kind: "deny", by: "terminal-closed" }, false);
    this.#update();
    return this.#host.gate.flushed();
  }

  #withdraw(e: Entry, w: Waiter): void {
    e.waiters = e.waiters.filter((x) => x !== w);
    w.resolve({ kind: "deny", by: "withdrawn" });
    if (e.waiters.length === 0) this.#remove(e);
    this.#update();
  }

  #remove(e: Entry): void {
    const i = this.#queue.indexOf(e);
    if (i >= 0) this.#queue.splice(i, 1);
    if (e.timer !== undefined) clearTimeout(e.timer);
  }

  #settle(e: Entry, answer: Answer, update = true): void {
    this.#remove(e);
    for (const w of e.waiters) {
      w.signal.removeEventListener("abort", w.onAbort);
      w.resolve(answer);
    }
    e.waiters = [];
    if (update) this.#update();
  }

  /** Brings the bar in line with the queue: show the head, redraw counts, or close. */
  #update(): void {
    const head = this.#queue[0];
    if (!head) {
      if (this.#state) {
        this.#state = null;
        this.#notice = undefined;
        this.#host.setBar(null);
        this.#host.gate.closeBar();
      }
      return;
    }
    const q = head.question;
    if (this.#state?.question !== q) {
      this.#state = {
        question: q,
        queued: 0,
        scopeIndex: initialScopeIndex(q),
        forMs: q.requestedForMs ?? this.#opts.forMs,
      };
      this.#shownAt = performance.now();
      this.#host.setBar({
        onKeys: (k, alone) => this.#onKeys(k, alone),
        layout: (cols, rows) => this.#layout(cols, this.#host.gate.plain ? 0 : rows),
      });
    }
    this.#state.notice = this.#notice;
    this.#state.queued = this.#queue.length - 1;
    this.#state.sameProcessQueued = this.#queue.filter((e) => e !== head && e.question.pid === q.pid).length;
    this.#draw();
  }

  #layout(cols: number, rows: number): string[] {
    return this.#state ? layout(this.#state, cols, rows) : [];
  }

  #draw(): void {
    if (!this.#state) return;
    const size = this.#host.size();
    // On plain lines (TERM=dumb) the question scrolls like any output: every line, whatever the rows.
    this.#host.gate.showBar(layout(this.#state, size.cols, this.#host.gate.plain ? 0 : size.rows));
  }

  #onKeys(keys: string[], alone: boolean): void {
    for (const key of keys) {
      const state = this.#state;
      const head = this.#queue[0];
      if (!state || !head || head.question !== state.question) return;
      if (performance.now() - this.#shownAt < this.#opts.armDelayMs) continue;
      const r = handleKey(state, key);
      // Only a read that held this one key may allow (or save a rule): a burst is not a person at the keys.
      if (r.answer && !alone && r.answer.kind !== "deny") continue;
      if (r.answer) {
        if (r.denyAllFromPid) this.#denyAll(state.question);
        else this.#settle(head, r.answer, false);
        this.#update();
        if (r.passThrough) this.#host.sendToProgram(new TextEncoder().encode(r.passThrough));
      } else if (r.redraw) {
        this.#state = r.state;
        this.#draw();
      }
    }
  }

  /**
   * `[D]`: denies every pending question of the process, and its later ones without asking until it exits (a
   * runaway loop must not hold the person). Never silently: the notice says how long it lasts (for the command
   * hallpass started, an interactive shell, that is the rest of the session), and each later denial is a line
   * in the output ({@linkcode #deniedQuietly}).
   */
  #denyAll(q: Question): void {
    const pending = this.#queue.filter((x) => x.question.pid === q.pid);
    for (const e of pending) this.#settle(e, { kind: "deny", by: "terminal" }, false);
    const since = startTime(q.pid);
    if (since !== undefined) this.#deniedPids.set(q.pid, since);
    const who = `${visible(q.name)} (pid ${q.pid})`;
    const n = pending.length;
    const top = q.chain.length <= 1;
    this.#notice = `hallpass: [D] denied ${n} of ${who}; later ones too, until it exits` +
      (top ? " (the session)" : "");
    this.#say(this.#notice);
  }

  #quiet = { at: -Infinity, more: 0, timer: undefined as ReturnType<typeof setTimeout> | undefined };

  /** A question denied because of `[D]`: one line each, at most two a second (then a count). */
  #deniedQuietly(q: Question): void {
    const now = performance.now();
    const line = `hallpass: denied by [D]: ${visible(q.name)} (pid ${q.pid}) ${VERBS[q.op]} ${
      visible(q.target)
    }`;
    if (now - this.#quiet.at >= 500) {
      this.#quiet.at = now;
      this.#say(line);
      return;
    }
    this.#quiet.more++;
    if (this.#quiet.timer !== undefined) return;
    this.#quiet.timer = setTimeout(() => {
      const n = this.#quiet.more;
      this.#quiet = { at: performance.now(), more: 0, timer: undefined };
      if (n > 0) this.#say(`hallpass: denied by [D]: ${n} more from pid ${q.pid}`);
    }, 500);
  }

  #say(line: string): void {
    this.#host.gate.output(new TextEncoder().encode(line + "\r\n"), false);
  }
}
