/**
 * Red team: `hallpass answer --agent A --agent B` talks to several agents with one token. An agent that is
 * hostile (a compromised node, or a pod that took an agent's address) must not be able to use what the client
 * sent it to answer another agent's questions: here it replays every Authorization header it received against
 * a real answer service, trying to allow a pending write "always" for `/**`. Judged by the answer the real
 * service's backend returns. Control: the token itself (what the client used to send) is accepted there.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { HALLPASS_ARGV } from "./harness.ts";
import { AnswerService } from "../../lib/agent/answer_service.ts";
import type { Question } from "../../lib/types.ts";

const TOKEN = "redteam-token-0123456789abcdef";

const question: Question = {
  id: 1,
  op: "write",
  pid: 77,
  name: "sh",
  target: "/etc/passwd",
  syscall: "openat",
  chain: ["sh"],
  suggestedScope: "/etc/passwd",
  scopes: ["/etc/passwd", "/**"],
  container: { namespace: "ns", pod: "p", container: "c", id: "cid" },
};

/** Lists the real service's questions and answers the first one `always /**` with `authorization`. */
async function tryAnswer(base: string, authorization: string): Promise<number> {
  const l = await fetch(`${base}/api/questions`, { headers: { authorization } });
  const list = await l.json();
  if (l.status !== 200) return l.status;
  const q = list.questions[0];
  const r = await fetch(`${base}/api/answer`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify({ id: q.id, digest: q.digest, kind: "always", scope: "/**" }),
  });
  await r.body?.cancel();
  return r.status;
}

Deno.test("redteam hallpass answer: what a hostile agent receives cannot answer another agent's questions", async () => {
  const svc = await AnswerService.start({
    listen: "127.0.0.1:0",
    tokens: new Map([[TOKEN, "alice"]]),
    timeoutMs: 60_000,
    logPath: null,
    warn: () => {},
  });
  const base = `http://127.0.0.1:${svc.address.port}`;
  const ac = new AbortController();
  const heard: string[] = [];
  const hostile = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    heard.push(req.headers.get("authorization") ?? "");
    return Response.json({ version: heard.length, now: Date.now(), node: "n", questions: [] });
  });
  const child = new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), "answer", "--json", "--agent", `http://127.0.0.1:${hostile.addr.port}`],
    env: { HALLPASS_TOKEN: TOKEN },
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    const answer = svc.backend().ask(question, ac.signal);
    // Generous: at load `hallpass answer` can take many seconds to start.
    for (const end = Date.now() + 90_000; Date.now() < end && heard.length === 0;) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert(heard.length > 0, "hallpass answer never reached the hostile agent");
    // Control: the token itself answers (what a Bearer client sends every agent).
    const ctl = await fetch(`${base}/api/questions`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assertEquals(ctl.status, 200);
    await ctl.body?.cancel();
    for (const h of new Set(heard)) {
      const status = await tryAnswer(base, h);
      assert(
        status === 401,
        `the hostile agent answered with what it heard (${h.slice(0, 20)}…): HTTP ${status}`,
      );
    }
    assertEquals(svc.pending, 1, "the question was answered");
    ac.abort();
    await answer.catch(() => {});
  } finally {
    ac.abort();
    child.kill();
    await child.status;
    await hostile.shutdown();
    await svc.close();
  }
});
