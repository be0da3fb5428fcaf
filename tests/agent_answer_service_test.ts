/**
 * The question service of `hallpass agent` through real HTTP requests: authentication, the list and its
 * long-poll, answers and who gave them, the timeout, a withdrawn question surviving the kernel's re-sent call,
 * malformed input changing nothing, hostile text, the decision log, and the token file.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { AnswerService, loadTokens, MAX_BODY, type QuestionList } from "../lib/agent/answer_service.ts";
import type { Answer, Question } from "../lib/types.ts";
import { UsageError } from "../lib/types.ts";
import { visible } from "../lib/ui/sanitize.ts";
import { parseAnswerArgs, toRemoteQuestion } from "../lib/agent/answer_client.ts";

const TOKEN = "alice-0123456789abcdef";
const TOKEN_B = "bob-0123456789abcdefgh";
let qid = 100;

function question(over: Partial<Question> = {}): Question {
  return {
    id: qid++,
    op: "write",
    pid: 4242,
    name: "npm",
    target: "/home/app/.npm/_cacache/x",
    syscall: "openat",
    chain: ["npm install", "sh -c npm install"],
    suggestedScope: "/home/app/.npm/**",
    scopes: ["/home/app/.npm/_cacache/x", "/home/app/.npm/_cacache/**", "/home/app/.npm/**", "/home/app/**"],
    container: { namespace: "shop", pod: "web-7d9f", container: "builder", id: "c0ffee123456" },
    ...over,
  };
}

interface Ctx {
  svc: AnswerService;
  base: string;
  log: string;
  warnings: string[];
}

async function withService(
  fn: (c: Ctx) => Promise<void>,
  o: { timeoutMs?: number; graceMs?: number; logToWarn?: boolean } = {},
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "hallpass-answer-" });
  const log = `${dir}/decisions.jsonl`;
  const warnings: string[] = [];
  const svc = await AnswerService.start({
    listen: "127.0.0.1:0",
    tokens: new Map([[TOKEN, "alice"], [TOKEN_B, "bob"]]),
    timeoutMs: o.timeoutMs ?? 30_000,
    graceMs: o.graceMs,
    logPath: o.logToWarn ? null : log,
    warn: (l) => warnings.push(l),
  });
  try {
    await fn({ svc, base: `http://127.0.0.1:${svc.address.port}`, log, warnings });
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function get(base: string, path: string, token: string | null = TOKEN): Promise<[number, unknown]> {
  const r = await fetch(base + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await r.text();
  return [r.status, r.headers.get("content-type")?.startsWith("application/json") ? JSON.parse(text) : text];
}

async function list(base: string): Promise<QuestionList> {
  const [status, body] = await get(base, "/api/questions");
  assertEquals(status, 200);
  return body as QuestionList;
}

async function post(
  base: string,
  body: unknown,
  o: { client?: string; token?: string; raw?: string | Uint8Array<ArrayBuffer>; withDigest?: boolean } = {},
): Promise<[number, Record<string, unknown>]> {
  // An answer carries the digest of the question it answers: taken from the list, as a client does.
  if (o.withDigest !== false && typeof body === "object" && body !== null && !("digest" in body)) {
    const b = body as Record<string, unknown>;
    const q = (await list(base)).questions.find((x) => x.id === b.id);
    body = { ...b, digest: q?.digest ?? "0".repeat(32) };
  }
  const headers: Record<string, string> = {
    authorization: `Bearer ${o.token ?? TOKEN}`,
    "content-type": "application/json",
  };
  if (o.client) headers["x-hallpass-client"] = o.client;
  const r = await fetch(base + "/api/answer", {
    method: "POST",
    headers,
    body: o.raw ?? JSON.stringify(body),
  });
  return [r.status, await r.json()];
}

/** Resolves with the answer, or "pending" if none came within `ms`. */
function settled(p: Promise<Answer>, ms = 100): Promise<Answer | "pending"> {
  let t: ReturnType<typeof setTimeout>;
  return Promise.race([p, new Promise<"pending">((r) => t = setTimeout(() => r("pending"), ms))]).finally(
    () => clearTimeout(t),
  );
}

async function logLines(path: string): Promise<Record<string, unknown>[]> {
  const text = await Deno.readTextFile(path).catch(() => "");
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

Deno.test("answer service: 401 without a token, with a wrong one, or another scheme; the page needs none", async () => {
  await withService(async ({ svc, base }) => {
    const pending = svc.backend().ask(question(), new AbortController().signal);
    for (const auth of [null, "Bearer wrong-token-0123456789", `Basic ${btoa("alice:" + TOKEN)}`, "Bearer"]) {
      const r = await fetch(base + "/api/questions", { headers: auth ? { authorization: auth } : {} });
      assertEquals(r.status, 401, String(auth));
      assert(r.headers.get("www-authenticate")?.startsWith("Bearer"));
      const body = await r.text();
      assert(!body.includes("npm"), "no data without the token");
    }
    const r401 = await fetch(base + "/api/answer", {
      method: "POST",
      body: JSON.stringify({ id: 1, kind: "once" }),
    });
    assertEquals(r401.status, 401);
    await r401.body?.cancel();
    assertEquals(await settled(pending), "pending", "an unauthenticated answer changes nothing");
    // The token in a query string is not a token.
    assertEquals((await get(base, `/api/questions?token=${TOKEN}`, null))[0], 401);

    const page = await fetch(base + "/");
    assertEquals(page.status, 200);
    const csp = page.headers.get("content-security-policy") ?? "";
    const html = await page.text();
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    assert(nonce && html.includes(`<script nonce="${nonce}">`), csp);
    assert(csp.includes("default-src 'none'") && !csp.includes("unsafe-inline"), csp);
    assert(!html.includes("web-7d9f") && !html.includes(TOKEN), "the page itself holds no data");
    assert(!/<(script|link|img)[^>]+(src|href)=/.test(html), "no external assets");
    assertEquals((await get(base, "/nope"))[0], 404);
    await svc.close();
    assertEquals(await pending, { kind: "deny", by: "agent-closed" });
  });
});

Deno.test("answer service: a question is listed with its container; the long-poll returns when it comes", async () => {
  await withService(async ({ svc, base }) => {
    const first = await list(base);
    assertEquals(first.questions, []);
    const t0 = Date.now();
    const poll = get(base, `/api/questions?wait=20&after=${first.version}`);
    await new Promise((r) => setTimeout(r, 200));
    const q = question({ requestedForMs: 600_000, reason: "cache", argv: undefined });
    const answer = svc.backend().ask(q, new AbortController().signal);
    const [status, body] = await poll;
    assertEquals(status, 200);
    assert(Date.now() - t0 < 15_000, "the long-poll returned with the question, not at its 20 s end");
    const l = body as QuestionList;
    assert(l.version > first.version);
    assertEquals(l.questions.length, 1);
    const got = l.questions[0];
    assertEquals(got.container, q.container);
    assertEquals([got.pid, got.name, got.op, got.target, got.syscall], [
      q.pid,
      q.name,
      q.op,
      q.target,
      q.syscall,
    ]);
    assertEquals([got.chain, got.scopes, got.suggestedScope], [q.chain, q.scopes, q.suggestedScope]);
    assertEquals([got.reason, got.requestedForMs, got.waiting], ["cache", 600_000, true]);
    assertEquals(got.shown.pod, "shop/web-7d9f builder");
    assert(got.expiresAt - got.askedAt === 30_000);
    // Nothing changed: a long-poll with the current version waits its time out.
    const t1 = Date.now();
    const [, same] = await get(base, `/api/questions?wait=0.3&after=${l.version}`);
    assert(Date.now() - t1 >= 250);
    assertEquals((same as QuestionList).version, l.version);
    assertEquals((await get(base, "/api/questions?wait=x&after=1"))[0], 400);
    await post(base, { id: got.id, kind: "deny" });
    assertEquals((await answer).kind, "deny");
  });
});

Deno.test("answer service: answers resolve the ask with the kind, scope, duration and who", async () => {
  await withService(async ({ svc, base, log }) => {
    const ask = svc.backend();
    const signal = new AbortController().signal;
    const a1 = ask.ask(question({ pid: 1 }), signal);
    const a2 = ask.ask(question({ pid: 2 }), signal);
    const a3 = ask.ask(question({ pid: 3 }), signal);
    const a4 = ask.ask(question({ pid: 4, requestedForMs: 120_000 }), signal);
    const ids = (await list(base)).questions.map((q) => q.id);
    assertEquals(ids.length, 4);
    let [status, body] = await post(base, { id: ids[0], kind: "once" }, { client: "answer" });
    assertEquals([status, body.applied], [200, true]);
    assertEquals(await a1, { kind: "once", by: "answer:alice" });
    [status] = await post(base, { id: ids[1], kind: "for", durationMs: 90_000, scope: "/home/app/**" }, {
      client: "web",
      token: TOKEN_B,
    });
    assertEquals(status, 200);
    assertEquals(await a2, { kind: "for", durationMs: 90_000, scope: "/home/app/**", by: "web:bob" });
    await post(base, { id: ids[2], kind: "never" }, { client: "answer" });
    assertEquals(await a3, { kind: "never", scope: "/home/app/.npm/**", by: "answer:alice" });
    await post(base, { id: ids[3], kind: "for" });
    assertEquals(await a4, { kind: "for", durationMs: 120_000, scope: "/home/app/.npm/**", by: "api:alice" });
    assertEquals((await list(base)).questions, []);
    // Answered: a second answer is a 404 and is not logged.
    assertEquals((await post(base, { id: ids[0], kind: "deny" }))[0], 404);
    const lines = await logLines(log);
    assertEquals(lines.map((l) => [l.id, l.decision, l.by]), [
      [ids[0], "once", "answer:alice"],
      [ids[1], "for", "web:bob"],
      [ids[2], "never", "answer:alice"],
      [ids[3], "for", "api:alice"],
    ]);
    assertEquals(lines[1].container, question().container);
    assertEquals([lines[1].op, lines[1].target, lines[1].scope, lines[1].applied], [
      "write",
      "/home/app/.npm/_cacache/x",
      "/home/app/**",
      true,
    ]);
    assert(!Number.isNaN(Date.parse(lines[0].time as string)));
  });
});

Deno.test("answer service: unanswered questions are denied at the timeout; a shorter request timeout wins", async () => {
  await withService(async ({ svc, base, warnings }) => {
    const ask = svc.backend();
    const t0 = Date.now();
    const slow = ask.ask(question({ pid: 1 }), new AbortController().signal);
    const fast = ask.ask(question({ pid: 2, requestTimeoutMs: 100 }), new AbortController().signal);
    assertEquals(await fast, { kind: "deny", by: "timeout" });
    assert(Date.now() - t0 < 10_000, "the request's own timeout (100 ms), not the service's (30 s)");
    assertEquals(await slow, { kind: "deny", by: "timeout" });
    assert(Date.now() - t0 >= 390);
    assertEquals((await list(base)).questions, []);
    // Without a log file the decisions go through warn.
    assertEquals(warnings.map((w) => JSON.parse(w).by), ["timeout", "timeout"]);
  }, { timeoutMs: 400, logToWarn: true });
});

Deno.test("answer service: a withdrawn question survives the re-sent call (same id, same deadline)", async () => {
  await withService(async ({ svc, base, log }) => {
    const ask = svc.backend();
    const c1 = new AbortController();
    const first = ask.ask(question({ pid: 7 }), c1.signal);
    const [l1] = (await list(base)).questions;
    c1.abort(); // the kernel interrupted the trapped call
    assertEquals(await first, { kind: "deny", by: "withdrawn" });
    let [l2] = (await list(base)).questions;
    assertEquals([l2.id, l2.waiting], [l1.id, false]);
    // The re-sent call: a new Question (new id from the agent), the same key.
    const again = ask.ask(question({ pid: 7 }), new AbortController().signal);
    [l2] = (await list(base)).questions;
    assertEquals([l2.id, l2.waiting, l2.expiresAt], [l1.id, true, l1.expiresAt]);
    assertEquals((await list(base)).questions.length, 1);
    // Another container with the same pid, op and target is another question.
    const other = ask.ask(
      question({ pid: 7, container: { namespace: "shop", pod: "web-2", container: "builder", id: "beef" } }),
      new AbortController().signal,
    );
    assertEquals((await list(base)).questions.length, 2);
    await post(base, { id: l1.id, kind: "once" }, { client: "web" });
    assertEquals(await again, { kind: "once", by: "web:alice" });
    assertEquals(await settled(other), "pending");

    // Withdrawn and never re-sent: gone after the grace. Answered in the grace: recorded, applies to nothing.
    const c3 = new AbortController();
    const lone = ask.ask(question({ pid: 8 }), c3.signal);
    const c4 = new AbortController();
    const late = ask.ask(question({ pid: 9 }), c4.signal);
    const ids = (await list(base)).questions.map((q) => q.id);
    c3.abort();
    c4.abort();
    assertEquals((await lone).by, "withdrawn");
    assertEquals((await late).by, "withdrawn");
    const [status, body] = await post(base, { id: ids[2], kind: "always" }, { client: "web" });
    assertEquals([status, body.applied], [200, false]);
    // Gone once the grace (300 ms) is over: waited for, not slept.
    const listedIds = async () => (await list(base)).questions.map((q) => q.id);
    for (const end = Date.now() + 10_000; (await listedIds()).length > 1 && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assertEquals(await listedIds(), [ids[0]]);
    const lines = await logLines(log);
    assertEquals(lines.map((l) => [l.id, l.decision, l.applied]), [[l1.id, "once", true], [
      ids[2],
      "always",
      false,
    ]]);
    // A backend view's close() withdraws what was asked through it.
    ask.close();
    assertEquals((await other).by, "withdrawn");
  }, { graceMs: 300 });
});

Deno.test("answer service: malformed answers get 4xx and change nothing", async () => {
  await withService(async ({ svc, base, log }) => {
    const pending = svc.backend().ask(question(), new AbortController().signal);
    const before = await list(base);
    const id = before.questions[0].id;
    const cases: [number, unknown, string?][] = [
      [400, undefined, "{not json"],
      [400, undefined, ""],
      [400, [id, "once"]],
      [400, null],
      [400, { id: String(id), kind: "once" }],
      [400, { id, kind: "yes" }],
      [400, { id, kind: "ONCE" }],
      [400, { id, kind: "for", durationMs: -5 }],
      [400, { id, kind: "for", durationMs: "5m" }],
      [400, { id, kind: "once", durationMs: 1000 }],
      [400, { id, kind: "once", scope: "/home/app/**" }],
      [400, { id, kind: "always", scope: "/" }],
      [400, { id, kind: "never", scope: "/etc/**" }],
      [400, { id, kind: "always", scope: 3 }],
      [404, { id: id + 1000, kind: "once" }],
      [404, { id: -1, kind: "deny" }],
      [409, { id, kind: "once", digest: "f".repeat(32) }],
    ];
    for (const [want, body, raw] of cases) {
      const [status, res] = await post(base, body, { raw });
      assertEquals(status, want, `${JSON.stringify(body ?? raw)}: ${JSON.stringify(res)}`);
      assert(typeof res.error === "string");
    }
    // 1 MB, declared and streamed without a length.
    const big = JSON.stringify({ id, kind: "once", pad: "x".repeat(1 << 20) });
    assertEquals((await post(base, null, { raw: big }))[0], 413);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 16; i++) c.enqueue(new Uint8Array(MAX_BODY / 8).fill(0x20));
        c.close();
      },
    });
    const r = await fetch(base + "/api/answer", {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: stream,
    });
    assertEquals(r.status, 413);
    await r.body?.cancel();
    assertEquals((await post(base, null, { raw: new Uint8Array([0x7b, 0xff, 0x7d]) }))[0], 400);
    const wrongMethod = await fetch(base + "/api/answer", { headers: { authorization: `Bearer ${TOKEN}` } });
    assertEquals(wrongMethod.status, 405);
    await wrongMethod.body?.cancel();

    assertEquals(await settled(pending), "pending");
    const after = await list(base);
    assertEquals(after.questions, before.questions);
    assertEquals(after.version, before.version);
    assertEquals(await logLines(log), []);
    assertEquals((await post(base, { id, kind: "deny" }))[0], 200);
    assertEquals(await pending, { kind: "deny", by: "api:alice" });
  });
});

Deno.test("answer service: hostile text is exact in the JSON and made visible in the shown texts", async () => {
  await withService(async ({ svc, base }) => {
    const evil = {
      name: "x\x1b]0;pwned\x07",
      target: "/tmp/<script>alert(1)</script>\x1b[2J\u202Eexe.txt",
      chain: ["sh -c '<img src=x onerror=alert(1)>'\r\n\x9b31m"],
      reason: "please \x1b[8mhidden",
      warning: "\u2066rtl",
      container: { namespace: "ns\x1b[31m", pod: "<b>pod</b>", container: "c\u202E", id: "id1" },
    };
    const q = question({ ...evil, scopes: ["/tmp/<x>\x1b/**"], suggestedScope: "/tmp/<x>\x1b/**" });
    const pending = svc.backend().ask(q, new AbortController().signal);
    const r = await fetch(base + "/api/questions", { headers: { authorization: `Bearer ${TOKEN}` } });
    const raw = await r.text();
    assert(!raw.includes("\x1b") && !raw.includes("\x07"), "JSON escapes control characters");
    const [got] = (JSON.parse(raw) as QuestionList).questions;
    assertEquals([got.name, got.target, got.chain, got.reason, got.warning], [
      evil.name,
      evil.target,
      evil.chain,
      evil.reason,
      evil.warning,
    ]);
    assertEquals(got.container, evil.container);
    assertEquals(got.scopes, q.scopes);
    assertEquals(got.shown.name, "x^[]0;pwned^G");
    assertEquals(got.shown.target, visible(evil.target));
    assert(got.shown.target.includes("<U+202E>") && got.shown.target.includes("^[[2J"), got.shown.target);
    assertEquals(got.shown.chain, ["sh -c '<img src=x onerror=alert(1)>'^M\\n<U+009B>31m"]);
    assertEquals(got.shown.pod, "ns^[[31m/<b>pod</b> c<U+202E>");
    assertEquals(got.shown.scopes, ["/tmp/<x>^[/**"]);
    // Shown texts are text, never markup: the page puts them in with textContent (the browser test checks the
    // document); the page source never builds HTML from data.
    const html = await (await fetch(base + "/")).text();
    assert(!/innerHTML|outerHTML|insertAdjacentHTML|document\.write/.test(html));
    const [status] = await post(base, { id: got.id, kind: "never", scope: q.scopes[0] });
    assertEquals(status, 200);
    assertEquals(await pending, { kind: "never", scope: q.scopes[0], by: "api:alice" });
  });
});

Deno.test("answer service: the flood limit denies at once; close() denies what waits", async () => {
  const svc = await AnswerService.start({
    listen: "127.0.0.1:0",
    tokens: new Map([[TOKEN, "alice"]]),
    timeoutMs: 30_000,
    logPath: null,
    warn: () => {},
    maxPerContainer: 2,
  });
  const ask = svc.backend();
  const s = new AbortController().signal;
  const a = [1, 2, 3].map((pid) => ask.ask(question({ pid }), s));
  assertEquals(await a[2], { kind: "deny", by: "flood" });
  const b = ask.ask(
    question({ pid: 1, container: { namespace: "", pod: "", container: "", id: "other" } }),
    s,
  );
  assertEquals(svc.pending, 3);
  await svc.close();
  assertEquals(await Promise.all([a[0], a[1], b]), Array(3).fill({ kind: "deny", by: "agent-closed" }));
  assertEquals(await ask.ask(question(), s), { kind: "deny", by: "agent-closed" });
  await svc.close(); // idempotent
});

Deno.test("answer service: loadTokens reads NAME TOKEN and TOKEN lines, and refuses bad files clearly", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const write = (t: string) => Deno.writeTextFile(`${dir}/t`, t);
    await write(`# tokens\nalice ${TOKEN}\n\n  ${TOKEN_B}  \n`);
    assertEquals(await loadTokens(`${dir}/t`), new Map([[TOKEN, "alice"], [TOKEN_B, "token"]]));
    const bad: [string, RegExp][] = [
      ["alice short\n", /:1: token too short \(5 characters; at least 16\)/],
      [`a b ${TOKEN}\n`, /:1: expected "NAME TOKEN" or "TOKEN"/],
      [`# only a comment\n`, /no tokens in it/],
      [`a ${TOKEN}\nb ${TOKEN}\n`, /:2: the same token appears twice/],
      [`al/ice ${TOKEN}\n`, /:1: a name is/],
      [`alice ${TOKEN}\u00e9\n`, /:1: a token is printable ASCII/],
    ];
    for (const [text, re] of bad) {
      await write(text);
      await loadTokens(`${dir}/t`).then(
        () => assert(false, `accepted ${JSON.stringify(text)}`),
        (e) => assert(e instanceof UsageError && re.test(e.message), (e as Error).message),
      );
    }
    await loadTokens(`${dir}/missing`).then(
      () => assert(false),
      (e) => assert(/token file .*missing: not found/.test((e as Error).message)),
    );
    await AnswerService.start({
      listen: "nonsense",
      tokens: new Map([[TOKEN, "a"]]),
      timeoutMs: 1,
      logPath: null,
      warn: () => {},
    })
      .then(() => assert(false), (e) => assert(e instanceof UsageError && /HOST:PORT/.test(e.message)));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("hallpass answer: parseAnswerArgs takes --agent and --token-file, else the environment", () => {
  const env = {};
  assertEquals(parseAnswerArgs(["--token-file", "/t"], env), {
    agents: ["http://127.0.0.1:7474"],
    tokenFile: "/t",
    json: false,
  });
  assertEquals(parseAnswerArgs(["--agent=https://agent.example:8443/", "--token-file=/t"], env), {
    agents: ["https://agent.example:8443"],
    tokenFile: "/t",
    json: false,
  });
  assertEquals(
    parseAnswerArgs(
      ["--agent", "http://a:7474", "--agent", "http://b:7474", "--json", "--token-file=/t"],
      env,
    ),
    { agents: ["http://a:7474", "http://b:7474"], tokenFile: "/t", json: true },
  );
  assertEquals(parseAnswerArgs([], { HALLPASS_TOKEN_FILE: "/e", HALLPASS_TOKEN: "x" }), {
    agents: ["http://127.0.0.1:7474"],
    tokenFile: "/e",
    json: false,
  });
  assertEquals(parseAnswerArgs([], { HALLPASS_TOKEN: " tok " }), {
    agents: ["http://127.0.0.1:7474"],
    token: "tok",
    json: false,
  });
  assert("help" in parseAnswerArgs(["-h"], env));
  assert("help" in parseAnswerArgs(["--token-file", "/t", "--help"], env));
  const errors: [string[], RegExp][] = [
    [[], /no token/],
    [["--agent"], /--agent needs a value/],
    [["--agent", "ftp://x", "--token-file", "/t"], /http:\/\/ or https:\/\//],
    [["--agent", "http://u:p@x", "--token-file", "/t"], /no user, query or fragment/],
    [["--agent", "not a url", "--token-file", "/t"], /not a URL/],
    [["--token-file", "/a", "--token-file", "/b"], /given twice/],
    [["--agent", "http://a:1", "--agent", "http://a:1/", "--token-file", "/t"], /given twice/],
    [["--token-file="], /non-empty/],
    [["--frob"], /unknown argument "--frob"/],
    [["\x1b[2J"], /unknown argument "\^\[\[2J"/],
  ];
  for (const [argv, re] of errors) {
    const r = parseAnswerArgs(argv, env);
    assert("error" in r && re.test(r.error), `${JSON.stringify(argv)}: ${JSON.stringify(r)}`);
  }
});

Deno.test("hallpass answer: a listed question that does not fit is dropped, never drawn", async () => {
  await withService(async ({ svc, base }) => {
    const pending = svc.backend().ask(
      question({ argv: ["npm", "i"], warning: "w" }),
      new AbortController().signal,
    );
    const [listedQ] = (await list(base)).questions;
    const rq = toRemoteQuestion(listedQ);
    assert(rq);
    assertEquals(rq.question.container, question().container);
    assertEquals([rq.question.id, rq.question.target, rq.question.argv, rq.question.warning], [
      listedQ.id,
      listedQ.target,
      ["npm", "i"],
      "w",
    ]);
    for (
      const broken of [null, 3, { ...listedQ, op: "read" }, { ...listedQ, chain: [1] }, {
        ...listedQ,
        container: null,
      }]
    ) {
      assertEquals(toRemoteQuestion(broken), null, JSON.stringify(broken));
    }
    await post(base, { id: listedQ.id, kind: "deny" });
    await pending;
  });
});
