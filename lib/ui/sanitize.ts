/**
 * Making hostile text safe to draw, and measuring it in terminal cells.
 *
 * Everything that comes from the sandbox (paths, command lines, reasons) goes through {@linkcode visible} before
 * it reaches the terminal: no byte of it can be interpreted as a control function.
 *
 * @example
 * ```ts
 * import { displayWidth, truncateMiddle, visible } from "./sanitize.ts";
 * visible("a\x1b]0;x\x07"); // "a^[]0;x^G"
 * displayWidth("日本"); // 4
 * truncateMiddle("/very/long/path/file.txt", 16); // "/very/…/file.txt"
 * ```
 */

/** Code points shown as `<U+XXXX>`: bidi controls and other invisible reordering/separator characters. */
const SHOWN_AS_CODE = new Set([
  0x061c, // ARABIC LETTER MARK
  0x200e, // LRM
  0x200f, // RLM
  0x2028, // LINE SEPARATOR
  0x2029, // PARAGRAPH SEPARATOR
  0x202a,
  0x202b,
  0x202c,
  0x202d,
  0x202e, // LRE RLE PDF LRO RLO
  0x2066,
  0x2067,
  0x2068,
  0x2069, // LRI RLI FSI PDI
]);

/** Any character {@linkcode visible} changes (most texts have none, and are returned as they are). */
// deno-lint-ignore no-control-regex
const NEEDS_CHANGE = /[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]/;

function hex(cp: number): string {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * Makes control characters and escape sequences visible, never interpretable: C0 as `^X` (ESC is `^[`), DEL as
 * `^?`, newline and tab as `\n` and `\t`, C1 (U+0080–U+009F) and bidi controls as `<U+202E>`, lone surrogates as
 * U+FFFD. Printable text, including wide characters and combining marks, is kept.
 */
export function visible(text: string): string {
  if (!NEEDS_CHANGE.test(text)) return text;
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x0a) out += "\\n";
    else if (cp === 0x09) out += "\\t";
    else if (cp < 0x20) out += "^" + String.fromCharCode(cp + 0x40);
    else if (cp === 0x7f) out += "^?";
    else if (cp >= 0x80 && cp <= 0x9f) out += hex(cp);
    else if (SHOWN_AS_CODE.has(cp)) out += hex(cp);
    else if (cp >= 0xd800 && cp <= 0xdfff) out += "\uFFFD"; // a lone surrogate (pairs arrive whole)
    else out += ch;
  }
  return out;
}

/** East Asian Wide and Fullwidth ranges (Unicode 15), inclusive pairs, sorted. */
const WIDE: readonly number[] = [
  0x1100,
  0x115f,
  0x231a,
  0x231b,
  0x2329,
  0x232a,
  0x23e9,
  0x23ec,
  0x23f0,
  0x23f0,
  0x23f3,
  0x23f3,
  0x25fd,
  0x25fe,
  0x2614,
  0x2615,
  0x2648,
  0x2653,
  0x267f,
  0x267f,
  0x2693,
  0x2693,
  0x26a1,
  0x26a1,
  0x26aa,
  0x26ab,
  0x26bd,
  0x26be,
  0x26c4,
  0x26c5,
  0x26ce,
  0x26ce,
  0x26d4,
  0x26d4,
  0x26ea,
  0x26ea,
  0x26f2,
  0x26f3,
  0x26f5,
  0x26f5,
  0x26fa,
  0x26fa,
  0x26fd,
  0x26fd,
  0x2705,
  0x2705,
  0x270a,
  0x270b,
  0x2728,
  0x2728,
  0x274c,
  0x274c,
  0x274e,
  0x274e,
  0x2753,
  0x2755,
  0x2757,
  0x2757,
  0x2795,
  0x2797,
  0x27b0,
  0x27b0,
  0x27bf,
  0x27bf,
  0x2b1b,
  0x2b1c,
  0x2b50,
  0x2b50,
  0x2b55,
  0x2b55,
  0x2e80,
  0x303e,
  0x3041,
  0x33ff,
  0x3400,
  0x4dbf,
  0x4e00,
  0x9fff,
  0xa000,
  0xa4cf,
  0xa960,
  0xa97f,
  0xac00,
  0xd7a3,
  0xf900,
  0xfaff,
  0xfe10,
  0xfe19,
  0xfe30,
  0xfe6f,
  0xff00,
  0xff60,
  0xffe0,
  0xffe6,
  0x16fe0,
  0x16fe4,
  0x17000,
  0x18cff,
  0x1b000,
  0x1b2ff,
  0x1f004,
  0x1f004,
  0x1f0cf,
  0x1f0cf,
  0x1f18e,
  0x1f18e,
  0x1f191,
  0x1f19a,
  0x1f200,
  0x1f202,
  0x1f210,
  0x1f23b,
  0x1f240,
  0x1f248,
  0x1f250,
  0x1f251,
  0x1f260,
  0x1f265,
  0x1f300,
  0x1f64f,
  0x1f680,
  0x1f6ff,
  0x1f7e0,
  0x1f7eb,
  0x1f90c,
  0x1f9ff,
  0x1fa70,
  0x1faff,
  0x20000,
  0x2fffd,
  0x30000,
  0x3fffd,
];

function inTable(cp: number, table: readonly number[]): boolean {
  let lo = 0;
  let hi = table.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < table[2 * mid]) hi = mid - 1;
    else if (cp > table[2 * mid + 1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** Made on first use: a regular expression of Unicode properties costs ~0.3 ms to create, at every start-up. */
let zeroWidth: RegExp | null = null;

/** Width of one code point in terminal cells: 0 (controls, combining marks, format characters), 1 or 2. */
export function codePointWidth(cp: number): number {
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) return 0;
  if (cp < 0x300) return 1;
  if (cp >= 0x1160 && cp <= 0x11ff) return 0; // Hangul jamo medial vowels and final consonants
  if ((zeroWidth ??= /^[\p{Mn}\p{Me}\p{Cf}]$/u).test(String.fromCodePoint(cp))) return 0;
  return inTable(cp, WIDE) ? 2 : 1;
}

/** Width of a string in terminal cells (East Asian wide/fullwidth = 2, combining marks = 0). */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += codePointWidth(ch.codePointAt(0)!);
  return w;
}

// Made on first use: creating a Segmenter loads ICU data (~25 ms), too much for every start.
let segmenter: Intl.Segmenter | null = null;

function graphemes(s: string): { text: string; width: number }[] {
  segmenter ??= new Intl.Segmenter(undefined, { granularity: "grapheme" });
  return Array.from(segmenter.segment(s), (g) => ({ text: g.segment, width: displayWidth(g.segment) }));
}

/** Cuts `s` at the end to at most `width` cells, ending with `…` when something was cut. */
export function truncateEnd(s: string, width: number): string {
  if (displayWidth(s) <= width) return s;
  if (width <= 0) return "";
  let out = "";
  let used = 0;
  for (const g of graphemes(s)) {
    if (used + g.width > width - 1) break;
    out += g.text;
    used += g.width;
  }
  return out + "…";
}

/**
 * Shortens `s` to at most `width` cells by replacing its middle with `…`, keeping the start and, as far as it
 * fits, the whole last path component (the file name). Never splits a character or a wide character.
 */
export function truncateMiddle(s: string, width: number): string {
  if (displayWidth(s) <= width) return s;
  if (width <= 0) return "";
  if (width === 1) return "…";
  const budget = width - 1;
  const gs = graphemes(s);
  const slash = s.lastIndexOf("/");
  const nameWidth = slash >= 0 ? displayWidth(s.slice(slash)) : 0;
  // The end gets the file name (with its slash) if that leaves a few cells for the start; at least half.
  const headMin = Math.min(Math.floor(budget / 3), 12);
  const tailBudget = Math.max(Math.ceil(budget / 2), Math.min(nameWidth, budget - headMin));
  let tail = "";
  let tailUsed = 0;
  let j = gs.length - 1;
  for (; j >= 0; j--) {
    if (tailUsed + gs[j].width > tailBudget) break;
    tail = gs[j].text + tail;
    tailUsed += gs[j].width;
  }
  let head = "";
  let headUsed = 0;
  for (let i = 0; i < j; i++) {
    if (headUsed + gs[i].width > budget - tailUsed) break;
    head += gs[i].text;
    headUsed += gs[i].width;
  }
  return head + "…" + tail;
}
