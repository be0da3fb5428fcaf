/**
 * The hallpass-request protocol (docs/request-protocol.md): a request is an execve of
 *
 *     /.hallpass/v1/<verb>/<op>/<target>[/<key>=<value>]...
 *
 * that the supervisor traps and answers with an errno. This module is pure: it decodes (and, for tests and docs,
 * encodes) request paths; it never resolves paths or validates the connect DEST grammar (the supervisor does).
 * Everything in a request path comes from the sandbox and is hostile: decoding never throws.
 */

import { parseDuration } from "./duration.ts";

/** Any exec of a path starting with this is a request; a malformed one is answered EINVAL. */
export const MAGIC_PREFIX = "/.hallpass/";
export const PROTOCOL_VERSION = "v1";
/** PATH_MAX: the whole request path including its terminating NUL must fit. */
export const REQUEST_PATH_MAX = 4096;

export type RequestVerb = "ask" | "check" | "release";
export type RequestOp = "write" | "exec" | "connect";
export const REQUEST_VERBS: readonly RequestVerb[] = ["ask", "check", "release"];
export const REQUEST_OPS: readonly RequestOp[] = ["write", "exec", "connect"];

export interface DecodedRequest {
  verb: RequestVerb;
  op: RequestOp;
  /**
   * Percent-decoded, otherwise raw: write = a path, absolute or relative to the requester's cwd, maybe ending in
   * `/**`; exec = an absolute path or `DIR/**`; connect = a DEST as written (not yet validated).
   */
  target: string;
  /** `for=`: how long the grant should last; absent = the rest of the session. */
  forMs?: number;
  /** `timeout=`: give up (ETIMEDOUT) when nobody answers within this. */
  timeoutMs?: number;
  /** `reason=`: the requester's own words. Valid UTF-8 without control characters; still hostile text. */
  reason?: string;
}

export type RequestErrno = "EINVAL" | "ENAMETOOLONG";

export interface RequestError {
  /** The errno to answer the exec with. */
  errno: RequestErrno;
  /** One line saying what is wrong, for logs; may quote (JSON-escaped) parts of the request. */
  message: string;
}

export type DecodeResult = { ok: true; request: DecodedRequest } | ({ ok: false } & RequestError);

/** What the supervisor answers a well-formed request with, and the helper's exit code for each (docs/request-protocol.md). */
export const REQUEST_ANSWERS = {
  granted: { errno: "EALREADY", exit: 0 },
  released: { errno: "ECANCELED", exit: 0 },
  alreadyAllowed: { errno: "EEXIST", exit: 1 },
  denied: { errno: "EPERM", exit: 3 },
  timedOut: { errno: "ETIMEDOUT", exit: 4 },
  wouldAsk: { errno: "ENOMSG", exit: 5 },
  malformed: { errno: "EINVAL", exit: 6 },
  tooLong: { errno: "ENAMETOOLONG", exit: 6 },
  notMediated: { errno: "ENOSYS", exit: 7 },
  noMatch: { errno: "ESRCH", exit: 10 },
} as const;

const KEYS = ["for", "timeout", "reason"] as const;
type Key = typeof KEYS[number];

/** Strict duration grammar of the protocol: digits + unit, repeated (no spaces, no fractions). */
const DURATION_RE = /^(?:[0-9]+(?:ms|s|m|h|d))+$/;
const UNRESERVED = /^[A-Za-z0-9._~-]$/;
// deno-lint-ignore no-control-regex
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** True for every path an exec of which is a request (well-formed or not). */
export function isRequestPath(path: string): boolean {
  return typeof path === "string" && path.startsWith(MAGIC_PREFIX);
}

function fail(errno: RequestErrno, message: string): { ok: false } & RequestError {
  return { ok: false, errno, message };
}

/** Quotes hostile text for a message: JSON-escaped and cut to 120 characters. */
function quote(s: string): string {
  const cut = s.length > 120 ? s.slice(0, 120) + "…" : s;
  return JSON.stringify(cut);
}

/** Percent-encodes the UTF-8 bytes of `s`: every byte not in `[A-Za-z0-9._~-]` becomes `%XX` (uppercase). */
export function percentEncode(s: string): string {
  let out = "";
  for (const b of utf8Encoder.encode(s)) {
    const c = String.fromCharCode(b);
    out += UNRESERVED.test(c) ? c : "%" + b.toString(16).toUpperCase().padStart(2, "0");
  }
  return out;
}

/**
 * Decodes one percent-encoded segment. Only `[A-Za-z0-9._~-]` and `%XX` (either case) may appear; the bytes
 * must be valid UTF-8 without NUL.
 */
export function percentDecode(segment: string): { ok: true; value: string } | { ok: false; message: string } {
  const bytes = new Uint8Array(segment.length);
  let n = 0;
  for (let i = 0; i < segment.length; i++) {
    const c = segment[i];
    if (c === "%") {
      const hex = segment.slice(i + 1, i + 3);
      if (!/^[0-9A-Fa-f]{2}$/.test(hex)) {
        return { ok: false, message: `bad percent escape at ${quote(segment.slice(i, i + 3))}` };
      }
      bytes[n++] = parseInt(hex, 16);
      i += 2;
    } else if (UNRESERVED.test(c)) {
      bytes[n++] = c.charCodeAt(0);
    } else {
      return { ok: false, message: `character ${quote(c)} must be percent-encoded` };
    }
  }
  const raw = bytes.subarray(0, n);
  if (raw.includes(0)) return { ok: false, message: "NUL byte in a value" };
  try {
    return { ok: true, value: utf8Decoder.decode(raw) };
  } catch {
    return { ok: false, message: "a value is not valid UTF-8" };
  }
}

/** No glob characters (`*`, `?`, `[`) except one trailing `/**`. */
function pathGlobOk(target: string): boolean {
  const body = target.endsWith("/**") ? target.slice(0, -3) : target;
  return !/[*?[]/.test(body);
}

function checkTarget(op: RequestOp, target: string): string | undefined {
  switch (op) {
    case "write":
      if (!pathGlobOk(target)) return `write target ${quote(target)}: no glob except a trailing /**`;
      return undefined;
    case "exec":
      if (target.startsWith("@")) return `exec target ${quote(target)}: groups cannot be requested`;
      if (!target.startsWith("/")) return `exec target ${quote(target)}: must be an absolute path or DIR/**`;
      if (!pathGlobOk(target)) return `exec target ${quote(target)}: no glob except a trailing /**`;
      return undefined;
    case "connect":
      if (/^(?:(?:tcp|udp):)?\*$/.test(target)) return "connect target `*` cannot be requested";
      return undefined;
  }
}

/**
 * Decodes a request path (as the supervisor read it from the requester's memory, without the terminating NUL).
 * Never throws: returns `{ ok: true, request }` or `{ ok: false, errno, message }` where errno is what to
 * answer the exec with.
 */
export function decodeRequest(path: string): DecodeResult {
  if (typeof path !== "string" || !isRequestPath(path)) return fail("EINVAL", "not a hallpass request path");
  // Byte length, as the kernel counts it (a lone surrogate counts as the 3 bytes of U+FFFD).
  if (path.length >= REQUEST_PATH_MAX || utf8Encoder.encode(path).length >= REQUEST_PATH_MAX) {
    return fail("ENAMETOOLONG", `request path longer than ${REQUEST_PATH_MAX - 1} bytes`);
  }
  if (path.includes("\0")) return fail("EINVAL", "NUL in the request path");
  const segs = path.slice(MAGIC_PREFIX.length).split("/");
  if (segs[0] !== PROTOCOL_VERSION) {
    return fail("EINVAL", `unsupported request protocol version ${quote(segs[0])} (this hallpass speaks v1)`);
  }
  if (segs.length < 4) return fail("EINVAL", "expected /.hallpass/v1/<verb>/<op>/<target>");
  const [, verb, op, rawTarget, ...keySegs] = segs;
  if (!(REQUEST_VERBS as readonly string[]).includes(verb)) {
    return fail("EINVAL", `unknown verb ${quote(verb)}`);
  }
  if (!(REQUEST_OPS as readonly string[]).includes(op)) {
    return fail("EINVAL", `unknown operation ${quote(op)}`);
  }
  const request: DecodedRequest = { verb: verb as RequestVerb, op: op as RequestOp, target: "" };

  if (rawTarget === "") return fail("EINVAL", "empty target");
  const t = percentDecode(rawTarget);
  if (!t.ok) return fail("EINVAL", `target: ${t.message}`);
  request.target = t.value;
  const targetProblem = checkTarget(request.op, request.target);
  if (targetProblem) return fail("EINVAL", targetProblem);

  if (request.verb === "release" && keySegs.length > 0) return fail("EINVAL", "release takes no keys");
  const seen = new Set<Key>();
  for (const seg of keySegs) {
    const eq = seg.indexOf("=");
    if (seg === "" || eq < 0) return fail("EINVAL", `expected <key>=<value>, got ${quote(seg)}`);
    const key = seg.slice(0, eq);
    if (!(KEYS as readonly string[]).includes(key)) return fail("EINVAL", `unknown key ${quote(key)}`);
    if (seen.has(key as Key)) return fail("EINVAL", `key ${key} given twice`);
    seen.add(key as Key);
    const v = percentDecode(seg.slice(eq + 1));
    if (!v.ok) return fail("EINVAL", `${key}: ${v.message}`);
    if (v.value === "") return fail("EINVAL", `empty ${key}`);
    if (key === "reason") {
      if (CONTROL_RE.test(v.value)) return fail("EINVAL", "reason contains control characters");
      request.reason = v.value;
      continue;
    }
    const ms = strictDuration(v.value);
    if (typeof ms === "string") return fail("EINVAL", `${key}: ${ms}`);
    if (key === "for") request.forMs = ms;
    else request.timeoutMs = ms;
  }
  return { ok: true, request };
}

/**
 * Decodes a request path given as bytes (without the terminating NUL). Raw bytes outside ASCII are never
 * valid (everything else is percent-encoded); a NUL is EINVAL, more than 4095 bytes ENAMETOOLONG.
 */
export function decodeRequestBytes(bytes: Uint8Array): DecodeResult {
  if (bytes.length >= REQUEST_PATH_MAX) {
    return fail("ENAMETOOLONG", `request path longer than ${REQUEST_PATH_MAX - 1} bytes`);
  }
  let s = "";
  for (const b of bytes) {
    if (b === 0 || b >= 0x80) return fail("EINVAL", "NUL or non-ASCII byte in the request path");
    s += String.fromCharCode(b);
  }
  return decodeRequest(s);
}

/** Parses a protocol duration: ms, or a one-line message. */
function strictDuration(text: string): number | string {
  if (!DURATION_RE.test(text)) return `bad duration ${quote(text)}: expected e.g. 90s, 10m, 1h30m`;
  try {
    return parseDuration(text);
  } catch (e) {
    return e instanceof Error ? e.message : "bad duration";
  }
}

/** Formats ms compactly in the protocol's grammar: 5400000 → `1h30m`, 1500 → `1s500ms`. */
export function compactDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms <= 0) {
    throw new RangeError(`bad duration ${ms}: must be a positive integer`);
  }
  const parts: [number, string][] = [
    [Math.floor(ms / 3_600_000), "h"],
    [Math.floor((ms % 3_600_000) / 60_000), "m"],
    [Math.floor((ms % 60_000) / 1000), "s"],
    [ms % 1000, "ms"],
  ];
  return parts.filter(([n]) => n > 0).map(([n, u]) => `${n}${u}`).join("");
}

export interface RequestInput {
  verb: RequestVerb;
  op: RequestOp;
  target: string;
  /** Milliseconds, or a duration as written (`10m`). */
  for?: number | string;
  timeout?: number | string;
  reason?: string;
}

/**
 * Builds the request path hallpass-request executes (keys in the order for, timeout, reason, as the helper
 * writes them). Throws a RangeError when the result would not decode (bad target, duration, too long …).
 */
export function encodeRequest(input: RequestInput): string {
  let path = `${MAGIC_PREFIX}${PROTOCOL_VERSION}/${input.verb}/${input.op}/${percentEncode(input.target)}`;
  const dur = (d: number | string) => typeof d === "number" ? compactDuration(d) : d;
  if (input.for !== undefined) path += `/for=${percentEncode(dur(input.for))}`;
  if (input.timeout !== undefined) path += `/timeout=${percentEncode(dur(input.timeout))}`;
  if (input.reason !== undefined) path += `/reason=${percentEncode(input.reason)}`;
  const check = decodeRequest(path);
  if (!check.ok) throw new RangeError(`cannot encode request: ${check.message}`);
  return path;
}
