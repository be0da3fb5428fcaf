/**
 * Fuzz of the supervisor's request handling: a few hundred random and mutated magic paths (from a seed corpus,
 * with a fixed seed) exec'd by one Python process under hallpass, with an ask program that grants whatever
 * reaches it. hallpass must not crash; every answer must be one of the protocol's errnos; a path the decoder
 * refuses must be answered EINVAL/ENAMETOOLONG and never reach the ask program; nothing malformed grants
 * anything (afterwards `check` still says 5 for the target the malformed requests named).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { readQuestions } from "./harness.ts";
import { decodeRequestBytes, encodeRequest, percentEncode } from "../../lib/policy/request_protocol.ts";
import { q, requestScratch, session, show } from "./request_harness.ts";
import { prng } from "../helpers/prng.ts";

/** Answers of the table (docs/request-protocol.md), by name. */
const TABLE = new Set([
  "EALREADY",
  "ECANCELED",
  "EEXIST",
  "EPERM",
  "ETIMEDOUT",
  "ENOMSG",
  "EINVAL",
  "ENAMETOOLONG",
  "ENOSYS",
  "ESRCH",
]);

const enc = new TextEncoder();

Deno.test("request fuzz: hundreds of random and mutated request paths; only table errnos, nothing malformed granted", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const guard = `${o}/guard/**`; // named only by malformed requests
    const corpus: string[] = [
      encodeRequest({ verb: "ask", op: "write", target: `${o}/a/**`, for: "1m", reason: "fuzz ✓" }),
      encodeRequest({ verb: "check", op: "write", target: `${o}/b` }),
      encodeRequest({ verb: "release", op: "write", target: `${o}/a/**` }),
      encodeRequest({ verb: "ask", op: "exec", target: `${o}/bin/**`, timeout: "5s" }),
      encodeRequest({ verb: "check", op: "exec", target: "/usr/bin/env" }),
      encodeRequest({ verb: "ask", op: "connect", target: "tcp:127.0.0.1:8000-8010", reason: "dev server" }),
      encodeRequest({ verb: "check", op: "connect", target: "[::1]/64:443" }),
      encodeRequest({ verb: "ask", op: "connect", target: `unix:${o}/s/**` }),
      encodeRequest({ verb: "check", op: "connect", target: "unix:@abstract*" }),
      encodeRequest({ verb: "ask", op: "write", target: "rel/../x/**", for: "1h30m" }),
      "/.hallpass/v1/ask/write/" + "%41".repeat(1300),
      "/.hallpass/",
      "/.hallpass/v1",
      "/.hallpass/v1/ask/write/%2F",
    ];
    const rnd = prng(0x5eed);
    const pick = <T>(a: readonly T[]) => a[Math.floor(rnd() * a.length)];
    const alphabet = "/%=.-_~*?[]@: azAZ09\\\x01\x7f\u00e9\u2028ÿ";
    const tokens = [
      "/",
      "//",
      "%",
      "%2",
      "%2F",
      "%00",
      "%FF",
      "%C3%BC",
      "%2A%2A",
      "=",
      "for=",
      "for=0s",
      "for=999999d",
      "timeout=1ms",
      "reason=%1B",
      "reason=x",
      "..",
      "v1",
      "v2",
      "ask",
      "check",
      "release",
      "write",
      "exec",
      "connect",
      "%2E%2E%2F",
      "tcp%3A",
      "%5B%3A%3A%5D",
      "unix%3A%40",
      "%2Fproc%2Fself%2Froot",
    ];
    const mutate = (p: string): string => {
      let b = p;
      const n = 1 + Math.floor(rnd() * 4);
      for (let i = 0; i < n; i++) {
        const at = Math.floor(rnd() * (b.length + 1));
        switch (Math.floor(rnd() * 6)) {
          case 0: // delete a span
            b = b.slice(0, at) + b.slice(at + 1 + Math.floor(rnd() * 8));
            break;
          case 1: // insert a character
            b = b.slice(0, at) + pick([...alphabet]) + b.slice(at);
            break;
          case 2: // insert a token
            b = b.slice(0, at) + pick(tokens) + b.slice(at);
            break;
          case 3: // replace a character
            b = b.slice(0, at) + pick([...alphabet]) + b.slice(at + 1);
            break;
          case 4: // duplicate a segment
            {
              const segs = b.split("/");
              const k = Math.floor(rnd() * segs.length);
              segs.splice(k, 0, segs[k]);
              b = segs.join("/");
            }
            break;
          default: // swap two segments
          {
            const segs = b.split("/");
            const x = 2 + Math.floor(rnd() * Math.max(1, segs.length - 2));
            const y = 2 + Math.floor(rnd() * Math.max(1, segs.length - 2));
            if (x < segs.length && y < segs.length) [segs[x], segs[y]] = [segs[y], segs[x]];
            b = segs.join("/");
          }
        }
      }
      return b.startsWith("/.hallpass/") ? b : "/.hallpass/" + b.replace(/^\/+/, "");
    };
    const randomPath = (): string => {
      let p = "/.hallpass/";
      const n = 1 + Math.floor(rnd() * 8);
      for (let i = 0; i < n; i++) p += (i ? "/" : "") + (rnd() < 0.6 ? pick(tokens) : pick([...alphabet]));
      return p;
    };
    const fuzz: string[] = [...corpus];
    for (let i = 0; i < 300; i++) fuzz.push(mutate(pick(corpus)));
    for (let i = 0; i < 100; i++) fuzz.push(randomPath());
    // Well-formed requests with odd targets: these reach path resolution and the policy.
    const segs = [
      "..",
      ".",
      "a",
      "ü",
      "a b",
      "%",
      "**",
      "proc",
      "self",
      "root",
      "fd",
      "0",
      "dev",
      "null",
      "",
      "x".repeat(300),
    ];
    const n = () => String(Math.floor(rnd() * 70000));
    const dests = [
      () => `${n()}.${n()}.0.1:${n()}`,
      () => `tcp:10.0.0.0/${n()}:${n()}-${n()}`,
      () => `udp:[::${Math.floor(rnd() * 65536).toString(16)}]/${Math.floor(rnd() * 130)}`,
      () => `unix:${o}/${pick(segs)}/**`,
      () => `unix:@${pick(segs)}*`,
      () => `[::ffff:127.0.0.1]:${n()}`,
      () => `tcp:*:${n()}`,
      () => pick(segs),
    ];
    for (let i = 0; i < 200; i++) {
      const op = pick(["write", "write", "exec", "connect"] as const);
      let target: string;
      if (op === "connect") target = pick(dests)();
      else {
        const k = Math.floor(rnd() * 6);
        target = (rnd() < 0.8 ? (rnd() < 0.5 ? `${o}/v` : "") + "/" : "") +
          Array.from({ length: k }, () => pick(segs)).join("/") + (rnd() < 0.3 ? "/**" : "");
      }
      let p = `/.hallpass/v1/${pick(["ask", "check", "release"])}/${op}/${percentEncode(target)}`;
      if (rnd() < 0.3 && !p.includes("/release/")) p += `/for=${1 + Math.floor(rnd() * 9)}m`;
      if (rnd() < 0.3 && !p.includes("/release/")) p += "/timeout=5s";
      fuzz.push(p);
    }
    // Malformed requests for the guard target, each refused by the decoder.
    const g = encodeRequest({ verb: "ask", op: "write", target: guard });
    const guardBad = [
      g.replace("/v1/", "/v2/"),
      g + "/bogus=1",
      g + "/for=1m/for=1m",
      g + "/",
      g + "/reason=%0A",
      g + "/for=forever",
      g.replace("%2A%2A", "%2A"),
      g.replace("%2F", "%2G"),
      g.replace("%2F", "/"),
      g + "/reason=" + "a".repeat(4096),
      g.replace("/ask/", "/Ask/"),
      g + "/reason=%C3",
    ];
    for (const b of guardBad) assert(!decodeRequestBytes(enc.encode(b)).ok, b);
    for (let i = 0; i < 40; i++) fuzz.push(...guardBad);
    // Paths the kernel could not take as one argument (NUL) are left out; longer than PATH_MAX is tested
    // in request_python_test.ts (the exec-mediated answer to those is a known mediator bug).
    const paths = fuzz.filter((p) => !p.includes("\0") && enc.encode(p).length < 4096);
    assert(paths.length > 700, `${paths.length}`);

    const input = `${s.base}/paths.json`;
    await Deno.writeTextFile(input, JSON.stringify(paths));
    const script = `${s.base}/fuzz.py`;
    await Deno.writeTextFile(
      script,
      `
import errno, json, os, sys
paths = json.load(open(sys.argv[1]))
out = []
for p in paths:
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(p.encode("utf-8", "surrogateescape"), [b"x"])
        except OSError as e:
            os._exit(min(e.errno, 254))
        os._exit(255)
    _, st = os.waitpid(pid, 0)
    if os.WIFEXITED(st):
        c = os.WEXITSTATUS(st)
        out.append(errno.errorcode.get(c, str(c)))
    else:
        out.append("signal %d" % os.WTERMSIG(st))
json.dump(out, open(sys.argv[2], "w"))
print("fuzz=done")
`,
    );
    const log = `${s.base}/questions.jsonl`;
    const ask = `${s.base}/ask.sh`;
    // Grants only below outside/v (where the well-formed random requests point); everything else is denied, so
    // that nothing legitimate can grant the guard target.
    await Deno.writeTextFile(
      ask,
      `#!/bin/sh\nj=$(cat)\nprintf '%s\\n' "$j" >> ${q(log)}\n` +
        `case "$j" in *'"target":"${o}/v/'*) echo once ;; *) echo deny ;; esac\n`,
    );
    await Deno.chmod(ask, 0o755);
    await Deno.chmod(s.base, 0o755);
    const answers = `${s.project}/answers.json`;
    const r = await session(
      s,
      ["--ask-program", ask, "--mediate", "write,exec,connect"],
      [
        `python3 ${q(script)} ${q(input)} ${q(answers)}`,
        `req guard check write ${q(guard)}`,
        `req alive check write ${q(o + "/zz")}`,
      ].join("\n"),
      { timeoutMs: 240_000 },
    );
    assertEquals(r.code, 0, show(r));
    assertEquals(r.rc.fuzz, "done", show(r));
    assert(!/Uncaught|panicked|at .*\.ts:\d+/.test(r.stderr), show(r));
    const got: string[] = JSON.parse(await Deno.readTextFile(answers));
    assertEquals(got.length, paths.length);

    const bad: string[] = [];
    const counts: Record<string, number> = {};
    for (let i = 0; i < paths.length; i++) {
      const a = got[i];
      counts[a] = (counts[a] ?? 0) + 1;
      const d = decodeRequestBytes(enc.encode(paths[i]));
      if (!TABLE.has(a)) bad.push(`${a} (not in the table) for ${JSON.stringify(paths[i])}`);
      else if (!d.ok && a !== d.errno) bad.push(`${a} (decoder: ${d.errno}) for ${JSON.stringify(paths[i])}`);
      else if (d.ok && (a === "EINVAL" || a === "ENAMETOOLONG")) {
        // The supervisor may refuse what the decoder passes (a DEST or path that does not resolve): only EINVAL.
        if (a !== "EINVAL") bad.push(`${a} for a decodable ${JSON.stringify(paths[i])}`);
      }
    }
    assertEquals(bad, [], JSON.stringify(counts));
    // Every question the ask program saw came from a request that decodes, and never for the guard target.
    const qs = await readQuestions(log);
    for (const x of qs) {
      assertEquals(x.syscall, "request", JSON.stringify(x));
      assert(x.target !== guard, JSON.stringify(x));
    }
    assert(counts.EINVAL > 300, JSON.stringify(counts));
    assert(
      (counts.EALREADY ?? 0) > 0 && qs.length > 0,
      `some valid mutants were granted: ${JSON.stringify(counts)}`,
    );
    // Nothing granted the guard: check says 5; and the supervisor still answers.
    assertEquals([r.rc.guard, r.rc.alive], ["5", "5"], show(r));
  } finally {
    await s.cleanup();
  }
});
