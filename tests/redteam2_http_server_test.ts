/**
 * Red team: the answer service's hand-written HTTP/1.1 server (lib/agent/http_server.ts) as a hostile pod sees
 * it: request smuggling and parser edge cases, and slow connections from many addresses. Judged from outside:
 * the bytes the server answers on the wire, and whether a person elsewhere still gets the list.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { AnswerService } from "../lib/agent/answer_service.ts";

const TOKEN = "redteam2-token-0123456789abcdef";

async function start(limits = {}): Promise<AnswerService> {
  return await AnswerService.start({
    listen: "127.0.0.1:0",
    tokens: new Map([[TOKEN, "alice"]]),
    timeoutMs: 30_000,
    logPath: null,
    warn: () => {},
    httpLimits: { headerTimeoutMs: 1500, bodyTimeoutMs: 1500, maxPerPeer: 16, maxConnections: 64, ...limits },
  });
}

/** Sends `raw` on one connection; returns everything the server sent until it closed (or 3 s). */
async function exchange(port: number, raw: string): Promise<string> {
  const c = await Deno.connect({ hostname: "127.0.0.1", port });
  await c.write(new Uint8Array([...raw].map((ch) => ch.charCodeAt(0))));
  const buf = new Uint8Array(1 << 16);
  let out = "";
  const timer = setTimeout(() => c.close(), 3000);
  try {
    for (;;) {
      const n = await c.read(buf).catch(() => null);
      if (n === null) break;
      out += new TextDecoder("latin1").decode(buf.subarray(0, n));
    }
  } finally {
    clearTimeout(timer);
    try {
      c.close();
    } catch { /* closed */ }
  }
  return out;
}

const status = (resp: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(resp)?.[1] ?? 0);
const auth = `Authorization: Bearer ${TOKEN}\r\n`;

Deno.test("redteam2 http server: smuggling and parser edge cases are refused, one response a connection", async () => {
  const svc = await start();
  const port = svc.address.port;
  try {
    const cases: [string, string, number][] = [
      [
        "duplicate Content-Length",
        `POST /api/answer HTTP/1.1\r\n${auth}Content-Length: 2\r\nContent-Length: 40\r\n\r\n{}`,
        400,
      ],
      [
        "Content-Length and chunked",
        `POST /api/answer HTTP/1.1\r\n${auth}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        501,
      ],
      [
        "chunked, twice",
        `POST /api/answer HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
        501,
      ],
      [
        "Transfer-Encoding: gzip, chunked",
        `POST /api/answer HTTP/1.1\r\n${auth}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
        501,
      ],
      [
        "a huge chunk",
        `POST /api/answer HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\n\r\nffffffff\r\n`,
        413,
      ],
      [
        "a chunk size with 9 digits",
        `POST /api/answer HTTP/1.1\r\n${auth}Transfer-Encoding: chunked\r\n\r\n100000000\r\n`,
        400,
      ],
      ["a negative Content-Length", `POST /api/answer HTTP/1.1\r\n${auth}Content-Length: -1\r\n\r\n`, 400],
      [
        "a Content-Length with a plus",
        `POST /api/answer HTTP/1.1\r\n${auth}Content-Length: +2\r\n\r\n{}`,
        400,
      ],
      ["a folded header", `GET /api/questions HTTP/1.1\r\nAuthorization: Bearer\r\n ${TOKEN}\r\n\r\n`, 400],
      [
        "a space before the colon",
        `GET /api/questions HTTP/1.1\r\nAuthorization : Bearer ${TOKEN}\r\n\r\n`,
        400,
      ],
      ["absolute-form target", `GET http://x/api/questions HTTP/1.1\r\n${auth}\r\n`, 400],
      ["asterisk target", `OPTIONS * HTTP/1.1\r\n${auth}\r\n`, 400],
      ["a NUL in the target", `GET /api/questions\x00 HTTP/1.1\r\n${auth}\r\n`, 400],
      ["a NUL in a header", `GET /api/questions HTTP/1.1\r\n${auth}X-A: a\x00b\r\n\r\n`, 400],
      ["a bare LF head", `GET /api/questions HTTP/1.1\n${auth.replace("\r", "")}\n`, 0], // no CRLFCRLF: timeout
      ["HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400],
      ["%-encoded path", `GET /api/%71uestions HTTP/1.1\r\n${auth}\r\n`, 404],
      ["no token", "GET /api/questions HTTP/1.1\r\n\r\n", 401],
    ];
    for (const [what, raw, want] of cases) {
      const resp = await exchange(port, raw);
      assertEquals([what, status(resp)], [what, want]);
      assert((resp.match(/HTTP\/1\.1 /g) ?? []).length <= 1, `${what}: more than one response: ${resp}`);
    }
    // Pipelined: a second request (and bytes after the body) after the first is never answered or run.
    const post = `{"id":1,"digest":"x","kind":"once"}`;
    const pipelined = `GET /api/questions HTTP/1.1\r\n${auth}\r\n` +
      `POST /api/answer HTTP/1.1\r\n${auth}Content-Length: ${post.length}\r\n\r\n${post}`;
    const resp = await exchange(port, pipelined);
    assertEquals(status(resp), 200);
    assertEquals((resp.match(/HTTP\/1\.1 /g) ?? []).length, 1, resp);
    // HEAD of the page: the head only.
    const head = await exchange(port, "HEAD / HTTP/1.1\r\n\r\n");
    assertEquals(status(head), 200);
    assert(head.endsWith("\r\n\r\n") && /content-length: 0/i.test(head), head);
  } finally {
    await svc.close();
  }
});

const SLOW = `
import socket, sys, time
port, n_addr, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
socks = {}
end = time.time() + seconds
made = 0
while time.time() < end:
    for a in range(n_addr):
        for k in range(16):
            key = (a, k)
            s = socks.get(key)
            if s is not None:
                try:
                    s.setblocking(False)
                    if s.recv(1) == b"":
                        raise OSError
                    continue
                except BlockingIOError:
                    continue
                except OSError:
                    s.close()
            s = socket.socket()
            s.bind(("127.0.0.%d" % (2 + a), 0))
            try:
                s.connect(("127.0.0.1", port))
                s.sendall(b"GET /api/questions HTTP/1.1\\r\\nX-Slow: ")
            except OSError:
                s.close()
                continue
            socks[key] = s
            made += 1
    if made:
        print(made, flush=True)
        made = 0
    time.sleep(0.02)
`;

Deno.test("redteam2 http server: slow heads from many addresses of 127.0.0.0/8 do not keep a person out", async () => {
  const svc = await start();
  const port = svc.address.port;
  const slow = new Deno.Command("python3", {
    args: ["-c", SLOW, String(port), "8", "8"], // 8 addresses x 16 = 128 slow heads, twice the limit (64)
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = slow.stdout.pipeThrough(new TextDecoderStream()).getReader();
  try {
    // Wait until the limit is taken: 64 connections open.
    const until = Date.now() + 5000;
    while (svc.connectionsOpen < 64 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    assertEquals(svc.connectionsOpen, 64, "the control: the slow clients hold every connection");
    let ok = 0;
    for (let i = 0; i < 5; i++) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/api/questions`, {
          headers: { authorization: `Bearer ${TOKEN}` },
          signal: AbortSignal.timeout(1000),
        });
        await r.body?.cancel();
        if (r.status === 200) ok++;
      } catch { /* refused */ }
    }
    assertEquals(ok, 5, "a person must get the list while slow heads hold the limit");
    assert(svc.connectionsOpen <= 64);
  } finally {
    slow.kill("SIGKILL");
    await slow.status;
    await reader.cancel().catch(() => {});
    await svc.close();
  }
});
