/**
 * Each key of the prompt bar, through a real terminal (tmux), reading the screen as a person sees it:
 * `[o]` once, `[t]` for a while, `[a]` always (saved, a new run does not ask), `[d]` deny (EACCES),
 * `[n]` never (saved, a new run denies without asking), and the arrow keys on the scope line.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { makeScratch, Tmux, until, withPane } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");

function pane(script: string, fn: (t: Tmux) => Promise<void>, dir?: string): Promise<void> {
  return withPane({ script, dir }, fn);
}

async function rulesFile(dir: string): Promise<string> {
  return await Deno.readTextFile(`${dir}/xdg/hallpass/rules`).catch(() => "");
}

test(
  { name: "terminal key [o]: the write happens once, the same write by another process asks again", ignore },
  async () => {
    await pane(
      // A subshell: another process (the same process asking again within 3 s gets the answer it just had).
      `hp -- sh -c 'echo one > "$DIR/outside/f"; echo "r1=$?"; (echo two > "$DIR/outside/f"); echo "r2=$?"'`,
      async (t) => {
        const s = await t.waitBar();
        const bar = Tmux.bar(s);
        assertEquals(bar.length, 5, s);
        assert(/^hallpass: \S+ \(pid \d+(, calls itself "sh")?\) wants to write$/.test(bar[0]), bar[0]);
        assertEquals(bar[1], `${t.dir}/outside/f`);
        assert(/^by( \(their words\))?: sh -c echo one/.test(bar[2]), bar[2]);
        assert(bar[3].startsWith("[t] [a] [n] apply to: "), bar[3]);
        assertEquals(bar[4], "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help");
        await t.keys("o");
        await until(
          async () => await Deno.readTextFile(`${t.dir}/outside/f`).catch(() => "") === "one\n",
          "the write",
        );
        await t.waitBar(); // asked again (the output "r1=0" may be held back while the bar is up)
        await t.keys("o");
        const after = await t.waitText(/^r2=0$/m);
        assert(/^r1=0$/m.test(after), after);
        assertEquals(await t.waitExit(), 0);
        assertEquals(await Deno.readTextFile(`${t.dir}/outside/f`), "two\n");
        assertEquals(await rulesFile(t.dir), "", "[o] saves nothing");
      },
    );
  },
);

test({ name: "terminal key [t]: a second write in the scope does not ask", ignore }, async () => {
  const dir = await makeScratch();
  await Deno.mkdir(`${dir}/outside/d`);
  await pane(
    `hp -- sh -c 'echo one > "$DIR/outside/d/f"; echo "r1=$?"; echo two > "$DIR/outside/d/g"; echo "r2=$?"; ` +
      `echo three > "$DIR/outside/h"; echo "r3=$?"'`,
    async (t) => {
      let s = await t.waitBar();
      // Widen the scope to the directory, then [t].
      while (Tmux.scope(s) !== `${dir}/outside/d/**`) {
        await t.keys("Left");
        s = await t.waitFor((x) => Tmux.scope(x) !== Tmux.scope(s), "the scope to change");
      }
      await t.keys("t");
      // Outside that scope: asks (the program's output from before may still be held back while the bar is up).
      s = await t.waitFor((x) => Tmux.bar(x)[1] === `${dir}/outside/h`, "the question about h");
      await t.waitBar();
      await t.keys("d");
      s = await t.waitText(/^r3=\d/m);
      assert(/^r2=0$/m.test(s), s);
      assertEquals(await t.waitExit(), 0);
      assertEquals(await Deno.readTextFile(`${dir}/outside/d/g`), "two\n");
      assertEquals(await rulesFile(dir), "", "[t] saves nothing");
    },
    dir,
  );
  await Deno.remove(dir, { recursive: true });
});

test(
  { name: "terminal key [a]: saved in the rules file; a new hallpass run does not ask", ignore },
  async () => {
    const dir = await makeScratch();
    try {
      await pane(`hp -- sh -c 'echo one > "$DIR/outside/f"; echo "r1=$?"'`, async (t) => {
        const s = await t.waitBar();
        assertEquals(Tmux.scope(s), `${dir}/outside/f`);
        await t.keys("a");
        await t.waitText("r1=0");
        assertEquals(await t.waitExit(), 0);
      }, dir);
      const rules = await rulesFile(dir);
      assert(rules.split("\n").some((l) => l.startsWith(`allow write ${dir}/outside/f`)), rules);
      await Deno.remove(`${dir}/pane.rc`);
      // A new run: no question, the write goes through.
      await pane(`hp -- sh -c 'echo two > "$DIR/outside/f"; echo "r2=$?"; sleep 0.3'`, async (t) => {
        const s = await t.waitText(/^r2=\d/m);
        assert(!s.includes("wants to"), s);
        assert(s.includes("r2=0"), s);
        assertEquals(await t.waitExit(), 0);
        assertEquals(await Deno.readTextFile(`${dir}/outside/f`), "two\n");
      }, dir);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

test({ name: "terminal key [d]: EACCES, the program prints Permission denied", ignore }, async () => {
  await pane(`hp -- sh -c 'echo one > "$DIR/outside/f"; echo "r1=$?"'`, async (t) => {
    await t.waitBar();
    await t.keys("d");
    const s = await t.waitText(/^r1=\d/m);
    assert(/Permission denied/.test(s), s);
    assert(s.includes("r1=2"), s);
    assertEquals(await t.waitExit(), 0);
    assertEquals(await rulesFile(t.dir), "", "[d] saves nothing");
  });
});

test(
  { name: "terminal key [n]: saved as deny; the next run denies without asking", ignore },
  async () => {
    const dir = await makeScratch();
    try {
      await pane(`hp -- sh -c 'echo one > "$DIR/outside/f"; echo "r1=$?"'`, async (t) => {
        await t.waitBar();
        await t.keys("n");
        const s = await t.waitText(/^r1=\d/m);
        assert(/Permission denied/.test(s), s);
        assertEquals(await t.waitExit(), 0);
      }, dir);
      const rules = await rulesFile(dir);
      assert(rules.split("\n").some((l) => l.startsWith(`deny write ${dir}/outside/f`)), rules);
      await Deno.remove(`${dir}/pane.rc`);
      await pane(`hp -- sh -c 'echo two > "$DIR/outside/f"; echo "r2=$?"; sleep 0.3'`, async (t) => {
        const s = await t.waitText(/^r2=\d/m);
        assert(!s.includes("wants to"), s);
        assert(/Permission denied/.test(s) && s.includes("r2=2"), s);
        assertEquals(await t.waitExit(), 0);
      }, dir);
      assert(!(await Deno.stat(`${dir}/outside/f`).then(() => true, () => false)));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);

test(
  { name: "terminal arrow keys widen and narrow the scope; [a] saves the widened scope", ignore },
  async () => {
    const dir = await makeScratch();
    await Deno.mkdir(`${dir}/outside/a/b`, { recursive: true });
    const f = `${dir}/outside/a/b/f`;
    try {
      await pane(
        `hp -- sh -c 'echo one > "$DIR/outside/a/b/f"; echo "r1=$?"; echo two > "$DIR/outside/a/g"; echo "r2=$?"'`,
        async (t) => {
          let s = await t.waitBar();
          const seen = [Tmux.scope(s)];
          assertEquals(seen[0], f);
          const step = async (key: string) => {
            const before = Tmux.scope(s);
            await t.keys(key);
            s = await t.waitFor((x) => Tmux.scope(x) !== before, `${key} to change the scope`);
            return Tmux.scope(s);
          };
          assertEquals(await step("Left"), `${dir}/outside/a/b/**`);
          assertEquals(await step("Left"), `${dir}/outside/a/**`);
          assertEquals(await step("Left"), `${dir}/outside/**`);
          assertEquals(await step("Right"), `${dir}/outside/a/**`);
          assertEquals(await step("Right"), `${dir}/outside/a/b/**`);
          assertEquals(await step("Left"), `${dir}/outside/a/**`);
          // The rest of the bar did not change while the scope moved.
          assertEquals(Tmux.bar(s)[1], f);
          await t.keys("a");
          await t.waitText("r2=0"); // the second write is in the saved scope: no question
          assert(!(await t.screen()).includes("wants to"));
          assertEquals(await t.waitExit(), 0);
        },
        dir,
      );
      const rules = await rulesFile(dir);
      assert(rules.split("\n").some((l) => l.startsWith(`allow write ${dir}/outside/a/**`)), rules);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
