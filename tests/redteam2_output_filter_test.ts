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

Deno.test("redteam2 output filter: DECUDK, DECDLD soft fonts and XTSETTCAP never pass; sixel and DECRQSS do", () => {
  // xterm's user-defined keys: Shift-F6 would type "rm -rf ~" into the person's shell after hallpass.
  const udk = "\x1bP1;1|17/726d202d7266207e0d\x1b\\";
  const dld = "\x1bP1;1;1;10;0;2;20;0{ @??~^^~??/??~^^~??\x1b\\"; // a soft font (the bar drawn as other letters)
  const tcap = "\x1bP+p6b63617074=726d\x1b\\";
  for (
    const [e, payload] of [[udk, "726d"], [dld, "~^^~"], [tcap, "726d"], ["\x1bP0;1|17/726d\x07", "726d"]]
  ) {
    neverPasses([e, "\xc2\x90" + e.slice(2)], payload);
  }
  for (const ok of ["\x1bP0;1;0q#0;2;0;0;0#0!10~\x1b\\", "\x1bP$qm\x1b\\", "\x1bP+q544e\x1b\\"]) {
    const out = run(new OutputFilter(), ok);
    if (out !== ok) throw new Error(JSON.stringify([ok, out]));
  }
});
