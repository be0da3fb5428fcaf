/**
 * Red team: in the agent's answer service a call that is "the same" as a waiting question joins it and gets its
 * answer. Two threads of one process exec'ing one program with other arguments, or making one request with
 * another duration, are not the same: each must be listed (and answered) on its own.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { AnswerService } from "../lib/agent/answer_service.ts";
import type { Question } from "../lib/types.ts";

const base: Question = {
  id: 1,
  op: "exec",
  pid: 77,
  name: "sh",
  target: "/work/run.sh",
  argv: ["./run.sh", "harmless"],
  syscall: "execve",
  chain: ["sh"],
  suggestedScope: "/work/run.sh",
  scopes: ["/work/run.sh"],
  container: { namespace: "ns", pod: "p", container: "c", id: "cid" },
};

Deno.test("redteam2 answer service: other arguments or another request duration never join a waiting question", async () => {
  const svc = await AnswerService.create({
    listen: "127.0.0.1:0",
    tokens: new Map([["redteam2-token-0123456789", "a"]]),
    timeoutMs: 60_000,
    logPath: null,
    warn: () => {},
  });
  const ac = new AbortController();
  try {
    const ask = svc.backend();
    ask.ask(base, ac.signal);
    ask.ask({ ...base, id: 2, argv: ["./run.sh", "evil"] }, ac.signal);
    const req: Question = { ...base, op: "write", target: "/home/u/**", argv: undefined, syscall: "request" };
    ask.ask({ ...req, id: 3, requestedForMs: 60_000 }, ac.signal);
    ask.ask({ ...req, id: 4 }, ac.signal);
    assertEquals(svc.pending, 4);
    // The kernel's re-sent call (the same in every shown field) still joins.
    ask.ask({ ...base, id: 5 }, ac.signal);
    assertEquals(svc.pending, 4);
  } finally {
    ac.abort();
    await svc.close();
  }
});
