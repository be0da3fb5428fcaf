import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { KeyReader, type Token } from "../lib/ui/key_reader.ts";
import { handleKey, splitKeys } from "../lib/ui/prompt_bar.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const bytes = (...b: number[]) => Uint8Array.from(b);
const keys = (ts: Token[]) => ts.flatMap((t) => t.kind === "key" ? [t.key] : []);
const replies = (ts: Token[]) =>
  ts.flatMap((t) => t.kind === "reply" ? [String.fromCharCode(...t.bytes)] : []);

/** Feeds `parts` as separate reads, 1 ms apart; returns all tokens. */
function read(...parts: (string | Uint8Array)[]): Token[] {
  const r = new KeyReader();
  return parts.flatMap((p, i) => r.feed(typeof p === "string" ? enc(p) : p, 1000 + i));
}

/** Every way the answer keys could be smuggled in: none of these may yield a key that answers. */
const ANSWERS = new Set(["o", "O", "t", "T", "a", "A", "n", "N", "d", "D"]);
function noAnswer(ts: Token[]): void {
  assertEquals(keys(ts).filter((k) => ANSWERS.has(k)), []);
}

Deno.test("keys: characters, CSI and SS3 keys whole, UTF-8 characters", () => {
  assertEquals(keys(read("ab\x1b[D\x1bOAx\x1b[1;5C\r")), [
    "a",
    "b",
    "\x1b[D",
    "\x1bOA",
    "x",
    "\x1b[1;5C",
    "\r",
  ]);
  assertEquals(keys(read("日😀")), ["日", "😀"]);
  assertEquals(splitKeys("o"), ["o"]);
});

Deno.test("terminal replies (DCS, OSC, APC, PM, SOS; 7-bit and C1) are never keys; handed back whole", () => {
  const cases = [
    "\x1bP>|tmux 3.3a\x1b\\", // XTVERSION
    "\x1bP1+r544e=787465726d\x1b\\", // XTGETTCAP
    "\x1b]52;c;YXRvYQ==\x07", // OSC 52 reply, BEL-terminated
    "\x1b]11;rgb:0000/0000/0000\x1b\\",
    "\x1b_Gi=1;OK\x1b\\", // kitty graphics APC
    "\x1b^toast\x1b\\",
    "\x1bXsos\x1b\\",
    "\u0090>|tmux 3.3a\u009c", // C1 in UTF-8
  ];
  for (const c of cases) {
    const ts = read(c);
    noAnswer(ts);
    assertEquals(replies(ts), [String.fromCharCode(...enc(c))], JSON.stringify(c));
  }
  // Raw 8-bit C1 DCS … ST.
  const raw = read(bytes(0x90, ...enc(">|tmux 3.3a"), 0x9c));
  noAnswer(raw);
  assertEquals(replies(raw).length, 1);
});

Deno.test("a reply split across reads, at every byte, is still dropped whole", () => {
  const s = enc("\x1bP>|tmux 3.3a\x1b\\o");
  for (let cut = 1; cut < s.length - 1; cut++) {
    const ts = read(s.subarray(0, cut), s.subarray(cut));
    assertEquals(keys(ts), ["o"], `cut at ${cut}`);
    assertEquals(replies(ts).length, 1);
  }
  const c1 = enc("\u0090ta\u009co");
  for (let cut = 1; cut < c1.length - 1; cut++) {
    assertEquals(keys(read(c1.subarray(0, cut), c1.subarray(cut))), ["o"]);
  }
});

Deno.test("a UTF-8 character holding byte 0x9c inside a string does not end it", () => {
  // ✜ is E2 9C 9C.
  noAnswer(read("\x1b]2;✜at\x1b\\"));
  assertEquals(keys(read("\x1b]2;✜at\x1b\\o")), ["o"]);
});

Deno.test("CAN/SUB or ESC+other end a string; the rest is read normally", () => {
  assertEquals(keys(read("\x1bPabc\x18o")), ["o"]);
  assertEquals(keys(read("\x1bPabc\x1b[Do")), ["\x1b[D", "o"]);
  noAnswer(read("\x1bPabc\x1bo"));
  noAnswer(read("\x1bPabc\x1b", "o"));
  assertEquals(keys(read("\x1bPabc\x1b", "[Do")), ["\x1b[D", "o"]);
});

Deno.test("mouse reports in every form are dropped whole: a wheel-down never answers [a]", () => {
  // X10: ESC [ M Cb Cx Cy; wheel-down is Cb = 32+65 = 'a'; a click at column 65 is Cx = 'a'; 79 is 'o'.
  noAnswer(read("\x1b[Ma!!"));
  noAnswer(read("\x1b[M a!"));
  noAnswer(read("\x1b[M o!"));
  noAnswer(read("\x1b[M#o!\x1b[M#a!"));
  // X10 with raw bytes above 127 (column > 95), and UTF-8 mode (1005): a coordinate as a 2-byte character.
  noAnswer(read(bytes(0x1b, 0x5b, 0x4d, 0x61, 0xe0, 0x21)));
  noAnswer(read(bytes(0x1b, 0x5b, 0x4d, 0x61, 0xc4, 0x80, 0x21)));
  // SGR (1006) and urxvt (1015).
  noAnswer(read("\x1b[<65;10;5M\x1b[<0;79;1m"));
  noAnswer(read("\x1b[97;65;5M"));
  // Focus reports.
  assertEquals(keys(read("\x1b[I\x1b[O")), []);
  // Split at every byte, followed by a real key.
  const s = enc("\x1b[Ma!!o");
  for (let cut = 1; cut < s.length - 1; cut++) {
    assertEquals(keys(read(s.subarray(0, cut), s.subarray(cut))), ["o"], `cut at ${cut}`);
  }
});

Deno.test("bracketed paste is not an answer, whatever it holds", () => {
  noAnswer(read("\x1b[200~always allow\x1b[201~"));
  assertEquals(keys(read("\x1b[200~a", "t", "o\x1b[20", "1~d")), ["d"]);
});

Deno.test("CSI replies with a private marker and cursor reports are replies, not keys", () => {
  const ts = read("\x1b[?62;22c\x1b[>0;95;0c\x1b[12;40R\x1b[?2004;1$y");
  assertEquals(keys(ts), []);
  assertEquals(replies(ts).length, 4);
});

Deno.test("an unterminated string is given up after staleMs without a byte; keys count again", () => {
  const r = new KeyReader({ staleMs: 100 });
  assertEquals(keys(r.feed(enc("\x1bPabc"), 0)), []);
  assertEquals(keys(r.feed(enc("o"), 50)), []);
  assertEquals(keys(r.feed(enc("o"), 500)), ["o"]);
});

Deno.test("handleKey on what the reader yields: only the real key answers", () => {
  const ts = read("\x1b[Ma!!\x1bP>|tmux\x1b\\");
  for (const k of keys(ts)) {
    assertEquals(
      handleKey({
        question: { scopes: ["/x"], suggestedScope: "/x" } as never,
        queued: 0,
        scopeIndex: 0,
        forMs: 1,
      }, k).answer,
      undefined,
    );
  }
});

Deno.test("kitty keyboard protocol and modifyOtherKeys keys are read as the keys they stand for", () => {
  assertEquals(keys(read("\x1b[111u")), ["o"]);
  assertEquals(keys(read("\x1b[100;2u")), ["D"]); // shift+d
  assertEquals(keys(read("\x1b[99;5u")), ["\x03"]); // Ctrl-C
  assertEquals(keys(read("\x1b[122;5u")), ["\x1a"]); // Ctrl-Z
  assertEquals(keys(read("\x1b[27;5;99~")), ["\x03"]); // modifyOtherKeys Ctrl-C
  assertEquals(keys(read("\x1b[27;2;100~")), ["D"]);
  // A release, Alt or Super held: no key.
  assertEquals(keys(read("\x1b[111;1:3u")), []);
  assertEquals(keys(read("\x1b[111;3u")), []);
  assertEquals(keys(read("\x1b[111;9u")), []);
  // A press with its event type: the key.
  assertEquals(keys(read("\x1b[97;1:1u")), ["a"]);
  // Private-marker replies (the kitty flags query's answer `CSI ? flags u`) stay replies.
  assertEquals(replies(read("\x1b[?1u")), ["\x1b[?1u"]);
});
