/**
 * What the screen mirror may skip parsing. Output that is plain text (printable characters, CR, LF, TAB, BS,
 * BEL and SGR colour changes) only writes cells and scrolls. Once the cursor has reached the bottom row of a
 * full-screen scroll region, `rows + scrollback` more line feeds push every cell that text wrote off the model
 * (screen and scrollback). So in a long plain run, everything between the point where the state is last
 * changed by something else and the last `rows + scrollback` lines can be replaced by its SGR changes and "cursor
 * to the bottom row, column 1", with the same resulting model. This keeps the cost of the mirror flat in the
 * amount of output (`seq 1 5000000`, `cat big.log`), which otherwise dominates hallpass's time in the terminal
 * path. The caller checks the model's scroll region and origin mode at `head` before using a skip.
 *
 * @example
 * ```ts
 * const s = findSkip(bytes, 24, 1000);
 * // s === null: parse all of `bytes`; else parse bytes[0, s.head), then s.replacement, then bytes[s.tail, end)
 * ```
 */

export interface Skip {
  /** Parse up to here as is: the model's state after it must have a full-screen scroll region, no origin mode. */
  head: number;
  /** Stands for bytes [head, tail): their SGR sequences, then the cursor to the bottom row, column 1. */
  replacement: Uint8Array;
  /** Parse from here on as is. */
  tail: number;
}

const ESC = 0x1b, LF = 0x0a, CR = 0x0d;

/** End of the escape sequence at `i` (ESC at `i`), or -1 when it does not end in `buf`. */
function escEnd(buf: Uint8Array, i: number): number {
  const n = buf.length;
  if (i + 1 >= n) return -1;
  const c = buf[i + 1];
  if (c === 0x5b) { // CSI: parameters, intermediates, final
    let j = i + 2;
    while (j < n && buf[j] >= 0x20 && buf[j] <= 0x3f) j++;
    while (j < n && buf[j] >= 0x20 && buf[j] <= 0x2f) j++;
    return j < n ? j + 1 : -1;
  }
  if (c === 0x50 || c === 0x5d || c === 0x58 || c === 0x5e || c === 0x5f) { // DCS OSC SOS PM APC
    for (let j = i + 2; j < n; j++) {
      if (buf[j] === 0x07 || buf[j] === 0x18 || buf[j] === 0x1a) return j + 1;
      if (buf[j] === ESC && j + 1 < n && buf[j + 1] === 0x5c) return j + 2;
    }
    return -1;
  }
  let j = i + 1;
  while (j < n && buf[j] >= 0x20 && buf[j] <= 0x2f) j++; // intermediates
  return j < n ? j + 1 : -1;
}

/** True when buf[i, end) is `ESC [ (digits ; :)* m`. */
function isSgr(buf: Uint8Array, i: number, end: number): boolean {
  if (buf[end - 1] !== 0x6d) return false;
  for (let j = i + 2; j < end - 1; j++) {
    const b = buf[j];
    if (!((b >= 0x30 && b <= 0x39) || b === 0x3b || b === 0x3a)) return false;
  }
  return true;
}

/**
 * Where the state is last changed by something other than plain text and SGR: the index after it (0: nowhere);
 * -1 when that is an escape sequence unfinished in `buf`, or a C1 control (not worth following). Scans back
 * from the end and stops at the first such byte (BEL counts: it ends OSC strings).
 */
function lastStateChange(buf: Uint8Array, clean: number): number {
  for (let i = clean - 1; i >= 0; i--) {
    const c = buf[i];
    if (c >= 0x20) {
      if (c <= 0x9f && c >= 0x80 && i > 0 && buf[i - 1] === 0xc2) return -1;
      continue;
    }
    if (c === LF || c === CR || c === 0x09 || c === 0x08) continue;
    if (c !== ESC) return i + 1;
    const end = escEnd(buf, i);
    if (end < 0) return -1;
    if (!isSgr(buf, i, end)) return end;
  }
  return 0;
}

/**
 * The skip for `buf` (see the module comment), or null when there is none worth taking. `clean`: buf[clean, end)
 * is known to hold no control other than LF, CR, TAB and BS and no C1 (the pty relay says so: relay.c), so the
 * scan for the last state change starts before it.
 */
export function findSkip(buf: Uint8Array, rows: number, scrollback: number, clean = buf.length): Skip | null {
  const head = lastStateChange(buf, Math.min(Math.max(clean, 0), buf.length));
  if (head < 0) return null;
  // The cut: after the line feed that has rows + scrollback line feeds after it, preceded by CR (column 1),
  // with at least `rows` line feeds between head and it (the cursor is on the bottom row by then).
  let lf = buf.length;
  for (let n = 0; n <= rows + scrollback; n++) {
    lf = lf > 0 ? buf.lastIndexOf(LF, lf - 1) : -1;
    if (lf < head) return null;
  }
  while (lf > head && buf[lf - 1] !== CR) lf = buf.lastIndexOf(LF, lf - 1);
  if (lf <= head) return null;
  const tail = lf + 1;
  let before = lf;
  for (let n = 1; n < rows; n++) {
    before = before > 0 ? buf.lastIndexOf(LF, before - 1) : -1;
    if (before < head) return null;
  }
  const sgr = sgrOf(buf, head, Math.min(tail, Math.max(clean, head))); // no ESC in buf[clean, end)
  const cup = new TextEncoder().encode(`\x1b[${rows};1H`);
  const replacement = new Uint8Array(sgr.length + cup.length);
  replacement.set(sgr, 0);
  replacement.set(cup, sgr.length);
  return { head, replacement, tail };
}

/**
 * The SGR sequences (`ESC [ … m`) among the escape sequences starting in buf[from, to), from the last one that
 * resets everything (`ESC [ m`, `ESC [ 0 ; … m`): what sets the attributes as they are after them.
 */
export function sgrOf(buf: Uint8Array, from = 0, to = buf.length): Uint8Array {
  const sgr: [number, number][] = [];
  const region = buf.subarray(0, to);
  for (let i = region.indexOf(ESC, from); i >= 0; i = region.indexOf(ESC, i + 1)) {
    const end = escEnd(buf, i);
    if (end < 0 || !isSgr(buf, i, end)) continue;
    const p = buf[i + 2];
    if (p === 0x6d || (p === 0x30 && (buf[i + 3] === 0x6d || buf[i + 3] === 0x3b))) sgr.length = 0;
    sgr.push([i, end]);
  }
  const out = new Uint8Array(sgr.reduce((n, [s, e]) => n + e - s, 0));
  let o = 0;
  for (const [s, e] of sgr) {
    out.set(buf.subarray(s, e), o);
    o += e - s;
  }
  return out;
}
