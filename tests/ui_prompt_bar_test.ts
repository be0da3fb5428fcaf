import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { type BarState, handleKey, layout, render, splitKeys } from "../lib/ui/prompt_bar.ts";
import { displayWidth } from "../lib/ui/sanitize.ts";
import type { Question } from "../lib/types.ts";

const q: Question = {
  id: 7,
  op: "write",
  pid: 41237,
  name: "node",
  target: "/home/me/.npm/_cacache/tmp/x",
  syscall: "openat",
  chain: ["npm install", "bash", "copilot"],
  suggestedScope: "/home/me/.npm/_cacache",
  scopes: [
    "/home/me/.npm/_cacache/tmp/x",
    "/home/me/.npm/_cacache/tmp",
    "/home/me/.npm/_cacache",
    "/home/me",
  ],
};
const base: BarState = { question: q, queued: 0, scopeIndex: 2, forMs: 300_000 };

Deno.test("layout: exactly the bar's five lines (docs/terminal.md)", () => {
  assertEquals(layout(base, 80), [
    "hallpass: node (pid 41237) wants to write",
    "/home/me/.npm/_cacache/tmp/x",
    "by: npm install ← bash ← copilot",
    "[t] [a] [n] apply to: /home/me/.npm/_cacache",
    "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help",
  ]);
});

const LAYOUT: { name: string; state: BarState; cols: number; want: Record<number, string>; rows: number }[] =
  [
    {
      name: "exec says run, queued count, [D] hint for the same pid",
      state: {
        ...base,
        question: { ...q, op: "exec", target: "/tmp/x.sh --flag" },
        queued: 2,
        sameProcessQueued: 1,
      },
      cols: 100,
      rows: 5,
      want: {
        0: "hallpass: node (pid 41237) wants to run (+2 more)",
        1: "/tmp/x.sh --flag",
        4: "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help  [D] deny all from pid 41237",
      },
    },
    {
      name: "connect to, duration Go-style",
      state: {
        ...base,
        question: { ...q, op: "connect", target: "tcp:93.184.216.34:443" },
        forMs: 5_400_000,
      },
      cols: 80,
      rows: 5,
      want: {
        0: "hallpass: node (pid 41237) wants to connect to",
        4: "[o] allow once  [t] for 1h30m0s  [a] always  [d] deny  [n] never  [?] help",
      },
    },
    {
      name: "warning and reason lines go on top (7 rows)",
      state: {
        ...base,
        question: { ...q, op: "exec", warning: "the sandbox can write /tmp/x", reason: "run \x1b[2Jtests" },
      },
      cols: 80,
      rows: 7,
      want: {
        0: "warning: the sandbox can write /tmp/x",
        1: `reason (the program's words): "run ^[[2Jtests"`,
        2: "hallpass: node (pid 41237) wants to run",
      },
    },
    {
      name: "long target shortened in the middle, keeping the file name",
      state: { ...base, question: { ...q, target: "/home/me/" + "a".repeat(100) + "/file.json" } },
      cols: 40,
      rows: 6,
      want: {
        1: "/home/me/aaaaaaaaaa…aaaaaaaaaa/file.json",
        // Below 60 columns the keys wrap onto two lines instead of being cut.
        4: "[o] allow once  [t] for 5m0s  [a] always",
        5: "[d] deny  [n] never  [?] help",
      },
    },
    {
      name: "[?] shows the help line naming the arrows, [D], Ctrl-C and Ctrl-Z",
      state: { ...base, help: true },
      cols: 120,
      rows: 6,
      want: {
        4: "←/→ wider/narrower scope  [D] deny all queued from this pid  Ctrl-C deny + interrupt  Ctrl-Z deny + suspend",
        5: "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] hide help",
      },
    },
    {
      name: "scope moves with scopeIndex",
      state: { ...base, scopeIndex: 3 },
      cols: 80,
      rows: 5,
      want: { 3: "[t] [a] [n] apply to: /home/me" },
    },
  ];
for (const t of LAYOUT) {
  Deno.test(`layout: ${t.name}`, () => {
    const lines = layout(t.state, t.cols);
    assertEquals(lines.length, t.rows);
    for (const [i, want] of Object.entries(t.want)) assertEquals(lines[Number(i)], want);
    for (const l of lines) assertEquals(displayWidth(l) <= t.cols, true, l);
  });
}

Deno.test("layout: narrow terminal, every line fits", () => {
  for (const cols of [1, 5, 12, 20, 33]) {
    for (const l of layout({ ...base, queued: 9 }, cols)) {
      assertEquals(displayWidth(l) <= cols, true, `${cols}: ${l}`);
    }
  }
});

const KEYS: [string, Partial<ReturnType<typeof handleKey>> & { scopeIndex?: number }][] = [
  ["o", { answer: { kind: "once", by: "terminal" }, redraw: false }],
  ["O", { answer: { kind: "once", by: "terminal" }, redraw: false }],
  ["t", {
    answer: { kind: "for", durationMs: 300_000, scope: "/home/me/.npm/_cacache", by: "terminal" },
    redraw: false,
  }],
  ["T", {
    answer: { kind: "for", durationMs: 300_000, scope: "/home/me/.npm/_cacache", by: "terminal" },
    redraw: false,
  }],
  ["a", { answer: { kind: "always", scope: "/home/me/.npm/_cacache", by: "terminal" }, redraw: false }],
  ["A", { answer: { kind: "always", scope: "/home/me/.npm/_cacache", by: "terminal" }, redraw: false }],
  ["d", { answer: { kind: "deny", by: "terminal" }, redraw: false }],
  ["\x03", { answer: { kind: "deny", by: "terminal" }, redraw: false }],
  ["D", { answer: { kind: "deny", by: "terminal" }, denyAllFromPid: true, redraw: false }],
  ["n", { answer: { kind: "never", scope: "/home/me/.npm/_cacache", by: "terminal" }, redraw: false }],
  ["N", { answer: { kind: "never", scope: "/home/me/.npm/_cacache", by: "terminal" }, redraw: false }],
  ["\r", { redraw: false, scopeIndex: 2 }],
  ["x", { redraw: false, scopeIndex: 2 }],
  ["\x1b[D", { redraw: true, scopeIndex: 3 }],
  ["\x1b[A", { redraw: true, scopeIndex: 3 }],
  ["\x1bOA", { redraw: true, scopeIndex: 3 }],
  ["\x1bOD", { redraw: true, scopeIndex: 3 }],
  ["\x1b[C", { redraw: true, scopeIndex: 1 }],
  ["\x1b[B", { redraw: true, scopeIndex: 1 }],
  ["\x1bOB", { redraw: true, scopeIndex: 1 }],
];
for (const [key, want] of KEYS) {
  Deno.test(`handleKey(${JSON.stringify(key)})`, () => {
    const r = handleKey(base, key);
    assertEquals(r.answer, want.answer);
    assertEquals(r.denyAllFromPid, want.denyAllFromPid);
    assertEquals(r.redraw, want.redraw);
    if (want.scopeIndex !== undefined) assertEquals(r.state.scopeIndex, want.scopeIndex);
  });
}

Deno.test("handleKey: scope is clamped at both ends and [t] uses the moved scope", () => {
  let s = base;
  for (let i = 0; i < 6; i++) s = handleKey(s, "\x1b[D").state;
  assertEquals(s.scopeIndex, 3);
  assertEquals(handleKey(s, "\x1b[D").redraw, false);
  assertEquals(handleKey(s, "a").answer?.scope, "/home/me");
  for (let i = 0; i < 6; i++) s = handleKey(s, "\x1b[C").state;
  assertEquals(s.scopeIndex, 0);
  assertEquals(handleKey(s, "t").answer?.scope, "/home/me/.npm/_cacache/tmp/x");
});

Deno.test("Ctrl-C, Ctrl-Z, Ctrl-\\ deny and go on to the program; ? toggles the help", () => {
  const s = {
    question: { scopes: ["/x"], suggestedScope: "/x" } as never,
    queued: 0,
    scopeIndex: 0,
    forMs: 1,
  } as BarState;
  for (const k of ["\x03", "\x1a", "\x1c"]) {
    const r = handleKey(s, k);
    assertEquals(r.answer?.kind, "deny");
    assertEquals(r.passThrough, k);
  }
  assertEquals(handleKey(s, "d").passThrough, undefined);
  const h = handleKey(s, "?");
  assertEquals([h.redraw, h.state.help], [true, true]);
  assertEquals(handleKey(h.state, "?").state.help, false);
});

Deno.test("splitKeys", () => {
  assertEquals(splitKeys("ab\x1b[D\x1bOAx\x1b[1;5C\r\x1b"), [
    "a",
    "b",
    "\x1b[D",
    "\x1bOA",
    "x",
    "\x1b[1;5C",
    "\r",
  ]);
  assertEquals(splitKeys("日😀"), ["日", "😀"]);
});

Deno.test("render: save, CUP per bottom row, padded to cols, restore; no scroll region or mode changes", () => {
  const out = render(["one", "two"], 10, 6, "reverse");
  assertEquals(
    out,
    "\x1b7\x1b[9;1H\x1b[0m\x1b[0;7mone   \x1b[0m\x1b[10;1H\x1b[0m\x1b[0;7mtwo   \x1b[0m\x1b8",
  );
  // deno-lint-ignore no-control-regex
  assertEquals(/\x1b\[[0-9;]*r|\x1b\[\?[0-9;]*[hl]/.test(render(["x".repeat(50)], 3, 20, "color")), false);
  // Too few rows: the bottom lines (the keys) win; too narrow: cut.
  assertEquals(
    render(["a", "b", "c"], 2, 2, "reverse"),
    "\x1b7\x1b[1;1H\x1b[0m\x1b[0;7mb \x1b[0m\x1b[2;1H\x1b[0m\x1b[0;7mc \x1b[0m\x1b8",
  );
  assertEquals(render(["日本語"], 1, 5, "reverse"), "\x1b7\x1b[1;1H\x1b[0m\x1b[0;7m日本…\x1b[0m\x1b8");
  assertEquals(render(["日本語"], 1, 4, "reverse"), "\x1b7\x1b[1;1H\x1b[0m\x1b[0;7m日… \x1b[0m\x1b8");
});

Deno.test("layout: a terminal too short for the bar keeps what is asked about and the keys (docs/terminal.md)", () => {
  // 80×3: who asks, the target, the keys (the by: and scope lines go first).
  assertEquals(layout(base, 80, 3), [
    "hallpass: node (pid 41237) wants to write",
    "/home/me/.npm/_cacache/tmp/x",
    "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help",
  ]);
  // 12×3: the keys take two lines; the target stays, cut in the middle.
  const tiny = layout(base, 12, 3);
  assertEquals(tiny.length, 3);
  assertEquals(tiny[0], "/home…/tmp/x");
  assertEquals(tiny.slice(1).map((l) => l.slice(0, 3)), ["[o]", "[d]"]);
  // A warning outranks who asks, and is dropped only after the by: and scope lines.
  const warned = { ...base, question: { ...q, warning: "hallpass's own program" } };
  assertEquals(layout(warned, 80, 4)[0], "warning: hallpass's own program");
  assertEquals(layout(warned, 80, 4).length, 4);
  // Rows enough (or unknown, 0): every line, as before.
  assertEquals(layout(base, 80, 5), layout(base, 80));
  assertEquals(layout(base, 80, 0), layout(base, 80));
  assertEquals(layout(base, 80, 24), layout(base, 80));
});

Deno.test("hallpass answer's screen in a short terminal: the pod line, the target and the keys", async () => {
  const { barLines } = await import("../lib/agent/answer_client.ts");
  const container = { namespace: "ci", pod: "builder", container: "app", id: "c1" };
  const v = { bar: base, container, status: "", history: [], title: "hallpass answer" };
  const lines = barLines(v, 80, 3);
  assertEquals(lines, [
    "pod: ci/builder app",
    "/home/me/.npm/_cacache/tmp/x",
    "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help",
  ]);
  assertEquals(barLines(v, 80).length, 6); // rows unknown: every line, as before
});
