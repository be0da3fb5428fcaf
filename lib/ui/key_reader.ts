/**
 * Reads what the real terminal sends while the prompt bar is up, and tells keys a person typed from everything
 * else the terminal sends: its replies to queries the program made (DCS, OSC, APC, PM and SOS strings such as
 * XTVERSION's `ESC P >|tmux 3.3a ESC \`, status reports), mouse and focus reports, and pasted text. Only keys may
 * answer a question: a program that makes the terminal reply (or prints an OSC 52 query, or turns mouse
 * reporting on) must not be able to type `[a]` for itself.
 *
 * Byte-oriented and stateful: a sequence split across reads is held until its end arrives. What is not a key is
 * dropped whole:
 *
 * * control strings (7-bit `ESC P`/`ESC ]`/`ESC X`/`ESC ^`/`ESC _`, and their C1 forms, raw or UTF-8 encoded) up to
 *   ST (`ESC \` or C1 ST), BEL, CAN or SUB; they are handed back as `reply` (the program asked for them);
 * * CSI replies with a private marker (`ESC [ ? … c`, `ESC [ > … c`, …) and cursor position reports: `reply`;
 * * mouse reports in every form: X10 and UTF-8 (`ESC [ M Cb Cx Cy`, each of the three a byte or a UTF-8
 *   character), SGR (`ESC [ < b ; x ; y M/m`), urxvt (`ESC [ b ; x ; y M`); focus reports (`ESC [ I`, `ESC [ O`);
 * * bracketed paste (`ESC [ 200 ~` … `ESC [ 201 ~`) with everything in it;
 * * ESC followed by any other byte (Alt-key), and bytes that are not UTF-8.
 *
 * An unfinished string or paste is given up after `staleMs` without a byte (so a lost terminator cannot keep
 * the person's keys away from the bar for ever); an unfinished escape sequence is given up when the next read
 * comes after `staleMs` (it was a lone Esc).
 *
 * @example
 * ```ts
 * const r = new KeyReader();
 * r.feed(new TextEncoder().encode("\x1bP>|tmux 3.3a\x1b\\")); // [{ kind: "reply", bytes }]
 * r.feed(new TextEncoder().encode("\x1b[Ma!!"));              // [{ kind: "drop" }]: a wheel-down, not [a]
 * r.feed(new TextEncoder().encode("o"));                      // [{ kind: "key", key: "o" }]
 * ```
 */

export type Token =
  | { kind: "key"; key: string }
  | { kind: "reply"; bytes: Uint8Array }
  | { kind: "drop" };

const ESC = 0x1b;
const STRING_INTRODUCERS = new Set([0x50, 0x5d, 0x58, 0x5e, 0x5f]); // P ] X ^ _
const C1_STRINGS = new Set([0x90, 0x9d, 0x98, 0x9e, 0x9f]); // DCS OSC SOS PM APC
const MAX_REPLY = 64 * 1024;

type Mode = "ground" | "string" | "paste";

export class KeyReader {
  readonly #staleMs: number;
  /** Bytes of an unfinished sequence (ground mode) or of the string being read. */
  #held: number[] = [];
  #mode: Mode = "ground";
  #lastAt = 0;
  #tooLong = false;
  /** The string being read was opened by a raw 8-bit C1 byte. */
  #raw8 = false;

  constructor(opts: { staleMs?: number } = {}) {
    this.#staleMs = opts.staleMs ?? 2000;
  }

  /** Splits one read into tokens. `now` in ms (performance.now()). */
  feed(chunk: Uint8Array, now = performance.now()): Token[] {
    const out: Token[] = [];
    if (now - this.#lastAt > this.#staleMs && (this.#held.length > 0 || this.#mode !== "ground")) {
      out.push({ kind: "drop" });
      this.#reset();
    }
    this.#lastAt = now;
    if (this.#mode === "string" && this.#held.at(-1) === ESC && chunk.length > 0 && chunk[0] !== 0x5c) {
      // A string ended by ESC + something other than `\`, split after the ESC: that ESC starts a sequence.
      this.#reset();
      this.#held = [ESC];
      out.push({ kind: "drop" });
    }
    const bytes = this.#held.length > 0 && this.#mode === "ground"
      ? Uint8Array.from([...this.#held, ...chunk])
      : chunk;
    if (this.#mode === "ground") this.#held = [];
    let i = 0;
    while (i < bytes.length) {
      if (this.#mode === "string") {
        i = this.#inString(bytes, i, out);
        continue;
      }
      if (this.#mode === "paste") {
        i = this.#inPaste(bytes, i, out);
        continue;
      }
      const n = this.#ground(bytes, i, out);
      if (n < 0) { // unfinished: hold the rest
        this.#held = [...bytes.subarray(i)];
        break;
      }
      i = n;
    }
    return out;
  }

  /** Bytes held in an unfinished sequence (for the program, when the bar goes away); resets the reader. */
  take(): Uint8Array {
    const b = this.#mode === "ground" ? Uint8Array.from(this.#held) : new Uint8Array(0);
    this.#reset();
    return b;
  }

  #reset(): void {
    this.#held = [];
    this.#mode = "ground";
    this.#tooLong = false;
  }

  /** One token from `b[i]` in ground mode: the index after it, or -1 when it is unfinished. */
  #ground(b: Uint8Array, i: number, out: Token[]): number {
    const c = b[i];
    if (c === ESC) return this.#escape(b, i, out);
    if (c < 0x80) {
      out.push({ kind: "key", key: String.fromCharCode(c) });
      return i + 1;
    }
    // UTF-8, or a raw C1 control, or garbage.
    const u = utf8At(b, i);
    if (u === null) return -1;
    const { cp, len } = u;
    if (cp < 0) { // not UTF-8: a raw C1 control byte (0x80-0x9f) or garbage
      return this.#c1(c, b, i, i + 1, out);
    }
    if (cp >= 0x80 && cp <= 0x9f) return this.#c1(cp, b, i, i + len, out);
    out.push({ kind: "key", key: String.fromCodePoint(cp) });
    return i + len;
  }

  /** A C1 control `c`, bytes [start, next) of `b` (raw, or UTF-8 encoded). */
  #c1(c: number, b: Uint8Array, start: number, next: number, out: Token[]): number {
    if (C1_STRINGS.has(c)) {
      this.#startString([...b.subarray(start, next)], next - start === 1);
      return next;
    }
    if (c === 0x9b) return this.#csi(b, next, b.subarray(start, next), out);
    if (c === 0x8f) { // SS3: one more byte
      if (next >= b.length) return -1;
      out.push({ kind: "key", key: "\x1bO" + String.fromCharCode(b[next]) });
      return next + 1;
    }
    out.push({ kind: "drop" });
    return next;
  }

  #escape(b: Uint8Array, i: number, out: Token[]): number {
    if (i + 1 >= b.length) return -1;
    const c = b[i + 1];
    if (c === 0x5b) return this.#csi(b, i + 2, b.subarray(i, i + 2), out);
    if (STRING_INTRODUCERS.has(c)) {
      this.#startString([ESC, c], false);
      return i + 2;
    }
    if (c === 0x4f) { // SS3
      if (i + 2 >= b.length) return -1;
      out.push({ kind: "key", key: "\x1bO" + String.fromCharCode(b[i + 2]) });
      return i + 3;
    }
    if (c === ESC) { // ESC ESC: the first one alone
      out.push({ kind: "drop" });
      return i + 1;
    }
    out.push({ kind: "drop" }); // Alt-key, or an escape sequence no key sends
    return i + 2;
  }

  /** A CSI sequence whose parameters start at `p` (`intro` is its introducer, `start` its first byte). */
  #csi(b: Uint8Array, p: number, intro: Uint8Array, out: Token[]): number {
    let j = p;
    while (j < b.length && b[j] >= 0x30 && b[j] <= 0x3f) j++;
    while (j < b.length && b[j] >= 0x20 && b[j] <= 0x2f) j++;
    if (j >= b.length) return -1;
    const final = b[j];
    if (final < 0x40 || final > 0x7e) { // broken: drop what was read, go on from the odd byte
      out.push({ kind: "drop" });
      return j;
    }
    const params = String.fromCharCode(...b.subarray(p, j));
    const end = j + 1;
    if (final === 0x4d && params === "") { // X10 / UTF-8 mouse: three more characters
      let k = end;
      for (let n = 0; n < 3; n++) {
        if (k >= b.length) return -1;
        const u = b[k] < 0x80 ? { cp: b[k], len: 1 } : utf8At(b, k);
        if (u === null) return -1;
        k += u.cp < 0 ? 1 : u.len;
      }
      out.push({ kind: "drop" });
      return k;
    }
    if (params === "200" && final === 0x7e) {
      this.#mode = "paste";
      this.#held = [];
      out.push({ kind: "drop" });
      return end;
    }
    const mouse = params.startsWith("<") || ((final === 0x4d || final === 0x6d) && params !== "");
    const focus = params === "" && (final === 0x49 || final === 0x4f);
    if (mouse || focus) {
      out.push({ kind: "drop" });
      return end;
    }
    // Replies to the program's queries: private-marker reports (DA, DECRPM, XTVERSION…) and cursor reports.
    if (/^[?>=]/.test(params) || (final === 0x52 && /^\d+;\d+$/.test(params))) {
      const bytes = new Uint8Array(intro.length + (end - p));
      bytes.set(intro);
      bytes.set(b.subarray(p, end), intro.length);
      out.push({ kind: "reply", bytes });
      return end;
    }
    // A key in the kitty keyboard protocol (`CSI cp ; mods u`) or xterm's modifyOtherKeys (`CSI 27 ; mods ; cp ~`),
    // which a program may have turned on: read as the key it stands for, so the bar still works (and Ctrl-C).
    const ext = extendedKey(params, final);
    if (ext !== undefined) {
      out.push(ext === null ? { kind: "drop" } : { kind: "key", key: ext });
      return end;
    }
    out.push({ kind: "key", key: "\x1b[" + String.fromCharCode(...b.subarray(p, end)) });
    return end;
  }

  #startString(prefix: number[], raw8: boolean): void {
    this.#mode = "string";
    this.#held = prefix;
    this.#tooLong = false;
    this.#raw8 = raw8;
  }

  /**
   * Inside a control string: up to ST (`ESC \`; `C2 9C`, U+009C in UTF-8; a raw 0x9C byte only in a string a raw
   * C1 byte opened, since elsewhere it is part of a UTF-8 character) or BEL: a reply. CAN, SUB, or ESC followed by
   * anything else end it too (as a terminal's parser does): dropped.
   */
  #inString(b: Uint8Array, i: number, out: Token[]): number {
    for (let j = i; j < b.length; j++) {
      const c = b[j];
      const escBefore = j > i ? b[j - 1] === ESC : this.#held.at(-1) === ESC;
      let end = -1;
      if (escBefore) {
        if (c === 0x5c) end = j + 1;
        else {
          this.#reset();
          out.push({ kind: "drop" });
          return j - 1; // that ESC starts a sequence, read in ground mode (j > i: see feed)
        }
      } else if (c === 0x07) end = j + 1;
      else if (c === 0x18 || c === 0x1a) {
        this.#reset();
        out.push({ kind: "drop" });
        return j + 1;
      } else if (c === 0x9c && (this.#raw8 || (j > i ? b[j - 1] === 0xc2 : this.#held.at(-1) === 0xc2))) {
        end = j + 1;
      }
      if (end >= 0) {
        this.#push(b.subarray(i, end));
        const bytes = Uint8Array.from(this.#held);
        const ok = !this.#tooLong;
        this.#reset();
        out.push(ok ? { kind: "reply", bytes } : { kind: "drop" });
        return end;
      }
    }
    this.#push(b.subarray(i));
    return b.length;
  }

  #push(bytes: Uint8Array): void {
    if (this.#held.length + bytes.length > MAX_REPLY) {
      this.#tooLong = true;
      this.#held = this.#held.slice(-1);
    }
    for (const x of bytes) this.#held.push(x);
  }

  /** Inside a paste: everything up to and including `ESC [ 201 ~` is dropped. */
  #inPaste(b: Uint8Array, i: number, _out: Token[]): number {
    const END = [ESC, 0x5b, 0x32, 0x30, 0x31, 0x7e];
    // #held keeps the tail that may be the start of the end marker.
    for (let j = i; j < b.length; j++) {
      this.#held.push(b[j]);
      if (this.#held.length > END.length) this.#held.shift();
      if (this.#held.length === END.length && this.#held.every((x, k) => x === END[k])) {
        this.#reset();
        return j + 1;
      }
    }
    return b.length;
  }
}

/**
 * The key a kitty-protocol (`cp[:alt…] ; mods[:event] u`) or modifyOtherKeys (`27 ; mods ; cp ~`) sequence
 * stands for: the character, the control character for Ctrl+letter, null for what is no key of the bar (Alt or
 * Super held, a key release), undefined when it is neither form.
 */
function extendedKey(params: string, final: number): string | null | undefined {
  let m: RegExpExecArray | null;
  let cp: number, mods: number, event = 1;
  if (final === 0x75 && (m = /^(\d+)(?::\d*)*(?:;(\d+)(?::(\d+))?)?(?:;[\d:]*)?$/.exec(params))) {
    cp = Number(m[1]);
    mods = Number(m[2] ?? 1);
    event = Number(m[3] ?? 1);
  } else if (final === 0x7e && (m = /^27;(\d+);(\d+)$/.exec(params))) {
    mods = Number(m[1]);
    cp = Number(m[2]);
  } else return undefined;
  if (event === 3) return null; // a release
  const bits = mods - 1; // 1 shift, 2 alt, 4 ctrl, 8 super, …
  if (bits & ~5) return null;
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return null;
  let ch = String.fromCodePoint(cp);
  if (bits & 4) {
    const lower = ch.toLowerCase();
    if (lower.length !== 1 || lower < "@" || lower > "\x7f") return null;
    return String.fromCharCode(lower.toUpperCase().charCodeAt(0) & 0x1f);
  }
  if (bits & 1) ch = ch.toUpperCase();
  return ch;
}

/**
 * The UTF-8 character at `b[i]` (a byte ≥ 0x80): its code point and length; cp -1 (length 1) when the byte does
 * not start a valid sequence; null when the sequence is cut off at the end of `b`.
 */
function utf8At(b: Uint8Array, i: number): { cp: number; len: number } | null {
  const c = b[i];
  let len = 0, cp = 0, min = 0;
  if (c >= 0xc2 && c <= 0xdf) [len, cp, min] = [2, c & 0x1f, 0x80];
  else if (c >= 0xe0 && c <= 0xef) [len, cp, min] = [3, c & 0x0f, 0x800];
  else if (c >= 0xf0 && c <= 0xf4) [len, cp, min] = [4, c & 0x07, 0x10000];
  else return { cp: -1, len: 1 };
  for (let k = 1; k < len; k++) {
    if (i + k >= b.length) return null;
    const x = b[i + k];
    if ((x & 0xc0) !== 0x80) return { cp: -1, len: 1 };
    cp = (cp << 6) | (x & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return { cp: -1, len: 1 };
  return { cp, len };
}
