/**
 * connect mediation (README.md --allow-connect; docs/connect.md) with real clients against servers on
 * loopback and in temp dirs, run by this test outside the sandbox: curl, python sockets (blocking and
 * non-blocking), node fetch, nc, getent (DNS), bash /dev/tcp, IPv6 loopback, unix sockets by path and abstract
 * name, UDP sendto. Denied without a rule, allowed with one, asked with an ask program; and nothing changes
 * without `--mediate connect`.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, hallpass, readQuestions, type Result, scratch } from "./harness.ts";
import { probe, step, test, tool } from "../helpers/skip.ts";
import { Lines } from "../helpers/lines.ts";

const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C" };
const PY = "/usr/bin/python3";
const MEDIATE = ["--mediate", "write,exec,connect"];

/**
 * One python server for every kind: TCP on 127.0.0.1 and ::1 and on a unix path and an abstract name answers
 * any connection with a minimal HTTP response; UDP on 127.0.0.1 answers each datagram with "pong".
 */
const SERVER = String.raw`
import json, os, socket, sys, threading
d, tag = sys.argv[1], sys.argv[2]
def http(s):
    while True:
        c, _ = s.accept()
        try:
            c.settimeout(15)  # the request comes once hallpass has answered the connect: slow on a loaded machine
            # Read the whole head (a client may write it in pieces: bash's printf does): closing with unread
            # bytes would reset the connection before the client reads the answer.
            got = b""
            try:
                while b"\r\n\r\n" not in got and len(got) < 65536:
                    chunk = c.recv(4096)
                    if not chunk: break
                    got += chunk
            except Exception: pass
            c.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nok\n")
        finally:
            c.close()
def udp(s):
    while True:
        data, peer = s.recvfrom(4096)
        s.sendto(b"pong:" + data, peer)
out = {}
t4 = socket.socket(socket.AF_INET); t4.bind(("127.0.0.1", 0)); t4.listen(16); out["tcp4"] = t4.getsockname()[1]
try:
    t6 = socket.socket(socket.AF_INET6); t6.bind(("::1", 0)); t6.listen(16); out["tcp6"] = t6.getsockname()[1]
except OSError:
    t6 = None
ux = socket.socket(socket.AF_UNIX); ux.bind(d + "/srv.sock"); ux.listen(16); os.chmod(d + "/srv.sock", 0o777)
ab = socket.socket(socket.AF_UNIX); ab.bind("\0" + tag); ab.listen(16)
u4 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u4.bind(("127.0.0.1", 0)); out["udp4"] = u4.getsockname()[1]
for s in [t4, t6, ux, ab]:
    if s: threading.Thread(target=http, args=(s,), daemon=True).start()
threading.Thread(target=udp, args=(u4,), daemon=True).start()
print(json.dumps(out), flush=True)
sys.stdin.read()
`;

interface Servers {
  tcp4: number;
  tcp6?: number;
  udp4: number;
  unix: string;
  abstract: string;
  dir: string;
  stop: () => Promise<void>;
}

async function servers(): Promise<Servers> {
  const dir = await Deno.makeTempDir({ prefix: "hallpass-connect-srv-" });
  await Deno.chmod(dir, 0o755);
  const tag = `hallpass-test-${crypto.randomUUID().slice(0, 8)}`;
  const child = new Deno.Command(PY, {
    args: ["-c", SERVER, dir, tag],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = new Lines(child.stdout);
  const ports = JSON.parse(await out.first("server"));
  return {
    ...ports,
    unix: `${dir}/srv.sock`,
    abstract: tag,
    dir,
    stop: async () => {
      await child.stdin.close().catch(() => {});
      try {
        child.kill("SIGKILL");
      } catch { /* gone */ }
      await child.status;
      await out.cancel();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function hp(args: string[], cwd: string): Promise<Result> {
  return hallpass(args, { cwd, env: ENV, timeoutMs: 120_000 }); // generous: at load a sandbox is slow
}

/** A python client: connects (blocking or non-blocking) and prints the first response line, or the errno. */
const CLIENT = String.raw`
import errno, select, socket, sys
kind, addr = sys.argv[1], sys.argv[2]
fam = {"tcp4": socket.AF_INET, "tcp6": socket.AF_INET6, "unix": socket.AF_UNIX}[kind.split("-")[0]]
s = socket.socket(fam, socket.SOCK_STREAM)
if kind.startswith("unix"): target = addr.replace("@", "\0", 1) if addr.startswith("@") else addr
else: host, port = addr.rsplit(":", 1); target = (host.strip("[]"), int(port))
try:
    if kind.endswith("-nb"):
        s.setblocking(False)
        rc = s.connect_ex(target)
        if rc != 0:
            print("connect", errno.errorcode.get(rc, rc))
            if rc != errno.EINPROGRESS: sys.exit(3)
            select.select([], [s], [], 5)
            err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err: print("SO_ERROR", errno.errorcode[err]); sys.exit(3)
        s.setblocking(True)
    else:
        s.connect(target)
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    print(s.makefile().readline().strip())
except OSError as e:
    print("error", errno.errorcode.get(e.errno, e.errno)); sys.exit(3)
`;

const UDP_CLIENT = String.raw`
import errno, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5)
try:
    dest = ("127.0.0.1", int(sys.argv[1]))
    if sys.argv[2:] == ["sendmsg"]: s.sendmsg([b"pi", b"ng"], [], 0, dest)
    else: s.sendto(b"ping", dest)
    print(s.recvfrom(100)[0].decode())
except OSError as e:
    print("error", errno.errorcode.get(e.errno, e.errno)); sys.exit(3)
`;

Deno.test("curl to a loopback HTTP server: denied without a rule, allowed with --allow-connect, asked", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const url = `http://127.0.0.1:${srv.tcp4}/`;
    const curl = ["curl", "-sS", "--max-time", "10", url];
    let r = await hp(["--no-ask", ...MEDIATE, "--", ...curl], s.project);
    assertEquals(r.code, 7, r.stderr); // curl: couldn't connect
    // (The line may be interleaved with curl's own message: both write to the same stderr.)
    assert(r.stderr.includes(`hallpass: denied connect tcp:127.0.0.1:${srv.tcp4} by curl`), r.stderr);
    r = await hp(
      ["--no-ask", ...MEDIATE, "--allow-connect", `tcp:127.0.0.1:${srv.tcp4}`, "--", ...curl],
      s.project,
    );
    assertEquals([r.code, r.stdout], [0, "ok\n"], r.stderr);
    // Forms that cover it: the address, a network, a port range, any port.
    for (
      const rule of [`127.0.0.1:${srv.tcp4}`, `127.0.0.0/8:${srv.tcp4 - 1}-${srv.tcp4 + 1}`, "127.0.0.1", "*"]
    ) {
      r = await hp(["--no-ask", ...MEDIATE, "--allow-connect", rule, "--", ...curl], s.project);
      assertEquals([r.code, r.stdout], [0, "ok\n"], `${rule}: ${r.stderr}`);
    }
    // Forms that do not: another port, udp, another address.
    for (const rule of [`127.0.0.1:${srv.tcp4 + 1}`, `udp:127.0.0.1:${srv.tcp4}`, `127.0.0.2:${srv.tcp4}`]) {
      r = await hp(["--no-ask", ...MEDIATE, "--allow-connect", rule, "--", ...curl], s.project);
      assertEquals(r.code, 7, `${rule}: ${r.stderr}`);
    }
    const ask = await askProgram(s.outside, "once");
    r = await hp([
      "--ask-program",
      ask,
      ...MEDIATE,
      "--allow-connect",
      "unix:/var/run/nscd/socket",
      "--",
      ...curl,
    ], s.project);
    assertEquals([r.code, r.stdout], [0, "ok\n"], r.stderr);
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals(qs.map((q) => [q.op, q.target, q.syscall]), [[
      "connect",
      `tcp:127.0.0.1:${srv.tcp4}`,
      "connect",
    ]]);
    assert((qs[0].scopes as string[]).includes(`tcp:127.0.0.1:${srv.tcp4}`), JSON.stringify(qs[0]));
    const no = await askProgram(s.outside, "deny", `${s.outside}/q2.jsonl`);
    r = await hp(["--ask-program", no, ...MEDIATE, "--", ...curl], s.project);
    assertEquals(r.code, 7, r.stderr);
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

Deno.test("python sockets: blocking and non-blocking (EINPROGRESS, then success through select)", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const a = `127.0.0.1:${srv.tcp4}`;
    for (const kind of ["tcp4", "tcp4-nb"]) {
      let r = await hp(["--no-ask", ...MEDIATE, "--", PY, "-c", CLIENT, kind, a], s.project);
      // Denied: EACCES from connect itself, for both (a non-blocking connect is refused before it starts).
      assertEquals(
        [r.code, r.stdout],
        [3, kind.endsWith("nb") ? "connect EACCES\n" : "error EACCES\n"],
        r.stderr,
      );
      r = await hp(
        ["--no-ask", ...MEDIATE, "--allow-connect", a, "--", PY, "-c", CLIENT, kind, a],
        s.project,
      );
      const expect = kind.endsWith("nb") ? "connect EINPROGRESS\nHTTP/1.0 200 OK\n" : "HTTP/1.0 200 OK\n";
      assertEquals([r.code, r.stdout], [0, expect], r.stderr);
      // The same as without hallpass.
      const bare = await new Deno.Command(PY, { args: ["-c", CLIENT, kind, a], stdout: "piped" }).output();
      assertEquals(new TextDecoder().decode(bare.stdout), expect);
    }
    // A refused port: the program sees ECONNREFUSED, blocking or not, as without hallpass.
    const closed = srv.udp4; // nothing listens on TCP there
    for (const kind of ["tcp4", "tcp4-nb"]) {
      const r = await hp(
        [
          "--no-ask",
          ...MEDIATE,
          "--allow-connect",
          "127.0.0.1",
          "--",
          PY,
          "-c",
          CLIENT,
          kind,
          `127.0.0.1:${closed}`,
        ],
        s.project,
      );
      assert(r.stdout.includes("ECONNREFUSED"), `${kind}: ${r.stdout} ${r.stderr}`);
    }
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

Deno.test("node fetch, bash /dev/tcp and nc: denied, then allowed", async (t) => {
  const srv = await servers();
  const s = await scratch();
  try {
    const a = `127.0.0.1:${srv.tcp4}`;
    const clients: Record<string, string[]> = {
      node: [
        "/usr/bin/node",
        "-e",
        `fetch("http://${a}/").then(r => r.text()).then(t => process.stdout.write(t), e => { console.log("ERR", e.cause?.code); process.exit(3); })`,
      ],
      bash: [
        "/bin/bash",
        "-c",
        `exec 3<>/dev/tcp/127.0.0.1/${srv.tcp4} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && tail -1 <&3`,
      ],
    };
    clients.nc = [
      "/bin/sh",
      "-c",
      `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 127.0.0.1 ${srv.tcp4} | tail -1`,
    ];
    for (const [name, cmd] of Object.entries(clients)) {
      await step(t, { name, ignore: name === "nc" ? tool("nc") : undefined }, async () => {
        let r = await hp(["--no-ask", ...MEDIATE, "--", ...cmd], s.project);
        assert(r.code !== 0 || name === "nc", `${name} denied: ${r.code} ${r.stdout} ${r.stderr}`);
        assert(!r.stdout.includes("ok"), `${name}: ${r.stdout}`);
        assert(r.stderr.includes(`denied connect tcp:${a}`), `${name}: ${r.stderr}`);
        if (name === "node") assertEquals(r.stdout, "ERR EACCES\n");
        r = await hp(["--no-ask", ...MEDIATE, "--allow-connect", a, "--", ...cmd], s.project);
        assertEquals([r.code, r.stdout], [0, "ok\n"], `${name}: ${r.stderr}`);
      });
    }
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

// Controls: an IPv6 loopback to listen on, a nameserver to ask.
const ipv6 = probe("ipv6", () => {
  try {
    Deno.listen({ hostname: "::1", port: 0 }).close();
    return undefined;
  } catch (e) {
    return `no IPv6 loopback here (${(e as Error).message})`;
  }
});
const nameserver = probe("nameserver", () => {
  try {
    if (/^nameserver\s+\S+/m.test(Deno.readTextFileSync("/etc/resolv.conf"))) return undefined;
  } catch { /* none */ }
  return "no nameserver in /etc/resolv.conf";
});

test(
  { name: "IPv6 loopback [::1]: denied, allowed with --allow-connect [::1]:PORT", ignore: ipv6 },
  async () => {
    const srv = await servers();
    const s = await scratch();
    try {
      const a = `[::1]:${srv.tcp6}`;
      let r = await hp(["--no-ask", ...MEDIATE, "--", PY, "-c", CLIENT, "tcp6", a], s.project);
      assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
      assert(r.stderr.includes(`denied connect tcp:${a}`), r.stderr);
      for (const rule of [a, "[::1]", `tcp:[::1]:${srv.tcp6}`]) {
        r = await hp(
          ["--no-ask", ...MEDIATE, "--allow-connect", rule, "--", PY, "-c", CLIENT, "tcp6-nb", a],
          s.project,
        );
        assertEquals(
          [r.code, r.stdout],
          [0, "connect EINPROGRESS\nHTTP/1.0 200 OK\n"],
          `${rule}: ${r.stderr}`,
        );
      }
      r = await hp(
        ["--no-ask", ...MEDIATE, "--", "curl", "-sS", "--max-time", "10", `http://${a}/`],
        s.project,
      );
      assertEquals(r.code, 7, r.stderr);
      r = await hp([
        "--no-ask",
        ...MEDIATE,
        "--allow-connect",
        a,
        "--",
        "curl",
        "-sS",
        "--max-time",
        "10",
        `http://${a}/`,
      ], s.project);
      assertEquals([r.code, r.stdout], [0, "ok\n"], r.stderr);
    } finally {
      await s.cleanup();
      await srv.stop();
    }
  },
);

Deno.test("unix sockets: a path outside the project, abstract names, and name prefixes", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const run = (rules: string[], kind: string, addr: string) =>
      hp([
        "--no-ask",
        ...MEDIATE,
        ...rules.flatMap((r) => ["--allow-connect", r]),
        "--",
        PY,
        "-c",
        CLIENT,
        kind,
        addr,
      ], s.project);
    let r = await run([], "unix", srv.unix);
    assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
    assert(r.stderr.includes(`denied connect unix:${srv.unix}`), r.stderr);
    for (const rule of [`unix:${srv.unix}`, `unix:${srv.dir}/**`]) {
      r = await run([rule], "unix", srv.unix);
      assertEquals([r.code, r.stdout], [0, "HTTP/1.0 200 OK\n"], `${rule}: ${r.stderr}`);
    }
    r = await run([`unix:${srv.dir}/other.sock`], "unix", srv.unix);
    assertEquals(r.code, 3, r.stderr);
    // A relative path, from the program's cwd.
    r = await hp(
      [
        "--no-ask",
        ...MEDIATE,
        "--allow-connect",
        `unix:${srv.unix}`,
        "--",
        "/bin/sh",
        "-c",
        `cd ${srv.dir} && ${PY} -c '${CLIENT.replaceAll("'", "'\\''")}' unix srv.sock`,
      ],
      s.project,
    );
    assertEquals([r.code, r.stdout], [0, "HTTP/1.0 200 OK\n"], r.stderr);

    const ab = `@${srv.abstract}`;
    r = await run([], "unix", ab);
    assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
    assert(r.stderr.includes(`denied connect unix:${ab}`), r.stderr);
    for (const rule of [`unix:${ab}`, `unix:@hallpass-test-*`]) {
      r = await run([rule], "unix", ab);
      assertEquals([r.code, r.stdout], [0, "HTTP/1.0 200 OK\n"], `${rule}: ${r.stderr}`);
    }
    r = await run([`unix:@other-*`, `unix:${ab}x`], "unix", ab);
    assertEquals(r.code, 3, r.stderr);

    const ask = await askProgram(s.outside, "once");
    r = await hp(["--ask-program", ask, ...MEDIATE, "--", PY, "-c", CLIENT, "unix", ab], s.project);
    assertEquals([r.code, r.stdout], [0, "HTTP/1.0 200 OK\n"], r.stderr);
    const qs = await readQuestions(`${s.outside}/questions.jsonl`);
    assertEquals(qs.map((q) => q.target), [`unix:${ab}`]);
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

Deno.test("UDP sendto with a destination: denied, allowed with udp:ADDR:PORT (not tcp:)", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const run = (rules: string[]) =>
      hp([
        "--no-ask",
        ...MEDIATE,
        ...rules.flatMap((r) => ["--allow-connect", r]),
        "--",
        PY,
        "-c",
        UDP_CLIENT,
        String(srv.udp4),
      ], s.project);
    let r = await run([]);
    assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
    assert(r.stderr.includes(`denied connect udp:127.0.0.1:${srv.udp4} by python3`), r.stderr);
    r = await run([`tcp:127.0.0.1:${srv.udp4}`]);
    assertEquals(r.code, 3, r.stderr);
    r = await run([`udp:127.0.0.1:${srv.udp4}`]);
    assertEquals([r.code, r.stdout], [0, "pong:ping\n"], r.stderr); // exactly the 4 bytes sent (05d11f6)
    // sendmsg with a destination and two iovecs.
    r = await hp(
      ["--no-ask", ...MEDIATE, "--", PY, "-c", UDP_CLIENT, String(srv.udp4), "sendmsg"],
      s.project,
    );
    assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
    r = await hp(
      [
        "--no-ask",
        ...MEDIATE,
        "--allow-connect",
        `udp:127.0.0.1:${srv.udp4}`,
        "--",
        PY,
        "-c",
        UDP_CLIENT,
        String(srv.udp4),
        "sendmsg",
      ],
      s.project,
    );
    assertEquals([r.code, r.stdout], [0, "pong:ping\n"], r.stderr);
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

test(
  { name: "DNS: getent hosts asks, and the question says it is a name lookup", ignore: nameserver },
  async () => {
    const s = await scratch();
    try {
      let ns = "";
      try {
        ns = /^nameserver\s+(\S+)/m.exec(await Deno.readTextFile("/etc/resolv.conf"))?.[1] ?? "";
      } catch { /* none */ }
      const ask = await askProgram(s.outside, "deny");
      const name = "hallpass-test.invalid";
      const r = await hp([
        "--ask-program",
        ask,
        ...MEDIATE,
        "--allow-connect",
        "unix:/var/run/nscd/socket",
        "--",
        "getent",
        "hosts",
        name,
      ], s.project);
      assertEquals(r.code, 2, r.stderr); // not found: the lookup could not be sent
      const qs = await readQuestions(`${s.outside}/questions.jsonl`);
      assert(qs.length >= 1, r.stderr);
      const fam = ns.includes(":") ? `[${ns}]` : ns;
      for (const q of qs) {
        assertEquals(q.op, "connect");
        assert(
          String(q.target).startsWith(`udp:${fam}:53`) || String(q.target).startsWith(`tcp:${fam}:53`),
          String(q.target),
        );
        assert(String(q.target).includes("a DNS name lookup"), String(q.target));
      }
      // Allowed: the lookup reaches the name server (whatever it answers for .invalid, it is not our EACCES).
      const ok = await hp([
        "--no-ask",
        ...MEDIATE,
        "--allow-connect",
        `${fam}:53`,
        "--allow-connect",
        "unix:/var/run/nscd/socket",
        "--",
        "getent",
        "hosts",
        name,
      ], s.project);
      assert(!ok.stderr.includes("denied connect"), ok.stderr);
    } finally {
      await s.cleanup();
    }
  },
);

Deno.test("without --mediate connect nothing about the network changes (local IPC is still decided)", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const a = `127.0.0.1:${srv.tcp4}`;
    const cmds: string[][] = [
      ["curl", "-sS", "--max-time", "10", `http://${a}/`],
      ["/usr/bin/node", "-e", `fetch("http://${a}/").then(r => r.text()).then(t => process.stdout.write(t))`],
      [
        "/bin/bash",
        "-c",
        `exec 3<>/dev/tcp/127.0.0.1/${srv.tcp4} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && tail -1 <&3`,
      ],
    ];
    for (const cmd of cmds) {
      const r = await hp(["--no-ask", "--", ...cmd], s.project);
      assertEquals([r.code, r.stdout], [0, "ok\n"], `${cmd[0]}: ${r.stderr}`);
    }
    {
      const r = await hp(["--no-ask", "--", PY, "-c", CLIENT, "tcp4-nb", a], s.project);
      assertEquals(r.code, 0, `tcp4-nb ${a}: ${r.stdout} ${r.stderr}`);
    }
    // Unix sockets outside the sandbox are local IPC, decided in every mode (tests/e2e/local_ipc_test.ts):
    // denied unasked, allowed by a rule.
    for (const addr of [srv.unix, `@${srv.abstract}`]) {
      const no = await hp(["--no-ask", "--", PY, "-c", CLIENT, "unix", addr], s.project);
      assert(no.code !== 0 && no.stderr.includes(`denied connect unix:${addr}`), `${addr}: ${no.stderr}`);
      const r = await hp([
        "--no-ask",
        "--allow-connect",
        `unix:${addr}`,
        "--",
        PY,
        "-c",
        CLIENT,
        "unix",
        addr,
      ], s.project);
      assertEquals(r.code, 0, `unix ${addr}: ${r.stdout} ${r.stderr}`);
    }
    if (srv.tcp6 !== undefined) {
      const r = await hp(["--no-ask", "--", PY, "-c", CLIENT, "tcp6", `[::1]:${srv.tcp6}`], s.project);
      assertEquals([r.code, r.stdout], [0, "HTTP/1.0 200 OK\n"], r.stderr);
    }
    const u = await hp(["--no-ask", "--", PY, "-c", UDP_CLIENT, String(srv.udp4)], s.project);
    assertEquals([u.code, u.stdout], [0, "pong:ping\n"], u.stderr);
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});

Deno.test("a malformed --allow-connect stops hallpass with status 125 and one clear line (and a hint)", async () => {
  const s = await scratch();
  try {
    for (const bad of ["example.com", "tcp:1.2.3.4:99999", "tcp:example.com:443", "unix:relative.sock"]) {
      const r = await hp([
        "--no-ask",
        ...MEDIATE,
        "--allow-connect",
        bad,
        "--",
        "/usr/bin/touch",
        `${s.project}/ran`,
      ], s.project);
      assertEquals(r.code, 125, `${bad}: ${r.stderr}`);
      const lines = r.stderr.trim().split("\n");
      // One line saying what is wrong, then at most a generic hint line.
      assert(lines[0].startsWith(`hallpass: --allow-connect ${bad}: `), `${bad}: ${r.stderr}`);
      assert(lines.slice(1).every((l) => l.startsWith("hint:")) && lines.length <= 2, `${bad}: ${r.stderr}`);
      console.log(`${bad} → ${lines[0]}`);
    }
    let ran = false;
    try {
      ran = Deno.statSync(`${s.project}/ran`).isFile;
    } catch { /* not run */ }
    assert(!ran, "the command ran");
  } finally {
    await s.cleanup();
  }
});

/**
 * A program that may connect to the sockets of one directory plants a symlink there to a socket it may not
 * reach, and swaps it with a real socket while it connects: the decision is on the socket the path really
 * leads to, and the connect reaches exactly that file (an O_PATH fd opened without following symlinks).
 */
const SWAPPER = `
import os, socket, sys, threading, time
allowed, forbidden = sys.argv[1], sys.argv[2]
mine = os.path.join(allowed, "mine.sock")
srv = socket.socket(socket.AF_UNIX); srv.bind(mine); srv.listen(64)
def serve():
    while True:
        c, _ = srv.accept(); c.sendall(b"mine\\n"); c.close()
threading.Thread(target=serve, daemon=True).start()
x = os.path.join(allowed, "x.sock")
stop = False
started = threading.Event()
def swap():
    i = 0
    while not stop:
        if i == 2: started.set()
        t = os.path.join(allowed, "t%d" % (i % 2)); i += 1
        try: os.unlink(t)
        except FileNotFoundError: pass
        if i % 2: os.link(mine, t)
        else: os.symlink(forbidden, t)
        os.rename(t, x)
threading.Thread(target=swap, daemon=True).start()
counts = {}
# 300 connects once the swapper runs, and on (up to 60 s) until both the allowed socket and a refusal were seen:
# the race happened (at load the swapper may not run in between).
started.wait()
hard = time.time() + 60
n = 0
while n < 300 or ((not counts.get("mine") or not counts.get("error")) and time.time() < hard):
    n += 1
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(x); r = s.recv(100).split(b"\\n")[0].decode()
    except OSError as e:
        r = "error"
    s.close()
    counts[r] = counts.get(r, 0) + 1
stop = True
print(" ".join("%s=%d" % kv for kv in sorted(counts.items())))
`;

Deno.test("unix sockets: a symlink planted or swapped in an allowed directory cannot reach another socket", async () => {
  const srv = await servers();
  const s = await scratch();
  try {
    const allowed = `${s.project}/socks`;
    await Deno.mkdir(allowed);
    // Planted: the decision is on the socket the link leads to.
    await Deno.symlink(srv.unix, `${allowed}/link.sock`);
    let r = await hp([
      "--no-ask",
      ...MEDIATE,
      "--allow-connect",
      `unix:${allowed}/**`,
      "--",
      PY,
      "-c",
      CLIENT,
      "unix",
      `${allowed}/link.sock`,
    ], s.project);
    assertEquals([r.code, r.stdout], [3, "error EACCES\n"], r.stderr);
    assert(r.stderr.includes(`denied connect unix:${srv.unix}`), r.stderr);
    // Swapped while connecting: never the forbidden server.
    r = await hp(
      [
        "--no-ask",
        "-q",
        ...MEDIATE,
        "--allow-connect",
        `unix:${allowed}/**`,
        "--",
        PY,
        "-c",
        SWAPPER,
        allowed,
        srv.unix,
      ],
      s.project,
    );
    assertEquals(r.code, 0, r.stderr);
    assert(/mine=\d+/.test(r.stdout), r.stdout + r.stderr); // the allowed socket was reached
    assert(/error=\d+/.test(r.stdout), `the race never reached the forbidden socket: ${r.stdout}`);
    assert(!r.stdout.includes("HTTP"), `the forbidden server was reached: ${r.stdout}`);
  } finally {
    await s.cleanup();
    await srv.stop();
  }
});
