/**
 * The terminal without hallpass's pty (docs/threat-model.md "The terminal"): when stdin or stdout is a pipe and
 * another of fds 0-2 is the person's terminal (`hallpass -- cmd | tee log`, `echo x | hallpass -- cmd`), the
 * command wrote the terminal raw, through the inherited fds (a terminal fd is open read-write: even fd 0) and
 * `/dev/tty`, so an OSC 52 set the clipboard the person pastes next. Judged from outside: tmux's paste buffers
 * (`set-clipboard on`: tmux keeps what OSC 52 sets) and the screen, with the same script bare first (the
 * control: each channel does reach the clipboard without hallpass).
 */
import { ok as assert } from "node:assert/strict";
import { test, tool } from "../helpers/skip.ts";
import { HALLPASS, type Tmux, until, withPane } from "./tmux.ts";

/** An OSC 52 write of `PW-<name>` through `redirect` (a shell redirection; "" for fd 1). */
function osc(name: string, redirect: string): string {
  return String.raw`printf 'A\033]52;c;${btoa(`PW-${name}`)}\007B\n'` + (redirect ? ` ${redirect}` : "");
}
const CHANNELS: Record<string, string> = {
  fd1: "",
  fd2: ">&2",
  fd0: ">&0",
  tty: ">/dev/tty",
  // The terminal by its own path, and fd 0 reopened for writing through /proc.
  path: `>"$(tty)"`,
  proc0: ">/proc/self/fd/0",
};

async function buffers(t: Tmux): Promise<string> {
  const names = (await t.tmux("list-buffers", "-F", "#{buffer_name}").catch(() => "")).split("\n").filter(
    Boolean,
  );
  let all = "";
  for (const n of names) all += await t.tmux("show-buffer", "-b", n).catch(() => "") + "\n";
  return all;
}

async function clearBuffers(t: Tmux): Promise<void> {
  const names = (await t.tmux("list-buffers", "-F", "#{buffer_name}").catch(() => "")).split("\n").filter(
    Boolean,
  );
  for (const n of names) await t.tmux("delete-buffer", "-b", n).catch(() => {});
}

/** The pipe layouts: how the command is run (`CMD` is replaced), and which channels are the terminal there. */
const LAYOUTS: { name: string; run: string; channels: string[] }[] = [
  {
    name: "stdout a pipe (cmd | cat > file)",
    run: `CMD | cat > "$DIR/out"`,
    channels: ["fd0", "fd2", "tty", "path", "proc0"],
  },
  { name: "stdin a pipe (echo x | cmd)", run: `echo x | CMD`, channels: ["fd1", "fd2", "tty"] },
  {
    name: "only stderr the terminal (cmd < /dev/null > file)",
    run: `CMD < /dev/null > "$DIR/out"`,
    channels: [
      "fd2",
      "tty",
    ],
  },
  {
    name: "only stdin the terminal (cmd 2>&1 | cat > file)",
    run: `CMD 2>&1 | cat > "$DIR/out"`,
    channels: ["fd0", "tty", "path", "proc0"],
  },
];

for (const layout of LAYOUTS) {
  test({
    name: `no clipboard write reaches the terminal without the pty: ${layout.name}`,
    ignore: tool("tmux"),
    async fn() {
      const body = layout.channels.map((c) => osc(c, CHANNELS[c]) + "; ").join("");
      const cmd = (prefix: string) => layout.run.replace("CMD", `${prefix}sh -c ${JSON.stringify(body)}`);
      await withPane({
        script: [
          `until [ -e "$DIR/go" ]; do sleep 0.05; done`,
          cmd(""),
          `echo control-done`,
          `until [ -e "$DIR/go2" ]; do sleep 0.05; done`,
          cmd("hp -q -- "),
          `echo sandbox-done`,
        ].join("\n"),
      }, async (t) => {
        await t.tmux("set", "-g", "set-clipboard", "on");
        await Deno.writeTextFile(`${t.dir}/go`, "");
        await until(async () => (await t.screen()).includes("control-done"), "the control");
        const ctl = await buffers(t);
        for (const c of layout.channels) {
          assert(
            ctl.includes(`PW-${c}`),
            `control: OSC 52 through ${c} did not set tmux's buffer bare (${ctl})`,
          );
        }
        await clearBuffers(t);
        await Deno.writeTextFile(`${t.dir}/go2`, "");
        await until(async () => (await t.screen()).includes("sandbox-done"), "the sandboxed printfs");
        const buf = await buffers(t);
        assert(!buf.includes("PW-"), `the sandbox set the clipboard (${layout.name}): ${buf}`);
        // The text around the removed strings still reached the terminal where the channel is an output (fd 1/2).
        const outs = layout.channels.filter((c) => c === "fd1" || c === "fd2").length;
        if (outs > 0) {
          const screen = await t.screen();
          assert(screen.split("AB").length - 1 >= 2 * outs, `the sandboxed output did not show:\n${screen}`);
        }
      });
    },
  });
}

test({
  name: "without the pty, the command's terminal fds are still terminals, and colours pass",
  ignore: tool("tmux"),
  async fn() {
    await withPane({
      script: [
        `echo x | hp -q -- sh -c '[ -t 1 ] && echo one-is-tty; [ -t 2 ] && echo two-is-tty >&2; ` +
        String
          .raw`printf "\033[31mRED\033[0m\n"; echo by-path-out > /dev/stdout; echo by-path-err > /dev/stderr; ` +
        String.raw`echo "size=$(stty -F /dev/stderr size)"'`,
        `hp -q -- sh -c '[ -t 0 ] && echo zero-is-tty >&2; [ -t 2 ] && echo two-too >&2' | cat > "$DIR/out"`,
        `echo all-done`,
      ].join("\n"),
    }, async (t) => {
      const s = await t.waitFor((s) => s.includes("all-done"), "the commands");
      for (
        const w of [
          "one-is-tty",
          "two-is-tty",
          "zero-is-tty",
          "two-too",
          "by-path-out",
          "by-path-err",
          "size=30 100",
        ]
      ) {
        assert(s.includes(w), `${w}:\n${s}`);
      }
      const esc = await t.screenEsc();
      assert(esc.includes("\x1b[31mRED"), `no red:\n${esc}`);
    });
  },
});

test({
  name: "without the pty, the command reads keys from fd 0, and Ctrl-C ends it",
  ignore: tool("tmux"),
  async fn() {
    await withPane({
      script: [
        // The pane's shell has no job control: it gets the Ctrl-C too (a trap, reset to default in its children).
        `trap 'true' INT`,
        `stty -a > "$DIR/stty.before"`,
        `hp -q -- sh -c 'echo ready >&2; read k; echo "got=$k"' | cat > "$DIR/out"`,
        `echo read-done`,
        `hp -q -- sh -c 'echo sleeping >&2; exec sleep 100' | cat`,
        `echo "after-c=$?"`,
        `hp -q -- sh -c 'stty raw -echo; echo raw-set >&2' | cat > /dev/null`,
        `stty -a > "$DIR/stty.after"`,
        `echo all-done`,
      ].join("\n"),
    }, async (t) => {
      await t.waitFor((s) => s.includes("ready"), "the reader");
      await t.type("hello");
      await t.keys("Enter");
      await t.waitFor((s) => s.includes("read-done"), "the reader's end");
      assert((await Deno.readTextFile(`${t.dir}/out`)).includes("got=hello"), "the key read through fd 0");
      await t.waitFor((s) => s.includes("sleeping"), "the sleeper");
      await t.keys("C-c");
      const s = await t.waitFor((s) => s.includes("all-done"), "the end after Ctrl-C");
      assert(/after-c=1[23]\d/.test(s), `Ctrl-C did not end the command:\n${s}`);
      const [a, b] = [
        await Deno.readTextFile(`${t.dir}/stty.before`),
        await Deno.readTextFile(`${t.dir}/stty.after`),
      ];
      assert(a === b, `the terminal's modes changed:\n${a}\n---\n${b}`);
    });
  },
});

test({
  name: "without the pty, `| less` and `cat | wc` work as bare",
  ignore: tool("tmux"),
  async fn() {
    await withPane({
      script: [
        `hp -q -- seq 1 500 | less`,
        `echo less-done`,
        `hp -q -- cat | wc -c`,
        `echo all-done`,
      ].join("\n"),
    }, async (t) => {
      await t.waitFor((s) => /^1\n2\n3\n/.test(s), "less showing the start");
      await t.keys("G");
      await t.waitFor((s) => s.includes("500"), "less at the end");
      await t.keys("q");
      await t.waitFor((s) => s.includes("less-done"), "less gone");
      await t.type("abc");
      await t.keys("Enter");
      await t.waitFor((s) => s.includes("abc"), "the echo of what was typed");
      await t.keys("C-d");
      const s = await t.waitFor((s) => s.includes("all-done"), "wc");
      assert(/^\s*4$/m.test(s), `wc did not count the line:\n${s}`);
    });
  },
});

test({
  name: "without the pty, the modes a pager set while the command ran stay the pager's (`| less`)",
  ignore: tool("tmux"),
  async fn() {
    await withPane({
      script: [
        // hallpass starts (and sees the modes) before less sets its own; the command ends after.
        `hpp -q -- sh -c 'echo started >&2; until [ -e "$DIR/go" ]; do sleep 0.05; done; seq 1 500' | ` +
        `{ until [ -e "$DIR/less" ]; do sleep 0.05; done; exec less; }`,
        `echo less-done`,
      ].join("\n"),
    }, async (t) => {
      await t.waitFor((s) => s.includes("started"), "the command");
      const tty = await t.display("#{pane_tty}");
      const modes = async () =>
        new TextDecoder().decode(
          (await new Deno.Command("stty", { args: ["-F", tty, "-a"] }).output()).stdout,
        );
      await Deno.writeTextFile(`${t.dir}/less`, "");
      await until(async () => /-icanon/.test(await modes()), "less's raw mode");
      await Deno.writeTextFile(`${t.dir}/go`, "");
      await t.waitFor((s) => /^1\n2\n3\n/.test(s), "less showing the start");
      const pid = (await Deno.readTextFile(`${t.dir}/hp.pid`)).trim();
      await until(
        async () => !(await Deno.stat(`/proc/${pid}`).then(() => true, () => false)),
        "hallpass's exit",
      );
      await t.keys("G"); // one key, no Enter: read only in less's raw mode
      await t.waitFor((s) => s.includes("500"), "less at the end");
      await t.keys("q");
      await t.waitFor((s) => s.includes("less-done"), "less gone");
    });
  },
});

test({
  name: "without the pty, job control is the shell's: Ctrl-Z and fg, a background reader stopped by SIGTTIN",
  ignore: tool("tmux") ?? tool("bash"),
  async fn() {
    await withPane({
      // set -b: bash says a job stopped as it happens (not at the next prompt).
      script: `PS1='$ ' exec bash --norc --noprofile -i`,
    }, async (t) => {
      await t.waitFor((s) => s.includes("$"), "bash's prompt");
      await t.type("set -b");
      await t.keys("Enter");
      // Counted in the history too: a long command line wraps, and the screen scrolls.
      const stopped = async () => (await t.history()).split("Stopped").length - 1;
      await t.type(
        // What the job prints is not in its command line (which bash shows): went-2, sl-ept.
        `${HALLPASS} -q -- sh -c 'trap "echo went-$((1+1)) >&2" CONT; echo sl""ept >&2; while :; do sleep 0.1; done' | cat`,
      );
      await t.keys("Enter");
      await t.waitFor((s) => s.includes("slept"), "the command");
      const prompts = async () => ((await t.history()).match(/^\$(?: |$)/gm) ?? []).length;
      const before = await prompts();
      await t.keys("C-z");
      await until(async () => (await stopped()) >= 1, "the job stopped");
      await until(async () => (await prompts()) > before, "bash's prompt after the stop");
      await t.type("fg");
      await t.keys("Enter");
      await t.waitFor((s) => s.includes("went-2"), "the job in the foreground again");
      const running = await prompts();
      await t.keys("C-c");
      await until(async () => (await prompts()) > running, "bash's prompt after Ctrl-C");
      await t.type("echo fg-done");
      await t.keys("Enter");
      await t.waitFor((s) => /^fg-done$/m.test(s), "the job ended by Ctrl-C");
      // A background job reading the terminal through fd 0 is stopped (SIGTTIN), as without hallpass.
      const stops = await stopped();
      await t.type(`${HALLPASS} -q -- cat | cat > /dev/null &`);
      await t.keys("Enter");
      await until(async () => (await stopped()) > stops, "the background reader stopped (SIGTTIN)");
      await t.type("kill -9 %1; echo bg-done");
      await t.keys("Enter");
      await t.waitFor((s) => /^bg-done$/m.test(s), "the background job killed");
    });
  },
});

test({
  name:
    "without the pty, the output pty follows the terminal's size, and all output is shown before the exit",
  ignore: tool("tmux"),
  async fn() {
    await withPane({
      script: [
        `echo x | hp -q -- sh -c 'echo "before=$(stty -F /dev/stderr size)"; ` +
        `while [ "$(stty -F /dev/stderr size)" != "30 60" ]; do sleep 0.05; done; echo resized-ok'`,
        `echo all-done`,
        `echo x | hp -q -- seq 1 30000`,
        `echo seq-done`,
      ].join("\n"),
    }, async (t) => {
      await t.waitFor((s) => s.includes("before=30 100"), "the first size");
      await t.tmux("resize-window", "-t", "hp", "-x", "60");
      await t.waitFor(
        (s) => s.includes("resized-ok") && s.includes("all-done"),
        "the new size in the output pty",
      );
      // All of a long output is on the terminal before hallpass exits (drained at exit, in order).
      await t.waitFor((s) => s.includes("seq-done"), "seq");
      assert(/^30000\nseq-done$/m.test(await t.history()), "the end of seq's output before the next line");
    });
  },
});
