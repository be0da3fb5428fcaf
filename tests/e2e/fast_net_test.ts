/**
 * Connects the fast path answers itself (helper/fastpath/fastpath.c net_fast), the same as the mediator and
 * as without hallpass: a blocking TCP connect while connects are not mediated (performed on the supervisor's
 * copy of the socket; one that does not complete at once is handed to the mediator, which answers when it
 * does), and a connect to a unix socket path that is not there (glibc's nscd socket in every user lookup),
 * answered with the kernel's errno in every mode. Each run asserts which engine answered
 * (tests/e2e/engine.ts) and replays the fast path's answers through the mediator's decision.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, hallpass, scratch } from "./harness.ts";
import { engine } from "./engine.ts";

const ENV = { PATH: "/usr/bin:/bin", LANG: "C" };

/**
 * A listener with room for one pending connection, filled: the next blocking connect's SYN is dropped and only
 * its retransmit (after ~1 s) completes, once the first connection is accepted. Then a closed port, a unix path
 * that is not there, one below a file, and one the rules decide (outside the project: asked, --no-ask denies).
 */
const SCRIPT = `
import errno, os, socket, sys, threading, time
out = sys.argv[1]
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(0)
port = l.getsockname()[1]
first = socket.create_connection(("127.0.0.1", port))   # fills the accept queue
def later():
    time.sleep(0.3); a, _ = l.accept(); time.sleep(2); l.accept()
threading.Thread(target=later, daemon=True).start()
s = socket.socket()
t = time.time(); s.connect(("127.0.0.1", port)); waited = time.time() - t
print("slow connect ok", waited > 0.2)
c = socket.socket(); c.bind(("127.0.0.1", 0)); closed = c.getsockname()[1]; c.close()
try:
    socket.create_connection(("127.0.0.1", closed))
except OSError as e:
    print("closed port", errno.errorcode[e.errno])
# sends to the connected peer: a UDP socket connected to one of its own, a unix socket pair, and one passing
# an fd (SCM_RIGHTS: the mediator's)
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); srv.bind(("127.0.0.1", 0))
cl = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); cl.connect(srv.getsockname())
print("udp sendmsg", cl.sendmsg([b"ab", b"cd"]), srv.recv(10))
a, b = socket.socketpair()
print("unix sendmsg", a.sendmsg([b"xyz"]), b.recv(10))
r, w = os.pipe()
print("unix fd", a.sendmsg([b"f"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(bytearray(r.to_bytes(4, "little")))))]), len(socket.recv_fds(b, 10, 1)[1]))
for path in ["/var/run/nscd/socket-x", "/etc/passwd/x", out + "/sock"]:
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect(path); print(path.replace(out, "OUT"), "connected")
    except OSError as e:
        print(path.replace(out, "OUT"), errno.errorcode[e.errno])
`;

Deno.test("blocking connects and unix paths that are not there: the fast path answers as the mediator and bare", async () => {
  const outs: string[] = [];
  for (const way of ["bare", "fast", "mediator"]) {
    const s = await scratch();
    try {
      // A socket outside the project: connecting to it is decided by the rules (asked; --no-ask denies).
      const srv = new Deno.Command("/usr/bin/python3", {
        args: [
          "-c",
          `import socket,time;u=socket.socket(socket.AF_UNIX);u.bind("${s.outside}/sock");u.listen(5);time.sleep(600)`,
        ],
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        for (let i = 0; i < 400; i++) { // up to 20 s for python to start and bind on a loaded machine
          try {
            Deno.statSync(`${s.outside}/sock`);
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        let r;
        if (way === "bare") {
          r = await bare(["/usr/bin/python3", "-c", SCRIPT, s.outside], { cwd: s.project, env: ENV });
        } else {
          const e = await engine(way === "fast", "connects");
          r = await hallpass(["--no-ask", "-q", "--", "/usr/bin/python3", "-c", SCRIPT, s.outside], {
            cwd: s.project,
            env: { ...ENV, ...e.env },
          });
          const rep = await e.check();
          if (way === "fast") {
            // the slow connect, the closed port, the listener's own: performed; two paths not there: errno
            // and the two sends to a connected peer
            assert((rep.byAnswer.net ?? 0) >= 5, `fast path: ${JSON.stringify(rep.byAnswer)}`);
            assert(
              (rep.byAnswer["errno:2"] ?? 0) >= 1 && (rep.byAnswer["errno:20"] ?? 0) >= 1,
              JSON.stringify(rep),
            );
          }
        }
        assertEquals(r.code, 0, `${way}: ${r.stderr}`);
        outs.push(r.stdout);
      } finally {
        try {
          srv.kill();
        } catch { /* already gone */ }
        await srv.status;
      }
    } finally {
      await s.cleanup();
    }
  }
  assertEquals(
    outs[0].split("\n").slice(0, 7).join("\n"),
    [
      "slow connect ok True",
      "closed port ECONNREFUSED",
      "udp sendmsg 4 b'abcd'",
      "unix sendmsg 3 b'xyz'",
      "unix fd 1 1",
      "/var/run/nscd/socket-x ENOENT",
      "/etc/passwd/x ENOTDIR",
    ].join("\n"),
  );
  assert(outs[0].includes("OUT/sock connected"), outs[0]);
  // With hallpass the socket outside is asked about (--no-ask: denied); everything else as bare.
  const expected = outs[0].replace("OUT/sock connected", "OUT/sock EACCES");
  assertEquals(outs[1], expected, "fast path");
  assertEquals(outs[2], expected, "mediator");
});
