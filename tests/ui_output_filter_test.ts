import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { OutputFilter } from "../lib/ui/output_filter.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => String.fromCharCode(...b);

/** Runs `parts` (separate reads) through one filter; returns what reaches the terminal. */
function run(f: OutputFilter, ...parts: string[]): string {
  return parts.map((p) => dec(f.filter(Uint8Array.from([...p].map((c) => c.charCodeAt(0)))))).join("") +
    dec(f.flush());
}

Deno.test("output filter: plain output and other sequences pass unchanged", () => {
  const s =
    "hello\r\n\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1bP1$r0m\x1b\\ é";
  const bytes = enc(s);
  const f = new OutputFilter();
  assertEquals(f.filter(bytes), bytes);
  assertEquals(f.flush().length, 0);
});

Deno.test("output filter: OSC 52 (clipboard write or query) never passes, in any form or split", () => {
  const evil = [
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",
    "\x1b]52;c;ZWNobyBwd25lZA==\x1b\\",
    "\x1b]52;c;?\x07",
    "\x1b]52;;ZWNobw==\x1b\\",
    "\xc2\x9d52;c;ZWNobw==\xc2\x9c", // C1 OSC in UTF-8
    "\x1bPtmux;\x1b\x1b]52;c;ZWNobw==\x07\x1b\\", // tmux passthrough
    "\x1b]0;t\x1b]52;c;ZWNobw==\x07", // an OSC ended by the next one's ESC
  ];
  for (const e of evil) {
    const whole = run(new OutputFilter(), "a" + e + "b");
    assert(!whole.includes("52;"), JSON.stringify([e, whole]));
    assert(whole.startsWith("a") && whole.endsWith("b"), JSON.stringify(whole));
    // Split at every byte.
    const s = "a" + e + "b";
    for (let cut = 1; cut < s.length; cut++) {
      const out = run(new OutputFilter(), s.slice(0, cut), s.slice(cut));
      assert(!out.includes("52;"), JSON.stringify([e, cut, out]));
      assert(out.endsWith("b"), JSON.stringify([e, cut, out]));
    }
  }
  // A passthrough without OSC 52 passes.
  const ok = "\x1bPtmux;\x1b\x1b]0;t\x07\x1b\\";
  assertEquals(run(new OutputFilter(), ok), ok);
});

Deno.test("output filter: palette changes pass, are recorded, reset while the bar is up and replayed", () => {
  const f = new OutputFilter();
  assertEquals(f.paletteChanged, false);
  const s = "\x1b]4;1;rgb:00/00/00;2;#000000\x07\x1b]10;#000000\x1b\\\x1b]11;#000000\x07x";
  assertEquals(run(f, s), s);
  assert(f.paletteChanged);
  assertEquals(f.paletteReset(), "\x1b]104;1\x1b\\\x1b]104;2\x1b\\\x1b]110\x1b\\\x1b]111\x1b\\");
  assertEquals(
    f.palette(),
    "\x1b]4;1;rgb:00/00/00;2;#000000\x1b\\\x1b]10;#000000\x1b\\\x1b]11;#000000\x1b\\",
  );
  // A reset the program made itself forgets what it reset.
  run(f, "\x1b]110\x07\x1b]104\x07");
  assertEquals(f.palette(), "\x1b]11;#000000\x1b\\\x1b]110\x1b\\\x1b]104\x1b\\");
});

Deno.test("output filter: 1005/1015 mouse encodings are tracked for after the bar", () => {
  const f = new OutputFilter();
  run(f, "\x1b[?1000;1005h\x1b[?1015h");
  assertEquals(f.extraMouseModes(), "\x1b[?1005h\x1b[?1015h");
  run(f, "\x1b[?1005l");
  assertEquals(f.extraMouseModes(), "\x1b[?1015h");
});
