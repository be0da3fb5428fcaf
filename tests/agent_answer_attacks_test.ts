/**
 * The answer service under attack (docs/threat-model.md, "Kubernetes: hallpass agent"): an answer meant for one
 * question never lands on another, slow and numerous connections cannot take the service down, and a question's
 * texts are bounded whatever the container gave itself as arguments.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { AnswerService, type QuestionList } from "../lib/agent/answer_service.ts";
import { boundText, readBounded, TEXT_MAX } from "../lib/supervisor/bounded_text.ts";
import type { Answer, Question } from "../lib/types.ts";

const TOKEN = "attack-test-token-0123456789abcdef";

function question(over: Partial<Question> = {}): Question {
  return {
    id: 1,
    op: "write",
    pid: 4242,
    name: "sh",
    target: "/tmp/harmless-report.txt",
    syscall: "openat",
    chain: ["sh -c report"],
    suggestedScope: "/tmp/**",
    scopes: ["/tmp/harmless-report.txt", "/tmp/**"],
    container: { namespace: "team", pod: "harmless-pod", container: "main", id: "aaaa" },
    ...over,
  };
}

async function start(port = 0, firstId?: number): Promise<AnswerService> {
  return await AnswerService.start({
    listen: `127.0.0.1:${port}`,
    tokens: new Map([[TOKEN, "alice"]]),
    timeoutMs: 30_000,
    logPath: null,
    warn: () => {},
    firstId,
    httpLimits: { headerTimeoutMs: 1500, maxPerPeer: 16, maxConnections: 64 },
  });
}

async function list(base: string): Promise<QuestionList> {
  const r = await fetch(base + "/api/questions", { headers: { authorization: `Bearer ${TOKEN}` } });
  assertEquals(r.status, 200);
  return await r.json();
}

async function post(base: string, body: unknown): Promise<[number, Record<string, unknown>]> {
  const r = await fetch(base + "/api/answer", {
    method: "POST",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "x-hallpass-client": "web",
    },
    body: JSON.stringify(body),
  });
  return [r.status, await r.json()];
}

function settled(p: Promise<Answer>, ms = 200): Promise<Answer | "pending"> {
  let t: ReturnType<typeof setTimeout>;
  return Promise.race([p, new Promise<"pending">((r) => t = setTimeout(() => r("pending"), ms))])
    .finally(() => clearTimeout(t));
}

Deno.test("answer service: an answer to the question shown is refused when the agent at that address changed", async () => {
  // Agent A shows a harmless question; A is replaced by B on the same address (a restart, or a Service name that
  // resolves to another node); B's question has the same id (the worst case: forced here) but is another write.
  const a = await start(0, 1);
  const port = a.address.port;
  const base = `http://127.0.0.1:${port}`;
  const harmless = a.backend().ask(question(), new AbortController().signal);
  const shown = (await list(base)).questions[0];
  assertEquals(shown.target, "/tmp/harmless-report.txt");
  await a.close();
  assertEquals((await harmless).kind, "deny");

  const b = await start(port, 1);
  try {
    const evil = b.backend().ask(
      question({
        target: "/etc/evil-cron",
        container: { ...question().container!, pod: "other-pod", id: "bbbb" },
      }),
      new AbortController().signal,
    );
    const now = (await list(base)).questions[0];
    assertEquals(now.id, shown.id, "the attack needs the same id");
    // What the open page sends for the card it still shows:
    const [status, body] = await post(base, { id: shown.id, digest: shown.digest, kind: "once" });
    assertEquals(status, 409, JSON.stringify(body));
    assert(String(body.error).includes("not the question you were shown"), String(body.error));
    assertEquals(await settled(evil), "pending", "nothing was applied to /etc/evil-cron");
    // Without a digest nothing is applied either.
    const [s2] = await post(base, { id: shown.id, kind: "once" });
    assertEquals(s2, 400);
    assertEquals(await settled(evil), "pending");
    // The question B shows, answered with its own digest, is applied.
    const [s3] = await post(base, { id: now.id, digest: now.digest, kind: "deny" });
    assertEquals(s3, 200);
    assertEquals((await evil).kind, "deny");
  } finally {
    await b.close();
  }
});

Deno.test("answer service: ids of two agent instances differ (random start)", async () => {
  const a = await start();
  const b = await start();
  try {
    a.backend().ask(question(), new AbortController().signal);
    b.backend().ask(question(), new AbortController().signal);
    const ia = (await list(`http://127.0.0.1:${a.address.port}`)).questions[0].id;
    const ib = (await list(`http://127.0.0.1:${b.address.port}`)).questions[0].id;
    assert(ia !== ib, `${ia} ${ib}`);
    assert(Number.isSafeInteger(ia) && Number.isSafeInteger(ib));
  } finally {
    await a.close();
    await b.close();
  }
});

/** A node script that opens `n` connections from `from`, sends half a request head and trickles a byte now and then. */
const SLOW_CLIENTS = `
const net = require("net");
const [port, from, n] = [Number(process.argv[1]), process.argv[2], Number(process.argv[3])];
let open = 0, closed = 0;
for (let i = 0; i < n; i++) {
  const s = net.connect({ port, host: "127.0.0.1", localAddress: from });
  s.on("connect", () => { open++; s.write("GET /api/questions HTTP/1.1\\r\\nHost: x\\r\\n"); });
  s.on("error", () => {});
  s.on("close", () => { closed++; });
  const t = setInterval(() => { if (!s.destroyed) s.write("X"); else clearInterval(t); }, 500);
}
setInterval(() => console.log(JSON.stringify({ open, closed })), 250);
`;

function which(prog: string): string | null {
  for (const d of ["/usr/local/bin", "/usr/bin", "/bin"]) {
    try {
      Deno.statSync(`${d}/${prog}`);
      return `${d}/${prog}`;
    } catch { /* next */ }
  }
  return null;
}

Deno.test({
  name: "answer service: 3,000 slow connections neither take it down nor keep a person from answering",
  ignore: which("node") === null, // node runs the slow clients (bound to 127.0.0.2)
}, async () => {
  const svc = await start();
  const base = `http://127.0.0.1:${svc.address.port}`;
  const slow = new Deno.Command(which("node")!, {
    args: ["-e", SLOW_CLIENTS, String(svc.address.port), "127.0.0.2", "3000"],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const asked = svc.backend().ask(question(), new AbortController().signal);
    // Wait until the flood is under way: every connection made (most refused at once, some held).
    const reader = slow.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      assert(!done, "the slow clients ended early");
      buf += value;
      const last = buf.trim().split("\n").pop()!;
      try {
        if (JSON.parse(last).open >= 3000) break;
      } catch { /* a partial line */ }
    }
    // Connections held are bounded by the per-peer limit.
    assert(svc.connectionsOpen <= 16, `open: ${svc.connectionsOpen}`);
    // A person elsewhere still lists and answers, promptly.
    const t0 = performance.now();
    const q = (await list(base)).questions[0];
    const [status] = await post(base, { id: q.id, digest: q.digest, kind: "once" });
    assertEquals(status, 200);
    assert(performance.now() - t0 < 1000, `took ${performance.now() - t0} ms`);
    assertEquals((await asked).kind, "once");
    // The held connections are closed at the header timeout (1.5 s here), not kept for ever.
    const deadline = Date.now() + 5000;
    while (svc.connectionsOpen > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert(svc.connectionsOpen <= 16);
    reader.releaseLock();
  } finally {
    slow.kill("SIGKILL");
    await slow.status;
    await slow.stdout.cancel().catch(() => {});
    await svc.close();
  }
});

Deno.test("answer service: a question with megabytes of command line is listed in a few kilobytes", async () => {
  const huge = "A".repeat(130_000);
  const chain = Array.from({ length: 12 }, () => boundText(`sh -c ${huge} ${huge}`));
  const svc = await start();
  try {
    svc.backend().ask(question({ chain, reason: boundText(huge) }), new AbortController().signal);
    const r = await fetch(`http://127.0.0.1:${svc.address.port}/api/questions`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const text = await r.text();
    assert(text.length < 64 * 1024, `${text.length} bytes`);
    const q = JSON.parse(text).questions[0];
    assert(/… \[260007 bytes, sha256 [0-9a-f]{16}\]$/.test(q.chain[0]), q.chain[0].slice(-60));
  } finally {
    await svc.close();
  }
});

Deno.test("bounded text: the head, the total and a hash of the whole; /proc/PID/cmdline read in bounded memory", async () => {
  assertEquals(boundText("short"), "short");
  const long = "é".repeat(TEXT_MAX); // 2 bytes each: cut in the middle of a character
  const b = boundText(long);
  assert(b.startsWith("é".repeat(TEXT_MAX / 2)));
  assert(/… \[2048 bytes, sha256 [0-9a-f]{16}\]$/.test(b), b.slice(-50));
  // A process with 2 MB of arguments: what is read is its first bytes, the total and the hash of the file.
  const args = Array.from({ length: 16 }, () => "B".repeat(120_000)); // one argument is at most 128 KiB
  const p = new Deno.Command("/bin/sh", { args: ["-c", "read x", "sh", ...args], stdin: "piped" }).spawn();
  try {
    const path = `/proc/${p.pid}/cmdline`;
    let line: string | null = null;
    for (let i = 0; i < 100 && !(line = readBounded(path, (k) => new TextDecoder().decode(k))); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const whole = await Deno.readFile(path);
    const hex = Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", whole)))
      .map((x) => x.toString(16).padStart(2, "0")).join("").slice(0, 16);
    assert(line!.endsWith(`… [${whole.length} bytes, sha256 ${hex}]`), line!.slice(-60));
    assert(line!.length < TEXT_MAX + 64);
  } finally {
    p.kill();
    await p.stdin.close().catch(() => {});
    await p.status;
  }
});
