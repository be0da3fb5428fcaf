/**
 * The request protocol spoken without the helper (docs/request-protocol.md): Python execs hand-made
 * `/.hallpass/v1/...` paths in a child and reads the errno. Malformed requests are EINVAL, a request longer
 * than 4095 bytes ENAMETOOLONG; valid ones get the same answers as hallpass-request; the doc's Python example
 * runs as written.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { ROOT } from "./harness.ts";
import { q, requestScratch, type Scratch, session, show } from "./request_harness.ts";

/** Python that defines `ex(path)`: execv in a forked child, the errno name it failed with (or what happened). */
const EX = `
import errno, os, sys
def ex(path):
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(path, [path])
        except OSError as e:
            os._exit(min(e.errno, 254))
        os._exit(255)
    _, st = os.waitpid(pid, 0)
    if not os.WIFEXITED(st):
        return "signal %d" % os.WTERMSIG(st)
    c = os.WEXITSTATUS(st)
    return errno.errorcode.get(c, str(c))
`;

async function py(s: Scratch, args: string[], body: string, env: Record<string, string> = {}) {
  const file = `${s.base}/t.py`;
  await Deno.writeTextFile(file, EX + body);
  await Deno.chmod(s.base, 0o755);
  return await session(s, args, `python3 ${q(file)}`, { env });
}

Deno.test("request from Python: malformed requests are EINVAL, longer than 4095 bytes ENAMETOOLONG", async () => {
  const s = await requestScratch();
  try {
    const cases: Record<string, string> = {
      version_v2: "/.hallpass/v2/check/write/%2Ftmp%2Ff",
      version_V1: "/.hallpass/V1/check/write/%2Ftmp%2Ff",
      no_version: "/.hallpass/",
      bad_escape: "/.hallpass/v1/check/write/%2Ftmp%2Gf",
      short_escape: "/.hallpass/v1/check/write/%2Ftmp%2",
      raw_space: "/.hallpass/v1/check/write/%2Ftmp%2Fa b",
      nul_escape: "/.hallpass/v1/check/write/%2Ftmp%00",
      bad_utf8: "/.hallpass/v1/check/write/%2Ftmp%2F%FF",
      unknown_key: "/.hallpass/v1/ask/write/%2Ftmp%2Ff/bogus=1",
      key_twice: "/.hallpass/v1/ask/write/%2Ftmp%2Ff/for=1m/for=2m",
      empty_value: "/.hallpass/v1/ask/write/%2Ftmp%2Ff/reason=",
      bad_duration: "/.hallpass/v1/ask/write/%2Ftmp%2Ff/for=10",
      control_reason: "/.hallpass/v1/ask/write/%2Ftmp%2Ff/reason=a%1Bb",
      release_key: "/.hallpass/v1/release/write/%2Ftmp%2Ff/for=1m",
      trailing_slash: "/.hallpass/v1/check/write/%2Ftmp%2Ff/",
      empty_target: "/.hallpass/v1/check/write/",
      unknown_verb: "/.hallpass/v1/grant/write/%2Ftmp%2Ff",
      unknown_op: "/.hallpass/v1/check/read/%2Ftmp%2Ff",
      glob: "/.hallpass/v1/check/write/%2Ftmp%2F%2A.log",
      exec_relative: "/.hallpass/v1/check/exec/bin%2Fls",
      exec_group: "/.hallpass/v1/check/exec/%40system",
      connect_star: "/.hallpass/v1/check/connect/%2A",
      connect_host: "/.hallpass/v1/check/connect/example.com%3A443",
    };
    const prefix = "/.hallpass/v1/check/write/";
    const body = (long: boolean) =>
      [
        `LONG = ${long ? "True" : "False"}`,
        `cases = ${JSON.stringify(cases)}`,
        `if LONG:`,
        `    cases["too_long_4096"] = ${JSON.stringify(prefix)} + "a" * (4096 - ${prefix.length})`,
        `    cases["too_long_8000"] = ${JSON.stringify(prefix)} + "a" * 8000`,
        `cases["fits_4095"] = ${JSON.stringify(prefix)} + "a" * (4095 - ${prefix.length})`,
        `cases["raw_byte"] = b"/.hallpass/v1/check/write/%2Ftmp%2F\\xc3\\xbc"`,
        `for k, v in cases.items(): print("%s=%s" % (k, ex(v)))`,
      ].join("\n");
    const expected: Record<string, string> = {};
    for (const k of Object.keys(cases)) expected[k] = "EINVAL";
    Object.assign(expected, {
      too_long_4096: "ENAMETOOLONG",
      too_long_8000: "ENAMETOOLONG",
      fits_4095: "EEXIST", // a relative name in the project: allowed
      raw_byte: "EINVAL",
    });
    // TODO(mediator): with exec mediated, an exec path of 4096 bytes or more is answered EFAULT, not
    // ENAMETOOLONG (#exec: readCString gives null, answered EFAULT). Reported; once fixed, use `true` for both.
    for (const [mediate, long] of [["write,exec,connect", false], ["write", true]] as const) {
      const r = await py(s, ["--no-ask", "--mediate", mediate], body(long));
      assertEquals(r.code, 0, show(r));
      const want = { ...expected };
      if (!long) {
        delete want.too_long_4096;
        delete want.too_long_8000;
      }
      // connect is not mediated here: a request that decodes is ENOSYS before its DEST is looked at.
      if (mediate === "write") want.connect_host = "ENOSYS";
      assertEquals(r.rc, want, `--mediate ${mediate}\n${show(r)}`);
    }
  } finally {
    await s.cleanup();
  }
});

Deno.test("request from Python: valid requests get the same answers as hallpass-request", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    await Deno.mkdir(`${o}/allowed`);
    const rules = `${s.base}/r.rules`;
    await Deno.writeTextFile(rules, `deny write ${o}/denied/**\n`);
    // [name, helper args, python (verb, op, target, keys)]
    const cases: [string, string[], [string, string, string, Record<string, string>]][] = [
      ["check_outside", ["check", "write", `${o}/f`], ["check", "write", `${o}/f`, {}]],
      ["check_project", ["check", "write", "rel/f"], ["check", "write", "rel/f", {}]],
      ["check_allowed", ["check", "write", `${o}/allowed/**`], ["check", "write", `${o}/allowed/**`, {}]],
      ["check_denied", ["check", "write", `${o}/denied/x`], ["check", "write", `${o}/denied/x`, {}]],
      ["ask_denied", ["write", `${o}/g`, "--for", "1m", "--reason", "über ✓"], [
        "ask",
        "write",
        `${o}/g`,
        { for: "1m", reason: "über ✓" },
      ]],
      ["check_exec", ["check", "exec", "/bin/sh"], ["check", "exec", "/bin/sh", {}]],
      ["check_exec_tree", ["check", "exec", `${o}/bin/**`], ["check", "exec", `${o}/bin/**`, {}]],
      ["connect", ["check", "connect", "tcp:127.0.0.1:9"], ["check", "connect", "tcp:127.0.0.1:9", {}]],
      ["release", ["release", "write", `${o}/f`], ["release", "write", `${o}/f`, {}]],
      ["space_name", ["check", "write", `${o}/a b%c`], ["check", "write", `${o}/a b%c`, {}]],
    ];
    const doc = await pythonExample();
    const fn = doc.slice(0, doc.indexOf("\nprint("));
    const body = [
      fn,
      ...cases.map(([name, , [verb, op, target, keys]]) =>
        `print("${name}=" + str(hallpass_request(${JSON.stringify(verb)}, ${JSON.stringify(op)}, ${
          JSON.stringify(target)
        }, **${JSON.stringify(keys)})))`
      ),
      `import subprocess`,
      ...cases.map(([name, args]) =>
        `print("helper_${name}=" + str(subprocess.run([os.environ["R"], *${
          JSON.stringify(args)
        }], stderr=subprocess.DEVNULL).returncode))`
      ),
    ].join("\n");
    const errnoExit: Record<string, string> = {
      EALREADY: "0",
      ECANCELED: "0",
      EEXIST: "1",
      EPERM: "3",
      ETIMEDOUT: "4",
      ENOMSG: "5",
      EINVAL: "6",
      ENAMETOOLONG: "6",
      ENOSYS: "7",
      ENOENT: "8",
      ESRCH: "10",
    };
    const r = await py(s, ["--no-ask", "--rules", rules, "--allow-path", `${o}/allowed`], body);
    assertEquals(r.code, 0, show(r));
    const got: Record<string, string> = {};
    for (const [name] of cases) got[name] = `${r.rc[name]} → exit ${errnoExit[r.rc[name]] ?? "9"}`;
    const fromHelper: Record<string, string> = {};
    for (const [name] of cases) fromHelper[name] = `${r.rc[name]} → exit ${r.rc[`helper_${name}`]}`;
    assertEquals(got, fromHelper, show(r));
    assertEquals(
      [r.rc.check_outside, r.rc.check_project, r.rc.check_allowed, r.rc.check_denied, r.rc.ask_denied],
      ["ENOMSG", "EEXIST", "EEXIST", "EPERM", "EPERM"],
      show(r),
    );
    assertEquals([r.rc.check_exec, r.rc.connect, r.rc.release], ["EEXIST", "ENOSYS", "ESRCH"], show(r));
  } finally {
    await s.cleanup();
  }
});

/** The ```python block of docs/request-protocol.md. */
async function pythonExample(): Promise<string> {
  const md = await Deno.readTextFile(`${ROOT}/docs/request-protocol.md`);
  const m = /```python\n([\s\S]*?)```/.exec(md);
  assert(m, "docs/request-protocol.md has a python example");
  return m[1];
}

Deno.test("request from Python: the doc's example runs as written (EPERM under --no-ask, EALREADY when granted, ENOENT outside)", async () => {
  const s = await requestScratch();
  try {
    const file = `${s.base}/example.py`;
    await Deno.writeTextFile(file, await pythonExample());
    await Deno.chmod(s.base, 0o755);
    const noAsk = await session(s, ["--no-ask"], `python3 ${q(file)}`);
    assertEquals(noAsk.stdout, "EPERM\n", show(noAsk));

    const ask = `${s.base}/ask.sh`;
    const log = `${s.base}/q.jsonl`;
    await Deno.writeTextFile(ask, `#!/bin/sh\ncat >> ${q(log)}\necho once\n`);
    await Deno.chmod(ask, 0o755);
    const granted = await session(
      s,
      ["--ask-program", ask],
      `python3 ${q(file)}; req check check write ${q(s.home + "/.npm/_cacache/x")}`,
    );
    assertEquals(granted.stdout, "EALREADY\ncheck=1\n", show(granted));
    const question = JSON.parse((await Deno.readTextFile(log)).trim());
    assertEquals([question.target, question.reason, question.syscall], [
      `${s.home}/.npm/**`,
      "npm cache",
      "request",
    ]);

    const outside = await new Deno.Command("python3", {
      args: [file],
      env: { HOME: s.home, PATH: "/usr/local/bin:/usr/bin:/bin" },
      stdout: "piped",
    }).output();
    assertEquals(new TextDecoder().decode(outside.stdout), "ENOENT\n");
  } finally {
    await s.cleanup();
  }
});
