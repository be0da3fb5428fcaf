/**
 * A small HTTP/1.1 server for the answer service, with the bounds `Deno.serve` does not offer: the agent listens
 * where every pod can reach it, and its first job is answering the kernel, so nobody on the network may be able
 * to take its file descriptors, its memory or its event loop.
 *
 * Threat model: every byte from a connection is hostile until the handler has authenticated it.
 * * Connections are bounded in all ({@linkcode HttpLimits.maxConnections}) and per peer address; beyond, a new one
 *   is closed at once, except that when all are taken a connection still sending its head, of the peer
 *   holding the most, is closed to make room (many addresses each within the per-peer bound must not keep a
 *   person out).
 * * The request head must arrive whole within `headerTimeoutMs` and is at most `maxHeaderBytes`; the body (only
 *   with Content-Length, at most `maxBody`) within `bodyTimeoutMs`; the response must be taken within
 *   `writeTimeoutMs`. One request a connection (`connection: close`): nothing idles.
 * * An error in accepting (EMFILE), reading, the handler or writing closes that one connection; none ends the
 *   server or the process.
 *
 * @example
 * ```ts
 * const srv = HttpServer.listen({ hostname: "127.0.0.1", port: 0 }, async (req) => new Response("hi"), warn);
 * srv.addr.port; // the port
 * await srv.close();
 * ```
 */

import { concatBytes } from "../util/bytes.ts";

/** The bounds of {@linkcode HttpServer}; see the module doc. */
export interface HttpLimits {
  maxConnections: number;
  maxPerPeer: number;
  headerTimeoutMs: number;
  bodyTimeoutMs: number;
  writeTimeoutMs: number;
  maxHeaderBytes: number;
  maxBody: number;
}

export const DEFAULT_LIMITS: HttpLimits = {
  maxConnections: 128,
  maxPerPeer: 16,
  headerTimeoutMs: 10_000,
  bodyTimeoutMs: 10_000,
  writeTimeoutMs: 10_000,
  maxHeaderBytes: 16 * 1024,
  maxBody: 64 * 1024,
};

/** The handler: a request (body bounded, already read) and the peer's address; returns the response. */
export type HttpHandler = (req: Request, peer: string) => Promise<Response>;

const enc = new TextEncoder();
const latin1 = new TextDecoder("latin1");

const REASONS: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  411: "Length Required",
  413: "Content Too Large",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
};

class Refusal extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Reads from `conn` until the head's blank line; returns the head's text and what came after it. */
async function readHead(conn: Deno.Conn, max: number): Promise<{ head: string; rest: Uint8Array }> {
  const buf = new Uint8Array(max);
  let len = 0;
  let scanFrom = 0;
  for (;;) {
    if (len === max) throw new Refusal(431, "request head too large");
    const n = await conn.read(buf.subarray(len));
    if (n === null) throw new Refusal(400, "connection closed in the request head");
    len += n;
    for (let i = Math.max(scanFrom, 3); i < len; i++) {
      if (buf[i] === 10 && buf[i - 1] === 13 && buf[i - 2] === 10 && buf[i - 3] === 13) {
        return { head: latin1.decode(buf.subarray(0, i - 3)), rest: buf.slice(i + 1, len) };
      }
    }
    scanFrom = len;
  }
}

/** Reads bytes after the head: `first` is what came with it. */
class BodyReader {
  #buf: Uint8Array;
  constructor(readonly conn: Deno.Conn, first: Uint8Array) {
    this.#buf = first;
  }

  async #more(): Promise<void> {
    const chunk = new Uint8Array(16 * 1024);
    const n = await this.conn.read(chunk);
    if (n === null) throw new Refusal(400, "connection closed in the body");
    const all = new Uint8Array(this.#buf.length + n);
    all.set(this.#buf);
    all.set(chunk.subarray(0, n), this.#buf.length);
    this.#buf = all;
  }

  async take(n: number): Promise<Uint8Array<ArrayBuffer>> {
    while (this.#buf.length < n) await this.#more();
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.subarray(n);
    return out;
  }

  /** A CRLF-terminated line of at most `max` bytes, without the CRLF. */
  async line(max: number): Promise<string> {
    for (;;) {
      const i = this.#buf.indexOf(10);
      if (i >= 0) {
        const text = latin1.decode(this.#buf.subarray(0, i)).replace(/\r$/, "");
        this.#buf = this.#buf.subarray(i + 1);
        return text;
      }
      if (this.#buf.length > max) throw new Refusal(400, "line too long in the body");
      await this.#more();
    }
  }
}

/** The body: Content-Length bytes, or a chunked body decoded; past `max` bytes, 413. */
async function readBody(
  r: BodyReader,
  length: number | "chunked",
  max: number,
): Promise<Uint8Array<ArrayBuffer>> {
  if (length !== "chunked") return new Uint8Array(await r.take(length));
  const parts: Uint8Array<ArrayBuffer>[] = [];
  let total = 0;
  for (;;) {
    const m = /^([0-9a-fA-F]{1,8})(;.*)?$/.exec(await r.line(1024));
    if (!m) throw new Refusal(400, "bad chunk size");
    const size = parseInt(m[1], 16);
    if (size === 0) break;
    total += size;
    if (total > max) throw new Refusal(413, `bodies are at most ${max} bytes`);
    parts.push(await r.take(size));
    await r.line(2);
  }
  for (;;) if ((await r.line(1024)) === "") break; // trailers
  return concatBytes(parts, total);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** Parses the head into a Request (the body is given separately). */
function parseHead(
  head: string,
): { method: string; target: string; headers: Headers; length: number | "chunked" } {
  const lines = head.split("\r\n");
  const m = /^([A-Z]{1,16}) (\/[\x21-\x7e]*) HTTP\/1\.[01]$/.exec(lines[0]);
  if (!m) throw new Refusal(400, "bad request line");
  if (lines.length > 101) throw new Refusal(431, "too many header fields");
  const headers = new Headers();
  for (const line of lines.slice(1)) {
    const h = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/.exec(line);
    // deno-lint-ignore no-control-regex
    if (!h || /[\x00-\x08\x0a-\x1f\x7f]/.test(h[2])) throw new Refusal(400, "bad header field");
    headers.append(h[1], h[2]);
  }
  const te = headers.get("transfer-encoding");
  if (te !== null) {
    if (te.toLowerCase() !== "chunked" || headers.has("content-length")) {
      throw new Refusal(501, "only the chunked transfer coding, without Content-Length");
    }
    return { method: m[1], target: m[2], headers, length: "chunked" };
  }
  const cl = headers.get("content-length");
  if (cl !== null && !/^\d{1,10}$/.test(cl)) throw new Refusal(400, "bad Content-Length");
  return { method: m[1], target: m[2], headers, length: cl === null ? 0 : Number(cl) };
}

/** The HTTP server; see the module doc. */
export class HttpServer {
  readonly #listener: Deno.TcpListener;
  readonly #limits: HttpLimits;
  readonly #handler: HttpHandler;
  readonly #warn: (line: string) => void;
  readonly #open = new Set<Deno.Conn>();
  readonly #perPeer = new Map<string, number>();
  /** Connections still reading their head (nothing authenticated yet), oldest first, with their peer. */
  readonly #inHead = new Map<Deno.Conn, string>();
  #closed = false;
  #lastWarn = 0;
  readonly finished: Promise<void>;

  private constructor(
    listener: Deno.TcpListener,
    limits: HttpLimits,
    handler: HttpHandler,
    warn: (l: string) => void,
  ) {
    this.#listener = listener;
    this.#limits = limits;
    this.#handler = handler;
    this.#warn = warn;
    this.finished = this.#acceptLoop();
  }

  /** Listens on `hostname:port` (throws what `Deno.listen` throws: the caller words it). */
  static listen(
    addr: { hostname: string; port: number },
    handler: HttpHandler,
    warn: (line: string) => void,
    limits: Partial<HttpLimits> = {},
  ): HttpServer {
    const listener = Deno.listen({ hostname: addr.hostname, port: addr.port, transport: "tcp" });
    return new HttpServer(listener, { ...DEFAULT_LIMITS, ...limits }, handler, warn);
  }

  get addr(): Deno.NetAddr {
    return this.#listener.addr;
  }

  /** Connections open now. */
  get connections(): number {
    return this.#open.size;
  }

  /** Stops accepting and closes every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#listener.close();
    } catch { /* closed */ }
    for (const c of this.#open) this.#closeConn(c);
    await this.finished;
  }

  #warnSometimes(line: string): void {
    const now = Date.now();
    if (now - this.#lastWarn < 10_000) return;
    this.#lastWarn = now;
    this.#warn(line);
  }

  async #acceptLoop(): Promise<void> {
    while (!this.#closed) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch (e) {
        if (this.#closed || e instanceof Deno.errors.BadResource) return;
        // EMFILE and the like: the connection stays in the backlog; try again a little later.
        this.#warnSometimes(`hallpass agent: answer service: accept: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      const peer = (conn.remoteAddr as Deno.NetAddr).hostname ?? "?";
      const fromPeer = this.#perPeer.get(peer) ?? 0;
      if (this.#open.size >= this.#limits.maxConnections && fromPeer < this.#limits.maxPerPeer) {
        // Full: a connection still in its head makes room — the oldest of the peer holding the most, and only
        // a peer holding more than the new one's (slow heads from many addresses must not keep a person out;
        // a head sent at once is past this point in a moment).
        let victim: Deno.Conn | undefined;
        let most = fromPeer;
        for (const [c, p] of this.#inHead) {
          const n = this.#perPeer.get(p) ?? 0;
          if (n > most) [victim, most] = [c, n];
        }
        if (victim !== undefined) this.#closeConn(victim);
      }
      if (this.#open.size >= this.#limits.maxConnections || fromPeer >= this.#limits.maxPerPeer) {
        this.#warnSometimes(
          `hallpass agent: answer service: connection limit reached (${this.#open.size} open, ${fromPeer} from ${peer}); refusing new ones`,
        );
        try {
          conn.close();
        } catch { /* gone */ }
        continue;
      }
      this.#open.add(conn);
      this.#perPeer.set(peer, fromPeer + 1);
      this.#serve(conn, peer).catch(() => {}).finally(() => {
        this.#closeConn(conn);
        const left = (this.#perPeer.get(peer) ?? 1) - 1;
        if (left <= 0) this.#perPeer.delete(peer);
        else this.#perPeer.set(peer, left);
      });
    }
  }

  #closeConn(conn: Deno.Conn): void {
    this.#inHead.delete(conn);
    if (!this.#open.delete(conn)) return;
    try {
      conn.close();
    } catch { /* closed */ }
  }

  /** Runs `work` with a deadline: past it the connection is closed, which fails any read or write under way. */
  async #within<T>(conn: Deno.Conn, ms: number, work: Promise<T>): Promise<T> {
    const timer = setTimeout(() => this.#closeConn(conn), ms);
    try {
      return await work;
    } finally {
      clearTimeout(timer);
    }
  }

  async #serve(conn: Deno.Conn, peer: string): Promise<void> {
    let res: Response;
    let head = false;
    try {
      this.#inHead.set(conn, peer);
      const got = await this.#within(
        conn,
        this.#limits.headerTimeoutMs,
        readHead(conn, this.#limits.maxHeaderBytes),
      ).finally(() => this.#inHead.delete(conn));
      const h = parseHead(got.head);
      head = h.method === "HEAD";
      if (h.length !== "chunked" && h.length > this.#limits.maxBody) {
        throw new Refusal(413, `bodies are at most ${this.#limits.maxBody} bytes`);
      }
      const body = h.length !== 0
        ? await this.#within(
          conn,
          this.#limits.bodyTimeoutMs,
          readBody(new BodyReader(conn, got.rest), h.length, this.#limits.maxBody),
        )
        : null;
      const req = new Request(new URL(h.target, "http://hallpass-agent"), {
        method: h.method,
        headers: h.headers,
        body: body && h.method !== "GET" && !head ? body : undefined,
      });
      try {
        res = await this.#handler(req, peer);
      } catch (e) {
        this.#warnSometimes(`hallpass agent: answer service: ${(e as Error).message}`);
        res = new Response('{"error":"internal error"}\n', {
          status: 500,
          headers: { "content-type": "application/json" },
        });
      }
    } catch (e) {
      if (!(e instanceof Refusal) || !this.#open.has(conn)) return; // timed out or gone: nothing to answer
      res = new Response(JSON.stringify({ error: e.message }) + "\n", {
        status: e.status,
        headers: { "content-type": "application/json" },
      });
    }
    const body = head ? new Uint8Array() : new Uint8Array(await res.arrayBuffer());
    let text = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\n`;
    for (const [k, v] of res.headers) {
      if (k === "content-length" || k === "connection" || k === "transfer-encoding") continue;
      text += `${k}: ${v}\r\n`;
    }
    text += `content-length: ${head ? 0 : body.length}\r\nconnection: close\r\n\r\n`;
    const out = new Uint8Array(enc.encode(text).length + body.length);
    const headBytes = enc.encode(text);
    out.set(headBytes);
    out.set(body, headBytes.length);
    await this.#within(conn, this.#limits.writeTimeoutMs, writeAll(conn, out));
  }
}
