/**
 * The session through a real terminal (tmux): several questions at once, a flood, `kill -TERM` of hallpass
 * with the bar up, Ctrl-C, Ctrl-Z / fg in an interactive shell, and the command's exit status.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { pgrep, pgrepExact, procState, Tmux, until, withPane } from "./tmux.ts";
import { HALLPASS_BIN } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");

function pane(o: { script: string; rows?: number }, fn: (t: Tmux) => Promise<void>): Promise<void> {
  return withPane(o, fn);
}

test(
  { name: "two processes asking at once: the bar counts the other; both are answered", ignore },
  async () => {
    await pane({
      script:
        `hp -- sh -c '(echo a > "$DIR/outside/a"; echo "ra=$?") & (echo b > "$DIR/outside/b"; echo "rb=$?") & wait'`,
    }, async (t) => {
      const s = await t.waitFor((x) => x.includes("(+1 more)"), "the count of the other question");
      const first = Tmux.bar(s)[1];
      assert(first.endsWith("/outside/a") || first.endsWith("/outside/b"), first);
      await Tmux.pastArmDelay();
      await t.keys("o");
      const s2 = await t.waitFor(
        (x) => Tmux.bar(x).length === 5 && Tmux.bar(x)[1] !== first,
        "the second question",
      );
      assert(!s2.includes("more)"), s2);
      await Tmux.pastArmDelay();
      await t.keys("o");
      const done = await t.waitFor((x) => /^ra=0$/m.test(x) && /^rb=0$/m.test(x), "both answered");
      assert(!done.includes("wants to"), done);
      assertEquals(await t.waitExit(), 0);
      assertEquals(await Deno.readTextFile(`${t.dir}/outside/a`), "a\n");
      assertEquals(await Deno.readTextFile(`${t.dir}/outside/b`), "b\n");
    });
  },
);

test({
  name: "a flood of 200 questions: the person can answer, [D] denies that pid, the terminal works",
  ignore,
}, async () => {
  await pane({
    script:
      `hp -- sh -c 'i=0; while [ $i -lt 200 ]; do echo x > "$DIR/outside/f$i" 2>/dev/null; i=$((i+1)); done; echo flood-done'; ` +
      `echo "rc=$?"; printf "type: "; read line; echo "got:$line"`,
  }, async (t) => {
    let s = await t.waitBar();
    assert(Tmux.bar(s)[1].endsWith("/outside/f0"), s);
    await t.keys("o"); // answered like any other
    s = await t.waitFor((x) => Tmux.bar(x)[1]?.endsWith("/outside/f1"), "the next question");
    await Tmux.pastArmDelay();
    await t.keys("D");
    // [D] denies this and everything that pid asks later: the rest of the loop does not hold the person.
    s = await t.waitText(/^rc=0$/m, 20_000);
    assert(!s.includes("wants to"), s);
    assertEquals(await Deno.readTextFile(`${t.dir}/outside/f0`), "x\n");
    const written = [...Deno.readDirSync(`${t.dir}/outside`)].map((e) => e.name);
    assertEquals(written, ["f0"]);
    await t.waitText(/^type:/m);
    await t.type("hello");
    await t.keys("Enter");
    await t.waitText(/^got:hello$/m);
    assertEquals(await t.waitExit(), 0);
  });
});

test(
  { name: "kill -TERM of hallpass with the bar up: terminal restored, the command gone", ignore },
  async () => {
    const marker = `hp-term-${Deno.pid}-${Date.now()}`;
    await pane({
      script:
        `hpp -- sh -c 'echo x > "$DIR/outside/f"; sleep 30' ${marker}; echo "rc=$?"; stty -a > "$DIR/stty.txt" 2>&1`,
    }, async (t) => {
      await t.waitBar();
      const hp = [Number((await Deno.readTextFile(`${t.dir}/hp.pid`)).trim())];
      const cmdline = await Deno.readTextFile(`/proc/${hp[0]}/cmdline`);
      assert(cmdline.includes(HALLPASS_BIN ?? "main.ts"), `hallpass is pid ${hp[0]}: ${cmdline}`);
      Deno.kill(hp[0], "SIGTERM");
      const s = await t.waitText(/^rc=\d+$/m);
      assert(/^rc=143$/m.test(s), s);
      await t.waitExit(); // then stty.txt is complete
      const stty = await Deno.readTextFile(`${t.dir}/stty.txt`);
      assert(/(^|\s)icanon(\s|$)/.test(stty) && /(^|\s)echo(\s|$)/.test(stty), stty);
      await until(async () => (await pgrep(marker)).length === 0, "the command to be gone", 10_000);
      assert(
        !(await Deno.stat(`${t.dir}/outside/f`).then(() => true, () => false)),
        "the write did not happen",
      );
    });
  },
);

test({ name: "Ctrl-C in the program: exit 130", ignore }, async () => {
  const marker = `sleep 30.${Deno.pid % 1000}`; // this test's own sleep
  await pane({ script: `hp -- sh -c 'echo ready; ${marker}'; echo "rc=$?"` }, async (t) => {
    await t.waitText(/^ready$/m);
    await until(async () => (await pgrepExact(marker)).length > 0, "the command's sleep to start");
    await t.keys("C-c");
    await t.waitText(/rc=130$/m); // after the ^C the terminal echoed, as without hallpass
  });
});

test({ name: "the command's exit status is hallpass's", ignore }, async () => {
  await pane({ script: `hp -- sh -c 'exit 7'; echo "rc=$?"` }, async (t) => {
    await t.waitText(/^rc=7$/m);
  });
});

test({
  name: "Ctrl-Z and fg in an interactive sh under hallpass (job control inside the sandbox)",
  ignore,
}, async () => {
  await pane({ script: `PS1='$ ' hp; echo "rc=$?"` }, async (t) => {
    await t.waitText(/^\$$/m);
    const marker = `sleep 31.${Deno.pid % 1000}`; // this test's own sleep
    await t.type(marker);
    await t.keys("Enter");
    let pids: number[] = [];
    await until(async () => (pids = await pgrepExact(marker)).length > 0, "the job to start");
    await t.keys("C-z");
    let s = await t.waitText(/Stopped/);
    await t.type("jobs");
    await t.keys("Enter");
    s = await t.waitFor((x) => (x.match(/Stopped/g) ?? []).length >= 2, "jobs to list the stopped job");
    await until(() => procState(pids[0]) === "T", "the job to be stopped");
    await t.type("fg");
    await t.keys("Enter");
    await until(() => !["T", ""].includes(procState(pids[0])), "the job to run again");
    await t.keys("C-c");
    s = await t.waitFor(
      (x) => /\^C\n\$$/.test(x.trimEnd()),
      "the prompt back after Ctrl-C in the resumed job",
    );
    assert(new RegExp(`^${marker}$`, "m").test(s), s); // fg names the job it resumes
    await t.type("exit 5");
    await t.keys("Enter");
    await t.waitText(/^rc=5$/m);
  });
});
