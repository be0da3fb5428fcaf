/**
 * Red team: can a hallpass-request get more than the bar showed? What each key grants a request is in
 * lib/supervisor/requests.ts (`answer`: [o] and [a] grant it as asked, for its `for=` or the rest of the session;
 * [t] for the bar's duration); the bar (terminal, `hallpass answer`) must say that, not "allow once".
 */
import { ok as assert } from "node:assert/strict";
import { type BarState, handleKey, layout } from "../lib/ui/prompt_bar.ts";
import type { Question } from "../lib/types.ts";

const request: Question = {
  id: 1,
  op: "write",
  pid: 42,
  name: "hallpass-request",
  exe: "/usr/local/bin/hallpass-request",
  target: "/home/u/**",
  syscall: "request",
  chain: ["hallpass-request", "sh"],
  suggestedScope: "/home/u/**",
  scopes: ["/home/u/**"],
};

Deno.test("redteam2 request bar: [o] on a request without for= says it grants for the session, not once", () => {
  const bar: BarState = { question: request, queued: 0, scopeIndex: 0, forMs: 300_000 };
  const text = layout(bar, 120).join("\n");
  assert(!text.includes("allow once"), text);
  assert(text.includes("[o] allow for the session"), text);
  assert(handleKey(bar, "o").answer?.kind === "once"); // which requests.ts grants for the session
});

Deno.test("redteam2 request bar: [o] on a request with for=366d says how long (8784h)", () => {
  const q = { ...request, requestedForMs: 366 * 86_400_000 };
  const text = layout({ question: q, queued: 0, scopeIndex: 0, forMs: q.requestedForMs }, 120).join("\n");
  assert(!text.includes("allow once"), text);
  assert(/\[o\] allow for 8784h0m0s/.test(text), text);
});

Deno.test("redteam2 request bar: an operation's question still says allow once", () => {
  const q = { ...request, syscall: "openat", target: "/home/u/f", name: "sh", exe: "/bin/sh" };
  assert(
    layout({ question: q, queued: 0, scopeIndex: 0, forMs: 300_000 }, 120).join("\n").includes(
      "[o] allow once",
    ),
  );
});
