/**
 * Screen preservation: terminal A sees everything hallpass writes (program output through the gate, the bar,
 * the repaint); terminal B sees the program's output alone. After the bar closes, A must equal B cell for cell.
 */
import assert, {
  deepStrictEqual as assertEquals,
  notDeepStrictEqual as assertNotEquals,
} from "node:assert/strict";
import xterm from "@xterm/headless";
import { ScreenGate, ScreenMirror, sgrFor } from "../lib/ui/screen.ts";
import { type BarState, handleKey, layout } from "../lib/ui/prompt_bar.ts";
import type { Question } from "../lib/types.ts";

type Term = InstanceType<typeof xterm.Terminal>;
const enc = new TextEncoder();

function term(cols: number, rows: number): Term {
  return new xterm.Terminal({ cols, rows, scrollback: 1000, allowProposedApi: true });
}
function feed(t: Term, data: string | Uint8Array): Promise<void> {
  return new Promise((r) => t.write(data, r));
}

/** Every cell (text, width, attributes) of the active buffer incl. scrollback, cursor, DECSC slot, modes. */
function snapshot(t: Term) {
  const buf = t.buffer.active;
  const cells: string[] = [];
  for (let y = 0; y < buf.length; y++) {
    const line = buf.getLine(y)!;
    let row = "";
    for (let x = 0; x < t.cols; x++) {
      const c = line.getCell(x)!;
      // deno-lint-ignore no-explicit-any
      row += `${c.getChars() || " "}|${c.getWidth()}|${sgrFor(c as any)} `;
    }
    cells.push(row);
  }
  // deno-lint-ignore no-explicit-any
  const core = (t as any)._core;
  return {
    type: buf.type,
    length: buf.length,
    cells,
    cursor: [core.buffer.x, core.buffer.y],
    // Where ESC 8 would go (xterm.js keeps an absolute row; a slot scrolled off the top restores to row 0).
    saved: [
      core.buffer.savedX,
      Math.max(core.buffer.savedY - core.buffer.ybase, 0),
      core.buffer.savedCurAttrData.fg,
    ],
    attr: [core._inputHandler._curAttrData.fg, core._inputHandler._curAttrData.bg],
    insert: core.coreService.modes.insertMode,
    glevel: core._charsetService.glevel,
    charset: core._charsetService.charset?.q ?? "ascii",
  };
}

function screenText(t: Term): string[] {
  const buf = t.buffer.active;
  const out: string[] = [];
  for (let y = 0; y < t.rows; y++) out.push(buf.getLine(buf.baseY + y)!.translateToString(true).trimEnd());
  return out;
}

const question: Question = {
  id: 1,
  op: "write",
  pid: 41237,
  name: "node",
  target: "/home/me/.npm/_cacache/tmp/x",
  syscall: "openat",
  chain: ["npm install", "bash", "copilot"],
  suggestedScope: "/home/me/.npm/_cacache",
  scopes: [
    "/home/me/.npm/_cacache/tmp/x",
    "/home/me/.npm/_cacache/tmp",
    "/home/me/.npm/_cacache",
    "/home/me",
  ],
};

/** Runs one scenario: `before` is out when the bar opens, `during` arrives while it is up, `after` later. */
async function scenario(
  cols: number,
  rows: number,
  before: string[],
  during: string[],
  after: string[],
  q: Question = question,
) {
  const a = term(cols, rows);
  const b = term(cols, rows);
  const mirror = new ScreenMirror(cols, rows);
  const gate = new ScreenGate(mirror, (d) => feed(a, d));
  const out = (s: string) => {
    gate.output(enc.encode(s));
    return feed(b, s);
  };
  for (const s of before) await out(s);
  let state: BarState = { question: q, queued: 0, scopeIndex: 2, forMs: 300_000 };
  await gate.showBar(layout(state, cols));
  for (const s of during) await out(s);
  await gate.flushed();
  const whileUp = screenText(a);
  // A key that redraws, then one that answers.
  const widen = handleKey(state, "\x1b[D");
  assert(widen.redraw);
  state = widen.state;
  await gate.showBar(layout(state, cols));
  const r = handleKey(state, "t");
  assertEquals(r.answer?.kind, "for");
  await gate.closeBar();
  for (const s of after) await out(s);
  await gate.flushed();
  return { a, b, whileUp, mirror };
}

const CSI = "\x1b[";
function vimScreen(_cols: number, rows: number): string {
  let s = `${CSI}?1049h${CSI}H${CSI}2J`;
  for (let y = 1; y < rows - 1; y++) {
    s += `${CSI}${y};1H${CSI}0;38;5;${(y * 7) % 256}m${String(y).padStart(3)} ${CSI}1;4mfn${CSI}0m `;
    s += `${CSI}38;2;10;200;${
      y * 9
    }mline ${y} ${CSI}7m日本語${CSI}27m${CSI}48;5;236m trailing bg${CSI}K${CSI}0m`;
  }
  s += `${CSI}${rows - 1};1H${CSI}0;1;97;44m NORMAL ${CSI}0;3;9m main.ts [+]${CSI}0;53;2m 42%${CSI}K`;
  s += `${CSI}${rows};1H${CSI}0m:set nu`;
  return s;
}

Deno.test("full-screen program (alternate screen, colours, wide chars): bar closes, screen is as without hallpass", async () => {
  const cols = 60;
  const rows = 16;
  const before = [
    vimScreen(cols, rows),
    `${CSI}5;10H\x1b7`, // the program saves its cursor (DECSC)…
    `${CSI}20;1H`,
    `${CSI}${rows - 2};${cols - 2}H${CSI}0;1;31mEND`, // …and ends on the last column (pending wrap), bold red
    `\x1b(0${CSI}4h`, // DEC line drawing in G0, insert mode
  ];
  const during = [
    `${CSI}s`, // nothing visible yet: more output while the bar is up
    "\x1b8qqx", // back to the saved cursor, line drawing inserted there
    `${CSI}${rows};1H${CSI}0;32m-- INSERT --`,
    `${CSI}${rows - 3};${cols}H`,
    "W", // last column, pending wrap again
  ];
  const after = [
    "Z",
    "\x1b(B",
    `${CSI}4l`,
    "\x1b8",
    "after restore",
    `${CSI}?1049l`,
    "back on the main screen",
  ];
  const { a, b, whileUp } = await scenario(cols, rows, before, during, after);
  // The bar was really drawn over the bottom rows while it was up, and the output held back.
  assert(whileUp[rows - 5].startsWith("hallpass: node (pid 41237) wants to write"), whileUp[rows - 5]);
  assert(whileUp[rows - 1].startsWith("[o] allow once  [t] for 5m0s"));
  assert(!whileUp.some((l) => l.includes("INSERT")));
  assertEquals(snapshot(a), snapshot(b));
});

Deno.test("alternate screen state checked before leaving it", async () => {
  const cols = 40;
  const rows = 12;
  const before = [vimScreen(cols, rows), `${CSI}3;3H${CSI}0;7;35m`];
  const during = ["typed"];
  const after = ["more"];
  const { a, b } = await scenario(cols, rows, before, during, after);
  const sa = snapshot(a);
  assertEquals(sa.type, "alternate");
  assertEquals(sa, snapshot(b));
});

Deno.test("line-oriented output keeps scrolling while the bar is up: nothing lost, nothing of the bar left", async () => {
  const cols = 50;
  const rows = 14;
  const lines = (from: number, to: number) => {
    let s = "";
    for (let i = from; i < to; i++) s += `${CSI}${31 + (i % 7)}mline ${i}${CSI}0m ${"x".repeat(i % 45)}\r\n`;
    return s;
  };
  const { a, b, whileUp } = await scenario(cols, rows, [lines(0, 40)], [lines(40, 100), "partial"], [
    lines(100, 103),
  ]);
  assert(!whileUp.some((l) => l.includes("line 99")), "output was held back while the bar was up");
  const sa = snapshot(a);
  assertEquals(sa, snapshot(b));
  assert(!sa.cells.some((r) => r.includes("h|1|") && r.startsWith("h|1|\x1b[0;7ma")), "no bar in scrollback");
  assert(screenText(a).some((l) => l.startsWith("line 102")));
});

Deno.test("hostile target: title and screen untouched, sequence shown as text", async () => {
  const cols = 80;
  const rows = 12;
  const hostile: Question = {
    ...question,
    target: "/tmp/\x1b]0;pwned\x07\x1b[2J\x1b[31mred\u202eevil\x9b6n",
    name: "x\x1b[8m",
    chain: ["sh -c '\x1b[H'"],
  };
  const a = term(cols, rows);
  const titles: string[] = [];
  a.onTitleChange((t) => titles.push(t));
  const mirror = new ScreenMirror(cols, rows);
  const gate = new ScreenGate(mirror, (d) => feed(a, d));
  gate.output(enc.encode("prompt$ ls\r\nfile1 file2\r\nprompt$ "));
  await gate.showBar(layout({ question: hostile, queued: 3, scopeIndex: 0, forMs: 90_000 }, cols));
  await gate.flushed();
  const text = screenText(a);
  assertEquals(titles, []);
  assertEquals(text[0], "prompt$ ls");
  assertEquals(text[1], "file1 file2");
  assertEquals(text[rows - 4], "/tmp/^[]0;pwned^G^[[2J^[[31mred<U+202E>evil<U+009B>6n");
  assert(text[rows - 5].startsWith("hallpass: x^[[8m (pid 41237) wants to write (+3 more)"));
  assertEquals(text[rows - 3], "by: sh -c '^[[H'");
  assert(text[rows - 1].includes("[t] for 1m30s"));
  await gate.closeBar();
  await gate.flushed();
  assertEquals(screenText(a).slice(rows - 5), ["", "", "", "", ""]);
  assertEquals(titles, []);
});

Deno.test("back-pressure: past the cap the pump is told to pause until the bar closes", async () => {
  const a = term(20, 5);
  const gate = new ScreenGate(new ScreenMirror(20, 5), (d) => feed(a, d), { maxBuffer: 10 });
  assertEquals(gate.shouldPause(), false);
  await gate.showBar(["bar"]);
  gate.output(enc.encode("0123456789"));
  assertEquals(gate.shouldPause(), true);
  let resumed = false;
  const w = gate.whenFlowing().then(() => (resumed = true));
  await new Promise((r) => setTimeout(r, 10));
  assertEquals(resumed, false);
  await gate.closeBar();
  await w;
  assertEquals(resumed, true);
  assertEquals(gate.shouldPause(), false);
  assertEquals(screenText(a)[0], "0123456789");
});

Deno.test("a shorter bar gives rows back; resize with the bar up repaints everything", async () => {
  const cols = 30;
  const rows = 10;
  const a = term(cols, rows);
  const b = term(cols, rows);
  const gate = new ScreenGate(new ScreenMirror(cols, rows), (d) => feed(a, d));
  const out = (s: string) => (gate.output(enc.encode(s)), feed(b, s));
  for (let i = 0; i < 12; i++) await out(`${CSI}1mrow ${i}${CSI}0m\r\n`);
  await gate.showBar(["1", "2", "3", "4", "5", "6", "7"]);
  await gate.showBar(["1", "2", "3", "4", "5"]);
  await gate.flushed();
  assertEquals(screenText(a).slice(0, rows - 5), screenText(b).slice(0, rows - 5)); // rows 3, 4 given back
  assertEquals(screenText(a)[rows - 5], "1");
  assertNotEquals(screenText(a)[rows - 5], screenText(b)[rows - 5]);
  a.resize(24, 8);
  b.resize(24, 8);
  await gate.resize(24, 8, ["x", "y"]);
  await out("tail");
  await gate.closeBar();
  await gate.flushed();
  assertEquals(screenText(a), screenText(b));
});

Deno.test("narrowed with the bar up, a terminal that pushed lines into its history: each line kept once", async () => {
  // tmux wraps the bar's full-width rows when the window narrows and pushes the top of the screen into its
  // history to make room; its cursor report then says so. The model follows: nothing is lost or shown twice.
  const a = term(100, 30);
  const gate = new ScreenGate(new ScreenMirror(100, 30, { scrollback: 1000 }), (d) => feed(a, d));
  gate.output(enc.encode("30 100\r\n"));
  await gate.showBar(Array.from({ length: 5 }, (_, i) => `bar ${i} ` + "x".repeat(90)));
  await gate.flushed();
  a.resize(60, 30);
  await feed(a, "\x1b[30;1H\n\n\n\n\n\x1b[1;1H"); // what tmux 3.3a does on its own (xterm.js reflows otherwise)
  // deno-lint-ignore no-explicit-any
  const cursorRow = () => Promise.resolve((a as any)._core.buffer.y as number);
  await gate.resize(60, 30, Array.from({ length: 5 }, (_, i) => `bar ${i}`), cursorRow);
  gate.output(enc.encode("r=0\r\n30 60\r\n"));
  await gate.closeBar();
  await gate.flushed();
  const buf = a.buffer.active;
  const all: string[] = [];
  for (let y = 0; y < buf.length; y++) all.push(buf.getLine(y)!.translateToString(true).trimEnd());
  assertEquals(all.filter((l) => l !== ""), ["30 100", "r=0", "30 60"]);
  assertEquals(screenText(a).slice(0, 2), ["r=0", "30 60"]);
});

Deno.test("resized twice before hallpass asked: an answer about another size changes nothing; each line kept once", async () => {
  // tmux resizes its screen at once and tells the program up to 250 ms later: hallpass's question about the
  // first size can be answered by the screen at the second. The cursor answer comes with the size the terminal
  // has (CSI 18 t); one about another size than the model's is "stale", and the next resize does the work.
  const run = async (sizeChecked: boolean) => {
    const a = term(100, 35);
    const gate = new ScreenGate(new ScreenMirror(100, 35, { scrollback: 1000 }), (d) => feed(a, d));
    for (let i = 1; i <= 31; i++) gate.output(enc.encode(`${i}\r\n`));
    const bar = Array.from({ length: 5 }, (_, i) => `bar ${i}`);
    await gate.showBar(bar);
    await gate.flushed();
    a.resize(100, 10);
    a.resize(100, 35); // both before hallpass asked about 10 rows
    // deno-lint-ignore no-explicit-any
    const cursorY = () => (a as any)._core.buffer.y as number;
    const answer = (rows: number) => () =>
      Promise.resolve(sizeChecked && a.rows !== rows ? "stale" as const : cursorY());
    await gate.resize(100, 10, bar, answer(10));
    await gate.resize(100, 35, bar, answer(35));
    gate.output(enc.encode("done\r\n"));
    await gate.closeBar();
    await gate.flushed();
    const buf = a.buffer.active;
    const all: string[] = [];
    for (let y = 0; y < buf.length; y++) all.push(buf.getLine(y)!.translateToString(true).trimEnd());
    return all.filter((l) => l !== "");
  };
  const want = [...Array.from({ length: 31 }, (_, i) => String(i + 1)), "done"];
  assertEquals(await run(true), want);
  // Control: the answer taken as about the model's size loses lines 1-22.
  assertNotEquals(await run(false), want, "control: the answer taken for the model's size");
});
