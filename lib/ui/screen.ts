/**
 * Screen preservation while the prompt bar is up.
 *
 * A {@linkcode ScreenMirror} is an @xterm/headless model fed every byte written to the real terminal. A
 * {@linkcode ScreenGate} sits between the program's output and the real terminal:
 *
 * * bar down: output goes to the terminal and into the mirror, in order;
 * * bar up: the bar is drawn over the bottom rows; output is buffered (neither written nor fed), so the real
 *   terminal and the mirror both stay exactly as they were when the bar opened;
 * * bar closes: the rows the bar covered are repainted from the mirror (cells, colours, attributes, wide
 *   characters), the cursor, SGR, charset, insert/origin modes and the DECSC save slot are put back as the model
 *   has them, and then the buffered output is written (and fed) as if nothing had happened.
 *
 * The buffer is capped ({@linkcode ScreenGate.shouldPause}): past the cap the pump stops reading the pty master
 * until the bar closes, so the program blocks on its own writes and nothing is lost.
 *
 * Limits: the model is xterm.js (Unicode 6 widths, its reflow on resize); after a resize while the bar is up the
 * whole screen is repainted from the model. Per-cell hyperlinks (OSC 8) and the soft-wrap flags of repainted
 * rows are not restored.
 */

import xterm from "@xterm/headless";
import type { BarStyle, RenderGuard } from "./prompt_bar.ts";
import { render } from "./prompt_bar.ts";
import { findSkip } from "./mirror_skip.ts";
import type { OutputFilter } from "./output_filter.ts";

type Terminal = InstanceType<typeof xterm.Terminal>;

const quiet = () => {};
/**
 * The model's own diagnostics go nowhere: a library's console output would reach the user's terminal (in raw
 * mode) in the middle of the program's output. `logLevel: "off"` and a logger that drops everything, in case a
 * level check is missed somewhere.
 */
export const SILENT = {
  logLevel: "off",
  logger: { trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
} as const;

/** The attribute accessors xterm.js cells and its internal attribute data share. */
interface Attrs {
  isBold(): number;
  isDim(): number;
  isItalic(): number;
  isUnderline(): number;
  isBlink(): number;
  isInverse(): number;
  isInvisible(): number;
  isStrikethrough(): number;
  isOverline(): number;
  getFgColorMode(): number;
  getBgColorMode(): number;
  getFgColor(): number;
  getBgColor(): number;
  getUnderlineStyle?(): number;
  getUnderlineColorMode?(): number;
  getUnderlineColor?(): number;
}

const CM_P16 = 0x1000000;
const CM_P256 = 0x2000000;
const CM_RGB = 0x3000000;

function colour(mode: number, value: number, base: number, bright: number, ext: number): string {
  if (mode === CM_P16) return value < 8 ? `;${base + value}` : `;${bright + value - 8}`;
  if (mode === CM_P256) return `;${ext};5;${value}`;
  if (mode === CM_RGB) return `;${ext};2;${(value >> 16) & 255};${(value >> 8) & 255};${value & 255}`;
  return "";
}

/** The SGR sequence that sets exactly `a` (starting from a reset). */
export function sgrFor(a: Attrs): string {
  let s = "\x1b[0";
  if (a.isBold()) s += ";1";
  if (a.isDim()) s += ";2";
  if (a.isItalic()) s += ";3";
  if (a.isUnderline()) {
    const style = a.getUnderlineStyle?.() ?? 1;
    s += style > 1 ? `;4:${style}` : ";4";
  }
  if (a.isBlink()) s += ";5";
  if (a.isInverse()) s += ";7";
  if (a.isInvisible()) s += ";8";
  if (a.isStrikethrough()) s += ";9";
  if (a.isOverline()) s += ";53";
  s += colour(a.getFgColorMode(), a.getFgColor(), 30, 90, 38);
  s += colour(a.getBgColorMode(), a.getBgColor(), 40, 100, 48);
  if (a.isUnderline() && a.getUnderlineColorMode && a.getUnderlineColor) {
    const m = a.getUnderlineColorMode();
    if (m === CM_P16 || m === CM_P256) s += `;58;5;${a.getUnderlineColor()}`;
    else if (m === CM_RGB) s += colour(m, a.getUnderlineColor(), 0, 0, 58);
  }
  return s + "m";
}

// deno-lint-ignore no-explicit-any
type Internals = any;

/** Marks a cell of the model whose content the real terminal had before hallpass started. */
const UNKNOWN = "\ue000";

/** Maps xterm.js charset tables back to their designator letters (the tables are module-level singletons). */
let charsetFlags: Map<unknown, string> | null = null;
function charsetFlag(charset: unknown): string {
  if (charset === undefined || charset === null) return "B";
  if (!charsetFlags) {
    charsetFlags = new Map();
    const probe = new xterm.Terminal({ cols: 2, rows: 1, allowProposedApi: true, ...SILENT });
    const core = (probe as Internals)._core;
    for (const f of "0AB4C5RQKYE6ZH7=") {
      core._inputHandler.selectCharset("(" + f);
      const cs = core._charsetService.charset;
      if (cs) charsetFlags.set(cs, f);
    }
    probe.dispose();
  }
  return charsetFlags.get(charset) ?? "B";
}

/** Output queued for the model before it is parsed (see {@linkcode ScreenMirror.feed}). */
const LAZY_BYTES = 1 << 20;

/** Lines of scrollback the model keeps, so that it reflows on a resize as the real terminal does. */
export const MIRROR_SCROLLBACK = 1000;

/**
 * A headless model of what the real terminal shows. The program's output is fed lazily ({@linkcode feed}): it is
 * queued and parsed only when the model is read ({@linkcode settled}) or the queue passes 1 MiB, and long runs of
 * plain text are skipped where that cannot change the result (mirror_skip.ts).
 */
export class ScreenMirror {
  readonly term: Terminal;
  readonly scrollback: number;
  #pending: Promise<void> = Promise.resolve();
  #queue: Uint8Array[] = [];
  /** Called once the queued bytes are parsed or copied (the caller may then use their buffer again). */
  #releases: (() => void)[] = [];
  #queued = 0;
  /** The queued bytes from here on hold no control but LF, CR, TAB, BS (findSkip's `clean`). */
  #clean = 0;
  /** Parses not finished. */
  #parsing = 0;
  /** The queue holds only plain text and what {@linkcode #compact} left (a cursor move), or nothing. */
  #queueCompact = true;

  constructor(cols: number, rows: number, opts: { scrollback?: number } = {}) {
    this.scrollback = opts.scrollback ?? 0;
    this.term = new xterm.Terminal({
      cols,
      rows,
      scrollback: this.scrollback,
      allowProposedApi: true,
      ...SILENT,
    });
  }

  get cols(): number {
    return this.term.cols;
  }
  get rows(): number {
    return this.term.rows;
  }

  /** Feeds bytes (or text) the real terminal received; resolves once they (and all before) are parsed. */
  write(data: Uint8Array | string): Promise<void> {
    this.feed(typeof data === "string" ? new TextEncoder().encode(data) : data);
    return this.settled();
  }

  /**
   * Queues bytes the real terminal received, to be parsed when the model is next read. `clean`: bytes[clean, end)
   * hold no control other than LF, CR, TAB, BS and no C1 (the pty relay knows: relay.c); default: unknown.
   * `release`: called once `bytes` are no longer needed (parsed, or copied for parsing).
   */
  feed(bytes: Uint8Array, clean = bytes.length, release?: () => void): void {
    if (clean === 0 && this.#compact(bytes)) {
      release?.();
      return;
    }
    if (clean !== 0) this.#queueCompact = false; // plain text changes nothing a later compaction depends on
    if (release) this.#releases.push(release);
    if (bytes.length === 0) return;
    const last = this.#queue.at(-1);
    // A UTF-8 C1 control split between two pieces: its second byte is not clean.
    if (last && last[last.length - 1] === 0xc2 && bytes[0] >= 0x80 && bytes[0] <= 0x9f) {
      clean = Math.max(clean, 1);
    }
    if (clean > 0) this.#clean = this.#queued + Math.min(clean, bytes.length);
    this.#queue.push(bytes);
    this.#queued += bytes.length;
    if (this.#queued >= LAZY_BYTES) this.#drain();
  }

  /**
   * `bytes` hold no control but LF, CR, TAB and BS, and enough lines that nothing written before a cut in them can
   * still be seen (mirror_skip.ts): then what is queued is replaced, without parsing anything, by the cursor on
   * the bottom row and the lines after the cut. Only when the model's state
   * is known to allow a skip: no parse pending, a full-screen scroll region, no origin mode, and a queue that holds
   * nothing else that could change them. Keeps a long plain stream (`seq 1 5000000`) from being parsed at all.
   */
  #compact(bytes: Uint8Array): boolean {
    if (this.#parsing > 0 || !this.#queueCompact || !this.#skipAllowed()) return false;
    const skip = findSkip(bytes, this.rows, this.scrollback, 0);
    if (!skip) return false;
    // What is queued is gone from view; it holds no SGR (only plain text and a cursor move), so the attributes
    // are the model's own.
    const tail = bytes.subarray(skip.tail);
    const next = new Uint8Array(skip.replacement.length + tail.length);
    next.set(skip.replacement, 0);
    next.set(tail, skip.replacement.length);
    this.#releases.forEach((r) => r());
    this.#releases = [];
    this.#queue = [next];
    this.#queued = next.length;
    this.#clean = skip.replacement.length;
    return true;
  }

  /** The model's state allows a skip now (see findSkip): a full-screen scroll region, no origin mode. */
  #skipAllowed(): boolean {
    const b = this.#core.buffer;
    const full = (b?.scrollTop ?? 0) === 0 && (b?.scrollBottom ?? this.rows - 1) === this.rows - 1;
    return full && !this.#core.coreService?.decPrivateModes?.origin;
  }

  /** Resolves once everything fed so far is parsed. */
  settled(): Promise<void> {
    this.#drain();
    return this.#pending;
  }

  #drain(): void {
    if (this.#queue.length === 0) return;
    let buf: Uint8Array;
    const releases = this.#releases;
    this.#releases = [];
    const many = this.#queue.length > 1;
    if (!many) buf = this.#queue[0];
    else {
      buf = new Uint8Array(this.#queued);
      let o = 0;
      for (const c of this.#queue) {
        buf.set(c, o);
        o += c.length;
      }
    }
    const clean = this.#clean;
    this.#queue = [];
    this.#queued = 0;
    this.#clean = 0;
    this.#queueCompact = true;
    this.#parsing++;
    if (many) releases.forEach((r) => r()); // copied
    const parsed = many ? [] : releases;
    this.#pending = this.#pending.then(() => this.#parse(buf, clean)).finally(() => {
      this.#parsing--;
      parsed.forEach((r) => r());
    });
  }

  #termWrite(data: Uint8Array): Promise<void> {
    return new Promise<void>((resolve) => this.term.write(data, resolve));
  }

  async #parse(buf: Uint8Array, clean: number): Promise<void> {
    const skip = buf.length > 4096 ? findSkip(buf, this.rows, this.scrollback, clean) : null;
    if (!skip) return this.#termWrite(buf);
    await this.#termWrite(buf.subarray(0, skip.head));
    const b = this.#core.buffer;
    const fullRegion = (b?.scrollTop ?? 0) === 0 && (b?.scrollBottom ?? this.rows - 1) === this.rows - 1;
    if (!fullRegion || this.#core.coreService?.decPrivateModes?.origin) {
      return this.#termWrite(buf.subarray(skip.head));
    }
    await this.#termWrite(skip.replacement);
    await this.#termWrite(buf.subarray(skip.tail));
  }

  /**
   * The real terminal already shows something when hallpass starts: its cursor is at (`row`, `col`) (0-based),
   * and every cell before it holds text this model never saw. Those cells are marked unknown (a private-use
   * character): {@linkcode repaint} skips them, and {@linkcode ScreenGate} scrolls them out from under the bar
   * instead of drawing over them. Call before anything else is fed.
   */
  startAt(row: number, col: number): Promise<void> {
    const r = Math.max(0, Math.min(row, this.rows - 1));
    const c = Math.max(0, Math.min(col, this.cols - 1));
    let s = "";

    for (let y = 0; y < r; y++) s += `\x1b[${y + 1};1H` + UNKNOWN.repeat(this.cols);
    if (c > 0) s += `\x1b[${r + 1};1H` + UNKNOWN.repeat(c);
    s += `\x1b[${r + 1};${c + 1}H`;
    return this.write(s);
  }

  /** Rows at the bottom, from `rows - n`, that hold unknown cells: how many rows from the top of those. */
  unknownRowsIn(n: number): number {
    const buf = this.term.buffer.active;
    if (buf.type !== "normal") return 0;
    let last = -1;
    for (let y = Math.max(this.rows - n, 0); y < this.rows; y++) {
      const line = buf.getLine(buf.baseY + y);
      if (line && line.translateToString(false).includes(UNKNOWN)) last = y;
    }
    return last < 0 ? 0 : last - (this.rows - n) + 1;
  }

  /**
   * Scrolls the whole screen up by `n` rows (from the bottom row, as output would) keeping the cursor on the
   * same text, when the scroll region is the whole screen; returns the sequence to send, or "" when it cannot.
   * The model is fed the same sequence, so it stays the real terminal's twin.
   */
  scrollUp(n: number): string {
    const core = this.#core;
    const b = core.buffer;
    if (n <= 0 || (b?.scrollTop ?? 0) !== 0 || (b?.scrollBottom ?? this.rows - 1) !== this.rows - 1) {
      return "";
    }
    if (core.coreService?.decPrivateModes?.origin) return "";
    const x: number = Math.min(b?.x ?? 0, this.cols - 1);
    const y: number = Math.max((b?.y ?? 0) - n, 0);
    const s = `\x1b7\x1b[${this.rows};1H${"\n".repeat(n)}\x1b8\x1b[${y + 1};${x + 1}H`;
    this.write(s);
    return s;
  }

  /**
   * The sequence that turns the terminal's reports back on as the program had them: mouse tracking and its SGR
   * encodings, focus reporting, bracketed paste (see {@linkcode BAR_INPUT_MODES}, which turns them off/on).
   */
  inputModes(): string {
    const core = this.#core;
    const mouse = core.coreMouseService;
    const modes = core.coreService?.decPrivateModes ?? {};
    let out = "";
    const proto: Record<string, string> = { X10: "9", VT200: "1000", DRAG: "1002", ANY: "1003" };
    const p = proto[mouse?.activeProtocol ?? "NONE"];
    if (p) out += `\x1b[?${p}h`;
    if (mouse?.activeEncoding === "SGR") out += "\x1b[?1006h";
    if (mouse?.activeEncoding === "SGR_PIXELS") out += "\x1b[?1016h";
    if (modes.sendFocus) out += "\x1b[?1004h";
    if (!modes.bracketedPasteMode) out += "\x1b[?2004l";
    return out;
  }

  /**
   * After a resize, the real terminal says its cursor is on `row` (0-based) while the model's is elsewhere: the
   * two reflowed differently (the terminal pulled lines of its own history back onto the screen that the model
   * never had, or the model pulled more than the terminal had). Shifts the model's screen so the cursor rows
   * agree: rows the terminal has and the model does not are marked unknown (a repaint leaves them alone).
   */
  alignCursorRow(row: number): Promise<void> {
    const b = this.#core.buffer;
    const y: number = b?.y ?? 0;
    const x: number = Math.min(b?.x ?? 0, this.cols - 1);
    const full = (b?.scrollTop ?? 0) === 0 && (b?.scrollBottom ?? this.rows - 1) === this.rows - 1;
    const target = Math.max(0, Math.min(row, this.rows - 1));
    if (target === y || !full || this.#core.coreService?.decPrivateModes?.origin) return this.settled();
    let s = "";
    if (target > y) {
      const n = target - y;
      s += `\x1b[1;1H\x1b[${n}L`;
      for (let r = 0; r < n; r++) s += `\x1b[${r + 1};1H` + UNKNOWN.repeat(this.cols);
    } else {
      s += `\x1b[${this.rows};1H` + "\n".repeat(y - target);
    }
    s += `\x1b[${target + 1};${x + 1}H`;
    return this.write(s);
  }

  resize(cols: number, rows: number): void {
    if (cols > 0 && rows > 0 && (cols !== this.cols || rows !== this.rows)) this.term.resize(cols, rows);
  }

  dispose(): void {
    this.term.dispose();
  }

  get #core(): Internals {
    return (this.term as Internals)._core;
  }

  /**
   * Sequences that make drawing plain text safe whatever modes the program left on (G0 ASCII, GL = G0, insert
   * mode off, origin mode off) and that put those modes back. For use between `ESC 7` and `ESC 8`.
   */
  guard(): RenderGuard {
    const core = this.#core;
    const cs = core._charsetService;
    const insert = !!core.coreService?.modes?.insertMode;
    const origin = !!core.coreService?.decPrivateModes?.origin;
    const g0 = charsetFlag(cs?._charsets?.[0]);
    const glevel: number = cs?.glevel ?? 0;
    let pre = "";
    let post = "";
    if (insert) (pre += "\x1b[4l"), (post = "\x1b[4h" + post);
    if (origin) (pre += "\x1b[?6l"), (post = "\x1b[?6h" + post);
    if (g0 !== "B") (pre += "\x1b(B"), (post = `\x1b(${g0}` + post);
    if (glevel !== 0) (pre += "\x0f"), (post = ["", "\x0e", "\x1bn", "\x1bo"][glevel] + post);
    return { pre, post };
  }

  /**
   * The escape sequence that repaints screen rows [r0, r1) exactly as the model has them, then restores the
   * model's DECSC slot, cursor (including a pending wrap), SGR attributes, charsets and insert/origin modes.
   * Call after {@linkcode settled}.
   */
  repaint(r0: number, r1: number): string {
    const buf = this.term.buffer.active;
    const cols = this.cols;
    const core = this.#core;
    const ib = core._inputHandler;
    const b = core.buffer; // the active internal buffer
    const cs = core._charsetService;
    const insert = !!core.coreService?.modes?.insertMode;
    const origin = !!core.coreService?.decPrivateModes?.origin;
    let out = "";
    if (insert) out += "\x1b[4l";
    if (origin) out += "\x1b[?6l";
    out += "\x1b(B\x0f";
    const cellSgr = (x: number, y: number): { sgr: string; chars: string; width: number } | null => {
      const line = buf.getLine(buf.baseY + y);
      const cell = line?.getCell(x);
      if (!cell) return null;
      return { sgr: sgrFor(cell as unknown as Attrs), chars: cell.getChars() || " ", width: cell.getWidth() };
    };
    for (let y = Math.max(r0, 0); y < Math.min(r1, this.rows); y++) {
      out += `\x1b[${y + 1};1H`;
      let last = "";
      // Trailing blank cells with default attributes are erased (EL), not written as spaces: that is how the
      // program left them (the terminal then trims them, as it does for the program's own erased cells).
      let end = cols;
      while (end > 0) {
        const c = cellSgr(end - 1, y);
        if (!c || (c.width === 1 && (c.chars === " " || c.chars === "") && c.sgr === "\x1b[0m")) end--;
        else break;
      }
      for (let x = 0; x < end; x++) {
        const c = cellSgr(x, y);
        if (!c) {
          out += "\x1b[0m ";
          last = "\x1b[0m";
          continue;
        }
        if (c.width === 0) continue; // second half of a wide character
        if (c.chars === UNKNOWN) {
          out += "\x1b[C"; // not ours to paint: leave what the terminal shows
          continue;
        }
        if (c.sgr !== last) (out += c.sgr), (last = c.sgr);
        out += c.chars;
      }
      if (end < cols) out += "\x1b[0m\x1b[K";
    }
    // The DECSC slot (ESC 8 by the program later must land where it would have).
    const savedY = Math.max(0, Math.min(this.rows - 1, (b?.savedY ?? 0) - (b?.ybase ?? 0)));
    const savedX = Math.max(0, Math.min(cols - 1, b?.savedX ?? 0));
    const savedCharset = charsetFlag(b?.savedCharset);
    out += `\x1b[${savedY + 1};${savedX + 1}H`;
    if (b?.savedCurAttrData) out += sgrFor(b.savedCurAttrData);
    out += `\x1b(${savedCharset}\x1b7\x1b(B`;
    // The cursor.
    if (origin) out += "\x1b[?6h";
    const x: number = b?.x ?? buf.cursorX;
    const y: number = b?.y ?? buf.cursorY;
    const rowOff = origin ? (b?.scrollTop ?? 0) : 0;
    if (x >= cols) {
      // Pending wrap: print the last cell again so the terminal is in the same state.
      let lx = cols - 1;
      if (cellSgr(lx, y)?.width === 0) lx--;
      const c = cellSgr(lx, y);
      out += `\x1b[${y - rowOff + 1};${lx + 1}H`;
      if (c) out += c.sgr + c.chars;
    } else {
      out += `\x1b[${y - rowOff + 1};${x + 1}H`;
    }
    if (ib?._curAttrData) out += sgrFor(ib._curAttrData);
    else out += "\x1b[0m";
    const g0 = charsetFlag(cs?._charsets?.[0]);
    if (g0 !== "B") out += `\x1b(${g0}`;
    const glevel: number = cs?.glevel ?? 0;
    if (glevel !== 0) out += ["", "\x0e", "\x1bn", "\x1bo"][glevel];
    if (insert) out += "\x1b[4h";
    return out;
  }
}

/**
 * Sent when the bar opens: every mouse mode and encoding and focus reporting off (the terminal must not send
 * reports while the person answers: a wheel-down is `ESC [ M a …`), bracketed paste on (a paste is then marked,
 * and is never an answer). {@linkcode ScreenMirror.inputModes} puts them back.
 */
export const BAR_INPUT_MODES = "\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?9l\x1b[?1005l\x1b[?1006l\x1b[?1015l" +
  "\x1b[?1016l\x1b[?1004l\x1b[?2004h";

/** Writes to the real terminal, in order; may be async. */
export type TerminalWrite = (data: Uint8Array | string) => void | Promise<void>;

/** Default output buffer cap while the bar is up. */
export const DEFAULT_MAX_BUFFER = 16 * 1024 * 1024;

/** The program's output, the bar and the mirror, kept in order. See the module comment. */
export class ScreenGate {
  readonly mirror: ScreenMirror;
  readonly #write: TerminalWrite;
  readonly #maxBuffer: number;
  readonly #style: BarStyle;
  #chain: Promise<void> = Promise.resolve();
  #buffered: Uint8Array[] = [];
  #bufferedBytes = 0;
  #barLines: string[] | null = null;
  /** Bottom rows the bar has covered since it opened (the repaint on close). */
  #coveredRows = 0;
  #fullRepaint = false;
  #resumeWaiters: (() => void)[] = [];
  #bytesOut = 0;
  /** Operations queued on #chain and not finished. */
  #busy = 0;
  readonly #filter: OutputFilter | null;
  readonly #beforeWrite: (() => Promise<void>) | null;
  /** A terminal without cursor addressing (TERM=dumb): the question is asked on plain lines; no model. */
  readonly plain: boolean;
  /** Plain mode: the last byte written ends a line. */
  #atLineStart = true;
  /** Plain mode: the lines last printed (a redraw prints again only when they change). */
  #printed = "";

  constructor(
    mirror: ScreenMirror,
    write: TerminalWrite,
    opts: {
      maxBuffer?: number;
      style?: BarStyle;
      filter?: OutputFilter;
      plain?: boolean;
      /** Called (and awaited) before each of the gate's own writes: whoever else writes to the terminal stops. */
      beforeWrite?: () => Promise<void>;
    } = {},
  ) {
    this.mirror = mirror;
    this.#write = write;
    this.#maxBuffer = opts.maxBuffer ?? DEFAULT_MAX_BUFFER;
    this.#style = opts.style ?? "reverse";
    this.#filter = opts.filter ?? null;
    this.plain = opts.plain ?? false;
    this.#beforeWrite = opts.beforeWrite ?? null;
  }

  /** The program's bytes as they may reach the terminal (output_filter.ts); the model is fed the same. */
  #pass(chunk: Uint8Array): Uint8Array {
    const out = this.#filter ? this.#filter.filter(chunk) : chunk;
    if (out.length > 0) {
      if (this.plain) this.#atLineStart = out[out.length - 1] === 0x0a;
      else this.mirror.feed(out);
    }
    return out;
  }

  /** What the output filter still holds (at the end of the session): written out. */
  flushFilter(): Promise<void> {
    const rest = this.#filter?.flush();
    if (rest && rest.length) this.output(rest, false);
    return this.#chain;
  }

  get barUp(): boolean {
    return this.#barLines !== null;
  }

  /** Program output bytes received so far (written or held back). */
  get bytesOut(): number {
    return this.#bytesOut;
  }

  /** Bytes held back while the bar is up. */
  get bufferedBytes(): number {
    return this.#bufferedBytes;
  }

  #enqueue(op: () => void | Promise<void>): Promise<void> {
    this.#busy++;
    const before = this.#beforeWrite;
    const run = before ? () => before().then(op) : op;
    this.#chain = this.#chain.then(run).catch(() => {}).finally(() => this.#busy--);
    return this.#chain;
  }

  /**
   * The fast path of {@linkcode output}: when the bar is down and nothing is queued, feeds the mirror and writes
   * `chunk` at once with `writeSync`; returns false (and does nothing) otherwise.
   */
  outputNow(chunk: Uint8Array, writeSync: (b: Uint8Array) => void): boolean {
    if (this.#barLines !== null || this.#busy > 0) return false;
    this.#bytesOut += chunk.length;
    const out = this.#pass(chunk);
    if (out.length) writeSync(out);
    return true;
  }

  /**
   * Nothing queued or held, the bar down, and the output filter between sequences: another writer (the C relay)
   * may copy output that the filter would pass unchanged, reporting it with {@linkcode relayed}.
   */
  get idle(): boolean {
    return this.#busy === 0 && this.#barLines === null && (this.#filter?.idle ?? true);
  }

  /** Output another writer already copied to the terminal (see {@linkcode idle}): counted and fed to the model. */
  relayed(bytes: Uint8Array, clean?: number, release?: () => void): void {
    this.#bytesOut += bytes.length;
    if (this.plain) {
      this.#atLineStart = bytes[bytes.length - 1] === 0x0a;
      release?.();
    } else this.mirror.feed(bytes, clean, release);
  }

  /** The program's output. Never dropped (but filtered: output_filter.ts). */
  output(chunk: Uint8Array, filter = true): void {
    if (chunk.length === 0) return;
    this.#bytesOut += chunk.length;
    if (this.#barLines !== null) {
      this.#buffered.push(chunk);
      this.#bufferedBytes += chunk.length;
      return;
    }
    this.#enqueue(async () => {
      const out = filter ? this.#pass(chunk) : chunk;
      if (!filter && !this.plain) this.mirror.feed(out);
      if (out.length) await this.#write(out);
    });
  }

  /** True when the pump should stop reading the pty master until {@linkcode whenFlowing} resolves. */
  shouldPause(): boolean {
    return this.#barLines !== null && this.#bufferedBytes >= this.#maxBuffer;
  }

  /** Resolves when output flows again (at once if it does). */
  whenFlowing(): Promise<void> {
    if (!this.shouldPause()) return Promise.resolve();
    return new Promise((resolve) => this.#resumeWaiters.push(resolve));
  }

  /** Shows (or replaces) the bar. */
  showBar(lines: string[]): Promise<void> {
    const wasUp = this.#barLines !== null;
    const previous = this.#coveredRows;
    this.#barLines = lines;
    if (!wasUp) this.#coveredRows = 0;
    if (this.plain) return this.#enqueue(() => this.#printPlain(lines, wasUp));
    return this.#enqueue(async () => {
      await this.mirror.settled();
      const rows = this.mirror.rows;
      let out = "";
      const height = Math.min(lines.length, rows);
      // Text from before hallpass started under the bar: scroll it up out of the way (the model cannot repaint it).
      out += this.mirror.scrollUp(this.mirror.unknownRowsIn(height));
      await this.mirror.settled();
      // A shorter bar than before: give the freed rows back first.
      if (wasUp && height < previous) out += this.mirror.repaint(rows - previous, rows - height);
      this.#coveredRows = Math.max(this.#coveredRows, height);
      if (!wasUp) out += BAR_INPUT_MODES + (this.#filter?.paletteReset() ?? "");
      out += render(lines, rows, this.mirror.cols, this.#barStyle(), this.mirror.guard());
      await this.#write(out);
    });
  }

  /** The program changed the colours: the bar's own are forced (explicit RGB), not the terminal's reverse. */
  #barStyle(): BarStyle {
    return this.#filter?.paletteChanged ? "forced" : this.#style;
  }

  /** Plain mode: the question as lines of text, after the output, and a prompt; again only when it changed. */
  async #printPlain(lines: string[], wasUp: boolean): Promise<void> {
    const text = lines.join("\r\n");
    const key = lines.slice(1).join("\n");
    if (wasUp && key === this.#printed) return;
    this.#printed = key;
    const lead = this.#atLineStart ? "" : "\r\n";
    this.#atLineStart = false;
    await this.#write(`${lead}${text}\r\nhallpass: your answer? `);
  }

  /** Closes the bar: repaints what it covered, then writes what was held back. */
  closeBar(): Promise<void> {
    if (this.#barLines === null) return this.#chain;
    this.#barLines = null;
    const held = this.#buffered;
    this.#buffered = [];
    this.#bufferedBytes = 0;
    const full = this.#fullRepaint;
    this.#fullRepaint = false;
    const covered = this.#coveredRows;
    this.#coveredRows = 0;
    const p = this.#enqueue(async () => {
      if (this.plain) {
        this.#printed = "";
        await this.#write("\r\n");
        this.#atLineStart = true;
      } else {
        await this.mirror.settled();
        const rows = this.mirror.rows;
        await this.#write(
          this.mirror.repaint(full ? 0 : Math.max(rows - covered, 0), rows) + this.mirror.inputModes() +
            (this.#filter?.extraMouseModes() ?? "") + (this.#filter?.palette() ?? ""),
        );
      }
      for (const chunk of held) {
        const out = this.#pass(chunk);
        if (out.length) await this.#write(out);
      }
    });
    const waiters = this.#resumeWaiters;
    this.#resumeWaiters = [];
    for (const w of waiters) w();
    return p;
  }

  /**
   * The real terminal changed size: resize the model; with the bar up, repaint everything from the model and draw
   * the bar again (`lines`: its layout for the new width; default the old lines).
   */
  resize(
    cols: number,
    rows: number,
    lines?: string[],
    cursorRow?: () => Promise<number | null | "stale">,
  ): Promise<void> {
    if (lines && this.#barLines !== null) this.#barLines = lines;
    if (this.plain) return this.#chain;
    return this.#enqueue(async () => {
      await this.mirror.settled();
      this.mirror.resize(cols, rows);
      if (this.#barLines === null) return;
      // The terminal reflowed on its own; where its cursor is says whether the model agrees (nothing of the
      // program's is written while the bar is up, so the answer is about the model's state).
      const row = cursorRow ? await cursorRow() : null;
      if (row === "stale") {
        // The terminal has another size by now: its resize follows (and repaints); until then, nothing.
        this.#fullRepaint = true;
        return;
      }
      if (row !== null) await this.mirror.alignCursorRow(row);
      this.#fullRepaint = true;
      const lines = this.#barLines;
      this.#coveredRows = Math.min(lines.length, rows);
      await this.#write(
        this.mirror.repaint(0, rows) + render(lines, rows, cols, this.#barStyle(), this.mirror.guard()),
      );
    });
  }

  /** Resolves when everything queued so far has been written. */
  flushed(): Promise<void> {
    return this.#chain;
  }
}
