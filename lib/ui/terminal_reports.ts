/**
 * The terminal's answers to hallpass's own questions, taken out of the input before the program or the bar sees
 * them: the cursor position report (DSR 6 → `CSI row ; col R`) and the text area size report (`CSI 18 t` →
 * `CSI 8 ; rows ; cols t`; tmux 3.3 writes the two numbers the other way round, so a size is compared as a pair).
 * A terminal answers in the order it was asked: a size report asked just before the cursor comes before it.
 */

/** Where the cursor is (0-based), and the size the terminal reported just before, when it did. */
export interface CursorReport {
  row: number;
  col: number;
  size?: readonly [number, number];
}

export interface TakenReports {
  /** The chunk without what was taken. */
  rest: Uint8Array;
  /** The first cursor report of the chunk, or null. */
  cursor: CursorReport | null;
  /** A size report taken and not yet followed by a cursor report (to hold until the next chunk), or null. */
  size: readonly [number, number] | null;
}

// deno-lint-ignore no-control-regex
const REPORT = /\x1b\[8;(\d+);(\d+)t|\x1b\[(\d+);(\d+)R/g;

/**
 * Takes size reports and the first cursor report out of `chunk` (bytes after that cursor report are left as they
 * are: they answer someone else). `held`: a size report taken from an earlier chunk.
 */
export function takeReports(chunk: Uint8Array, held: readonly [number, number] | null = null): TakenReports {
  let text = "";
  for (const b of chunk) text += String.fromCharCode(b);
  let size = held;
  let cursor: CursorReport | null = null;
  const cut: [number, number][] = [];
  REPORT.lastIndex = 0;
  for (let m = REPORT.exec(text); m; m = REPORT.exec(text)) {
    cut.push([m.index, m.index + m[0].length]);
    if (m[1] !== undefined) {
      size = [Number(m[1]), Number(m[2])];
      continue;
    }
    cursor = { row: Number(m[3]) - 1, col: Number(m[4]) - 1, ...(size ? { size } : {}) };
    size = null;
    break;
  }
  if (cut.length === 0) return { rest: chunk, cursor, size };
  const rest = new Uint8Array(chunk.length - cut.reduce((n, [a, b]) => n + b - a, 0));
  let o = 0;
  let from = 0;
  for (const [a, b] of cut) {
    rest.set(chunk.subarray(from, a), o);
    o += a - from;
    from = b;
  }
  rest.set(chunk.subarray(from), o);
  return { rest, cursor, size };
}

/** True when a size report names `rows` × `cols`, in either order. */
export function sameSize(report: readonly [number, number], rows: number, cols: number): boolean {
  return (report[0] === rows && report[1] === cols) || (report[0] === cols && report[1] === rows);
}
