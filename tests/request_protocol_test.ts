// Tests of lib/policy/request_protocol.ts: table tests, the corpus in tests/fixtures/request_corpus.txt, and a seeded
// fuzz (random and mutated paths) asserting the decoder never throws and always answers ok or EINVAL/ENAMETOOLONG.
import { deepStrictEqual, ok as assert, throws } from "node:assert/strict";

const assertEquals = <T>(actual: T, expected: T, msg?: string) =>
  deepStrictEqual(actual, expected, msg as string);
const assertThrows = (fn: () => unknown, cls: new (...args: never[]) => Error) => throws(fn, cls);
import {
  compactDuration,
  type DecodedRequest,
  decodeRequest,
  decodeRequestBytes,
  type DecodeResult,
  encodeRequest,
  isRequestPath,
  MAGIC_PREFIX,
  percentDecode,
  percentEncode,
  REQUEST_OPS,
  REQUEST_PATH_MAX,
  REQUEST_VERBS,
  type RequestInput,
} from "../lib/policy/request_protocol.ts";
import { prng } from "./helpers/prng.ts";

function ok(path: string): DecodedRequest {
  const r = decodeRequest(path);
  if (!r.ok) throw new Error(`expected ${path} to decode, got ${r.errno}: ${r.message}`);
  return r.request;
}

function err(path: string): string {
  const r = decodeRequest(path);
  if (r.ok) throw new Error(`expected ${path} to fail, got ${JSON.stringify(r.request)}`);
  return r.errno;
}

Deno.test("isRequestPath and MAGIC_PREFIX", () => {
  assertEquals(MAGIC_PREFIX, "/.hallpass/");
  assert(isRequestPath("/.hallpass/v1/ask/write/x"));
  assert(isRequestPath("/.hallpass/anything"));
  assert(isRequestPath("/.hallpass/"));
  assert(!isRequestPath("/.hallpass"));
  assert(!isRequestPath("/.hallpassx/v1"));
  assert(!isRequestPath("//.hallpass/v1/ask/write/x"));
  assert(!isRequestPath("/usr/bin/env"));
  assert(!isRequestPath(""));
});

Deno.test("percentEncode / percentDecode", () => {
  assertEquals(percentEncode("AZaz09._~-"), "AZaz09._~-");
  assertEquals(percentEncode("/a b%*"), "%2Fa%20b%25%2A");
  assertEquals(percentEncode("ü"), "%C3%BC");
  assertEquals(percentEncode("\n"), "%0A");
  assertEquals(percentDecode("%2fa%2Fb"), { ok: true, value: "/a/b" });
  assertEquals(percentDecode("%c3%bc"), { ok: true, value: "ü" });
  assert(!percentDecode("%").ok);
  assert(!percentDecode("%g0").ok);
  assert(!percentDecode("%00").ok);
  assert(!percentDecode("%FF").ok);
  assert(!percentDecode("a/b").ok);
  assert(!percentDecode("a=b").ok);
  assert(!percentDecode("ü").ok);
});

Deno.test("decode: well-formed requests", () => {
  assertEquals(ok("/.hallpass/v1/ask/write/%2Fhome%2Fme%2F.npm%2F%2A%2A/for=10m/reason=npm%20cache"), {
    verb: "ask",
    op: "write",
    target: "/home/me/.npm/**",
    forMs: 600_000,
    reason: "npm cache",
  });
  assertEquals(ok("/.hallpass/v1/check/exec/%2Fusr%2Fbin%2Fgo/timeout=90s"), {
    verb: "check",
    op: "exec",
    target: "/usr/bin/go",
    timeoutMs: 90_000,
  });
  assertEquals(ok("/.hallpass/v1/release/connect/tcp%3A10.0.0.0%2F8%3A443"), {
    verb: "release",
    op: "connect",
    target: "tcp:10.0.0.0/8:443",
  });
  // keys in any order; relative write targets stay relative (the supervisor resolves them)
  assertEquals(ok("/.hallpass/v1/ask/write/build%2F%2A%2A/reason=x/timeout=1m/for=1h30m"), {
    verb: "ask",
    op: "write",
    target: "build/**",
    forMs: 5_400_000,
    timeoutMs: 60_000,
    reason: "x",
  });
  assertEquals(
    ok("/.hallpass/v1/ask/write/x/for=1d2h3m4s5ms").forMs,
    86_400_000 + 7_200_000 + 180_000 + 4005,
  );
});

Deno.test("decode: errors", () => {
  assertEquals(err("/.hallpass/v2/ask/write/x"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/write/x/for=1m/for=1m"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/write/x/colour=red"), "EINVAL");
  assertEquals(err("/.hallpass/v1/release/write/x/reason=done"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/write/%2Fa%2F%2A.txt"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/connect/%2A"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/write/%C3"), "EINVAL");
  assertEquals(err("/.hallpass/v1/ask/write/a%00b"), "EINVAL");
  assertEquals(err("/usr/bin/true"), "EINVAL");
  const r = decodeRequest("/.hallpass/v1/ask/write/x/for=1m/for=2m");
  assert(!r.ok && r.message.includes("twice"), JSON.stringify(r));
});

Deno.test("decode: PATH_MAX boundary", () => {
  const head = "/.hallpass/v1/ask/write/";
  const fits = head + "a".repeat(REQUEST_PATH_MAX - 1 - head.length);
  assertEquals(fits.length, 4095);
  assertEquals(ok(fits).target.length, 4095 - head.length);
  assertEquals(err(fits + "a"), "ENAMETOOLONG");
  assertEquals(err(head + "a".repeat(100_000)), "ENAMETOOLONG");
  // counted in UTF-8 bytes: 2000 × "é" is 4000 bytes (and, raw, EINVAL anyway — but too long comes first)
  assertEquals(err(head + "é".repeat(2040)), "ENAMETOOLONG");
  assertEquals(decodeRequestBytes(new TextEncoder().encode(fits)).ok, true);
  const long = decodeRequestBytes(new TextEncoder().encode(fits + "a"));
  assert(!long.ok && long.errno === "ENAMETOOLONG");
  const nul = decodeRequestBytes(new TextEncoder().encode("/.hallpass/v1/ask/write/a\0b"));
  assert(!nul.ok && nul.errno === "EINVAL");
  const high = decodeRequestBytes(new Uint8Array([...new TextEncoder().encode(head), 0xc3, 0xbc]));
  assert(!high.ok && high.errno === "EINVAL");
  // encodeRequest refuses what would not fit
  assertThrows(() => encodeRequest({ verb: "ask", op: "write", target: "/" + "x".repeat(4090) }), RangeError);
});

Deno.test("encode: examples and round trips", () => {
  assertEquals(
    encodeRequest({ verb: "ask", op: "write", target: "/home/me/.npm/**", for: "10m", reason: "npm cache" }),
    "/.hallpass/v1/ask/write/%2Fhome%2Fme%2F.npm%2F%2A%2A/for=10m/reason=npm%20cache",
  );
  assertEquals(
    encodeRequest({ verb: "check", op: "connect", target: "[::1]:8080", for: 5_400_000, timeout: 1500 }),
    "/.hallpass/v1/check/connect/%5B%3A%3A1%5D%3A8080/for=1h30m/timeout=1s500ms",
  );
  assertEquals(compactDuration(86_400_000), "24h");
  assertThrows(() => compactDuration(0), RangeError);
  assertThrows(() => encodeRequest({ verb: "release", op: "write", target: "x", for: "1m" }), RangeError);
  assertThrows(() => encodeRequest({ verb: "ask", op: "exec", target: "go" }), RangeError);
  assertThrows(() => encodeRequest({ verb: "ask", op: "write", target: "x", for: "1.5m" }), RangeError);
  assertThrows(() => encodeRequest({ verb: "ask", op: "write", target: "" }), RangeError);
});

Deno.test("corpus: tests/fixtures/request_corpus.txt", async () => {
  const text = await Deno.readTextFile(new URL("./fixtures/request_corpus.txt", import.meta.url));
  let n = 0;
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "" || line.startsWith("#")) continue;
    const sp = line.indexOf(" ");
    const expected = line.slice(0, sp);
    const field = line.slice(sp + 1);
    const path: string = field.startsWith('"') ? JSON.parse(field) : field;
    const r = checkResult(path);
    const got = r.ok ? "ok" : r.errno;
    assertEquals(got, expected, `corpus line ${i + 1}: ${line} → ${r.ok ? "ok" : r.message}`);
    n++;
  }
  assert(n >= 60, `corpus has ${n} cases`);
});

// ---------------------------------------------------------------- fuzz

const PIECES = [
  "/",
  "%",
  "=",
  "%2F",
  "%2A",
  "%2a",
  "%00",
  "%FF",
  "%C3",
  "%BC",
  "%E2%82%AC",
  "%0A",
  "%1B",
  "*",
  "**",
  "?",
  "[",
  "a",
  "Z",
  "9",
  ".",
  "~",
  "-",
  "_",
  " ",
  "ü",
  "\0",
  "\ud800",
  "😀",
  "v1",
  "v2",
  "ask",
  "check",
  "release",
  "write",
  "exec",
  "connect",
  "for=",
  "timeout=",
  "reason=",
  "10m",
  "1h30m",
  "0s",
  "1.5s",
  "ms",
  "366d",
  "367d",
  "@",
  "tcp%3A",
  "unix%3A",
];

function randomInput(rand: () => number): RequestInput {
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const verb = pick(REQUEST_VERBS);
  const op = pick(REQUEST_OPS);
  const chars = ["a", "b", "/", " ", "%", "ü", "😀", "\n", "=", ".", "-", "~", ":", "@", "+", "\\", "'", '"'];
  let body = "";
  const len = 1 + Math.floor(rand() * 40);
  for (let i = 0; i < len; i++) body += pick(chars);
  let target = op === "exec" ? "/" + body : body;
  if (op === "connect" && target.trim() === "*") target = "1.2.3.4";
  if (rand() < 0.3 && op !== "connect") target = target.replace(/\/*$/, "") + "/**";
  const input: RequestInput = { verb, op, target };
  if (verb !== "release") {
    if (rand() < 0.5) {
      input.for = rand() < 0.5 ? 1 + Math.floor(rand() * 86_400_000) : pick(["90s", "10m", "1h30m"]);
    }
    if (rand() < 0.5) input.timeout = 1 + Math.floor(rand() * 3_600_000);
    if (rand() < 0.5) input.reason = pick(["npm install", "für den Cache", "😀 ok", "a=b/c%d", "x"]);
  }
  return input;
}

/** Decodes and checks the shape of the answer; throws if decodeRequest itself throws. */
function checkResult(path: string): DecodeResult {
  const r = decodeRequest(path);
  if (r.ok) {
    const q = r.request;
    assert(REQUEST_VERBS.includes(q.verb) && REQUEST_OPS.includes(q.op), JSON.stringify(q));
    assert(q.target.length > 0 && !q.target.includes("\0"), JSON.stringify(q));
    if (q.op === "exec") assert(q.target.startsWith("/"), q.target);
    if (q.op !== "connect") assert(!/[*?[]/.test(q.target.replace(/\/\*\*$/, "")), q.target);
    if (q.verb === "release") {
      assert(q.forMs === undefined && q.timeoutMs === undefined && q.reason === undefined);
    }
    for (const ms of [q.forMs, q.timeoutMs]) {
      if (ms !== undefined) assert(Number.isSafeInteger(ms) && ms > 0 && ms <= 366 * 86_400_000, String(ms));
    }
    // deno-lint-ignore no-control-regex
    if (q.reason !== undefined) assert(q.reason.length > 0 && !/[\u0000-\u001f\u007f-\u009f]/.test(q.reason));
    // canonical re-encoding decodes to the same request
    const again = decodeRequest(encodeRequest({ ...q, for: q.forMs, timeout: q.timeoutMs }));
    assert(again.ok, path);
    assertEquals(again.request, q);
  } else {
    assert(r.errno === "EINVAL" || r.errno === "ENAMETOOLONG", JSON.stringify(r));
    assert(typeof r.message === "string" && r.message.length > 0 && !r.message.includes("\n"), r.message);
  }
  return r;
}

Deno.test("fuzz: encode → decode round trips (3000 seeded cases)", () => {
  const rand = prng(0x5eed1);
  for (let i = 0; i < 3000; i++) {
    const input = randomInput(rand);
    const path = encodeRequest(input);
    const r = checkResult(path);
    assert(r.ok, `case ${i}: ${path}`);
    assertEquals(r.request.target, input.target);
    assertEquals(r.request.reason, input.reason);
    if (typeof input.for === "number") assertEquals(r.request.forMs, input.for);
    if (typeof input.timeout === "number") assertEquals(r.request.timeoutMs, input.timeout);
    assert(/^[A-Za-z0-9._~%\/=-]+$/.test(path), path);
  }
});

Deno.test("fuzz: random paths from pieces (5000 seeded cases) never throw", () => {
  const rand = prng(0xbadc0de);
  let oks = 0;
  for (let i = 0; i < 5000; i++) {
    let path = rand() < 0.8 ? "/.hallpass/v1/" : "/.hallpass/";
    const n = Math.floor(rand() * 24);
    for (let j = 0; j < n; j++) path += PIECES[Math.floor(rand() * PIECES.length)];
    if (checkResult(path).ok) oks++;
  }
  assert(oks >= 0);
});

Deno.test("fuzz: mutated valid requests (6000 seeded cases) never throw", () => {
  const rand = prng(42);
  let oks = 0, errs = 0;
  for (let i = 0; i < 6000; i++) {
    let path = encodeRequest(randomInput(rand));
    const rounds = 1 + Math.floor(rand() * 4);
    for (let k = 0; k < rounds; k++) {
      const at = Math.floor(rand() * (path.length + 1));
      const piece = PIECES[Math.floor(rand() * PIECES.length)];
      switch (Math.floor(rand() * 6)) {
        case 0: // insert
          path = path.slice(0, at) + piece + path.slice(at);
          break;
        case 1: // delete a run
          path = path.slice(0, at) + path.slice(at + 1 + Math.floor(rand() * 5));
          break;
        case 2: // replace one character
          path = path.slice(0, at) + piece + path.slice(at + 1);
          break;
        case 3: { // duplicate a segment
          const segs = path.split("/");
          segs.push(segs[Math.floor(rand() * segs.length)]);
          path = segs.join("/");
          break;
        }
        case 4: // truncate
          path = path.slice(0, at);
          break;
        case 5: // grow past PATH_MAX sometimes
          path += "a".repeat(Math.floor(rand() * 5000));
          break;
      }
    }
    if (checkResult(path).ok) oks++;
    else errs++;
  }
  assert(oks > 100 && errs > 1000, `ok ${oks}, errors ${errs}`);
});

Deno.test("fuzz: random bytes through decodeRequestBytes (3000 seeded cases) never throw", () => {
  const rand = prng(7);
  const head = new TextEncoder().encode("/.hallpass/v1/");
  for (let i = 0; i < 3000; i++) {
    const n = Math.floor(rand() * (rand() < 0.05 ? 5000 : 80));
    const bytes = new Uint8Array(head.length + n);
    bytes.set(head);
    for (let j = 0; j < n; j++) {
      bytes[head.length + j] = rand() < 0.7
        ? "askwrite/%2F=for10m"[Math.floor(rand() * 19)].charCodeAt(0)
        : Math.floor(rand() * 256);
    }
    const r = decodeRequestBytes(bytes);
    if (!r.ok) assert(r.errno === "EINVAL" || r.errno === "ENAMETOOLONG");
  }
});
