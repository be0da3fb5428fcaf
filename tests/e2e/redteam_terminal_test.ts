/**
 * Red team: the terminal promises (docs/threat-model.md "The terminal": OSC 52 and the other ways to the
 * clipboard, files or commands removed) held only with the bar. With `--no-ask` or `--ask-program` in a
 * terminal the command wrote to the person's terminal itself, so `printf '\e]52;c;…\a'` set the clipboard (a
 * command the person pastes later runs outside). Judged by tmux's paste buffer (`set-clipboard on`: tmux keeps
 * what OSC 52 sets), with a bare control in the same pane first.
 */
import { ok as assert } from "node:assert/strict";
import { test, tool } from "../helpers/skip.ts";
import { until, withPane } from "./tmux.ts";

const OSC52 = String.raw`printf 'A\033]52;c;UFdORUQ=\007B\n'`; // "PWNED"

for (const mode of ["--no-ask", "--ask-program"]) {
  test({
    name: `the clipboard is out of the command's reach with ${mode} too (OSC 52 in a terminal)`,
    ignore: tool("tmux"),
    async fn() {
      const ask = mode === "--ask-program" ? ` "$DIR/ask.sh"` : "";
      await withPane({
        script: [
          `printf '#!/bin/sh\\ncat >/dev/null\\necho deny\\n' > "$DIR/ask.sh"; chmod +x "$DIR/ask.sh"`,
          `until [ -e "$DIR/go" ]; do sleep 0.05; done`,
          // Control: bare, the same bytes set tmux's buffer.
          OSC52,
          `echo control-done`,
          `until [ -e "$DIR/go2" ]; do sleep 0.05; done`,
          `hp ${mode}${ask} -- sh -c ${JSON.stringify(OSC52)}`,
          `echo sandbox-done`,
        ].join("\n"),
      }, async (t) => {
        await t.tmux("set", "-g", "set-clipboard", "on");
        await Deno.writeTextFile(`${t.dir}/go`, "");
        await until(async () => (await t.screen()).includes("control-done"), "the control");
        const ctl = await t.tmux("show-buffer").catch(() => "");
        assert(ctl.includes("PWNED"), `control: OSC 52 did not set tmux's buffer bare (${ctl})`);
        await t.tmux("delete-buffer");
        await Deno.writeTextFile(`${t.dir}/go2`, "");
        await until(async () => (await t.screen()).includes("sandbox-done"), "the sandboxed printf");
        const screen = await t.screen();
        assert(screen.split("AB").length - 1 >= 2, `the sandboxed printf did not run:\n${screen}`);
        const buf = await t.tmux("show-buffer").catch(() => "");
        assert(!buf.includes("PWNED"), `the sandbox set the clipboard through ${mode}`);
      });
    },
  });
}
