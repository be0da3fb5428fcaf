/** lib/ui/terminal_reports.ts: the terminal's answers to hallpass's questions, taken out of the input. */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { sameSize, takeReports } from "../lib/ui/terminal_reports.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

Deno.test("a size report and the cursor report after it are taken out; the keys around them stay", () => {
  const r = takeReports(enc.encode("a\x1b[8;100;30tb\x1b[12;5Rc"));
  assertEquals(dec.decode(r.rest), "abc");
  assertEquals(r.cursor, { row: 11, col: 4, size: [100, 30] });
  assertEquals(r.size, null);
});

Deno.test("a cursor report without a size report (a terminal that does not answer CSI 18 t)", () => {
  const r = takeReports(enc.encode("\x1b[3;1R"));
  assertEquals(r.cursor, { row: 2, col: 0 });
  assertEquals(r.rest.length, 0);
});

Deno.test("a size report alone is held for the cursor report of the next read", () => {
  const first = takeReports(enc.encode("\x1b[8;35;100t"));
  assertEquals([first.rest.length, first.cursor, first.size], [0, null, [35, 100]]);
  const second = takeReports(enc.encode("\x1b[35;1R"), first.size);
  assertEquals(second.cursor, { row: 34, col: 0, size: [35, 100] });
});

Deno.test("only the first cursor report is taken: a later one answers someone else", () => {
  const r = takeReports(enc.encode("\x1b[1;1R\x1b[8;1;2t\x1b[2;2R"));
  assertEquals(r.cursor, { row: 0, col: 0 });
  assertEquals(dec.decode(r.rest), "\x1b[8;1;2t\x1b[2;2R");
});

Deno.test("nothing to take: the same chunk", () => {
  const chunk = enc.encode("ls\r\x1b[A");
  const r = takeReports(chunk);
  assertEquals([r.rest === chunk, r.cursor, r.size], [true, null, null]);
});

Deno.test("a size is the same in either order (tmux 3.3 answers columns first)", () => {
  assertEquals([sameSize([35, 100], 35, 100), sameSize([100, 35], 35, 100), sameSize([10, 100], 35, 100)], [
    true,
    true,
    false,
  ]);
});
