/**
 * Red team: the program's output trying to reach the person's clipboard, files or commands through the terminal
 * outside the sandbox, or to hide the bar, past the output filter (lib/ui/output_filter.ts). Judged on the bytes
 * that reach the terminal, whole and split at every byte.
 */
import { ok as assert } from "node:assert/strict";
import { OutputFilter } from "../lib/ui/output_filter.ts";

const dec = (b: Uint8Array) => String.fromCharCode(...b);

function run(f: OutputFilter, ...parts: string[]): string {
  return parts.map((p) => dec(f.filter(Uint8Array.from([...p].map((c) => c.charCodeAt(0)))))).join("") +
    dec(f.flush());
}

/** Every way through must drop the payload "ZWNobw" (or the command), whole and split at every byte. */
function neverPasses(evil: string[], payload = "ZWNobw"): void {
  for (const e of evil) {
    const s = "a" + e + "b";
    for (let cut = 0; cut < s.length; cut++) {
      const out = cut === 0
        ? run(new OutputFilter(), s)
        : run(new OutputFilter(), s.slice(0, cut), s.slice(cut));
      assert(!out.includes(payload), JSON.stringify([e, cut, out]));
      assert(out.startsWith("a"), JSON.stringify([e, cut, out]));
    }
  }
}

Deno.test("redteam2 output filter: OSC 52 with leading zeros (terminals read 000052 as 52) never passes", () => {
  neverPasses([
    "\x1b]000052;c;ZWNobw==\x07",
    "\x1b]0000000000000000000052;c;ZWNobw==\x1b\\",
    "\xc2\x9d00052;c;ZWNobw==\xc2\x9c",
    "\x1bPtmux;\x1b\x1b]00052;c;ZWNobw==\x07\x1b\\",
  ]);
});

Deno.test("redteam2 output filter: OSC 52 in C1 form inside a tmux or other DCS passthrough never passes", () => {
  neverPasses([
    "\x1bPtmux;\xc2\x9d52;c;ZWNobw==\x07\x1b\\",
    "\x1bPtmux;\xc2\x9d52;c;ZWNobw==\xc2\x9c\x1b\\",
    "\x1bP\xc2\x9d52;c;ZWNobw==\x07\x1b\\",
    "\x1b]0;title\xc2\x9d52;c;ZWNobw==\x07", // a C1 OSC inside another string starts a new one
  ]);
});

Deno.test("redteam2 output filter: terminal-specific clipboard, file and command strings never pass", () => {
  neverPasses([
    "\x1b]1337;Copy=:ZWNobw==\x07", // iTerm2 clipboard
    "\x1b]1337;File=name=eA==;size=6;inline=0:ZWNobw==\x07", // iTerm2 download into ~/Downloads
    "\x1b]5522;type=write;mime=dGV4dC9wbGFpbg==:ZWNobw==\x1b\\", // kitty clipboard
    "\x1b]5113;ac=send;id=1;dest=ZWNobw==\x1b\\", // kitty file transfer
    "\x1bPtmux;\x1b\x1b]1337;Copy=:ZWNobw==\x07\x1b\\",
  ]);
  neverPasses(['\x1bP@kitty-cmd{"cmd":"launch","payload":{"args":["ZWNobw"]}}\x1b\\'], "launch");
});

Deno.test("redteam2 output filter: a colour set with leading zeros is recorded (the bar resets it)", () => {
  const f = new OutputFilter();
  const out = run(f, "\x1b]000010;#000000\x07\x1b]0011;#000000\x07");
  assert(out.includes("#000000")); // a program's theme still passes
  assert(f.paletteChanged, "an OSC 10/11 with leading zeros must be recorded");
  assert(f.paletteReset().includes("\x1b]110") && f.paletteReset().includes("\x1b]111"), f.paletteReset());
});
