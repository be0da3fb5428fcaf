import assert, { deepStrictEqual as assertEquals } from "node:assert/strict";
import xterm from "@xterm/headless";
import type { BarController, BarHost } from "../lib/ui/pty_session.ts";
import { TerminalAsk } from "../lib/ask/terminal_ask.ts";
import { ScreenGate, ScreenMirror } from "../lib/ui/screen.ts";
import type { Answer, Question } from "../lib/types.ts";
import { splitKeys } from "../lib/ui/prompt_bar.ts";

type Term = InstanceType<typeof xterm.Terminal>;

class FakeHost implements BarHost {
  readonly term: Term;
  readonly gate: ScreenGate;
  bar: BarController | null = null;
  constructor(readonly cols = 100, readonly rows = 12) {
    this.term = new xterm.Terminal({ cols, rows, allowProposedApi: true });
    this.gate = new ScreenGate(
      new ScreenMirror(cols, rows),
      (d) => new Promise<void>((r) => this.term.write(d, r)),
    );
  }
  size() {
    return { cols: this.cols, rows: this.rows };
  }
  setBar(bar: BarController | null) {
    this.bar = bar;
  }
  async screen(): Promise<string[]> {
    await this.gate.flushed();
    const b = this.term.buffer.active;
    return Array.from(
      { length: this.rows },
      (_, y) => b.getLine(b.baseY + y)!.translateToString(true).trimEnd(),
    );
  }
  /** Bytes the bar passed on to the program. */
  sent: string[] = [];
  sendToProgram(bytes: Uint8Array) {
    this.sent.push(new TextDecoder().decode(bytes));
  }
  /** `k` as one read from the terminal. */
  key(k: string) {
    assert(this.bar, "bar is up");
    const keys = splitKeys(k);
    this.bar.onKeys(keys, keys.length === 1);
  }
}

let nextId = 1;
function question(pid: number, target: string, op: Question["op"] = "write"): Question {
  return {
    id: nextId++,
    op,
    pid,
    name: "node",
    target,
    syscall: "openat",
    chain: ["npm install"],
    suggestedScope: "/home/me/.npm",
    scopes: [target, "/home/me/.npm", "/home/me"],
  };
}

const tick = () => new Promise((r) => setTimeout(r, 5));
const never = () => new AbortController().signal;

Deno.test("questions queue, one shown at a time with the count; answers go to the right question", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 300_000, armDelayMs: 0 });
  host.gate.output(new TextEncoder().encode("program text\r\n"));
  const p1 = ask.ask(question(10, "/a"), never());
  const p2 = ask.ask(question(11, "/b"), never());
  let screen = await host.screen();
  assertEquals(screen[host.rows - 5], "hallpass: node (pid 10) wants to write (+1 more)");
  assertEquals(screen[host.rows - 4], "/a");
  host.key("\x1b[A"); // widen: /home/me/.npm → /home/me
  host.key("t");
  assertEquals(await p1, { kind: "for", durationMs: 300_000, scope: "/home/me", by: "terminal" });
  screen = await host.screen();
  assertEquals(screen[host.rows - 5], "hallpass: node (pid 11) wants to write");
  host.key("d");
  assertEquals(await p2, { kind: "deny", by: "terminal" });
  assertEquals(host.bar, null);
  screen = await host.screen();
  assertEquals(screen[0], "program text");
  assertEquals(screen.slice(1).every((l) => l === ""), true, "bar gone");
});

Deno.test("identical pending questions (same pid, op, target) share one answer; others do not", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0 });
  const a = ask.ask(question(10, "/x"), never());
  const b = ask.ask(question(10, "/x"), never());
  const c = ask.ask(question(12, "/x"), never());
  assertEquals(ask.pending, 2);
  host.key("o");
  assertEquals(await a, { kind: "once", by: "terminal" });
  assertEquals(await b, { kind: "once", by: "terminal" });
  assertEquals(ask.pending, 1);
  host.key("n");
  assertEquals((await c).kind, "never");
});

Deno.test("a flood from one pid is bounded; [D] denies everything from that pid; others still get asked", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0, maxPerPid: 3 });
  // A live process (this one) started by the command: [D] holds until it exits.
  const pid = Deno.pid;
  const child = (target: string) => ({ ...question(pid, target), chain: ["node", "npm install"] });
  const flood = Array.from({ length: 5 }, (_, i) => ask.ask(child(`/f${i}`), never()));
  const other = ask.ask(question(7, "/other"), never());
  assertEquals(await flood[3], { kind: "deny", by: "flood" });
  assertEquals(await flood[4], { kind: "deny", by: "flood" });
  const screen = await host.screen();
  assert(screen.at(-1)!.endsWith(`[D] deny all from pid ${pid}`), String(screen.at(-1)));
  assertEquals(screen[host.rows - 5], `hallpass: node (pid ${pid}) wants to write (+3 more)`);
  host.key("D");
  for (const p of flood.slice(0, 3)) assertEquals(await p, { kind: "deny", by: "terminal" });
  assertEquals(ask.pending, 1);
  const next = await host.screen();
  // The notice says what [D] did and how long it lasts, above the next question.
  assertEquals(
    next[host.rows - 6],
    `hallpass: [D] denied 3 of node (pid ${pid}); later ones too, until it exits`,
  );
  assertEquals(next[host.rows - 5], "hallpass: node (pid 7) wants to write");
  host.key("o");
  assertEquals((await other).kind, "once");
  // Later questions from the pid denied with [D] are denied without asking; other pids still ask.
  assertEquals(await ask.ask(child("/later"), never()), { kind: "deny", by: "terminal" });
  assertEquals(host.bar, null);
  // The notice also went to the output (above the program's lines), once.
  assertEquals((await host.screen()).filter((l) => l.startsWith("hallpass: [D] denied")).length, 1);
});

Deno.test("[D] on the command hallpass started (a shell): never silent: the notice says the whole session, each later denial is a line", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0 });
  const shell = (target: string) => ({ ...question(Deno.pid, target), chain: ["bash"] });
  const a = ask.ask(shell("/a"), never());
  const b = ask.ask(shell("/b"), never());
  await host.screen();
  host.key("D");
  assertEquals([(await a).kind, (await b).kind], ["deny", "deny"]);
  assertEquals((await ask.ask(shell("/later"), never())).kind, "deny");
  const s = await host.screen();
  assert(
    s.some((l) => l.endsWith("later ones too, until it exits (the session)")),
    s.join("\n"),
  );
  assert(s.some((l) => l === `hallpass: denied by [D]: node (pid ${Deno.pid}) write /later`), s.join("\n"));
  // A burst is counted, not printed line by line.
  for (let i = 0; i < 20; i++) await ask.ask(shell(`/burst${i}`), never());
  const counted = (l: string) => l === `hallpass: denied by [D]: 20 more from pid ${Deno.pid}`;
  let s2 = await host.screen();
  for (const end = Date.now() + 10_000; !s2.some(counted) && Date.now() < end; s2 = await host.screen()) {
    await new Promise((r) => setTimeout(r, 25)); // the count is printed once the burst is over
  }
  assert(s2.some(counted), s2.join("\n"));
});

Deno.test("Ctrl-C on the bar denies and passes Ctrl-C on to the program; a burst never allows", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0 });
  const p = ask.ask(question(1, "/x"), never());
  await host.screen();
  host.key("oo"); // two keys in one read: not a person
  host.key("\x1b[Ma!!"); // a mouse wheel-down report
  host.key("\x1bP>|tmux 3.3a\x1b\\"); // XTVERSION's reply
  host.key("\x1b[200~a\x1b[201~"); // a paste
  assertEquals(ask.pending, 1);
  host.key("\x03");
  assertEquals(await p, { kind: "deny", by: "terminal" });
  assertEquals(host.sent, ["\x03"]);
});

Deno.test("--ask-timeout denies an unanswered question", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0, askTimeoutMs: 30 });
  const t0 = performance.now();
  assertEquals(await ask.ask(question(1, "/t"), never()), { kind: "deny", by: "timeout" });
  assert(performance.now() - t0 >= 25);
  assertEquals(host.bar, null);
});

Deno.test("the AbortSignal withdraws a question (the process died)", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0 });
  const ac = new AbortController();
  const p = ask.ask(question(1, "/gone"), ac.signal);
  const q = ask.ask(question(2, "/stays"), never());
  ac.abort();
  assertEquals(await p, { kind: "deny", by: "withdrawn" });
  assertEquals((await host.screen())[host.rows - 4], "/stays");
  host.key("a");
  assertEquals(await q, { kind: "always", scope: "/home/me/.npm", by: "terminal" });
});

Deno.test("keys typed before the question could be seen are ignored", async () => {
  const host = new FakeHost();
  // An arm delay no pause of a loaded machine between the question and the key below outlasts.
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 1000 });
  let answer: Answer | null = null;
  const p = ask.ask(question(1, "/typeahead"), never()).then((a) => (answer = a));
  host.key("a"); // type-ahead meant for the program
  await tick();
  assertEquals(answer, null);
  await new Promise((r) => setTimeout(r, 1050));
  host.key("d");
  await p;
  assertEquals(answer, { kind: "deny", by: "terminal" });
});

Deno.test("close() denies what is pending and takes the bar down", async () => {
  const host = new FakeHost();
  const ask = new TerminalAsk(host, { forMs: 1000, armDelayMs: 0 });
  const p = ask.ask(question(1, "/c"), never());
  await ask.close();
  assertEquals(await p, { kind: "deny", by: "terminal-closed" });
  assertEquals(host.bar, null);
  assertEquals((await ask.ask(question(1, "/c"), never())).kind, "deny");
});
