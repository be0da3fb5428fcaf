import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { displayWidth, truncateEnd, truncateMiddle, visible } from "../lib/ui/sanitize.ts";

const VISIBLE: [string, string][] = [
  ["plain /home/me/file.txt", "plain /home/me/file.txt"],
  ["\x1b]0;pwned\x07\x1b[2J", "^[]0;pwned^G^[[2J"],
  ["a\nb\tc", "a\\nb\\tc"],
  ["\r\x00\x1f", "^M^@^_"],
  ["del\x7f", "del^?"],
  ["c1 \x85 \x9b31m \x9d", "c1 <U+0085> <U+009B>31m <U+009D>"],
  ["evil\u202egpj.exe", "evil<U+202E>gpj.exe"],
  [
    "\u2066\u2067\u2068\u2069\u200e\u200f\u202a\u202b\u202c\u202d",
    "<U+2066><U+2067><U+2068><U+2069><U+200E><U+200F><U+202A><U+202B><U+202C><U+202D>",
  ],
  ["lone \ud800 \udc00 end", "lone \uFFFD \uFFFD end"],
  ["pair 😀 ok", "pair 😀 ok"],
  ["日本語 e\u0301", "日本語 e\u0301"],
];

for (const [input, want] of VISIBLE) {
  Deno.test(`visible(${JSON.stringify(input)})`, () => {
    const got = visible(input);
    assertEquals(got, want);
    // Nothing interpretable is left: no C0, DEL, C1 or bidi controls.
    // deno-lint-ignore no-control-regex
    assertEquals(/[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200e\u200f]/u.test(got), false);
  });
}

const WIDTH: [string, number][] = [
  ["", 0],
  ["abc", 3],
  ["日本", 4],
  ["ｈｉ", 4], // fullwidth
  ["e\u0301", 1], // combining acute
  ["한글", 4],
  ["😀", 2],
  ["a\u200bb", 2], // zero width space
  ["…", 1],
];
for (const [s, w] of WIDTH) {
  Deno.test(`displayWidth(${JSON.stringify(s)}) = ${w}`, () => assertEquals(displayWidth(s), w));
}

const MIDDLE: [string, number, string][] = [
  ["/short", 10, "/short"],
  ["/very/long/path/file.txt", 16, "/very/…/file.txt"],
  ["/home/me/.npm/_cacache/tmp/averyveryverylongname.json", 30, "/home/me/…eryverylongname.json"],
  ["/home/me/project/src/deeply/nested/dir/index.ts", 30, "/home/me/proje…ed/dir/index.ts"],
  ["/日本語/日本語/日本語/ファイル.txt", 20, "/日本…/ファイル.txt"], // 19 cells: 語 would cross the limit,
  ["abcdef", 1, "…"],
  ["abcdef", 0, ""],
];
for (const [s, w, want] of MIDDLE) {
  Deno.test(`truncateMiddle(${JSON.stringify(s)}, ${w})`, () => {
    const got = truncateMiddle(s, w);
    assertEquals(got, want);
    assertEquals(displayWidth(got) <= w, true);
  });
}

Deno.test("truncateMiddle never splits a wide character at the limit", () => {
  for (let w = 2; w < 20; w++) {
    const got = truncateMiddle("日本語日本語日本語日本語", w);
    assertEquals(displayWidth(got) <= w, true, `${w}: ${got}`);
    assertEquals(displayWidth(got) >= w - 1, true, `${w}: ${got} wastes more than one cell`);
  }
});

Deno.test("truncateEnd", () => {
  assertEquals(truncateEnd("abcdef", 4), "abc…");
  assertEquals(truncateEnd("abc", 4), "abc");
  assertEquals(truncateEnd("日本語", 4), "日…");
});
