// Tests of the hallpass-request program (helper/hallpass-request/hallpass-request.c), run for real outside
// hallpass: exit codes, the one stderr line, the percent-encoded path (via HALLPASS_REQUEST_DRY_RUN=1 and strace),
// and a seeded fuzz of the argument parser. Uses ./hallpass-request when it is up to date, else builds it with
// the Makefile's musl-gcc command into a temporary directory.
import { deepStrictEqual, ok as assert } from "node:assert/strict";
import { encodeRequest, type RequestInput } from "../lib/policy/request_protocol.ts";
import { probe, test, tool } from "./helpers/skip.ts";
import { prng } from "./helpers/prng.ts";

const assertEquals = <T>(actual: T, expected: T, msg?: string) =>
  deepStrictEqual(actual, expected, msg as string);

const ROOT = new URL("..", import.meta.url).pathname;
const SOURCE = `${ROOT}helper/hallpass-request/hallpass-request.c`;
const TMP = await Deno.makeTempDir({ prefix: "hallpass-request-test-" });
// Removed when the test module ends (not by a "test" that checks nothing).
globalThis.addEventListener("unload", () => Deno.removeSync(TMP, { recursive: true }));
const BIN = await findOrBuild();

async function findOrBuild(): Promise<string> {
  const existing = `${ROOT}hallpass-request`;
  try {
    const [bin, src] = await Promise.all([Deno.stat(existing), Deno.stat(SOURCE)]);
    if (bin.isFile && bin.mtime && src.mtime && bin.mtime >= src.mtime) return existing;
  } catch { /* missing: build it */ }
  const out = `${TMP}/hallpass-request`;
  const args = [
    ..."-static -Os -Wall -Wextra -Werror -D_GNU_SOURCE -fno-strict-aliasing".split(" "),
    "-o",
    out,
    SOURCE,
  ];
  const r = await new Deno.Command("musl-gcc", { args, stdout: "piped", stderr: "piped" }).output();
  if (!r.success) throw new Error(`musl-gcc failed:\n${new TextDecoder().decode(r.stderr)}`);
  return out;
}

interface Run {
  code: number;
  signal: Deno.Signal | null;
  stdout: string;
  stderr: string;
  stderrBytes: Uint8Array;
}

const BASE_ENV: Record<string, string> = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C.UTF-8" };

async function run(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<Run> {
  const r = await new Deno.Command(BIN, {
    args,
    env: { ...BASE_ENV, ...env },
    clearEnv: true,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: r.code,
    signal: r.signal,
    stdout: dec.decode(r.stdout),
    stderr: dec.decode(r.stderr),
    stderrBytes: r.stderr,
  };
}

/** Runs through bash so arguments can hold bytes that are not UTF-8 (`printf` escapes). */
async function runBash(script: string): Promise<Run> {
  const r = await new Deno.Command("bash", {
    args: ["-c", script, BIN],
    env: BASE_ENV,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return {
    code: r.code,
    signal: r.signal,
    stdout: dec.decode(r.stdout),
    stderr: dec.decode(r.stderr),
    stderrBytes: r.stderr,
  };
}

function oneLine(r: Run, what: string) {
  const lines = r.stderr.split("\n");
  assert(
    lines.length === 2 && lines[1] === "" && lines[0].startsWith("hallpass-request: "),
    `${what}: want exactly one stderr line, got ${JSON.stringify(r.stderr)}`,
  );
  new TextDecoder("utf-8", { fatal: true }).decode(r.stderrBytes); // valid UTF-8
}

async function expectExit(args: string[], code: number, env: Record<string, string> = {}, cwd?: string) {
  const r = await run(args, env, cwd);
  const what = JSON.stringify(args);
  assertEquals(r.signal, null, `${what}: killed by a signal`);
  assertEquals(r.code, code, `${what}: exit ${r.code}, stderr ${JSON.stringify(r.stderr)}`);
  assertEquals(r.stdout, "", `${what}: stdout must be empty`);
  oneLine(r, what);
  return r;
}

async function dryRun(args: string[], env: Record<string, string> = {}, cwd?: string): Promise<string> {
  const r = await run(args, { HALLPASS_REQUEST_DRY_RUN: "1", ...env }, cwd);
  assertEquals(r.code, 0, `${JSON.stringify(args)}: exit ${r.code}, ${r.stderr}`);
  oneLine(r, JSON.stringify(args));
  assert(r.stdout.endsWith("\n") && r.stdout.indexOf("\n") === r.stdout.length - 1, r.stdout);
  return r.stdout.slice(0, -1);
}

Deno.test("outside hallpass: exit 8 and one line, for every op and verb", async () => {
  const cases = [
    ["write", "/tmp/x"],
    ["write", "/home/me/.npm/**", "--for", "10m", "--reason", "npm cache"],
    ["check", "write", "relative/file"],
    ["release", "write", "/tmp/x"],
    ["exec", "/bin/sh"],
    ["exec", "sh", "--timeout=30s"],
    ["check", "exec", "/opt/**"],
    ["connect", "127.0.0.1:80"],
    ["connect", "tcp:10.0.0.0/8:443-444", "--for=1h30m"],
    ["connect", "[::1]:8080"],
    ["connect", "unix:/run/docker.sock"],
    ["release", "connect", "unix:@prefix*"],
  ];
  for (const args of cases) {
    const r = await expectExit(args, 8);
    assertEquals(r.stderr, "hallpass-request: not running under hallpass (no /.hallpass)\n");
  }
});

Deno.test("usage errors: exit 2", async () => {
  const cases = [
    [],
    ["write"],
    ["check"],
    ["release"],
    ["release", "write"],
    ["frob", "/x"],
    ["check", "frob", "/x"],
    ["ask", "write", "/x"],
    ["write", "/x", "extra"],
    ["write", ""],
    ["write", "/x", "--bogus"],
    ["write", "/x", "-x"],
    ["write", "/x", "--format=1m"],
    ["write", "/x", "--for", "1m", "--for", "2m"],
    ["write", "/x", "--for=1m", "--for=1m"],
    ["write", "/x", "--reason", "a", "--reason=b"],
    ["write", "/x", "--timeout", "1m", "--timeout", "1m"],
    ["write", "/x", "--for"],
    ["write", "/x", "--reason"],
    ["write", "/x", "--timeout"],
    ["release", "write", "/x", "--for", "1m"],
    ["release", "exec", "/x", "--reason", "done"],
    ["release", "connect", "1.2.3.4", "--timeout=1m"],
  ];
  for (const args of cases) await expectExit(args, 2);
});

Deno.test("malformed values: exit 6", async () => {
  const cases = [
    ...["0s", "1.5s", "10", "x", "367d", "", " 1m", "1m ", "1M", "-1m", "99999999999999999999999h", "1h30"]
      .map(
        (d) => ["write", "/x", "--for", d],
      ),
    ["write", "/x", "--timeout=0ms"],
    ["write", "/a/*.txt"],
    ["write", "/a/?"],
    ["write", "/a/[ab]"],
    ["write", "**"],
    ["write", "/a/**/b"],
    ["write", "/x", "--reason", "two\nlines"],
    ["write", "/x", "--reason", "\x1b[31mred"],
    ["write", "/x", "--reason="],
    ["connect", "*"],
    ["connect", "tcp:*"],
    ["connect", "*:443"],
    ["connect", "example.com"],
    ["connect", "example.com:443"],
    ["connect", "tcp:localhost:80"],
    ["connect", "unix:"],
    ["connect", "unix:relative.sock"],
    ["connect", "[::1"],
    ["exec", "@system"],
    ["exec", "/usr/bin/g*"],
    ["exec", "no-such-program-hallpass-test"],
    ["write", "/" + "a".repeat(5000)],
  ];
  for (const args of cases) await expectExit(args, 6);
  const long = await expectExit(["write", "/" + "a".repeat(5000)], 6);
  assert(long.stderr.includes("ENAMETOOLONG"), long.stderr);
  assert(long.stderr.length < 300, "the long target is not echoed whole");
});

Deno.test("exec PROG: resolved through $PATH, relative paths made absolute", async () => {
  const dir = await Deno.makeTempDir({ dir: TMP });
  await Deno.writeTextFile(`${dir}/mytool`, "#!/bin/sh\n");
  await Deno.chmod(`${dir}/mytool`, 0o755);
  await Deno.writeTextFile(`${dir}/notexec`, "");
  assertEquals(
    await dryRun(["exec", "mytool"], { PATH: `/nonexistent:${dir}` }),
    encodeRequest({ verb: "ask", op: "exec", target: `${dir}/mytool` }),
  );
  await expectExit(["exec", "mytool"], 6, { PATH: "/nonexistent" });
  await expectExit(["exec", "notexec"], 6, { PATH: dir });
  await expectExit(["exec", "mytool"], 8, { PATH: dir });
  assertEquals(
    await dryRun(["check", "exec", "./mytool"], {}, dir),
    encodeRequest({ verb: "check", op: "exec", target: `${dir}/mytool` }),
  );
  assertEquals(
    await dryRun(["exec", "sub/**"], {}, dir),
    encodeRequest({ verb: "ask", op: "exec", target: `${dir}/sub/**` }),
  );
  // relative write targets are sent as written: the supervisor resolves them against the requester's cwd
  assertEquals(
    await dryRun(["write", "build/**"], {}, dir),
    encodeRequest({ verb: "ask", op: "write", target: "build/**" }),
  );
});

Deno.test("--help, -h and --version: exit 0 on stdout", async () => {
  for (const args of [["--help"], ["-h"], ["write", "/x", "--help"]]) {
    const r = await run(args);
    assertEquals(r.code, 0);
    assert(r.stdout.startsWith("usage: hallpass-request [check] write|exec|connect TARGET"), r.stdout);
    assertEquals(r.stderr, "");
  }
  const v = await run(["--version"]);
  assertEquals(v.code, 0);
  assert(/^hallpass-request \S+ \(request protocol v1\)\n$/.test(v.stdout), v.stdout);
});

Deno.test("the executed path is percent-encoded exactly as encodeRequest does (dry run)", async () => {
  const cases: [string[], RequestInput][] = [
    [["write", "/home/me/.npm/**", "--for", "10m", "--reason", "npm cache"], {
      verb: "ask",
      op: "write",
      target: "/home/me/.npm/**",
      for: "10m",
      reason: "npm cache",
    }],
    [["write", "/a b/ü%/~x", "--reason=für 😀", "--timeout=2m", "--for=1h30m"], {
      verb: "ask",
      op: "write",
      target: "/a b/ü%/~x",
      for: "1h30m",
      timeout: "2m",
      reason: "für 😀",
    }],
    [["check", "connect", "tcp:10.0.0.0/8:443-444"], {
      verb: "check",
      op: "connect",
      target: "tcp:10.0.0.0/8:443-444",
    }],
    [["release", "connect", "unix:@prefix*"], { verb: "release", op: "connect", target: "unix:@prefix*" }],
    [["write", "--", "-odd name"], { verb: "ask", op: "write", target: "-odd name" }],
    [["write", "new\nline"], { verb: "ask", op: "write", target: "new\nline" }],
  ];
  for (const [args, input] of cases) assertEquals(await dryRun(args), encodeRequest(input));

  // the PATH_MAX boundary: 4095 bytes are made, 4096 refused
  const head = encodeRequest({ verb: "ask", op: "write", target: "/" });
  const fit = "/" + "a".repeat(4095 - head.length);
  assertEquals((await dryRun(["write", fit])).length, 4095);
  await expectExit(["write", fit + "a"], 6, { HALLPASS_REQUEST_DRY_RUN: "1" });
});

Deno.test("seeded random valid requests: the helper's path equals encodeRequest (150 runs)", async () => {
  const rand = prng(2024);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const chars = ["a", "B", "/", " ", "%", "ü", "😀", "=", ".", "-", "~", ":", "+", "'", '"', "\\", "&", "\t"];
  for (let i = 0; i < 150; i++) {
    const verb = pick(["ask", "check", "release"] as const);
    const op = pick(["write", "connect"] as const);
    let target = op === "connect"
      ? pick([
        "1.2.3.4",
        "tcp:1.2.3.4:80",
        "udp:10.0.0.0/8:53",
        "[fe80::1]:22",
        "::1",
        "unix:/tmp/s",
        "unix:@x",
      ])
      : "/" + Array.from({ length: 1 + Math.floor(rand() * 30) }, () => pick(chars)).join("");
    if (op === "write" && rand() < 0.3) target = target.replace(/\/*$/, "") + "/**";
    const input: RequestInput = { verb, op, target };
    const args: string[] = verb === "ask" ? [op, target] : [verb, op, target];
    if (verb !== "release") {
      if (rand() < 0.5) {
        input.for = pick(["90s", "10m", "2h", "1h30m", "500ms", "1d"]);
        args.push(...(rand() < 0.5 ? ["--for", input.for] : [`--for=${input.for}`]));
      }
      if (rand() < 0.5) {
        input.timeout = pick(["30s", "5m"]);
        args.push("--timeout", input.timeout);
      }
      if (rand() < 0.5) {
        input.reason = pick(["npm install", "für den Cache", "a=b/c%d", "x", "😀"]);
        args.push("--reason", input.reason);
      }
    }
    assertEquals(await dryRun(args), encodeRequest(input), JSON.stringify(args));
  }
});

// Control: can strace trace a program here at all (not in a container that forbids ptrace)?
const straceWorks = tool("strace") ?? probe("strace-traces", () => {
  const r = new Deno.Command("strace", { args: ["-o", "/dev/null", "true"], stdout: "null", stderr: "piped" })
    .outputSync();
  return r.success ? undefined : `strace cannot trace here: ${new TextDecoder().decode(r.stderr).trim()}`;
});

test({ name: "strace: the real execve gets the encoded path and ENOENT", ignore: straceWorks }, async () => {
  const log = `${TMP}/strace.log`;
  const r = await new Deno.Command("strace", {
    args: ["-f", "-s", "8192", "-e", "trace=execve", "-o", log, BIN, "write", "/a b/ü", "--for", "10m"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertEquals(r.code, 8);
  const text = await Deno.readTextFile(log);
  const want = encodeRequest({ verb: "ask", op: "write", target: "/a b/ü", for: "10m" });
  assert(text.includes(`execve("${want}"`) && /= -1 ENOENT/.test(text), text);
});

Deno.test("arguments that are not UTF-8: exit 6 and one valid UTF-8 line", async () => {
  for (
    const script of [
      `"$0" write "$(printf '/a\\377b')"`,
      `"$0" write /x --reason "$(printf 'caf\\303')"`,
      `"$0" connect "$(printf '\\300\\200')"`,
      `"$0" exec "$(printf '/usr/\\355\\240\\200')"`,
    ]
  ) {
    const r = await runBash(script);
    assertEquals(r.code, 6, `${script}: ${r.stderr}`);
    oneLine(r, script);
  }
  const r = await runBash(`"$0" "$(printf 'fr\\377ob\\033[2J')" /x`);
  assertEquals(r.code, 2);
  oneLine(r, "escaped unknown op");
  assert(!r.stderr.includes("\x1b"), "control characters are escaped");
});

// ---------------------------------------------------------------- fuzz of the argument parser

Deno.test("fuzz: random argv (400 seeded runs): no crash, exit 2/6/8, one stderr line", async () => {
  const rand = prng(0xfeed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
  const words = [
    "check",
    "release",
    "write",
    "exec",
    "connect",
    "--for",
    "--reason",
    "--timeout",
    "--for=10m",
    "--timeout=",
    "--reason=x",
    "--",
    "-",
    "10m",
    "0s",
    "1h30m",
    "/tmp/x",
    "/a/**",
    "*",
    "**",
    "1.2.3.4:443",
    "[::1]:80",
    "example.com",
    "unix:@x*",
    "sh",
    "@group",
    "%41",
    "",
  ];
  const odd = ["\n", "\t", "\x1b", "\x7f", "ü", "😀", "\u0085", "\u202e", "%", "\\", "'", "*", "?", "[", "/"];
  const seenCodes = new Set<number>();
  for (let i = 0; i < 400; i++) {
    // a third of the runs start well-formed, so the parser also reaches the request (exit 8) and value checks
    const argv: string[] = rand() < 0.33
      ? [pick(["write", "connect"]), pick(["/tmp/x", "1.2.3.4", "a b"])]
      : [];
    const n = Math.floor(rand() * (argv.length ? 3 : 7));
    for (let j = 0; j < n; j++) {
      const roll = rand();
      if (roll < 0.6) argv.push(pick(words));
      else if (roll < 0.9) {
        argv.push(
          Array.from({ length: Math.floor(rand() * 12) }, () => pick(odd.concat(["a", "b", "1"]))).join(""),
        );
      } else argv.push(pick(["/", "a", "é", "%"]).repeat(Math.floor(rand() * 6000)));
    }
    const r = await run(argv);
    const what = `run ${i}: ${JSON.stringify(argv).slice(0, 300)}`;
    assertEquals(r.signal, null, `${what}: killed by a signal`);
    assert(r.code < 128, `${what}: exit ${r.code}`);
    assert([2, 6, 8].includes(r.code), `${what}: exit ${r.code} ${r.stderr}`);
    assertEquals(r.stdout, "", what);
    oneLine(r, what);
    // deno-lint-ignore no-control-regex
    assert(!/[\x00-\x08\x0b-\x1f\x7f]/.test(r.stderr), `${what}: raw control characters in ${r.stderr}`);
    seenCodes.add(r.code);
  }
  assertEquals([...seenCodes].sort(), [2, 6, 8]);
});
