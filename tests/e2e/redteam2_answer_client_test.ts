/**
 * Red team: `hallpass answer` pointed at a hostile agent (a URL the person was given, or a pod that took an
 * agent's address). What it sends must not reach the person's terminal as control sequences, nor take the
 * client's memory. The hostile agent here is a plain HTTP server; judged on hallpass answer's stdout and memory.
 */
import { ok as assert } from "node:assert/strict";
import { HALLPASS_ARGV } from "./harness.ts";

const TOKEN = "redteam2-0123456789abcdef";

function hostileQuestion(id: number): Record<string, unknown> {
  return {
    id,
    pid: 7,
    name: "x\u009b2J",
    op: "write",
    target: "/x\u009d52;c;ZWNobw==\u0007\u009c\u202etxt.exe\u2028",
    syscall: "openat",
    chain: ["sh\u009b?1049h"],
    suggestedScope: "/x",
    scopes: ["/x"],
    digest: "d",
    askedAt: Date.now(),
    expiresAt: Date.now() + 60_000,
    container: { namespace: "n\u0090", pod: "p\u009d0;t\u0007", container: "c", id: "i" },
  };
}

function spawnAnswer(url: string): Deno.ChildProcess {
  return new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), "answer", "--json", "--agent", url],
    env: { HALLPASS_TOKEN: TOKEN },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

Deno.test("redteam2 hallpass answer --json: C1 controls and bidi marks from a hostile agent never reach stdout raw", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (new URL(req.url).searchParams.has("wait")) await new Promise((r) => setTimeout(r, 1000));
    return Response.json({
      version: 1,
      now: Date.now(),
      node: "node\u009b2J",
      questions: [hostileQuestion(42)],
    });
  });
  const child = spawnAnswer(`http://127.0.0.1:${server.addr.port}`);
  try {
    const reader = child.stdout.getReader();
    let bytes = new Uint8Array(0);
    while (!bytes.includes(10)) {
      const { value, done } = await reader.read();
      if (done) break;
      const all = new Uint8Array(bytes.length + value.length);
      all.set(bytes);
      all.set(value, bytes.length);
      bytes = all;
    }
    reader.releaseLock();
    const line = new TextDecoder().decode(bytes.subarray(0, bytes.indexOf(10)));
    assert(
      // deno-lint-ignore no-control-regex
      !/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(line),
      line,
    );
    const q = JSON.parse(line);
    assert(q.target === hostileQuestion(42).target, "the JSON still carries the exact text");
    assert(q.node === "node\u009b2J" && q.container.pod === "p\u009d0;t\u0007");
  } finally {
    child.kill();
    await child.status;
    await child.stderr.cancel();
    await child.stdout.cancel().catch(() => {});
    await server.shutdown();
  }
});

Deno.test("redteam2 hallpass answer --json: an agent sending an endless list does not take the client's memory", async () => {
  const chunk = new Uint8Array(1 << 20).fill(0x20);
  let sent = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    let stop = false;
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (stop) return c.close();
        sent += chunk.length;
        c.enqueue(chunk);
      },
      cancel() {
        stop = true;
      },
    });
    return new Response(body, { headers: { "content-type": "application/json" } });
  });
  const child = spawnAnswer(`http://127.0.0.1:${server.addr.port}`);
  let peakKb = 0;
  try {
    const until = Date.now() + 6000;
    while (Date.now() < until && sent < 2048 * (1 << 20)) {
      const status = await Deno.readTextFile(`/proc/${child.pid}/status`).catch(() => "");
      const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peakKb = Math.max(peakKb, kb);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert(sent > 64 * (1 << 20), `the control: the hostile agent kept sending (sent ${sent >> 20} MiB)`);
    assert(peakKb < 400 * 1024, `hallpass answer grew to ${peakKb >> 10} MiB on ${sent >> 20} MiB of list`);
  } finally {
    child.kill();
    await child.status;
    await child.stderr.cancel();
    await child.stdout.cancel();
    await server.shutdown();
  }
});
