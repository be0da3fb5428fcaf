/**
 * The pty the command runs on, between it and the person's terminal: raw mode, the output pump (through the
 * output filter and the screen gate, or the C relay while nothing needs looking at), the input pump (keys to the
 * program, or to the bar while one is up), SIGWINCH, and the terminal put back on every way out. The bar's host
 * ({@linkcode BarHost}); the questions themselves are lib/ask/terminal_ask.ts.
 *
 * Threat model: the bytes the program writes are hostile. They go to the real terminal (it is the program's own
 * terminal, as without hallpass) through the output filter (output_filter.ts), but never while the bar is up; keys
 * typed while the bar is up go to the bar only.
 *
 * Wiring (lib/sandbox/run.ts):
 *
 * ```ts
 * const pty = PtySession.open();               // before spawning: slave size = real terminal size
 * spawnLauncher({ ttyFd: pty.slaveFd });        // the launcher makes it the controlling terminal
 * pty.closeSlave();
 * pty.start();                                  // raw mode, pumps, SIGWINCH, restore on every way out
 * const ask = new TerminalAsk(pty, { forMs, askTimeoutMs });
 * // … questions: await ask.ask(q, signal)
 * const status = await child.status;
 * await pty.finish();                           // drain the master, restore the terminal
 * ```
 */

import {
  closeFd,
  getTermios,
  getWinSize,
  isatty,
  makeRaw,
  openPty,
  openSlave,
  openSlaveKeeper,
  outputQueued,
  pushInput,
  readableWithin,
  readMaster,
  readMasterNow,
  readWhenReady,
  setTermios,
  setWinSize,
  sleepUnlessWoken,
  takeUnread,
  type TermiosState,
  waitWaker,
  wakeWaits,
  type WinSize,
  withoutEcho,
  writeAll,
} from "../../ffi/pty.ts";
import type { BarStyle } from "./prompt_bar.ts";
import { KeyReader } from "./key_reader.ts";
import { OutputFilter } from "./output_filter.ts";
import { MIRROR_SCROLLBACK, ScreenGate, ScreenMirror, type TerminalWrite } from "./screen.ts";
import { ProcessHooks } from "./process_hooks.ts";
import { Relay } from "../../ffi/relay.ts";
import { type CursorReport, sameSize, takeReports } from "./terminal_reports.ts";

/** What a bar needs from whoever owns the terminal. {@linkcode PtySession} is one; tests use a fake. */
export interface BarHost {
  readonly gate: ScreenGate;
  /** The real terminal's size. */
  size(): WinSize;
  /** While set, keys from the real terminal go to `bar.onKeys` instead of the program; `layout` redraws on resize. */
  setBar(bar: BarController | null): void;
  /** Bytes for the program as if typed (Ctrl-C on the bar: the pty's line discipline makes it SIGINT). */
  sendToProgram(bytes: Uint8Array): void;
}

export interface BarController {
  /**
   * The keys of one read from the terminal (key_reader.ts), in order. `alone`: that read held exactly one key
   * and nothing else; only such a read may allow (a burst is a paste, a reply or a machine, not a person).
   */
  onKeys(keys: string[], alone: boolean): void;
  layout(cols: number, rows: number): string[];
}

/** True when the terminal cannot address the cursor (TERM unset, empty or `dumb`): questions on plain lines. */
export function dumbTerminal(term = Deno.env.get("TERM")): boolean {
  return !term || term === "dumb";
}

const SIGNALS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;
type ExitSignal = keyof typeof SIGNALS;

export interface PtySessionOptions {
  /** Bar look. Default `reverse`. */
  style?: BarStyle;
  /** Output buffered while the bar is up before the master stops being read. Default 16 MiB. */
  maxBuffer?: number;
  /**
   * Called after the terminal was restored when hallpass gets SIGTERM, SIGHUP or SIGINT. Default: exit with
   * 128+N. The supervisor should pass a handler that forwards the signal / kills the sandbox, then exits.
   */
  onSignal?: (signal: ExitSignal) => void;
  /** The terminal's title while the command runs (put back after); none when unset. */
  title?: string;
  /** Ask on plain lines (no cursor addressing). Default: {@linkcode dumbTerminal}. */
  plain?: boolean;
  /**
   * The C relay (build/libhallpass-relay.so): copies the output while nothing needs to see it in JavaScript.
   * Without it (or with `HALLPASS_PTY_RELAY=0`) every read goes through the JavaScript pump.
   */
  relayLibrary?: string | null;
}

/** The relay's buffer: every byte it copies is kept there for the screen model until it returns. */
const RELAY_BUFFER = 1 << 20;

function writeAllSync(bytes: Uint8Array): void {
  while (bytes.length > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
}

function concatBytes(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Writes all of `data` to stdout. */
async function writeStdout(data: Uint8Array | string): Promise<void> {
  let bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  while (bytes.length > 0) {
    const n = await Deno.stdout.write(bytes);
    bytes = bytes.subarray(n);
  }
}

/**
 * The pty the command runs on, and the pumps between it and the real terminal (stdin fd 0, stdout fd 1).
 * Owns the master fd and the saved terminal modes.
 */
export class PtySession implements BarHost {
  /** The slave's fd number in this process, not close-on-exec: pass it to the launcher, then {@linkcode closeSlave}. */
  readonly slaveFd: number;
  readonly slavePath: string;
  readonly gate: ScreenGate;
  readonly #master: number;
  #saved: TermiosState | null = null;
  #restored = false;
  #slaveOpen = true;
  #bar: BarController | null = null;
  #size: WinSize;
  readonly #stop = new AbortController();
  #outputDone: Promise<void> = Promise.resolve();
  #inputDone: Promise<void> = Promise.resolve();
  readonly #hooks = new ProcessHooks();
  readonly #opts: PtySessionOptions;
  /** Resolves once the real terminal reported where its cursor is (or did not in time). */
  #cursorKnown: Promise<void> = Promise.resolve();
  /** The terminal answered the start-up cursor query (even late): it is asked again after a resize. */
  #answersCursor = false;
  /** The terminal reported its size as the pty has it at start-up: it is asked its size with the cursor. */
  #answersSize = false;
  #cprWanted: ((pos: CursorReport | null) => void) | null = null;
  /** A size report taken out of the input, before the cursor report it goes with. */
  #sizeSeen: readonly [number, number] | null = null;
  readonly #keys = new KeyReader();
  /** hallpass's own fd on the slave (see openSlaveKeeper), or -1. */
  #keeper = -1;
  /** The last bytes typed to the program (what may be handed back at the end). */
  #typed = new Uint8Array(0);
  #titleSet = false;
  #relay: Relay | null = null;
  /** A relay round is running or its result is being handled; #relayIdle resolves when it is over. */
  #relayBusy = false;
  #relayIdle: Promise<void> = Promise.resolve();
  /** Buffers for the relay, used again once the screen model has parsed what they hold. */
  readonly #relayPool: Uint8Array<ArrayBuffer>[] = [];
  /** finish() began: the rest of the output goes through the JavaScript pump. */
  #finishing = false;
  /** Ends the pumps' waits when #stop aborts (an exit is not held up by a 100 ms poll slice); -1: none. */
  #waker = -1;
  /** The waits of #sleep in flight: finish() lets them end (the stop wakes them) before it closes the waker. */
  readonly #sleeps = new Set<Promise<void>>();

  private constructor(
    master: number,
    slavePath: string,
    slaveFd: number,
    size: WinSize,
    opts: PtySessionOptions,
  ) {
    this.#master = master;
    this.slavePath = slavePath;
    this.slaveFd = slaveFd;
    this.#size = size;
    this.#opts = opts;
    const write: TerminalWrite = writeStdout;
    this.gate = new ScreenGate(
      new ScreenMirror(size.cols, size.rows, { scrollback: MIRROR_SCROLLBACK }),
      write,
      {
        maxBuffer: opts.maxBuffer,
        style: opts.style,
        filter: new OutputFilter(),
        plain: opts.plain ?? dumbTerminal(),
        beforeWrite: () => this.#stopRelay(),
      },
    );
  }

  sendToProgram(bytes: Uint8Array): void {
    writeAll(this.#master, bytes).catch(() => {});
  }

  /** Opens a pty whose size is the real terminal's (80×24 when that is unknown). */
  static open(opts: PtySessionOptions = {}): PtySession {
    const size = getWinSize(1) ?? getWinSize(0) ?? { rows: 24, cols: 80 };
    const { master, slavePath } = openPty();
    try {
      setWinSize(master, size);
      const slave = openSlave(slavePath);
      const session = new PtySession(master, slavePath, slave, size, opts);
      try {
        session.#keeper = openSlaveKeeper(slavePath);
      } catch { /* typed-ahead text is then not handed back */ }
      return session;
    } catch (e) {
      closeFd(master);
      throw e;
    }
  }

  size(): WinSize {
    return this.#size;
  }

  setBar(bar: BarController | null): void {
    // What the command printed before it asked belongs above the question: take it from the master now, so it
    // is shown, not held back behind the bar. (Bounded: a command that never stops printing can't delay it.)
    // While the relay runs, it does this itself when the bar's first write stops it (relay.c, RELAY_WOKEN).
    if (bar && !this.#bar && !this.#restored && !this.#relayBusy) {
      for (let i = 0; i < 16 && !this.gate.barUp; i++) {
        let chunk: Uint8Array;
        try {
          chunk = readMasterNow(this.#master);
        } catch {
          break;
        }
        if (chunk.length === 0) break;
        this.gate.output(chunk);
      }
    }
    this.#bar = bar;
  }

  /** Closes this process's copy of the slave (after the launcher has inherited it). Idempotent. */
  closeSlave(): void {
    if (!this.#slaveOpen) return;
    this.#slaveOpen = false;
    closeFd(this.slaveFd);
  }

  /** Raw mode on the real terminal, the pumps, SIGWINCH, and restore() on every way out. */
  start(): void {
    if (isatty(0)) {
      this.#saved = getTermios(0);
      setTermios(0, makeRaw(this.#saved));
    }
    this.#hooks.onFatal(() => this.restore());
    try {
      this.#waker = waitWaker();
      const waker = this.#waker;
      this.#stop.signal.addEventListener("abort", () => wakeWaits(waker), { once: true });
    } catch { /* the pumps notice an abort within a poll slice */ }
    if (isatty(0) && isatty(1) && !this.gate.plain) this.#askCursor();
    if (this.#opts.title !== undefined && isatty(1) && !this.gate.plain) {
      // Save the title (XTWINOPS 22), set ours; restore() pops it (23). A terminal without a title stack keeps
      // ours: the title says "hallpass" until the next program sets one (shells with a title in PS1 do).
      const title = [...this.#opts.title].filter((c) => c >= " " && !(c >= "\x7f" && c <= "\x9f")).join("")
        .slice(0, 200);
      this.#titleSet = true;
      try {
        writeAllSync(new TextEncoder().encode(`\x1b[22;0t\x1b]2;${title}\x1b\\`));
      } catch { /* not ours to fix */ }
    }
    this.#hooks.onSignal("SIGWINCH", () => this.#resized());
    for (const sig of Object.keys(SIGNALS) as ExitSignal[]) {
      this.#hooks.onSignal(sig, () => {
        this.restore();
        if (this.#opts.onSignal) this.#opts.onSignal(sig);
        else Deno.exit(128 + SIGNALS[sig]);
      });
    }
    if (this.#opts.relayLibrary && Deno.env.get("HALLPASS_PTY_RELAY") !== "0" && !this.gate.plain) {
      this.#relay = Relay.open(this.#opts.relayLibrary, 1);
      this.#stop.signal.addEventListener("abort", () => this.#relay?.wake(), { once: true });
    }
    this.#outputDone = this.#pumpOutput();
    this.#inputDone = this.#pumpInput();
  }

  /**
   * The screen model must know where the real cursor is: the command's output lands there, not at the top left
   * (a shell prompt usually sits somewhere down the screen). Asks the terminal (DSR 6, and its size: CSI 18 t)
   * before any of the command's output is written; the answers are taken out of the input. A terminal that does
   * not answer within `waitMs` leaves the model at the top left (the old behaviour: the bar's repaint may then
   * misplace the cursor).
   */
  #askCursor(waitMs = 500): void {
    this.#cursorKnown = new Promise<void>((resolve) => {
      let late = false;
      let answered = false;
      this.#sleep(waitMs).then(async () => {
        if (answered) return;
        // Go on without it; a late answer is still taken out of the input (for a while), never applied.
        late = true;
        resolve();
        await this.#sleep(10_000);
        if (this.#cprWanted === done) this.#cprWanted = null;
      });
      const done = (pos: CursorReport | null) => {
        answered = true;
        this.#cprWanted = null;
        if (pos) this.#answersCursor = true;
        // A terminal that tells its size as the pty has it is asked again with each cursor question after a
        // resize (#cursorRow): its answer says which of its sizes the cursor answer is about.
        if (pos?.size && sameSize(pos.size, this.#size.rows, this.#size.cols)) this.#answersSize = true;
        if (pos && !late) this.gate.mirror.startAt(pos.row, pos.col).then(() => resolve());
        else resolve();
      };
      this.#cprWanted = done;
    });
    try {
      writeAllSync(new TextEncoder().encode("\x1b[18t\x1b[6n"));
    } catch {
      this.#cprWanted?.(null);
    }
  }

  /**
   * Asks the terminal where its cursor is (DSR 6), for the model resized to `rows` × `cols`: the row, 0-based;
   * `"stale"` when the terminal said it has another size by now (it was resized again: the model's reflow and
   * its own are about different sizes, and the SIGWINCH of the new size follows — tmux tells the program a size
   * up to 250 ms after its screen has it); null when there is no answer. Only a terminal that answered at
   * start-up is asked. The answer is awaited as long as it takes (up to `boundMs`, for a terminal that stopped
   * answering): nothing is written meanwhile, so a late answer is as good as an early one.
   */
  #cursorRow(rows: number, cols: number, boundMs = 10_000): Promise<number | null | "stale"> {
    if (this.#cprWanted || this.#restored || !this.#answersCursor) return Promise.resolve(null);
    return new Promise((resolve) => {
      const done = (pos: CursorReport | null) => {
        clearTimeout(timer);
        this.#stop.signal.removeEventListener("abort", gone);
        if (this.#cprWanted === done) this.#cprWanted = null;
        if (pos?.size && this.#answersSize && !sameSize(pos.size, rows, cols)) resolve("stale");
        else resolve(pos ? pos.row : null);
      };
      // Past the bound, or when the session ends: go on without it; the late answer is still taken out of the
      // input when it comes (#cprWanted stays until then).
      const timer = setTimeout(() => resolve(null), boundMs);
      const gone = () => resolve(null);
      this.#stop.signal.addEventListener("abort", gone, { once: true });
      this.#cprWanted = done;
      try {
        writeAllSync(new TextEncoder().encode(this.#answersSize ? "\x1b[18t\x1b[6n" : "\x1b[6n"));
      } catch {
        done(null);
      }
    });
  }

  /** Takes the answers to hallpass's own questions (terminal_reports.ts) out of `chunk` while one is awaited. */
  #takeCpr(chunk: Uint8Array): Uint8Array {
    const want = this.#cprWanted;
    if (!want) return chunk;
    const r = takeReports(chunk, this.#sizeSeen);
    this.#sizeSeen = r.size;
    if (r.cursor) want(r.cursor);
    return r.rest;
  }

  #resized(): void {
    const size = getWinSize(1) ?? getWinSize(0);
    if (!size) return;
    this.#size = size;
    try {
      setWinSize(this.#master, size);
    } catch { /* the master may be closing */ }
    const ask = isatty(0) && isatty(1) && !this.gate.plain
      ? () => this.#cursorRow(size.rows, size.cols)
      : undefined;
    this.gate.resize(size.cols, size.rows, this.#bar?.layout(size.cols, size.rows), ask);
  }

  async #pumpOutput(): Promise<void> {
    const signal = this.#stop.signal;
    const scratch = new Uint8Array(65536);
    await this.#cursorKnown;
    for (;;) {
      if (this.gate.shouldPause()) await this.gate.whenFlowing();
      if (this.#mayRelay()) {
        if (await this.#relayRound()) break;
        continue;
      }
      const chunk = await readMaster(this.#master, { signal, sliceMs: 100, waker: this.#waker });
      if (chunk === null) break;
      if (this.gate.outputNow(chunk, writeAllSync)) {
        // A burst: copy what the master holds, synchronously, for up to 20 ms (the event loop waits; the
        // supervisor runs in its own thread), in writes of up to 64 KiB: a trip through the event loop per read
        // and a write per 4 KiB read made the pty path 2-3 times slower than bare.
        const until = performance.now() + 20;
        const parts: Uint8Array[] = [];
        let total = 0;
        const flush = () => {
          if (total === 0) return;
          const all = parts.length === 1 ? parts[0] : concatBytes(parts, total);
          parts.length = 0;
          total = 0;
          if (!this.gate.outputNow(all, writeAllSync)) this.gate.output(all);
        };
        while (performance.now() < until) {
          const more = readMasterNow(this.#master, scratch);
          if (more.length > 0) {
            parts.push(more);
            total += more.length;
            if (total >= 65536) flush();
            continue;
          }
          flush();
          if (!readableWithin(this.#master, 2)) break;
        }
        flush();
        continue;
      }
      this.gate.output(chunk);
      await this.gate.flushed();
    }
    await this.gate.flushed();
  }

  /** The relay may copy the output: nothing is queued or held, no bar, the filter is between sequences. */
  #mayRelay(): boolean {
    return this.#relay !== null && !this.#finishing && !this.#restored && !this.#stop.signal.aborted &&
      !this.gate.barUp && this.gate.idle;
  }

  /**
   * One round of the C relay: it copies until something needs JavaScript (relay.c); then what it copied goes to
   * the screen model, what it could not write yet is written, and bytes for the output filter take the normal way.
   * True at the end of the output.
   */
  async #relayRound(): Promise<boolean> {
    const relay = this.#relay!;
    let release!: () => void;
    this.#relayIdle = new Promise((r) => release = r);
    this.#relayBusy = true;
    try {
      const buf = this.#relayPool.pop() ?? new Uint8Array(RELAY_BUFFER);
      const r = await relay.run(this.#master, buf);
      if (r.used > 0) {
        // Kept by the model until it is parsed: a small round is copied out and the buffer used again.
        // The model keeps what it is fed until it has parsed it: a big round's buffer is handed over and comes
        // back to the pool then; a small round is copied out.
        const big = r.used >= RELAY_BUFFER / 4;
        const copied = big ? buf.subarray(0, r.used) : buf.slice(0, r.used);
        if (!big) this.#relayPool.push(buf);
        this.gate.relayed(copied, r.clean, big ? () => this.#relayPool.push(buf) : undefined);
        if (r.written < r.used) await writeStdout(copied.subarray(r.written));
      } else this.#relayPool.push(buf);
      if (r.state === "handoff") {
        const chunk = buf.slice(r.handoff[0], r.handoff[0] + r.handoff[1]);
        if (!this.gate.outputNow(chunk, writeAllSync)) this.gate.output(chunk);
      }
      if (r.state === "error") this.#relay = null; // the JavaScript pump from here on
      return false;
    } catch {
      this.#relay = null;
      return false;
    } finally {
      this.#relayBusy = false;
      release();
    }
  }

  /** Before hallpass writes anything of its own (the gate): the relay returns, and what it copied is handled. */
  #stopRelay(): Promise<void> {
    if (!this.#relayBusy) return Promise.resolve();
    if (this.#relay?.running) this.#relay.wake(); // else the round is being handled already
    return this.#relayIdle;
  }

  async #pumpInput(): Promise<void> {
    const signal = this.#stop.signal;
    for (;;) {
      const read = await readWhenReady(0, { signal, sliceMs: 100, waker: this.#waker });
      if (read === null) return;
      const chunk = this.#takeCpr(read);
      if (chunk.length === 0) continue;
      const bar = this.#bar;
      if (bar) {
        // Keys for the bar; terminal replies for the program (it asked: its query was written before the bar
        // opened); mouse/focus reports and pastes for nobody.
        const tokens = this.#keys.feed(chunk);
        const keys: string[] = [];
        for (const t of tokens) {
          if (t.kind === "key") keys.push(t.key);
          else if (t.kind === "reply") await writeAll(this.#master, t.bytes, signal);
        }
        bar.onKeys(keys, tokens.length === 1 && keys.length === 1);
      } else {
        const held = this.#keys.take(); // the start of a sequence read while the bar was up
        if (held.length && !(await writeAll(this.#master, held, signal))) return;
        if (!(await writeAll(this.#master, chunk, signal))) return;
        this.#noteTyped(held.length ? Uint8Array.from([...held, ...chunk]) : chunk);
      }
    }
  }

  /**
   * After the command exited: waits for the rest of its output (until the master reports EIO, or `idleMs`
   * without a byte when something else still holds the slave), closes a bar that is still up, writes everything
   * out, restores the terminal and closes the master.
   */
  async finish(idleMs = 200): Promise<void> {
    this.closeSlave();
    this.#finishing = true;
    // The output pump starts reading only once the cursor is known (or 0.5 s passed without an answer): a
    // command that printed and exited before that (on a terminal that does not answer, e.g. script(1)) had its
    // output dropped when the drain below saw nothing move.
    await this.#cursorKnown;
    await this.#stopRelay();
    // EIO never comes while hallpass keeps its own fd on the slave: drained when the slave's output queue is
    // empty and the master has nothing to read (checked every 10 ms).
    const drained = Promise.race([this.#outputDone.then(() => true), this.#whenQuiet()]);
    for (;;) {
      const before = this.gate.bytesOut;
      const done = await Promise.race([drained, this.#sleep(idleMs).then(() => false)]);
      if (done || this.gate.bytesOut === before) break;
    }
    this.#stop.abort();
    this.#bar = null;
    await this.gate.closeBar(); // also wakes a pump paused by back-pressure
    await this.gate.flushFilter();
    await Promise.allSettled([this.#outputDone, this.#inputDone]);
    await this.gate.flushed();
    this.#relay?.close();
    while (this.#sleeps.size > 0) await Promise.allSettled([...this.#sleeps]);
    if (this.#waker >= 0) {
      try {
        closeFd(this.#waker);
      } catch { /* gone */ }
      this.#waker = -1;
    }
    this.#handBackTyped();
    this.restore();
    try {
      closeFd(this.#master);
    } catch { /* already gone */ }
  }

  /**
   * Resolves after `ms`, or as soon as the session stops (at once when it has). Not a timer: the first timer of a
   * process loads Deno's node:timers (~6 ms of CPU at every start of an interactive session).
   */
  #sleep(ms: number): Promise<void> {
    if (this.#stop.signal.aborted) return Promise.resolve();
    if (this.#waker < 0) return new Promise((r) => setTimeout(r, ms));
    const p: Promise<void> = sleepUnlessWoken(ms, this.#waker).catch(() => {}).then(() => {
      this.#sleeps.delete(p);
    });
    this.#sleeps.add(p);
    return p;
  }

  #noteTyped(bytes: Uint8Array): void {
    const all = new Uint8Array(Math.min(this.#typed.length + bytes.length, 4096));
    const keep = all.length - Math.min(bytes.length, all.length);
    all.set(this.#typed.subarray(this.#typed.length - keep), 0);
    all.set(bytes.subarray(bytes.length - (all.length - keep)), keep);
    this.#typed = all;
  }

  #whenQuiet(): Promise<true> {
    return new Promise((resolve) => {
      if (this.#keeper < 0) return;
      const tick = () => {
        if (this.#restored || this.#stop.signal.aborted) return;
        if (outputQueued(this.#keeper) === 0 && !readableWithin(this.#master, 0)) resolve(true);
        else this.#sleep(10).then(tick);
      };
      this.#sleep(10).then(tick);
    });
  }

  /**
   * Text typed while the command ran and never read by it goes back to the real terminal's input (TIOCSTI), so
   * the shell reads it next, as without hallpass. Only bytes the
   * person typed: the unread queue must be the end of what hallpass passed on (a program could put other bytes
   * in its own terminal's input with TIOCSTI; those are never handed to the shell outside).
   */
  #handBackTyped(): void {
    if (this.#keeper < 0) return;
    const keeper = this.#keeper;
    this.#keeper = -1;
    try {
      const unread = takeUnread(keeper);
      const t = this.#typed;
      const typed = t.subarray(t.length - unread.length);
      // The slave's input processing may have turned CR into LF (ICRNL) or back (INLCR): the same key.
      const same = (u: number, k: number) => u === k || (u === 10 && k === 13) || (u === 13 && k === 10);
      const ours = unread.length > 0 && unread.length <= t.length &&
        unread.every((b, i) => same(b, typed[i]));
      // What goes back is what the person typed; the real terminal processes it again as its own input.
      // In the person's own modes (ICRNL, a line for a line-reading shell) but without echo: the text was echoed
      // once already, by the command's terminal, as it would have been without hallpass.
      if (ours && isatty(0) && this.#saved) {
        setTermios(0, withoutEcho(this.#saved));
        pushInput(0, typed);
      }
    } finally {
      try {
        closeFd(keeper);
      } catch { /* gone */ }
    }
  }

  /** Puts the real terminal back as it was. Idempotent; safe from signal and error handlers. */
  /** Job control: the command was stopped (Ctrl-Z): give the terminal back as it was, before we stop too. */
  suspend(): void {
    if (this.#saved && !this.#restored) {
      try {
        setTermios(0, this.#saved);
      } catch { /* not a terminal any more */ }
    }
  }

  /** Job control: we were continued (fg): raw mode again, for the command that is continued with us. */
  resume(): void {
    if (this.#saved && !this.#restored) {
      try {
        setTermios(0, makeRaw(this.#saved));
      } catch { /* not a terminal any more */ }
    }
  }

  restore(): void {
    if (this.#restored) return;
    this.#restored = true;
    this.#stop.abort();
    if (this.#titleSet) {
      this.#titleSet = false;
      try {
        writeAllSync(new TextEncoder().encode("\x1b[23;0t"));
      } catch { /* the terminal is gone */ }
    }
    if (this.#saved) {
      try {
        setTermios(0, this.#saved);
      } catch { /* nothing more we can do */ }
    }
    this.#hooks.removeAll();
  }
}
