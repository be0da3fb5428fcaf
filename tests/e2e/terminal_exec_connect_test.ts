/**
 * The bar for the other two categories (docs/terminal.md), through a real terminal: a program run (line 1 "wants to
 * run", line 2 the program and its arguments, the warning that the sandbox can write it) and a connect
 * (line 1 "wants to connect to", line 2 the destination). Answered with [o] and [d].
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { makeScratch, Tmux, withPane } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");

function pane(script: string, fn: (t: Tmux) => Promise<void>, dir?: string): Promise<void> {
  return withPane({ script, dir, cols: 120 }, fn);
}

test({
  name: "terminal: a program written into the project asks to run, with its arguments and the warning",
  ignore,
}, async () => {
  const dir = await makeScratch();
  await Deno.writeTextFile(`${dir}/project/tool.sh`, '#!/bin/sh\necho tool ran with "$@"\n');
  await Deno.chmod(`${dir}/project/tool.sh`, 0o755);
  await pane(
    `PATH=/usr/local/bin:/usr/bin:/bin hp -- sh -c './tool.sh alpha beta; echo "rc=$?"; ./tool.sh again; echo "rc2=$?"'`,
    async (t) => {
      const s = await t.waitBar();
      const bar = Tmux.bar(s);
      assert(/^warning: the sandbox can write this program/m.test(s), s);
      const i = bar.findIndex((l) =>
        /^hallpass: \/\S+ \(pid \d+(, calls itself "sh")?\) wants to run$/.test(l)
      );
      assert(i >= 0, s);
      assertEquals(bar[i + 1], `${t.dir}/project/tool.sh alpha beta`);
      await t.keys("o");
      await t.waitText(/^tool ran with alpha beta$/m);
      await t.waitBar(); // once: the next run asks again
      await t.keys("d");
      const after = await t.waitText(/^rc2=126$/m);
      assert(/^rc=0$/m.test(after), after);
      assertEquals(await t.waitExit(), 0);
    },
    dir,
  );
});

test(
  { name: "terminal: a connect asks with the destination; [o] connects, [d] refuses", ignore },
  async () => {
    const dir = await makeScratch();
    // A one-shot TCP server on loopback, outside hallpass, that answers "hello" to every connection.
    const server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (server.addr as Deno.NetAddr).port;
    (async () => {
      for await (const c of server) {
        await c.write(new TextEncoder().encode("hello\n")).catch(() => {});
        c.close();
      }
    })();
    const py = `import socket,sys
s=socket.socket()
try:
    s.connect(("127.0.0.1",${port})); print("got", s.recv(10).decode().strip())
except OSError as e:
    print("errno", e.errno)`;
    await Deno.writeTextFile(`${dir}/project/c.py`, py);
    try {
      await pane(
        `PATH=/usr/local/bin:/usr/bin:/bin hp --mediate write,exec,connect -- sh -c 'python3 c.py; python3 c.py'`,
        async (t) => {
          const s = await t.waitBar();
          const bar = Tmux.bar(s);
          const i = bar.findIndex((l) =>
            /^hallpass: \/\S*python3\S* \(pid \d+(, calls itself "python3")?\) wants to connect to$/.test(l)
          );
          assert(i >= 0, s);
          assertEquals(bar[i + 1], `tcp:127.0.0.1:${port}`);
          await t.keys("o");
          await t.waitText(/^got hello$/m);
          await t.waitBar();
          await t.keys("d");
          await t.waitText(/^errno 13$/m);
          assertEquals(await t.waitExit(), 0);
        },
        dir,
      );
    } finally {
      server.close();
    }
  },
);
