/**
 * `hallpass answer --json`: questions of several agents as JSON lines on stdout, answers as lines on stdin (the
 * ask-program grammar), for a reviewer program or a chat bot (docs/kubernetes-answering.md).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { podQuestion, startService } from "./answer_fixture.ts";
import { HALLPASS_ARGV } from "./harness.ts";
import { Lines } from "../helpers/lines.ts";

const TOKEN = "bot-0123456789abcdefXYZ";

Deno.test("hallpass answer --json: two agents' questions as lines; answers by id; bad lines answered, not applied", async () => {
  const a = await startService(TOKEN, "bot");
  const b = await startService(TOKEN, "bot");
  const child = new Deno.Command(HALLPASS_ARGV[0], {
    args: [
      ...HALLPASS_ARGV.slice(1),
      "answer",
      "--json",
      "--agent",
      `http://127.0.0.1:${a.address.port}`,
      "--agent",
      `http://127.0.0.1:${b.address.port}`,
    ],
    env: { HALLPASS_TOKEN: TOKEN },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const lines = new Lines(child.stdout);
  const next = async (): Promise<Record<string, unknown>> => {
    const line = await lines.next();
    if (line === null) throw new Error("hallpass answer --json ended");
    return JSON.parse(line);
  };
  const w = child.stdin.getWriter();
  const say = (line: string) => w.write(new TextEncoder().encode(line + "\n"));
  try {
    const askA = a.backend().ask(podQuestion({ target: "/home/app/a" }), new AbortController().signal);
    const qa = await next();
    assertEquals([qa.event, qa.target, qa.agent], [
      "question",
      "/home/app/a",
      `http://127.0.0.1:${a.address.port}`,
    ]);
    assert(typeof qa.digest === "string" && typeof qa.id === "number");
    const askB = b.backend().ask(
      podQuestion({
        target: "/home/app/b",
        container: { namespace: "ci", pod: "job", container: "r", id: "b" },
      }),
      new AbortController().signal,
    );
    const qb = await next();
    assertEquals([qb.event, qb.target], ["question", "/home/app/b"]);
    // Lines that are no answer change nothing and say why.
    await say("hello");
    assertEquals((await next()).ok, false);
    await say(`${qa.id} sometimes`);
    const bad = await next();
    assertEquals([bad.id, bad.ok], [qa.id, false]);
    await say(`${qa.id} for 10m /etc/**`); // a scope that does not cover the target
    assertEquals((await next()).ok, false);
    // Answers, each to its own agent.
    await say(`${qb.id} deny`);
    assertEquals(await next(), { event: "answered", id: qb.id, ok: true, answer: "deny" });
    assertEquals(await askB, { kind: "deny", by: "api:bot" });
    await say(`${qa.id} for 10m /home/app/**`);
    assertEquals((await next()).ok, true);
    assertEquals(await askA, { kind: "for", durationMs: 600_000, scope: "/home/app/**", by: "api:bot" });
    // The end of stdin ends it: exit 0.
    await w.close();
    assertEquals((await child.status).code, 0);
  } finally {
    try {
      child.kill();
    } catch { /* ended */ }
    await child.status;
    await lines.cancel();
    await child.stderr.cancel().catch(() => {});
    await a.close();
    await b.close();
  }
});
