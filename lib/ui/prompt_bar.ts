/**
 * The prompt bar (docs/terminal.md): state → layout → render. Pure: nothing here reads keys or writes to a terminal.
 *
 * The bar takes 5 rows; 6 with an exec warning or a hallpass-request reason; 7 with both. The extra lines go
 * above the bar's five lines (docs/terminal.md) so those stay together, in order, with the keys on the bottom row.
 *
 * `[D]` (shift-d) denies this question, every pending one from the same process and all it asks later in the
 * session (a loop asking again after each answer); it always works, and line 5
 * names it (`[D] deny all from pid N`) whenever other questions from that pid are waiting.
 *
 * @example
 * ```ts
 * import { handleKey, layout, render } from "./prompt_bar.ts";
 * let state = { question, queued: 0, sameProcessQueued: 0, scopeIndex: 0, forMs: 300_000 };
 * const out = render(layout(state, 80), 24, 80, "reverse"); // write `out` to the terminal
 * const r = handleKey(state, "\x1b[D"); // widen the scope
 * if (r.redraw) state = r.state;
 * ```
 */

import type { Answer, Question } from "../types.ts";
import { formatDuration } from "../policy/duration.ts";
import { displayWidth, truncateEnd, truncateMiddle, visible } from "./sanitize.ts";
import { KeyReader } from "./key_reader.ts";

/** What the bar shows. */
export interface BarState {
  /** The question on screen. */
  question: Question;
  /** How many other questions wait behind it. */
  queued: number;
  /** How many of those come from the same pid as `question` (for the `[D]` hint). */
  sameProcessQueued?: number;
  /** Index into `question.scopes` of the scope `[t]`/`[a]`/`[n]` cover. */
  scopeIndex: number;
  /** Duration of the `[t]` answer. */
  forMs: number;
  /** `[?]` pressed: the help line is shown. */
  help?: boolean;
  /** A line shown above the question (what an earlier `[D]` did). */
  notice?: string;
}

/** Index of the suggested scope in `q.scopes` (0 when it is not among them). */
export function initialScopeIndex(q: Question): number {
  const i = q.scopes.indexOf(q.suggestedScope);
  return i < 0 ? 0 : i;
}

/** The scope the bar currently offers. */
export function currentScope(state: BarState): string {
  const { scopes, suggestedScope } = state.question;
  return scopes[state.scopeIndex] ?? suggestedScope;
}

/** What `[?]` shows: the keys the bar line has no room for. */
const HELP_ITEMS = [
  "←/→ wider/narrower scope",
  "[D] deny all queued from this pid",
  "Ctrl-C deny + interrupt",
  "Ctrl-Z deny + suspend",
];

/** `items` joined by two spaces into as few lines of at most `w` cells as they fit in (an item never split). */
function pack(items: string[], w: number): string[] {
  const out: string[] = [];
  let line = "";
  for (const it of items) {
    if (line && displayWidth(line) + 2 + displayWidth(it) > w) {
      out.push(truncateEnd(line, w));
      line = it;
    } else line = line ? `${line}  ${it}` : it;
  }
  if (line) out.push(truncateEnd(line, w));
  return out;
}

/** The scope line's label: the scope is what `[t]`, `[a]` and `[n]` cover (`[o]` and `[d]` are this call only). */
export const SCOPE_LABEL = "[t] [a] [n] apply to: ";

const VERB: Record<Question["op"], string> = { write: "write", exec: "run", connect: "connect to" };

/**
 * The bar's lines, each at most `cols` cells wide: [warning], [reason], then the bar's five lines (docs/terminal.md). Every piece
 * of text from the sandbox passes through {@linkcode visible}. Given the terminal's `rows`, a bar that does not fit
 * loses its least needed lines first (the `by:` line, the scope line, the notice, the reason, the warning, then
 * who asks), so that what is asked about and the keys stay on the screen of a tiny terminal.
 */
export function layout(state: BarState, cols: number, rows = 0): string[] {
  const q = state.question;
  const w = Math.max(cols, 1);
  // [line, how much it is needed when rows are short: the lowest goes first; the keys always stay]
  const lines: [string, number][] = [];
  if (state.notice) lines.push([truncateEnd(state.notice, w), 3]);
  if (q.warning) lines.push([truncateEnd(`warning: ${visible(q.warning)}`, w), 5]);
  if (q.reason !== undefined) {
    lines.push([truncateEnd(`reason (the program's words): "${visible(q.reason)}"`, w), 4]);
  }
  const more = state.queued > 0 ? ` (+${state.queued} more)` : "";
  lines.push([truncateEnd(`hallpass: ${who(q)} wants to ${VERB[q.op]}${more}`, w), 6]);
  // exec: the program and its arguments (argv[0] is replaced by the program's path, which is what runs).
  const whole = q.op === "exec" && q.argv && q.argv.length > 1
    ? [q.target, ...q.argv.slice(1)].map(visible).join(" ")
    : q.paths
    ? `${visible(q.syscall)} ${visible(q.target)}` // both ends of a rename or link: `rename A → B`
    : visible(q.target);
  lines.push([truncateMiddle(whole, w), 7]);
  // The command lines are the programs' own words (argv can say anything): labelled so when the kernel's
  // name for the program (exe) is shown above.
  const by = q.exe !== undefined ? "by (their words)" : "by";
  lines.push([truncateEnd(`${by}: ${q.chain.map(visible).join(" ← ")}`, w), 1]);
  lines.push([
    SCOPE_LABEL + truncateMiddle(visible(currentScope(state)), Math.max(w - displayWidth(SCOPE_LABEL), 1)),
    2,
  ]);
  if (state.help) lines.push(...pack(HELP_ITEMS, w).map((l): [string, number] => [l, 8]));
  // A hallpass-request is not one operation: [o] grants it as asked, for its for= or the rest of the session
  // (docs/request-protocol.md); the key says so rather than "once".
  const once = q.syscall === "request"
    ? `[o] allow ${
      q.requestedForMs !== undefined ? `for ${formatDuration(q.requestedForMs)}` : "for the session"
    }`
    : "[o] allow once";
  const allow = `${once}  [t] for ${formatDuration(state.forMs)}  [a] always`;
  let refuse = `[d] deny  [n] never  [?] ${state.help ? "hide help" : "help"}`;
  if ((state.sameProcessQueued ?? 0) > 0) refuse += `  [D] deny all from pid ${q.pid}`;
  // Below 60 columns the keys take two lines instead of being cut.
  if (w < 60) lines.push([truncateEnd(allow, w), Infinity], [truncateEnd(refuse, w), Infinity]);
  else lines.push([truncateEnd(`${allow}  ${refuse}`, w), Infinity]);
  while (rows > 0 && lines.length > rows) {
    let least = 0;
    for (let i = 1; i < lines.length; i++) if (lines[i][1] < lines[least][1]) least = i;
    if (lines[least][1] === Infinity) break;
    lines.splice(least, 1);
  }
  return lines.map(([l]) => truncateEnd(l, w));
}

/**
 * Who asks: the executable the kernel runs (/proc/PID/exe, what it vouches for) and, when the process calls
 * itself something else (comm, which it sets), that name quoted as its own words: `/usr/bin/perl (pid 7,
 * calls itself "git")`. Without an exe (an older agent's question): the name, as before.
 */
export function who(q: Question): string {
  if (q.exe === undefined) return `${visible(q.name)} (pid ${q.pid})`;
  const base = q.exe.replace(/ \(deleted\)$/, "").slice(q.exe.lastIndexOf("/") + 1);
  const own = q.name !== base && q.name !== base.slice(0, 15) ? `, calls itself "${visible(q.name)}"` : "";
  return `${visible(q.exe)} (pid ${q.pid}${own})`;
}

/** What a key did. `answer` answers the question on screen; `denyAllFromPid` also denies its pid's others. */
export interface KeyResult {
  state: BarState;
  answer?: Answer;
  denyAllFromPid?: boolean;
  /** Bytes for the program after the answer: Ctrl-C, Ctrl-Z and Ctrl-\ still do what they do without hallpass. */
  passThrough?: string;
  redraw: boolean;
}

const WIDEN = new Set(["\x1b[D", "\x1b[A", "\x1bOD", "\x1bOA"]);
const NARROW = new Set(["\x1b[C", "\x1b[B", "\x1bOC", "\x1bOB"]);

/**
 * Handles one key (as split by {@linkcode splitKeys}). Never draws. Ctrl-C, Ctrl-Z and Ctrl-\ count as `[d]` and
 * then go to the program (`passThrough`): the person wants the operation stopped *and* the program interrupted,
 * suspended or quit, as without hallpass (a runaway loop must be stoppable from the bar).
 */
export function handleKey(state: BarState, key: string): KeyResult {
  const scope = currentScope(state);
  const by = "terminal";
  switch (key) {
    case "o":
    case "O":
      return { state, answer: { kind: "once", by }, redraw: false };
    case "t":
    case "T":
      return { state, answer: { kind: "for", durationMs: state.forMs, scope, by }, redraw: false };
    case "a":
    case "A":
      return { state, answer: { kind: "always", scope, by }, redraw: false };
    case "d":
      return { state, answer: { kind: "deny", by }, redraw: false };
    case "\x03":
    case "\x1a":
    case "\x1c":
      return { state, answer: { kind: "deny", by }, passThrough: key, redraw: false };
    case "?":
      return { state: { ...state, help: !state.help }, redraw: true };
    case "n":
    case "N":
      return { state, answer: { kind: "never", scope, by }, redraw: false };
    case "D":
      return { state, answer: { kind: "deny", by }, denyAllFromPid: true, redraw: false };
  }
  const last = Math.max(state.question.scopes.length - 1, 0);
  if (WIDEN.has(key) || NARROW.has(key)) {
    const step = WIDEN.has(key) ? 1 : -1;
    const scopeIndex = Math.min(Math.max(state.scopeIndex + step, 0), last);
    if (scopeIndex === state.scopeIndex) return { state, redraw: false };
    return { state: { ...state, scopeIndex }, redraw: true };
  }
  return { state, redraw: false }; // Enter and everything else: nothing
}

/**
 * The keys in a chunk read from the terminal (see key_reader.ts): CSI and SS3 key sequences whole (`\x1b[1;5D`,
 * `\x1bOA`), every other character alone; terminal replies, mouse and focus reports and pasted text are not keys.
 * An escape sequence cut off at the end is not a key either (a lone Esc is nothing on the bar).
 */
export function splitKeys(chunk: string): string[] {
  const tokens = new KeyReader().feed(new TextEncoder().encode(chunk));
  return tokens.flatMap((t) => t.kind === "key" ? [t.key] : []);
}

/**
 * How the bar looks: reverse video, white on blue, or (`forced`, when the program changed the terminal's colours)
 * black on light grey in explicit RGB, which no palette change affects.
 */
export type BarStyle = "reverse" | "color" | "forced";

const STYLE_SGR: Record<BarStyle, string> = {
  reverse: "\x1b[0;7m",
  color: "\x1b[0;97;44m",
  forced: "\x1b[0;38;2;0;0;0;48;2;230;230;230m",
};

/** Sequences put inside the save/restore pair, e.g. to select ASCII and leave insert mode (see screen.ts). */
export interface RenderGuard {
  pre: string;
  post: string;
}

/**
 * The escape sequence drawing `lines` over the bottom rows of a `rows`×`cols` terminal: `ESC 7` (save cursor and
 * attributes), per row CUP + SGR reset + text padded with spaces to exactly `cols` cells, `ESC 8`. Never touches
 * the scroll region or modes (a `guard` from the screen mirror may switch charsets/insert mode and back).
 * Rows are padded instead of erased with EL: after a write to the last column the cursor sits there with a
 * pending wrap, and EL would erase that last cell. When the terminal has fewer rows than lines, the bottom
 * lines win (the keys).
 */
export function render(
  lines: string[],
  rows: number,
  cols: number,
  style: BarStyle,
  guard?: RenderGuard,
): string {
  if (rows <= 0 || cols <= 0) return "";
  const shown = lines.slice(Math.max(lines.length - rows, 0));
  const top = rows - shown.length; // 0-based first row
  let out = "\x1b7" + (guard?.pre ?? "");
  shown.forEach((line, i) => {
    const text = truncateEnd(line, cols);
    out += `\x1b[${top + i + 1};1H\x1b[0m${STYLE_SGR[style]}${text}${
      " ".repeat(cols - displayWidth(text))
    }\x1b[0m`;
  });
  return out + (guard?.post ?? "") + "\x1b8";
}
