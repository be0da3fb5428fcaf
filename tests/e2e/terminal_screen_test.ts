/**
 * The screen as a person sees it (tmux): a question while a full-screen program (less, vim) is on screen leaves
 * exactly the screen that program shows without hallpass (text, attributes, cursor); a program that keeps
 * printing while the bar is up loses nothing; text from before hallpass started is kept; a hostile path is shown
 * visibly and changes neither the screen nor the title; a resize while the bar is up redraws it and the program
 * sees the new size.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { makeScratch, Tmux, until, visibleCells } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");

async function fileIs(path: string, content: string): Promise<boolean> {
  return (await Deno.readTextFile(path).catch(() => null)) === content;
}

interface Shot {
  text: string;
  esc: string;
  cursor: string;
}

async function shot(t: Tmux): Promise<Shot> {
  return { text: await t.screen(), esc: await t.screenEsc(), cursor: await t.cursor() };
}

/**
 * Runs `program` (a sh command line that starts a background write outside the project once the test sees the
 * program drawn, then execs the full-screen program) twice: bare, and under hallpass answering `o`. `ready` says when the
 * program has drawn. Returns the screens after the write, and after `quit` keys.
 */
async function compareFullScreen(
  program: string,
  ready: (s: string) => boolean,
  quit: string[],
): Promise<{ bare: Shot[]; hp: Shot[] }> {
  const out: { bare: Shot[]; hp: Shot[] } = { bare: [], hp: [] };
  for (const mode of ["bare", "hp"] as const) {
    const dir = await makeScratch();
    const lines = Array.from({ length: 60 }, (_, i) => `line ${i} ` + "abcdefghij".repeat(i % 12)).join("\n");
    await Deno.writeTextFile(`${dir}/project/text.txt`, lines + "\n");
    const prefix = mode === "hp" ? "hp -- " : "";
    const t = await Tmux.start({
      dir,
      cols: 90,
      rows: 24,
      script: `export LESSHISTFILE=- LESS= ; ${prefix}sh -c ${
        JSON.stringify(
          `(until [ -e "$DIR/go" ]; do sleep 0.05; done; echo x > "$DIR/outside/f") & exec ${program}`,
        )
      }`,
    });
    try {
      await t.waitFor(ready, "the program to draw");
      await Deno.writeTextFile(`${dir}/go`, ""); // the write comes once the program is on screen, not after a guess
      if (mode === "hp") {
        await t.waitBar();
        await t.keys("o");
        await t.waitNoBar();
      }
      await until(() => fileIs(`${dir}/outside/f`, "x\n"), "the write");
      await t.waitStable(); // the program's redraw after the bar, if any, is over
      out[mode].push(await shot(t));
      await t.keys(...quit);
      await t.waitExit();
      out[mode].push(await shot(t));
    } finally {
      await t.close();
      await Deno.remove(dir, { recursive: true });
    }
  }
  return out;
}

test(
  {
    name: "a question while less is on screen: after the answer, the screen is less's own",
    ignore: [ignore, tool("less")],
  },
  async () => {
    const r = await compareFullScreen(
      `less text.txt`,
      (s) => s.includes("line 0") && s.includes("line 12"),
      ["q"],
    );
    assertEquals(r.hp[0].text, r.bare[0].text);
    assertEquals(await visibleCells(r.hp[0].esc, 90), await visibleCells(r.bare[0].esc, 90));
    assertEquals(r.hp[0].cursor, r.bare[0].cursor);
    // After less quits (the normal screen comes back): the same too, but for the pane-is-dead line.
    const strip = (s: string) => s.replace(/Pane is dead.*/, "");
    assertEquals(strip(r.hp[1].text), strip(r.bare[1].text));
  },
);

test({
  name: "a question while vim is on screen: after the answer, the screen is vim's own",
  ignore: [ignore, tool("vim")],
}, async () => {
  const r = await compareFullScreen(
    `vim -u NONE -i NONE -n text.txt`,
    (s) => s.includes("line 0") && s.includes("text.txt"),
    [":q!", "Enter"],
  );
  assertEquals(r.hp[0].text, r.bare[0].text);
  assertEquals(await visibleCells(r.hp[0].esc, 90), await visibleCells(r.bare[0].esc, 90));
  assertEquals(r.hp[0].cursor, r.bare[0].cursor);
});

test({ name: "a program that keeps printing while the bar is up loses no output", ignore }, async () => {
  const t = await Tmux.start({
    rows: 20,
    script: `hp -- sh -c 'i=0; while [ $i -lt 300 ]; do echo "out $i"; ` +
      `if [ $i = 50 ]; then (echo x > "$DIR/outside/f") & fi; i=$((i+1)); sleep 0.005; done; : > looped; wait; echo done'`,
  });
  try {
    await t.waitBar();
    // The loop printed all its lines behind the bar (the question is still open: `wait` waits for it).
    await t.waitFile(`${t.dir}/project/looped`);
    await t.keys("o");
    await t.waitText(/^done$/m);
    assertEquals(await t.waitExit(), 0);
    const h = (await t.history()).split("\n").filter((l) => l.startsWith("out "));
    assertEquals(h, Array.from({ length: 300 }, (_, i) => `out ${i}`));
    assert(!(await t.history()).includes("wants to write"), "no bar left in the scrollback");
  } finally {
    await t.close();
  }
});

test(
  { name: "text from before hallpass stays; the output after the bar lands below it", ignore },
  async () => {
    const t = await Tmux.start({
      rows: 12,
      script: `i=1; while [ $i -le 14 ]; do echo "pre $i"; i=$((i+1)); done; ` +
        `hp -- sh -c 'echo start; echo x > "$DIR/outside/f"; echo "r=$?"; echo end'; echo after`,
    });
    try {
      await t.waitBar();
      await t.keys("o");
      assertEquals(await t.waitExit(), 0);
      const h = (await t.history()).split("\n").filter((l) => l && !l.startsWith("Pane is dead"));
      assertEquals(h, [
        ...Array.from({ length: 14 }, (_, i) => `pre ${i + 1}`),
        "start",
        "r=0",
        "end",
        "after",
      ]);
    } finally {
      await t.close();
    }
  },
);

test(
  { name: "a path with escape sequences is shown visibly; no clear, no title change", ignore },
  async () => {
    const t = await Tmux.start({
      script:
        `echo marker-before; hp -- sh -c 'echo x > "$DIR/outside/$(printf "\\033]0;pwned\\007\\033[2J")x"; echo "r=$?"'`,
    });
    try {
      const s = await t.waitBar();
      assert(s.includes("marker-before"), "the screen was not cleared");
      const bar = Tmux.bar(s);
      assert(bar[1].includes("^[") && bar[1].includes("pwned") && bar[1].includes("[2J"), bar[1]);
      assert(!bar[1].includes("\x1b"), bar[1]);
      assert(
        (await t.display("#{pane_title}")).startsWith("hallpass: sh -c "),
        "the title says hallpass, not pwned",
      );
      await t.keys("o");
      const after = await t.waitText(/^r=0$/m);
      assert(
        after.includes("marker-before"),
        after + "\n---history\n" + await t.history() + "\n---size " +
          await t.display("#{pane_width}x#{pane_height} #{history_size}"),
      );
      assert((await t.display("#{pane_title}")) !== "pwned");
      assertEquals(await t.waitExit(), 0);
      assertEquals(await Deno.readTextFile(`${t.dir}/outside/\x1b]0;pwned\x07\x1b[2Jx`), "x\n");
    } finally {
      await t.close();
    }
  },
);

test({
  name: "resize while the bar is up: redrawn at the new width, the program sees the new size",
  ignore,
}, async () => {
  const t = await Tmux.start({
    cols: 100,
    rows: 30,
    script:
      `hp -- sh -c 'stty size; echo x > "$DIR/outside/a-rather-long-file-name-to-be-shortened-in-the-middle.txt"; ` +
      `echo "r=$?"; stty size'`,
  });
  try {
    let s = await t.waitBar();
    assert(/^30 100$/m.test(s), s);
    await t.tmux("resize-window", "-t", "hp", "-x", "60");
    s = await t.waitFor(
      (x) => {
        const b = Tmux.bar(x);
        return b.length === 5 && b.every((l) => l.length <= 60) && b[4].startsWith("[o]");
      },
      "the bar at 60 columns",
    );
    const bar = Tmux.bar(s);
    assertEquals(bar.length, 5, s);
    for (const l of s.split("\n")) assert(l.length <= 60, l);
    assert(bar[4].startsWith("[o] allow once  [t] for 5m0s"), bar[4]);
    assert(bar[1].endsWith(".txt") && bar[1].includes("…"), bar[1]); // shortened in the middle
    // hallpass sets the program's terminal size before it redraws the bar (lib/ui/pty_session.ts #resized).
    await t.keys("o");
    // Both lines after the answer (the program's second `stty size` may come a moment after "r=0").
    s = await t.waitFor((x) => /^r=0\n30 60$/m.test(x), "r=0 and the new size");
    assertEquals(await t.waitExit(), 0);
    // The line from before the question is kept once: on the screen, or in the history when the terminal's own
    // reflow of the bar's long rows pushed it up (tmux does; docs/terminal.md, Limits).
    const h = (await t.history()).split("\n").filter((l) => /^(30 100|r=0|30 60)$/.test(l));
    assertEquals(h, ["30 100", "r=0", "30 60"], await t.history());
  } finally {
    await t.close();
  }
});
