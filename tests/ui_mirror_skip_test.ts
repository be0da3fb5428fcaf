import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { findSkip } from "../lib/ui/mirror_skip.ts";
import { ScreenMirror } from "../lib/ui/screen.ts";

const enc = (s: string) => new TextEncoder().encode(s);

/** Everything a repaint depends on: every line of the buffer with its cells' attributes, the cursor. */
function dump(m: ScreenMirror): string {
  const b = m.term.buffer.active;
  const out: string[] = [`${b.type} ${b.cursorX},${b.cursorY} base ${b.baseY}`];
  for (let y = 0; y < b.length; y++) {
    const line = b.getLine(y)!;
    let s = "";
    for (let x = 0; x < m.cols; x++) {
      const c = line.getCell(x)!;
      s += `${c.getChars() || " "}${c.getFgColor()}.${c.getBgColor()}.${c.isBold()}`;
    }
    out.push(s);
  }
  return out.join("\n");
}

/** The lazy mirror (fed in reads of `chunk` bytes) ends exactly where parsing every byte ends. */
async function same(text: string, chunk = 4096, rows = 10, cols = 30, scrollback = 50): Promise<void> {
  const bytes = enc(text);
  const lazy = new ScreenMirror(cols, rows, { scrollback });
  for (let o = 0; o < bytes.length; o += chunk) lazy.feed(bytes.subarray(o, o + chunk));
  await lazy.write(new Uint8Array(0));
  await lazy.settled();
  const full = new ScreenMirror(cols, rows, { scrollback });
  await new Promise<void>((r) => full.term.write(bytes, r));
  assertEquals(dump(lazy), dump(full));
}

let seed = 7;
const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;

Deno.test("mirror skip: a long plain run is skipped; the model ends the same", async () => {
  let s = "";
  for (let i = 0; i < 200_000; i++) s += `line ${i}\r\n`;
  const skip = findSkip(enc(s), 10, 50);
  assert(skip && skip.tail > enc(s).length / 2, "most of it is skipped");
  await same(s, 1 << 20);
});

Deno.test("mirror skip: colours, resets, wide characters, tabs and a state change in the middle", async () => {
  let s = "\x1b[1;31mbold red\x1b[0m\r\n";
  for (let i = 0; i < 50_000; i++) {
    s += `\x1b[3${i % 8}m${i}\tcol 日本 ${"x".repeat(i % 40)}\x1b[0m\r\n`;
    if (i === 30_000) s += "\x1b[3;8r\x1b[5;1H"; // a scroll region: no skip across it
    if (i === 40_000) s += "\x1b[r\x1b[44m";
  }
  s += "tail without newline";
  await same(s, 65536);
});

Deno.test("mirror skip: random mixes of text, SGR, cursor moves, regions, erase, alt screen", async () => {
  const pieces = [
    () => `text ${rnd(1000)}`,
    () => "\r\n",
    () => "\n",
    () => `\x1b[${rnd(3)}${rnd(8)}m`,
    () => "\x1b[m",
    () => `\x1b[${rnd(12)};${rnd(40)}H`,
    () => `\x1b[${1 + rnd(4)};${5 + rnd(6)}r`,
    () => "\x1b[r",
    () => "\x1b[K",
    () => "\x1b[?1049h",
    () => "\x1b[?1049l",
    () => "\x1b7",
    () => "\x1b8",
    () => "\x1b]0;title\x07",
    () => "\t",
    () => "\x1b(0qqq\x1b(B",
    () => "é€😀",
  ];
  for (let round = 0; round < 12; round++) {
    let s = "";
    for (let i = 0; i < 6000; i++) {
      s += rnd(3) === 0 ? pieces[rnd(pieces.length)]() : `plain ${i}\r\n`;
    }
    for (let i = 0; i < 3000; i++) s += `run ${i}\r\n`;
    await same(s, 4096 + rnd(60000));
  }
});

Deno.test("mirror skip: nothing skipped across an unfinished sequence, a C1 control or few lines", () => {
  let lines = "";
  for (let i = 0; i < 5000; i++) lines += `l ${i}\r\n`;
  assertEquals(findSkip(enc(lines + "\x1b]0;open"), 10, 50), null);
  assertEquals(findSkip(enc(lines + "\u009b2J" + "x\r\n".repeat(10)), 10, 50), null);
  assertEquals(findSkip(enc("a\r\n".repeat(40)), 10, 50), null);
});

/** What the pty relay reports as `clean` for a piece read in one go (relay.c clean_from), in JavaScript. */
function cleanFrom(b: Uint8Array): number {
  let clean = 0;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c < 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09 && c !== 0x08) clean = i + 1;
    else if (c >= 0x80 && c <= 0x9f && i > 0 && b[i - 1] === 0xc2) clean = i + 1;
  }
  return clean;
}

/** xorshift32: the LCG above repeats its low bits (rnd(2) alternates). */
let xs = 2463534242;
function rx(n: number): number {
  xs ^= xs << 13;
  xs ^= xs >>> 17;
  xs ^= xs << 5;
  return (xs >>> 0) % n;
}

Deno.test("mirror feed with the relay's clean hint (compaction of plain pieces) ends where parsing every byte ends", async () => {
  const pieces = [
    () => `\x1b[${rx(3)}${rx(8)}m`,
    () => "\x1b[m",
    () => `\x1b[${rx(12)};${rx(40)}H`,
    () => `\x1b[${1 + rx(4)};${5 + rx(6)}r`,
    () => "\x1b[r",
    () => "\x1b[?6h",
    () => "\x1b[?6l",
    () => "\x1b[?1049h",
    () => "\x1b[?1049l",
    () => "\x1b7",
    () => "\x1b8",
    () => "\u0085",
    () => "\t\b",
    () => "日本 é",
  ];
  for (let round = 0; round < 16; round++) {
    // Long plain stretches (compacted) between short bursts of state changes, cut into pieces anywhere.
    let s = "";
    for (let block = 0; block < 8; block++) {
      const lines = rx(4) * 400, bursts = rx(6);
      for (let i = 0; i < lines; i++) s += `plain ${round}.${block}.${i}${"x".repeat(rx(120))}\r\n`;
      for (let i = 0; i < bursts; i++) s += pieces[rx(pieces.length)]() + `mid ${i}\r\n`;
    }
    const bytes = enc(s);
    const lazy = new ScreenMirror(30, 10, { scrollback: 50 });
    let released = 0, given = 0;
    for (let o = 0; o < bytes.length;) {
      const n = 1 + rx(rx(2) ? 40000 : 300);
      const piece = bytes.slice(o, o + n);
      o += n;
      given++;
      lazy.feed(piece, cleanFrom(piece), () => released++);
      if (rx(3) === 0) await lazy.settled();
    }
    await lazy.settled();
    const full = new ScreenMirror(30, 10, { scrollback: 50 });
    await new Promise<void>((r) => full.term.write(bytes, r));
    assertEquals(dump(lazy), dump(full));
    assertEquals(released, given, "every piece's buffer is given back");
  }
});
