/**
 * hallpass-request through the terminal prompt (tmux, read as a person sees it): the bar shows the request's
 * reason marked as the program's words; `[o]` grants (exit 0) and the scope is then allowed without a question;
 * `[d]` denies (exit 3).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { q, Tmux, withPane } from "./tmux.ts";
import { requestBin } from "./request_harness.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");

function pane(script: string, fn: (t: Tmux) => Promise<void>): Promise<void> {
  return withPane({ script }, fn);
}

test({
  name: "request in the terminal: the reason is shown as the program's words; [o] grants (0)",
  ignore,
}, async () => {
  const bin = await requestBin();
  await pane(
    `PATH=/usr/local/bin:/usr/bin:/bin; export PATH
hp --allow-exec ${
      q(bin)
    } -- sh -c 'R=${bin}; "$R" write "$DIR/outside/**" --reason "npm install fills its cache"; echo "rc1=$?"; ` +
      `echo x > "$DIR/outside/f" && echo "w=ok"; "$R" check write "$DIR/outside/**"; echo "rc2=$?"'`,
    async (t) => {
      const s = await t.waitBar();
      const bar = Tmux.bar(s);
      // Who asks: the executable the kernel runs (its path), not a name the program chose.
      assert(/^hallpass: \/\S*\/hallpass-request \(pid \d+\) wants to write$/.test(bar[0]), s);
      assert(s.includes(`reason (the program's words): "npm install fills its cache"`), s);
      assert(bar.includes(`${t.dir}/outside/**`), s);
      assert(s.includes("[o] allow for the session"), s); // what [o] grants a request, not "once"
      await t.keys("o");
      const after = await t.waitText(/^rc2=\d+$/m);
      assert(/^rc1=0$/m.test(after), after);
      assert(/^w=ok$/m.test(after), after);
      assert(/^rc2=1$/m.test(after), after);
      assert(!after.includes("[o] allow "), "no second question");
      assertEquals(await t.waitExit(), 0);
      assertEquals(await Deno.readTextFile(`${t.dir}/outside/f`), "x\n");
    },
  );
});

test({
  name: "request in the terminal: [d] denies (3); an escape in the reason is refused before asking",
  ignore,
}, async () => {
  const bin = await requestBin();
  await pane(
    `PATH=/usr/local/bin:/usr/bin:/bin; export PATH
hp --allow-exec ${
      q(bin)
    } -- sh -c 'R=${bin}; "$R" write "$DIR/outside/x" --reason "$(printf "evil\\033[2J")"; echo "rc0=$?"; ` +
      `"$R" write "$DIR/outside/x" --reason "need x"; echo "rc1=$?"'`,
    async (t) => {
      const s = await t.waitBar();
      assert(s.includes(`reason (the program's words): "need x"`), s);
      assert(/^rc0=6$/m.test(await t.history()), await t.history());
      await t.keys("d");
      await t.waitText(/^rc1=\d+$/m);
      const h = await t.history();
      assert(/^rc1=3$/m.test(h), h);
      assertEquals(await t.waitExit(), 0);
    },
  );
});

test({
  name: "request in the terminal: nobody answers within --timeout 2s: exit 4 (ETIMEDOUT), nothing granted",
  ignore,
}, async () => {
  const bin = await requestBin();
  await pane(
    `PATH=/usr/local/bin:/usr/bin:/bin; export PATH
hp --allow-exec ${q(bin)} -- sh -c 'R=${bin}; "$R" write "$DIR/outside/x" --timeout 2s; echo "rc=$?"; ` +
      `echo y > "$DIR/outside/x" 2>/dev/null; echo "w=$?"; "$R" check write "$DIR/outside/x"; echo "c=$?"'`,
    async (t) => {
      await t.waitBar();
      // Nobody answers: the request's own timeout settles it; the bar goes on to the write's own question.
      await t.waitText(/^rc=\d+$/m);
      assert(/^rc=4$/m.test(await t.history()), await t.history());
      await t.waitBar();
      await t.keys("d");
      await t.waitText(/^c=\d+$/m);
      const h = await t.history();
      // Nothing was granted: the write asked (denied with [d]) and `check` says a request would ask (5).
      assert(/^w=[1-9]/m.test(h) && /^c=5$/m.test(h), h);
      assertEquals(await t.waitExit(), 0);
    },
  );
});
