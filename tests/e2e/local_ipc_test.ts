/**
 * Local IPC and every socket family (docs/connect.md, docs/threat-model.md "Network and local IPC"), judged
 * from outside the sandbox: a real tmux server and a real `dbus-daemon --session` the test starts, listeners
 * whose logs say what reached them, and files that a daemon outside would write. Each attack has a control
 * that shows it works on this machine without hallpass.
 *
 * - In the default mode (`--mediate write,exec`) a connect or datagram send to a unix socket outside the
 *   sandbox is decided (denied under --no-ask): tmux, D-Bus, a race that swaps the address and the fd.
 * - Under `--mediate connect`, 0.0.0.0, ::, IPv4-mapped and -compatible addresses are decided as the address
 *   the kernel uses; sockets of undecided families and types are refused at socket(); listeners on reachable
 *   addresses are decided.
 * - Ordinary sessions ask nothing more; a send that would block never blocks the supervisor.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { compileHelper, exists, hallpass, HALLPASS_ARGV, isRoot, type Result, scratch } from "./harness.ts";
import { probeAsync, test, tool } from "../helpers/skip.ts";
import { Lines } from "../helpers/lines.ts";

const PY = "/usr/bin/python3";
const ENV = { PATH: "/usr/local/bin:/usr/bin:/bin", LANG: "C", HOME: Deno.env.get("HOME") ?? "/" };
const MEDIATE = ["--mediate", "write,exec,connect"];

function hp(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Result> {
  return hallpass(args, { cwd, env: { ...ENV, ...env }, timeoutMs: 150_000 });
}

async function run(cmd: string[], env: Record<string, string> = {}, cwd?: string): Promise<Result> {
  const out = await new Deno.Command(cmd[0], {
    args: cmd.slice(1),
    env: { ...ENV, ...env },
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const d = new TextDecoder();
  return { code: out.code, stdout: d.decode(out.stdout), stderr: d.decode(out.stderr) };
}

async function waitFor(cond: () => Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Listeners outside: each logs what reached it, one line per event, and "END" when the test's own marker
// arrives (so "nothing before END" is a condition to wait for, not a sleep).

const LISTENER = String.raw`
import json, os, socket, sys, threading
spec = json.loads(sys.argv[1]); log = open(sys.argv[2], "a", buffering=1)
def conn(c, tag):
    data = b""
    try:
        c.settimeout(2); data = c.recv(100)
    except Exception: pass
    if data.startswith(b"END"): log.write("END\n")
    c.close()
def tcp(s, tag):
    while True:
        c, _ = s.accept()
        log.write("accept " + tag + "\n")
        threading.Thread(target=conn, args=(c, tag), daemon=True).start()
def udp(s, tag):
    while True:
        data, _ = s.recvfrom(65536)
        log.write(("END" if data.startswith(b"END") else "recv " + tag) + "\n")
out = {}
for tag, fam, typ, addr in spec:
    s = socket.socket(getattr(socket, fam), getattr(socket, typ))
    if fam == "AF_INET6": s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    s.bind(tuple(addr) if isinstance(addr, list) else addr)
    if fam == "AF_UNIX" and not addr.startswith("\0"): os.chmod(addr, 0o777)
    if typ == "SOCK_STREAM": s.listen(64)
    out[tag] = s.getsockname()[1] if fam != "AF_UNIX" else addr
    threading.Thread(target=(tcp if typ == "SOCK_STREAM" else udp), args=(s, tag), daemon=True).start()
print(json.dumps(out), flush=True)
sys.stdin.read()
`;

interface Listener {
  ports: Record<string, number | string>;
  log: string;
  /** Sends the END marker through `tag` and waits until it is logged; returns the lines before it. */
  drain: (tag: string) => Promise<string[]>;
  stop: () => Promise<void>;
}

async function listen(spec: [string, string, string, unknown][], dir: string): Promise<Listener> {
  const log = `${dir}/listener-${crypto.randomUUID().slice(0, 6)}.log`;
  await Deno.writeTextFile(log, "");
  const child = new Deno.Command(PY, {
    args: ["-c", LISTENER, JSON.stringify(spec), log],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = new Lines(child.stdout);
  const ports = JSON.parse(await out.first("listener"));
  let consumed = 0;
  return {
    ports,
    log,
    drain: async (tag: string) => {
      const [, fam, typ] = spec.find((s) => s[0] === tag)!;
      const port = ports[tag];
      const host = fam === "AF_INET6" ? "::1" : "127.0.0.1";
      const dest = fam === "AF_UNIX" ? JSON.stringify(port) : `("${host}", ${port})`;
      const code = `import socket; s=socket.socket(socket.${fam}, socket.${typ}); ` +
        (typ === "SOCK_STREAM" ? `s.connect(${dest}); s.send(b"END")` : `s.sendto(b"END", ${dest})`);
      await run([PY, "-c", code]);
      let lines: string[] = [];
      let end = -1;
      await waitFor(async () => {
        lines = (await Deno.readTextFile(log)).split("\n").filter(Boolean);
        end = lines.indexOf("END", consumed);
        return end >= 0;
      }, "the listener's END marker");
      const chunk = lines.slice(consumed, end);
      consumed = end + 1;
      if (typ === "SOCK_STREAM") chunk.splice(chunk.lastIndexOf(`accept ${tag}`), 1); // the marker's own
      return chunk;
    },
    stop: async () => {
      try {
        await child.stdin.close();
      } catch { /* gone */ }
      child.kill("SIGTERM");
      await child.status;
      await out.cancel();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// tmux

const needTmux = tool("tmux");

async function tmuxServer(dir: string): Promise<{ sock: string; stop: () => Promise<void> }> {
  const sock = `${dir}/tmux.sock`;
  const r = await run(["tmux", "-f", "/dev/null", "-S", sock, "new-session", "-d", "-s", "t", "sleep 600"]);
  if (r.code !== 0) throw new Error(`tmux server: ${r.stderr}`);
  await Deno.chmod(dir, 0o755);
  return { sock, stop: async () => void (await run(["tmux", "-S", sock, "kill-server"])) };
}

test({
  name: "tmux: the user's tmux server runs nothing for the sandbox (new-window, send-keys, $TMUX)",
  ignore: needTmux,
}, async () => {
  const s = await scratch();
  const srv = await tmuxServer(s.outside);
  try {
    // Control: outside, the same command makes the server write a file.
    const control = `${s.outside}/control`;
    const c = await run(["tmux", "-S", srv.sock, "new-window", "-d", `echo ctl > ${control}`]);
    assertEquals(c.code, 0, c.stderr);
    await waitFor(() => exists(control), "the control's file");

    const pwned = `${s.outside}/pwned`;
    const attacks = [
      ["tmux", "-S", srv.sock, "new-window", "-d", `echo x > ${pwned}`],
      ["tmux", "-S", srv.sock, "send-keys", "-t", "t", `echo x > ${pwned}`, "Enter"],
      ["/bin/sh", "-c", `tmux new-window -d 'echo x > ${pwned}'`],
    ];
    for (const cmd of attacks) {
      const r = await hp(["--no-ask", "--", ...cmd], s.project, { TMUX: `${srv.sock},1,0` });
      assert(r.code !== 0, `${cmd.join(" ")}: ${r.stdout} ${r.stderr}`);
      assert(r.stderr.includes(`denied connect unix:${srv.sock}`), r.stderr);
    }
    // The server runs commands in order: once a later command of ours has run, an earlier one would have too.
    const marker = `${s.outside}/marker`;
    await run(["tmux", "-S", srv.sock, "new-window", "-d", `echo m > ${marker}`]);
    await waitFor(() => exists(marker), "the marker");
    assert(!(await exists(pwned)), "the tmux server outside ran a command for the sandbox");

    // Allowed on purpose, it works (the supervisor connects for the program).
    const ok = await hp([
      "--no-ask",
      "--allow-connect",
      `unix:${srv.sock}`,
      "--",
      "tmux",
      "-S",
      srv.sock,
      "new-window",
      "-d",
      `echo x > ${pwned}`,
    ], s.project);
    assertEquals(ok.code, 0, ok.stderr);
    await waitFor(() => exists(pwned), "the allowed command's file");
  } finally {
    await srv.stop();
    await s.cleanup();
  }
});

test(
  { name: "tmux: a server the sandbox starts itself is its own (no question)", ignore: needTmux },
  async () => {
    const s = await scratch();
    try {
      // In the project, and (bound by the sandbox) outside it under an allowed path.
      const r = await hp([
        "--no-ask",
        "--allow-path",
        s.outside,
        "--",
        "/bin/sh",
        "-c",
        `tmux -f /dev/null -S ./own new-session -d 'sleep 30' && tmux -S ./own new-window -d 'echo in > in.txt' && ` +
        `tmux -f /dev/null -S ${s.outside}/own2 new-session -d 'sleep 30' && tmux -S ${s.outside}/own2 new-window -d 'echo o > out.txt'; ` +
        `rc=$?; for i in $(seq 100); do [ -e in.txt ] && [ -e out.txt ] && break; sleep 0.05; done; ` +
        `tmux -S ./own kill-server; tmux -S ${s.outside}/own2 kill-server; exit $rc`,
      ], s.project);
      assertEquals(r.code, 0, r.stderr);
      assert(!r.stderr.includes("denied"), r.stderr);
      assert(await exists(`${s.project}/in.txt`) && await exists(`${s.project}/out.txt`));
    } finally {
      await s.cleanup();
    }
  },
);

test({
  name: "tmux: a hard link to the user's server in the project (or an allowed directory) does not reach it",
  ignore: needTmux,
}, async () => {
  const s = await scratch();
  const srv = await tmuxServer(s.outside);
  try {
    const pwned = `${s.outside}/pwned`;
    // Control: outside, a hard link to the socket reaches the server (same owner: the kernel allows the link).
    await Deno.link(srv.sock, `${s.outside}/control.sock`);
    const c = await run([
      "tmux",
      "-S",
      `${s.outside}/control.sock`,
      "new-window",
      "-d",
      `echo c > ${s.outside}/c`,
    ]);
    assertEquals(c.code, 0, c.stderr);
    await waitFor(() => exists(`${s.outside}/c`), "the control's file");
    await Deno.remove(`${s.outside}/control.sock`);
    const allowed = `${s.outside}/allowed`;
    await Deno.mkdir(allowed);
    const r = await hp([
      "--no-ask",
      "--allow-path",
      s.outside, // writes where the socket is are allowed (so ln is); connects there are not
      "--allow-connect",
      `unix:${allowed}/**`,
      "--",
      "/bin/sh",
      "-c",
      `ln ${srv.sock} ./s && tmux -S ./s new-window -d 'echo x > ${pwned}'; ` +
      `ln ${srv.sock} ${allowed}/s && tmux -S ${allowed}/s new-window -d 'echo x > ${pwned}'; exit 0`,
    ], s.project);
    assertEquals(r.code, 0, r.stderr);
    const marker = `${s.outside}/marker`;
    await run(["tmux", "-S", srv.sock, "new-window", "-d", `echo m > ${marker}`]);
    await waitFor(() => exists(marker), "the marker");
    assert(!(await exists(pwned)), `a hard link reached the tmux server: ${r.stderr}`);
  } finally {
    await srv.stop();
    await s.cleanup();
  }
});

test(
  { name: "the sandbox's own abstract sockets need no question; an outside one with a name it had does" },
  async () => {
    const s = await scratch();
    const name = `hallpass-test-own-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const code = `import socket, sys
l = socket.socket(socket.AF_UNIX); l.bind("\\0${name}"); l.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("\\0${name}"); print("own ok", flush=True)
l.close(); c.close()
sys.stdin.readline()  # the test starts an outside listener with the same name
c = socket.socket(socket.AF_UNIX)
try:
    c.connect("\\0${name}"); print("outside reached")
except OSError as e: print("outside errno", e.errno)`;
      const child = new Deno.Command(HALLPASS_ARGV[0], {
        args: [...HALLPASS_ARGV.slice(1), "--no-ask", "--", PY, "-c", code],
        cwd: s.project,
        env: ENV,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const errP = new Response(child.stderr).text();
      const out = new Lines(child.stdout);
      const first = (await out.next())?.trim();
      assertEquals(first, "own ok", first === "own ok" ? "" : await errP);
      const l = await listen([["ab", "AF_UNIX", "SOCK_STREAM", "\0" + name]], s.outside);
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode("\n"));
      await w.close();
      const text = await out.rest();
      await child.status;
      const err = await errP;
      assert(text.includes("outside errno"), text + err);
      assert(err.includes(`denied connect unix:@${name}`), err);
      assertEquals(await l.drain("ab"), []);
      await l.stop();
    } finally {
      await s.cleanup();
    }
  },
);

test({
  name: "a unix socket reached through /proc (fd of an O_PATH open, /proc/PID/root) is decided as itself",
}, async () => {
  const s = await scratch();
  const sock = `${s.outside}/d.sock`;
  const l = await listen([["d", "AF_UNIX", "SOCK_STREAM", sock]], s.outside);
  try {
    const code = `import os, socket
fd = os.open(${JSON.stringify(sock)}, os.O_PATH)
for p in ["/proc/self/fd/%d" % fd, "/proc/%d/fd/%d" % (os.getpid(), fd), "/proc/thread-self/fd/%d" % fd,
          "/proc/%d/root${sock}" % os.getpid(), "/proc/self/cwd/../outside/d.sock"]:
    c = socket.socket(socket.AF_UNIX)
    try: c.connect(p); c.send(b"x"); print(p, "connected")
    except OSError as e: print(p, "errno", e.errno)`;
    // Control: without hallpass each form reaches the listener.
    const c = await run([PY, "-c", code], {}, s.project);
    assert(!c.stdout.includes("errno"), c.stdout + c.stderr);
    assertEquals((await l.drain("d")).filter((x) => x === "accept d").length, 5);
    const r = await hp(["--no-ask", "--", PY, "-c", code], s.project);
    assert(!r.stdout.includes("connected"), r.stdout + r.stderr);
    assert(r.stderr.includes(`denied connect unix:${sock}`), r.stderr);
    assertEquals(await l.drain("d"), []);
  } finally {
    await l.stop();
    await s.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// D-Bus

const needDbus = [tool("dbus-daemon"), tool("dbus-send")];

async function sessionBus(
  dir: string,
): Promise<{ path: string; abstract: string; stop: () => Promise<void> }> {
  const abstract = `hallpass-test-bus-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(`${dir}/services`);
  // Each service writes $PWNVAR (from the activation environment) to DIR/NAME.out. An activation that never
  // takes its name stays pending for 25 s, joined by later ones of the same name: one name per run.
  for (const name of ["Control", "Pwn", "Marker"]) {
    await Deno.writeTextFile(
      `${dir}/services/org.example.${name}.service`,
      `[D-BUS Service]\nName=org.example.${name}\nExec=/bin/sh -c "echo $PWNVAR > ${dir}/${name}.out"\n`,
    );
  }
  await Deno.writeTextFile(
    `${dir}/bus.conf`,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${dir}/bus</listen>
  <listen>unix:abstract=${abstract}</listen>
  <servicedir>${dir}/services</servicedir>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
`,
  );
  const child = new Deno.Command("dbus-daemon", {
    args: ["--config-file", `${dir}/bus.conf`, "--nofork", "--print-address"],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = new Lines(child.stdout);
  await out.first("dbus-daemon");
  return {
    path: `${dir}/bus`,
    abstract,
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await out.cancel();
    },
  };
}

/** UpdateActivationEnvironment, then StartServiceByName: the bus daemon starts the service outside. */
const DBUS_ATTACK = (value: string, service = "Pwn") =>
  `dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus ` +
  `org.freedesktop.DBus.UpdateActivationEnvironment dict:string:string:PWNVAR,${value} && ` +
  `dbus-send --session --print-reply --reply-timeout=1000 --dest=org.freedesktop.DBus /org/freedesktop/DBus ` +
  `org.freedesktop.DBus.StartServiceByName string:org.example.${service} uint32:0; exit 0`;

test({
  name: "D-Bus: a session bus the test starts activates nothing for the sandbox (path and abstract address)",
  ignore: needDbus,
}, async () => {
  const s = await scratch();
  const bus = await sessionBus(s.outside);
  const pwned = `${s.outside}/Pwn.out`;
  try {
    // Control: outside, the two calls make the bus daemon run a service with our environment.
    const bus_ = { DBUS_SESSION_BUS_ADDRESS: `unix:path=${bus.path}` };
    await run(["/bin/sh", "-c", DBUS_ATTACK("control", "Control")], bus_);
    await waitFor(() => exists(`${s.outside}/Control.out`), "the control's service to run");
    assertEquals((await Deno.readTextFile(`${s.outside}/Control.out`)).trim(), "control");

    for (const address of [`unix:path=${bus.path}`, `unix:abstract=${bus.abstract}`]) {
      const r = await hp(["--no-ask", "--", "/bin/sh", "-c", DBUS_ATTACK("sandbox")], s.project, {
        DBUS_SESSION_BUS_ADDRESS: address,
      });
      const target = address.startsWith("unix:path=") ? `unix:${bus.path}` : `unix:@${bus.abstract}`;
      assert(r.stderr.includes(`denied connect ${target}`), `${address}: ${r.stderr}`);
    }
    // The daemon answers calls in order: a later activation from outside has run, so an earlier one would have.
    await run(["/bin/sh", "-c", DBUS_ATTACK("marker", "Marker")], bus_);
    await waitFor(() => exists(`${s.outside}/Marker.out`), "the marker service");
    assert(!(await exists(pwned)), "the sandbox's activation ran outside");

    // Allowed on purpose (--allow-connect unix:PATH), the bus works through the supervisor.
    const ok = await hp(
      [
        "--no-ask",
        "--allow-connect",
        `unix:${bus.path}`,
        "--",
        "dbus-send",
        "--session",
        "--print-reply",
        "--dest=org.freedesktop.DBus",
        "/org/freedesktop/DBus",
        "org.freedesktop.DBus.ListNames",
      ],
      s.project,
      { DBUS_SESSION_BUS_ADDRESS: `unix:path=${bus.path}` },
    );
    assertEquals(ok.code, 0, ok.stderr);
    assert(ok.stdout.includes("org.freedesktop.DBus"), ok.stdout);
  } finally {
    await bus.stop();
    await s.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Races: the address and the fd swapped under the supervisor's feet.

test({
  name: "a connect/sendto racing its own address and fd never reaches a unix socket outside (3 s each)",
  ignore: tool("gcc"),
}, async () => {
  const s = await scratch();
  const race = await compileHelper("ipc_race", ["-pthread"]);
  const l = await listen([["stream", "AF_UNIX", "SOCK_STREAM", `${s.outside}/stream.sock`]], s.outside);
  const ld = await listen([["dgram", "AF_UNIX", "SOCK_DGRAM", `${s.outside}/dgram.sock`]], s.outside);
  try {
    // Control: without hallpass the race reaches both listeners (it is a race: 1 s tries until it has, up to
    // 60 s; at load one try may never flip at the right moment).
    for (
      const [args, lst, tag, what] of [
        [[`${s.outside}/stream.sock`], l, "stream", "accept stream"],
        [["--send", `${s.outside}/dgram.sock`], ld, "dgram", "recv dgram"],
        [["--sendmsg", `${s.outside}/dgram.sock`], ld, "dgram", "recv dgram"],
      ] as const
    ) {
      let reached = false;
      for (const end = Date.now() + 60_000; !reached && Date.now() < end;) {
        const c = await run([race, ...args, "1"]);
        assertEquals(c.code, 0, c.stderr);
        reached = (await lst.drain(tag)).includes(what);
      }
      assert(reached, `control: the race never reached the ${tag} listener`);
    }

    // 3 s each, and on (up to 60 s) until a call was refused: the race reached the supervisor with the unix
    // address (at load a few slow calls may all have met the IPv4 one).
    const a = await hp(
      ["--no-ask", "--", race, "--until-denied", `${s.outside}/stream.sock`, "3"],
      s.project,
    );
    const b = await hp(
      ["--no-ask", "--", race, "--until-denied", "--send", `${s.outside}/dgram.sock`, "3"],
      s.project,
    );
    const c = await hp(
      ["--no-ask", "--", race, "--until-denied", "--sendmsg", `${s.outside}/dgram.sock`, "3"],
      s.project,
    );
    assertEquals([a.code, b.code, c.code], [0, 0, 0], a.stderr.slice(-2000) + b.stderr.slice(-2000));
    console.log(a.stdout.trim(), "|", b.stdout.trim(), "|", c.stdout.trim());
    for (const r of [a, b, c]) {
      assert(/denied [1-9]/.test(r.stdout), `the race never reached the supervisor's refusal: ${r.stdout}`);
    }
    const lines = [...await l.drain("stream"), ...await ld.drain("dgram")];
    assertEquals(lines, [], "the race reached a unix socket outside");
  } finally {
    await l.stop();
    await ld.stop();
    await s.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Addresses the kernel rewrites.

const CLIENT = String.raw`
import socket, sys
port, udp = int(sys.argv[1]), int(sys.argv[2])
out = []
for fam, addr in [("AF_INET", "0.0.0.0"), ("AF_INET6", "::"), ("AF_INET6", "::ffff:0.0.0.0"),
                  ("AF_INET6", "::ffff:127.0.0.1"), ("AF_INET6", "::127.0.0.1"), ("AF_INET6", "::ffff:7f00:1")]:
    for kind in ("tcp", "udp"):
        s = socket.socket(getattr(socket, fam), socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
        s.settimeout(3)
        try:
            if kind == "tcp": s.connect((addr, port)); s.send(b"x"); r = "ok"
            else: s.sendto(b"x", (addr, udp)); r = "ok"
        except OSError as e: r = "errno %s" % e.errno
        out.append("%s %s %s" % (kind, addr, r))
print("\n".join(out))
`;

test(
  { name: "0.0.0.0, ::, IPv4-mapped and -compatible forms are decided as the loopback they reach" },
  async () => {
    const s = await scratch();
    // The same port on 127.0.0.1 and ::1, TCP and UDP.
    const l = await listen([["tcp4", "AF_INET", "SOCK_STREAM", ["127.0.0.1", 0]]], s.outside);
    const lu = await listen([["udp4", "AF_INET", "SOCK_DGRAM", ["127.0.0.1", 0]]], s.outside);
    const l6 = await listen([["tcp6", "AF_INET6", "SOCK_STREAM", ["::1", l.ports.tcp4]]], s.outside).catch(
      () => null,
    );
    const lu6 = await listen([["udp6", "AF_INET6", "SOCK_DGRAM", ["::1", lu.ports.udp4]]], s.outside).catch(
      () => null,
    );
    const rules = `${s.outside}/rules`;
    await Deno.writeTextFile(rules, "allow connect *\ndeny connect 127.0.0.0/8\ndeny connect [::1]\n");
    try {
      const args = [PY, "-c", CLIENT, String(l.ports.tcp4), String(lu.ports.udp4)];
      // Control: without hallpass these forms reach the loopback listeners.
      const c = await run(args);
      const reached = [...await l.drain("tcp4"), ...await lu.drain("udp4")];
      assert(reached.includes("accept tcp4") && reached.includes("recv udp4"), `${c.stdout} ${reached}`);
      if (l6) assert([...await l6.drain("tcp6")].includes("accept tcp6"), "control: :: did not reach ::1");
      if (lu6) assert([...await lu6.drain("udp6")].includes("recv udp6"), "control: :: did not reach ::1");

      const r = await hp(["--no-ask", ...MEDIATE, "--rules", rules, "--", ...args], s.project);
      assertEquals(r.code, 0, r.stderr);
      const got = [...await l.drain("tcp4"), ...await lu.drain("udp4")];
      const got6 = [...(l6 ? await l6.drain("tcp6") : []), ...(lu6 ? await lu6.drain("udp6") : [])];
      assertEquals(
        [...got, ...got6],
        [],
        `reached loopback through a rewritten address:\n${r.stdout}\n${r.stderr}`,
      );
      for (const line of r.stdout.trim().split("\n")) {
        if (!line.includes("::127.0.0.1") && !line.includes("7f00")) assert(line.endsWith("errno 13"), line);
      }
      assert(r.stderr.includes("denied connect tcp:127.0.0.1:"), r.stderr);

      // With loopback allowed, 0.0.0.0 works: the connect goes to 127.0.0.1, the one decided.
      const allow = `${s.outside}/allow`;
      await Deno.writeTextFile(allow, "allow connect 127.0.0.1\n");
      const ok = await hp(["--no-ask", ...MEDIATE, "--rules", allow, "--", ...args], s.project);
      assert(
        ok.stdout.includes("tcp 0.0.0.0 ok") && ok.stdout.includes("udp 0.0.0.0 ok"),
        ok.stdout + ok.stderr,
      );
      assert((await l.drain("tcp4")).includes("accept tcp4"));
    } finally {
      await l.stop();
      await lu.stop();
      await l6?.stop();
      await lu6?.stop();
      await s.cleanup();
    }
  },
);

// ---------------------------------------------------------------------------------------------------------------
// Families and types.

const SOCKETS = String.raw`
import socket, sys
out = []
for name, args in [("vsock", (40, 1, 0)), ("packet", (17, 3, 0)), ("raw-ip", (2, 3, 255)), ("raw-icmp", (2, 3, 1)),
                   ("raw6", (10, 3, 58)), ("sctp-stream", (2, 1, 132)), ("sctp-seqpacket", (2, 5, 132)),
                   ("mptcp", (2, 1, 262)), ("udplite", (2, 2, 136)), ("ping", (2, 2, 1)), ("tipc", (30, 5, 0)),
                   ("rds", (21, 5, 0)), ("bluetooth", (31, 1, 3)), ("can", (29, 3, 1)), ("xdp", (44, 3, 0)),
                   ("netlink-usersock", (16, 3, 2)), ("netlink-netfilter", (16, 3, 12)), ("smc", (43, 1, 0)),
                   ("tcp-highbits", (2 | (1 << 32), 1, 0)), ("sctp-highbits", (2, 1, 132 | (1 << 32))),
                   ("netlink-route", (16, 3, 0)), ("tcp", (2, 1, 0)), ("udp6", (10, 2, 17)), ("unix", (1, 1, 0))]:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        fd = libc.syscall(41, ctypes.c_long(args[0]), ctypes.c_long(args[1]), ctypes.c_long(args[2]))
        r = "ok" if fd >= 0 else "errno %d" % ctypes.get_errno()
    except Exception as e: r = str(e)
    out.append("%s %s" % (name, r))
print("\n".join(out))
`;

test(
  { name: "under --mediate connect, sockets of undecided families and types are refused (EACCES)" },
  async () => {
    const s = await scratch();
    try {
      const bareRun = await run([PY, "-c", SOCKETS]);
      const control = Object.fromEntries(bareRun.stdout.trim().split("\n").map((l) => l.split(" ", 2)));
      const r = await hp(["--no-ask", ...MEDIATE, "--", PY, "-c", SOCKETS], s.project);
      assertEquals(r.code, 0, r.stderr);
      const got = Object.fromEntries(
        r.stdout.trim().split("\n").map((l) => [l.split(" ")[0], l.slice(l.indexOf(" ") + 1)]),
      );
      for (const ok of ["netlink-route", "tcp", "udp6", "unix"]) {
        assertEquals(
          got[ok],
          "ok",
          `${ok}: ${r.stdout}`,
        );
      }
      for (const [name, res] of Object.entries(got)) {
        if (["netlink-route", "tcp", "udp6", "unix"].includes(name)) continue;
        assertEquals(res, "errno 13", `${name} (without hallpass: ${control[name]})`);
      }
      // The control: what this kernel would have let the sandbox make (vsock, packet and raw as root).
      console.log("without hallpass:", JSON.stringify(control));
      if (isRoot()) assert(control.vsock === "ok" || control.packet === "ok", bareRun.stdout);
      // Without --mediate connect the network is not mediated: the same sockets are made, and a vsock connect
      // gets the kernel's own answer.
      const vs = `import socket
try:
    s = socket.socket(40, 1, 0); s.setblocking(False); print(s.connect_ex((2, 5005)))
except OSError as e: print("socket", e.errno)`;
      const vBare = await run([PY, "-c", vs]);
      const vIn = await hp(["--no-ask", "--", PY, "-c", vs], s.project);
      assertEquals(vIn.stdout, vBare.stdout, vIn.stderr);
      const open = await hp(["--no-ask", "--", PY, "-c", SOCKETS], s.project);
      const opened = Object.fromEntries(
        open.stdout.trim().split("\n").map((l) => [l.split(" ")[0], l.slice(l.indexOf(" ") + 1)]),
      );
      assertEquals(opened.vsock, control.vsock);
    } finally {
      await s.cleanup();
    }
  },
);

const RAW = String.raw`
import socket, struct, sys
port = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)  # IP_HDRINCL
payload = b"raw"
udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, socket.inet_aton("127.0.0.1"), socket.inet_aton("127.0.0.1"))
s.sendto(ip + udp, ("127.0.0.2", 0))  # an allowed destination; the header says 127.0.0.1
print("sent")
`;

const rawWorks = probeAsync("raw-hdrincl", async () => {
  if (!isRoot()) return "raw sockets need root (CAP_NET_RAW)";
  const r = await run([
    PY,
    "-c",
    "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)",
  ]);
  return r.code === 0 ? undefined : `raw sockets do not work here: ${r.stderr.trim().split("\n").pop()}`;
});

test({
  name: "root: a raw IP_HDRINCL socket cannot send its own header to a denied loopback listener",
  ignore: await rawWorks,
}, async () => {
  const s = await scratch();
  const l = await listen([["udp4", "AF_INET", "SOCK_DGRAM", ["127.0.0.1", 0]]], s.outside);
  const rules = `${s.outside}/rules`;
  await Deno.writeTextFile(rules, "allow connect 127.0.0.2\ndeny connect 127.0.0.1\n");
  try {
    const c = await run([PY, "-c", RAW, String(l.ports.udp4)]);
    assertEquals(c.stdout.trim(), "sent", c.stderr);
    assert((await l.drain("udp4")).includes("recv udp4"), "control: the raw packet did not arrive");
    const r = await hp(
      ["--no-ask", ...MEDIATE, "--rules", rules, "--", PY, "-c", RAW, String(l.ports.udp4)],
      s.project,
    );
    assert(r.code !== 0 && r.stderr.includes("PermissionError"), r.stderr);
    assertEquals(await l.drain("udp4"), []);
  } finally {
    await l.stop();
    await s.cleanup();
  }
});

const sctpHere = probeAsync("sctp", async () => {
  const r = await run([PY, "-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)"]);
  return r.code === 0 ? undefined : "the kernel has no SCTP (module sctp not loaded or built)";
});

test({
  name: "SCTP: sendmsg with an address (a connect) cannot reach a denied listener",
  ignore: await sctpHere,
}, async () => {
  const s = await scratch();
  try {
    const code = `import socket
l = socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, 132); l.bind(("127.0.0.1", 0)); l.listen(1)
port = l.getsockname()[1]
c = socket.socket(socket.AF_INET, socket.SOCK_SEQPACKET, 132)
c.sendto(b"x", ("127.0.0.1", port)); print(l.recv(10))`;
    const control = await run([PY, "-c", code]);
    assertEquals(control.code, 0, control.stderr);
    const r = await hp(["--no-ask", ...MEDIATE, "--", PY, "-c", code], s.project);
    assert(r.code !== 0 && r.stderr.includes("PermissionError"), r.stderr);
  } finally {
    await s.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Inbound.

const LISTEN = String.raw`
import socket, sys, time
host, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((host, port))
except OSError as e:
    print("bind errno %d" % e.errno, flush=True); sys.exit(0)
try:
    s.listen(5); print("listening", flush=True)
except OSError as e:
    print("errno %d" % e.errno, flush=True)
sys.stdin.readline()
`;

test({
  name: "under --mediate connect a TCP listener on a reachable address is decided; loopback is allowed",
}, async () => {
  const s = await scratch();
  const free = () => {
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const p = (l.addr as Deno.NetAddr).port;
    l.close();
    return p;
  };
  const tryConnect = async (port: number) => {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return true;
    } catch {
      return false;
    }
  };
  // A port free a moment ago can be taken meanwhile (another program's connect picks it as its own port):
  // the listener says so (EADDRINUSE at bind, which hallpass never decides) and the step is run on another port.
  const start = async (wrap: (port: number) => string[], host: string) => {
    for (let attempt = 0;; attempt++) {
      const port = await free();
      const c = await startOnce(wrap(port), host, port);
      if (c.first !== "bind errno 98" || attempt === 20) return { ...c, port };
      await c.stop();
    }
  };
  const startOnce = async (wrap: string[], host: string, port: number) => {
    const cmd = [...wrap, PY, "-c", LISTEN, host, String(port)];
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      cwd: s.project,
      env: ENV,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = new Lines(child.stdout);
    const err = new Response(child.stderr).text().catch(() => "");
    const first = (await out.next())?.trim() ?? "";
    // No line: the program (or hallpass) ended; what it said is the assertion's message.
    const said = first === "" ? await err : "";
    return {
      first,
      said,
      stop: async () => {
        const w = child.stdin.getWriter();
        await w.write(new TextEncoder().encode("\n")).catch(() => {});
        await w.close().catch(() => {});
        await child.status;
        await out.cancel();
      },
    };
  };
  const HP = [...HALLPASS_ARGV];
  try {
    // Control: a listener on 0.0.0.0 is reachable from outside.
    let c = await start(() => [], "0.0.0.0");
    assertEquals(c.first, "listening", c.said);
    assert(await tryConnect(c.port), "control: could not connect in");
    await c.stop();

    c = await start(() => [...HP, "--no-ask", ...MEDIATE, "--"], "0.0.0.0");
    assertEquals(c.first, "errno 13", c.said);
    assert(!(await tryConnect(c.port)), "connected in to a refused listener");
    await c.stop();

    c = await start(() => [...HP, "--no-ask", ...MEDIATE, "--"], "127.0.0.1");
    assertEquals(c.first, "listening", c.said);
    assert(await tryConnect(c.port), "a loopback listener should work");
    await c.stop();

    c = await start(
      (port) => [...HP, "--no-ask", ...MEDIATE, "--allow-connect", `tcp:0.0.0.0:${port}`, "--"],
      "0.0.0.0",
    );
    assertEquals(c.first, "listening", c.said);
    await c.stop();
  } finally {
    await s.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------------------------
// Ordinary work.

test({
  name: "ordinary sessions ask nothing about local IPC (git, node, python, bash, npm)",
  ignore: [tool("git"), tool("node")],
}, async () => {
  const s = await scratch();
  try {
    await run(["git", "init", "-q", s.project]); // .git is protected inside (docs/threat-model.md)
    const script = [
      "git -c user.email=a@b -c user.name=n commit -q --allow-empty -m x && git status --short",
      `node -e 'require("os").userInfo(); require("dns").lookup("localhost", (e) => process.exit(e ? 1 : 0))'`,
      `${PY} -c 'import pwd, socket; pwd.getpwuid(0); socket.getaddrinfo("localhost", 80)'`,
      "bash --norc --noprofile -c 'id >/dev/null; whoami >/dev/null; ls ~ >/dev/null'",
      "npm --version >/dev/null",
    ].join(" && ");
    const r = await hp(["--no-ask", "--", "/bin/sh", "-c", script], s.project);
    assertEquals(r.code, 0, r.stderr);
    assert(!r.stderr.includes("denied connect"), r.stderr);
  } finally {
    await s.cleanup();
  }
});

test({ name: "a send that would block never blocks the supervisor", ignore: tool("gcc") }, async () => {
  const s = await scratch();
  try {
    // One thread fills a socket nobody reads with blocking sendmsg; the other then writes outside, which must
    // be denied (the supervisor answers) while the first is still blocked.
    const code = `import os, socket, threading, sys
a, b = socket.socpair() if False else socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("own.sock")
def fill():
    while True: a.sendmsg([b"x" * 65536])
def dgram():
    e = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        while True: e.sendto(b"y" * 1024, "own.sock")
    except OSError as err: print("dgram", err.errno, flush=True)
threading.Thread(target=fill, daemon=True).start()
threading.Thread(target=dgram, daemon=True).start()
import time; time.sleep(0.5)
try:
    open(sys.argv[1], "w")
except OSError as e: print("write", e.errno, flush=True)
os._exit(0)`;
    const r = await hp(["--no-ask", "--", PY, "-c", code, `${s.outside}/x`], s.project);
    assertEquals(r.code, 0, r.stderr);
    assert(r.stdout.includes("write 13"), r.stdout + r.stderr);
    assert(!(await exists(`${s.outside}/x`)));
  } finally {
    await s.cleanup();
  }
});
