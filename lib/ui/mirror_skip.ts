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

/** True for bytes plain text may hold: printable, UTF-8 (not C1), TAB, BS, BEL, CR, DEL. */
function plain(b: number): boolean {
  return b >= 0x20 || b === 0x09 || b === 0x08 || b === 0x07 || b === CR;
}

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

/** The skip for `buf` (see the module comment), or null when there is none worth taking. */
export function findSkip(buf: Uint8Array, rows: number, scrollback: number): Skip | null {
  let head = 0;
  const sgr: [number, number][] = [];
  const lfs: number[] = [];
  for (let i = 0; i < buf.length;) {
    const b = buf[i];
    if (b === LF) {
      lfs.push(i);
      i++;
    } else if (b === 0xc2 && i + 1 < buf.length && buf[i + 1] >= 0x80 && buf[i + 1] <= 0x9f) {
      return null; // a C1 control (UTF-8 encoded): may open a string; not worth following
    } else if (plain(b)) {
      i++;
    } else if (b === ESC) {
      const end = escEnd(buf, i);
      if (end < 0) return null;
      if (isSgr(buf, i, end)) sgr.push([i, end]);
      else {
        head = end;
        sgr.length = 0;
        lfs.length = 0;
      }
      i = end;
    } else { // another C0 control (SO, SI, VT, FF, …): changes state
      head = i + 1;
      sgr.length = 0;
      lfs.length = 0;
      i++;
    }
  }
  // The cut is right after the k-th line feed (1-based) of the plain run: k ≥ rows (the cursor is on the bottom
  // row by then), with ≥ rows + scrollback line feeds after it, and the line feed preceded by CR (column 1).
  let k = lfs.length - (rows + scrollback);
  while (k >= rows && !(lfs[k - 1] > 0 && buf[lfs[k - 1] - 1] === CR)) k--;
  if (k < rows) return null;
  const tail = lfs[k - 1] + 1;
  const kept = sgr.filter(([, e]) => e <= tail);
  const cup = new TextEncoder().encode(`\x1b[${rows};1H`);
  const replacement = new Uint8Array(kept.reduce((n, [s, e]) => n + e - s, 0) + cup.length);
  let o = 0;
  for (const [s, e] of kept) {
    replacement.set(buf.subarray(s, e), o);
    o += e - s;
  }
  replacement.set(cup, o);
  return { head, replacement, tail };
}
