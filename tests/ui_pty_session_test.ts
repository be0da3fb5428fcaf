/**
 * PtySession end to end under `script` (which gives the driver a real terminal): raw mode, output through the
 * gate, a question answered by a key typed on the terminal, finish() draining and restoring the modes.
 */
import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import { test, tool } from "./helpers/skip.ts";

const ui = new URL("../lib/ui/pty_session.ts", import.meta.url).href;
const askUrl = new URL("../lib/ask/terminal_ask.ts", import.meta.url).href;
const DRIVER = `
import { PtySession } from ${JSON.stringify(ui)};
import { TerminalAsk } from ${JSON.stringify(askUrl)};
const LAUNCH = "import os, sys, fcntl, termios\\nfd = int(sys.argv[1]); os.setsid(); fcntl.ioctl(fd, termios.TIOCSCTTY, 0)\\nfor i in (0, 1, 2): os.dup2(fd, i)\\nos.close(fd); os.execvp('sh', ['sh', '-c', sys.argv[2]])";
const stty = () => new TextDecoder().decode(new Deno.Command("stty", { args: ["-a"], stdin: "inherit", stdout: "piped" }).outputSync().stdout);
const before = stty();
const pty = PtySession.open();
const child = new Deno.Command("python3", {
  args: ["-c", LAUNCH, String(pty.slaveFd), "stty size; printf 'child-out\\\\n'; sleep 1; printf 'after-bar'"],
  stdin: "null", stdout: "null",
}).spawn();
pty.closeSlave();
pty.start();
const raw = stty();
const ask = new TerminalAsk(pty, { forMs: 300000, armDelayMs: 0 });
const answer = await ask.ask({ id: 1, op: "write", pid: 5, name: "evil\\x1b]0;t\\x07", target: "/etc/x", syscall: "openat",
  chain: ["sh"], suggestedScope: "/etc/x", scopes: ["/etc/x", "/etc"] }, new AbortController().signal);
await child.status;
await pty.finish();
const after = stty();
console.log("\\nRESULT " + JSON.stringify({ answer, restored: before === after, rawIcanon: /[^-]icanon/.test(raw) }));
`;

test({
  name: "PtySession under a real terminal: raw mode, bar answered by a key, output kept, modes restored",
  ignore: [tool("python3"), tool("script")],
  fn: async () => {
    const dir = await Deno.makeTempDir();
    const driver = `${dir}/driver.ts`;
    await Deno.writeTextFile(driver, DRIVER);
    const deno = Deno.execPath();
    const config = new URL("../deno.json", import.meta.url).pathname;
    const cmd = `stty cols 90 rows 20; exec ${deno} run -A --config ${config} ${driver}`;
    const proc = new Deno.Command("script", {
      args: ["-qfec", cmd, "/dev/null"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      cwd: new URL("..", import.meta.url).pathname,
    }).spawn();
    const w = proc.stdin.getWriter();
    // The key goes once the bar is on the terminal (the child is still sleeping then: it waits for the answer).
    let text = "";
    const stderr = new Response(proc.stderr).text();
    const reader = proc.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let sent = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (!sent && text.includes("allow once")) {
        sent = true;
        await w.write(new TextEncoder().encode("o"));
      }
    }
    await proc.status;
    await w.close().catch(() => {});
    const out = { stderr: new TextEncoder().encode(await stderr) };
    await Deno.remove(dir, { recursive: true });
    const m = text.match(/RESULT (\{.*\})/);
    assert(m, text + new TextDecoder().decode(out.stderr));
    const result = JSON.parse(m[1]);
    assertEquals(result.answer, { kind: "once", by: "terminal" });
    assertEquals(result.restored, true);
    assertEquals(result.rawIcanon, false, "raw mode while running");
    assert(text.includes("20 90\r\nchild-out\r\n"), JSON.stringify(text));
    assert(text.includes("after-bar"));
    assert(text.includes("hallpass: evil^[]0;t^G (pid 5) wants to write"));
    assert(!text.includes("\x1b]0;t"), "hostile title never reaches the terminal");
  },
});
