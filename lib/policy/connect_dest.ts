/**
 * Connect destinations (README.md `--allow-connect DEST`, docs/rules.md `connect` rules) and the concrete destinations the
 * supervisor sees.
 *
 * Grammar:
 *
 *     DEST  = "*"                                  every destination: IPv4, IPv6 and unix sockets
 *           | [PROTO] ADDR [":" PORTS]             PROTO = "tcp:" | "udp:" (none: both)
 *           | "unix:" PATH                         an absolute socket path; "/dir/**" for everything below
 *           | "unix:@" NAME ["*"]                  an abstract socket; a trailing "*" makes NAME a prefix
 *     ADDR  = IPV4 ["/" N]                         N = 0..32
 *           | "[" IPV6 "]" ["/" N]                 N = 0..128
 *           | "*"                                  any IPv4 or IPv6 address (e.g. "tcp:*:443")
 *     PORTS = PORT | PORT "-" PORT                 1..65535, low ≤ high
 *
 * Choices where the promise is silent:
 * * Host names are refused (`host names are not allowed: use an address (example.com)`); so are IPv4 forms
 *   other than four decimal parts (`127.1`, `0x7f.0.0.1`, leading zeros such as `010.0.0.1` that libc would
 *   read as octal), IPv6 without brackets, and IPv6 zone ids (`%eth0`).
 * * Port 0 cannot be written in a rule (nothing listens there); a destination with port 0 is covered only by
 *   rules without a port.
 * * `*` alone covers unix sockets too; `*` as ADDR (`tcp:*`, `*:443`) covers IPv4 and IPv6 only.
 * * Host bits below /N are ignored: `10.1.2.3/8` is `10.0.0.0/8`.
 * * IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is IPv4: a destination `::ffff:127.0.0.1` is covered by a rule for
 *   `127.0.0.1`, and a rule `[::ffff:127.0.0.1]` is the rule `127.0.0.1`. Other IPv6 rules (even `[::]/0`)
 *   never cover IPv4 destinations, so allowing "all IPv6" does not silently allow IPv4 too.
 * * Specificity is about how much a rule covers: address bits (IPv4 counted as the last 32 of 128) plus port
 *   bits (16 − log2 of the ports covered) plus 1 for a protocol. So `tcp:10.0.0.5:25` beats `10.0.0.0/8`, and
 *   `1.2.3.0/24:25` (256 address-port pairs) beats `1.2.3.4` (65,535 ports of one address).
 *
 * {@link destCovers} allocates nothing: targets are parsed into module-level scratch state.
 *
 * @module
 */

import {
  clip,
  formatScope,
  normalizePath,
  parentDir,
  parsePathScope,
  scopeCovers,
  scopeSpecificity,
} from "./path_scope.ts";
import { type PathScope, UsageError } from "../types.ts";

/** A parsed connect rule target. Build with {@link parseConnectDest}; the fields are read-only data. */
export type ConnectDest =
  | { readonly kind: "any" }
  | {
    readonly kind: "inet";
    /** `null`: tcp and udp. */
    readonly proto: "tcp" | "udp" | null;
    /** `null`: any address of either family (`*` as ADDR). */
    readonly family: "inet" | "inet6" | null;
    /** Canonical network address (`10.0.0.0`, `2001:db8::`), `""` when family is null. */
    readonly addr: string;
    /** Prefix length within the family (32 or 128 for one address). */
    readonly prefix: number;
    /** Port range; `0, 0` when any port. */
    readonly portLo: number;
    readonly portHi: number;
    /**
     * The network as eight 16-bit groups of the 128-bit (IPv4-mapped) address, already masked, and the mask.
     * 16-bit values are small integers in every V8 tier, so matching never boxes a number.
     */
    readonly net: readonly number[];
    readonly mask: readonly number[];
  }
  | { readonly kind: "unix"; readonly scope: PathScope }
  | { readonly kind: "abstract"; readonly name: string; readonly prefix: boolean };

/** A concrete destination the supervisor saw. `addr` is canonical (`127.0.0.1`, `::1`), without brackets. */
export type ConnectTarget =
  | { family: "inet" | "inet6"; proto: "tcp" | "udp"; addr: string; port: number }
  | { family: "unix"; path?: string; abstract?: string };

// ---------------------------------------------------------------------------------------------------------------
// Address parsing without allocation.

/** Where an IPv6 address is parsed: `out` gets the eight groups, `left` and `right` the groups around `::`. */
interface V6Scratch {
  readonly out: Uint16Array;
  readonly left: Uint16Array;
  readonly right: Uint16Array;
}

function v6Scratch(): V6Scratch {
  return { out: new Uint16Array(8), left: new Uint16Array(8), right: new Uint16Array(8) };
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function hexVal(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Four decimal parts, 0..255, no leading zeros, in s[a, b). Writes the two 16-bit halves to out[at], out[at + 1]
 * and returns true, or returns false. Every intermediate value is a small integer (no boxing, no allocation).
 */
function parseV4Into(s: string, a: number, b: number, out: Uint16Array, at: number): boolean {
  let hi = 0, lo = 0;
  let parts = 0;
  let i = a;
  while (parts < 4) {
    const start = i;
    let part = 0;
    while (i < b && isDigit(s.charCodeAt(i))) {
      part = part * 10 + s.charCodeAt(i) - 48;
      i++;
      if (i - start > 3) return false;
    }
    if (i === start || part > 255) return false;
    if (i - start > 1 && s.charCodeAt(start) === 48) return false; // leading zero: octal to libc
    if (parts < 2) hi = hi * 256 + part;
    else lo = lo * 256 + part;
    parts++;
    if (parts < 4) {
      if (i >= b || s.charCodeAt(i) !== 46) return false;
      i++;
    }
  }
  if (i !== b) return false;
  out[at] = hi;
  out[at + 1] = lo;
  return true;
}

/** An IPv4 address as an unsigned number, or -1 (for formatting; not on the hot path). */
function parseV4(s: string, a: number, b: number): number {
  const halves = new Uint16Array(2);
  return parseV4Into(s, a, b, halves, 0) ? halves[0] * 65536 + halves[1] : -1;
}

/** Groups of hex separated by ':' in s[a, b), optionally ending with an IPv4 tail. Returns count or -1. */
function parseGroups(s: string, a: number, b: number, out: Uint16Array, allowV4: boolean): number {
  if (a === b) return 0;
  let n = 0;
  let i = a;
  for (;;) {
    let j = i;
    let v = 0;
    while (j < b) {
      const c = s.charCodeAt(j);
      if (c === 58 || c === 46) break;
      const h = hexVal(c);
      if (h < 0) return -1;
      v = v * 16 + h;
      j++;
      if (j - i > 4) return -1;
    }
    if (j < b && s.charCodeAt(j) === 46) {
      if (!allowV4 || n > 6) return -1;
      if (!parseV4Into(s, i, b, out, n)) return -1;
      return n + 2;
    }
    if (j === i || n >= 8) return -1;
    out[n++] = v;
    if (j === b) return n;
    i = j + 1;
    if (i === b) return -1;
  }
}

/** Parses IPv6 text s[a, b) into `w.out`. */
function parseV6(s: string, a: number, b: number, w: V6Scratch): boolean {
  const g16 = w.out;
  if (b - a < 2) return false;
  let dc = s.indexOf("::", a);
  if (dc + 2 > b) dc = -1;
  if (dc < 0) {
    if (parseGroups(s, a, b, g16, true) !== 8) return false;
    return true;
  }
  const again = s.indexOf("::", dc + 1);
  if (again >= 0 && again + 2 <= b) return false;
  const nl = parseGroups(s, a, dc, w.left, false);
  const nr = parseGroups(s, dc + 2, b, w.right, true);
  if (nl < 0 || nr < 0 || nl + nr > 7) return false;
  for (let k = 0; k < 8; k++) g16[k] = 0;
  for (let k = 0; k < nl; k++) g16[k] = w.left[k];
  for (let k = 0; k < nr; k++) g16[8 - nr + k] = w.right[k];
  return true;
}

function isMapped(g16: Uint16Array): boolean {
  return g16[0] === 0 && g16[1] === 0 && g16[2] === 0 && g16[3] === 0 && g16[4] === 0 && g16[5] === 0xffff;
}

function formatV4(v: number): string {
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
}

/** RFC 5952 text of eight 16-bit groups. */
function formatV6(g: ArrayLike<number>): string {
  let bestAt = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) [bestAt, bestLen] = [i, j - i];
    i = j;
  }
  const hex = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, k) => g[from + k].toString(16));
  if (bestAt < 0) return hex(0, 8).join(":");
  return hex(0, bestAt).join(":") + "::" + hex(bestAt + bestLen, 8).join(":");
}

/** Eight 16-bit masks for a prefix of `bits` (0..128). */
function mask16(bits: number): number[] {
  const m: number[] = [];
  for (let k = 0; k < 8; k++) {
    const b = Math.max(0, Math.min(16, bits - 16 * k));
    m.push(b === 0 ? 0 : (0xffff << (16 - b)) & 0xffff);
  }
  return m;
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing rule targets.

function bad(text: string, why: string): UsageError {
  return new UsageError(`bad connect destination ${JSON.stringify(clip(text))}: ${why}`);
}

const HOSTNAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9.])?$/;

/**
 * Parses a connect destination as written on the command line or in a rule. Throws {@link UsageError} with a
 * one-line message.
 *
 * @example
 * ```ts
 * formatDest(parseConnectDest("tcp:10.1.2.3/8:80-90")); // "tcp:10.0.0.0/8:80-90"
 * parseConnectDest("example.com"); // throws: host names are not allowed: use an address (example.com)
 * ```
 */
export function parseConnectDest(text: string): ConnectDest {
  if (text.length === 0) throw new UsageError("empty connect destination");
  if (text.includes("\0")) throw bad(text, "contains a NUL byte");
  if (/\s/.test(text)) throw bad(text, "contains white space");
  if (text === "*") return { kind: "any" };
  if (text.startsWith("unix:")) return parseUnix(text, text.slice(5));
  let rest = text;
  let proto: "tcp" | "udp" | null = null;
  if (rest.startsWith("tcp:") || rest.startsWith("udp:")) {
    proto = rest.slice(0, 3) as "tcp" | "udp";
    rest = rest.slice(4);
  }
  if (rest === "") throw bad(text, "missing address");

  let family: "inet" | "inet6" | null;
  let after: string; // what follows ADDR: "", "/N…", ":PORT…"
  let groups: number[] = [0, 0, 0, 0, 0, 0, 0, 0];
  if (rest[0] === "[") {
    const close = rest.indexOf("]");
    if (close < 0) throw bad(text, `missing "]" after the IPv6 address`);
    const inner = rest.slice(1, close);
    if (inner.includes("%")) throw bad(text, "IPv6 zone ids (%…) are not allowed");
    const w = v6Scratch();
    if (!parseV6(inner, 0, inner.length, w)) throw bad(text, `"${clip(inner, 60)}" is not an IPv6 address`);
    family = "inet6";
    groups = Array.from(w.out);
    after = rest.slice(close + 1);
  } else if (rest[0] === "*") {
    family = null;
    after = rest.slice(1);
    if (after.startsWith("/")) throw bad(text, `"*" takes no /N`);
  } else {
    const end = rest.search(/[/:]/);
    const addr = end < 0 ? rest : rest.slice(0, end);
    after = end < 0 ? "" : rest.slice(end);
    const v4 = parseV4(addr, 0, addr.length);
    if (v4 < 0) {
      const colons = rest.split(":").length - 1;
      if (colons >= 2 && /^[0-9A-Fa-f:.]+(%[^/]*)?(\/\d+)?$/.test(rest)) {
        throw bad(text, `IPv6 addresses go in brackets: [${clip(rest.split("/")[0], 60)}]`);
      }
      if (/^[0-9.]+$/.test(addr) || /^0[xX][0-9A-Fa-f]*(\.|$)/.test(addr)) {
        throw bad(
          text,
          `"${clip(addr, 60)}" is not an IPv4 address (four decimal parts 0-255, no leading zeros)`,
        );
      }
      if (proto === null && /^[A-Za-z][A-Za-z0-9]*:([[*]|[^:]*\.)/.test(rest)) {
        throw bad(text, `unknown protocol "${clip(addr, 20)}": use tcp: or udp: (or unix:)`);
      }
      if (HOSTNAME.test(addr) && /[A-Za-z_-]/.test(addr)) {
        throw new UsageError(`host names are not allowed: use an address (${clip(addr)})`);
      }
      throw bad(text, `"${clip(addr, 60)}" is not an address: expected an IPv4 address, [IPv6] or *`);
    }
    family = "inet";
    groups = [0, 0, 0, 0, 0, 0xffff, Math.floor(v4 / 65536), v4 % 65536];
  }

  let prefix = family === "inet" ? 32 : family === "inet6" ? 128 : 0;
  if (after.startsWith("/")) {
    const m = /^\/(\d{1,3})(?=:|$)/.exec(after);
    const max = family === "inet" ? 32 : 128;
    if (!m) throw bad(text, `bad prefix length after "/": expected 0-${max}`);
    prefix = Number(m[1]);
    if (prefix > max) throw bad(text, `prefix length /${prefix} is more than ${max}`);
    after = after.slice(m[0].length);
  }
  let portLo = 0, portHi = 0;
  if (after.startsWith(":")) {
    const m = /^:(\d{1,5})(?:-(\d{1,5}))?$/.exec(after);
    if (!m) {
      throw bad(text, `bad port ${JSON.stringify(clip(after.slice(1), 40))}: expected PORT or PORT-PORT`);
    }
    portLo = Number(m[1]);
    portHi = m[2] === undefined ? portLo : Number(m[2]);
    for (const p of [portLo, portHi]) {
      if (p < 1 || p > 65535) throw bad(text, `port ${p} is out of range: ports are 1-65535`);
    }
    if (portLo > portHi) throw bad(text, `port range ${portLo}-${portHi} is backwards`);
  } else if (after !== "") {
    throw bad(text, `unexpected ${JSON.stringify(clip(after, 40))} after the address`);
  }

  // An IPv6 network inside ::ffff:0:0/96 is an IPv4 network.
  if (
    family === "inet6" && prefix >= 96 && groups.slice(0, 5).every((x) => x === 0) && groups[5] === 0xffff
  ) {
    family = "inet";
    prefix -= 96;
  }
  const bits = family === "inet" ? 96 + prefix : family === "inet6" ? prefix : 0;
  const mask = mask16(bits);
  const net = groups.map((x, k) => x & mask[k]);
  let addr = "";
  if (family === "inet") addr = formatV4(net[6] * 65536 + net[7]);
  else if (family === "inet6") addr = formatV6(net);
  return { kind: "inet", proto, family, addr, prefix, portLo, portHi, net, mask };
}

function parseUnix(text: string, rest: string): ConnectDest {
  if (rest.startsWith("@")) {
    let name = rest.slice(1);
    let prefix = false;
    if (name.endsWith("*")) {
      prefix = true;
      name = name.slice(0, -1);
    }
    if (name.includes("*")) throw bad(text, `"*" is only allowed at the end of an abstract socket name`);
    if (name === "" && !prefix) throw bad(text, "empty abstract socket name (unix:@* covers them all)");
    return { kind: "abstract", name, prefix };
  }
  if (!rest.startsWith("/")) throw bad(text, "unix socket paths must be absolute (unix:/path or unix:@name)");
  try {
    const scope = parsePathScope(rest, { cwd: "/" });
    if (scope.kind === "glob") {
      throw new UsageError(
        `bad path ${JSON.stringify(rest)}: "*" is not allowed (the only pattern is a trailing /**)`,
      );
    }
    return { kind: "unix", scope };
  } catch (e) {
    throw bad(text, (e as Error).message);
  }
}

/** The canonical text of a destination: what `hallpass rules` shows and rules files keep. */
export function formatDest(dest: ConnectDest): string {
  switch (dest.kind) {
    case "any":
      return "*";
    case "unix":
      return "unix:" + formatScope(dest.scope);
    case "abstract":
      return "unix:@" + dest.name + (dest.prefix ? "*" : "");
    case "inet": {
      let s = dest.proto ? dest.proto + ":" : "";
      if (dest.family === null) s += "*";
      else if (dest.family === "inet") s += dest.addr + (dest.prefix === 32 ? "" : "/" + dest.prefix);
      else s += "[" + dest.addr + "]" + (dest.prefix === 128 ? "" : "/" + dest.prefix);
      if (dest.portLo) s += ":" + dest.portLo + (dest.portHi !== dest.portLo ? "-" + dest.portHi : "");
      return s;
    }
  }
}

/**
 * How specific a destination is (higher wins): see the module notes. `*` is 0; unix rules are 200 and up (they
 * compete only with each other and `*`).
 */
export function destSpecificity(dest: ConnectDest): number {
  switch (dest.kind) {
    case "any":
      return 0;
    case "unix":
      return 200 + scopeSpecificity(dest.scope);
    case "abstract":
      return 200 + 2 * dest.name.length + (dest.prefix ? 0 : 1);
    case "inet": {
      const addrBits = dest.family === "inet" ? 96 + dest.prefix : dest.family === "inet6" ? dest.prefix : 0;
      const portBits = dest.portLo === 0 ? 0 : 16 - Math.log2(dest.portHi - dest.portLo + 1);
      return addrBits + portBits + (dest.proto ? 1 : 0);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Matching. A target is "prepared" once into a PreparedTarget its owner keeps (lib/policy/policy.ts: one per
// Policy); covers checks against it allocate nothing.

const T_NONE = 0, T_INET = 1, T_UNIX = 2, T_ABSTRACT = 3;

/** One target parsed for matching, reused from call to call by its owner: {@link prepare} then {@link covers}. */
export class PreparedTarget {
  #kind = T_NONE;
  #v4 = false;
  /** The target address as eight 16-bit groups (IPv4 as ::ffff:a.b.c.d). */
  readonly #g = new Uint16Array(8);
  #port = 0;
  #proto: "tcp" | "udp" = "tcp";
  #path = "";
  readonly #w = v6Scratch();

  /**
   * Parses `target`, for {@link covers}. A target whose address does not parse is covered by nothing but `*`.
   * Allocates nothing.
   */
  prepare(target: ConnectTarget): void {
    this.#kind = T_NONE;
    if (target.family === "unix") {
      if (target.path !== undefined) {
        this.#kind = T_UNIX;
        this.#path = target.path;
      } else if (target.abstract !== undefined) {
        this.#kind = T_ABSTRACT;
        this.#path = target.abstract;
      }
      return;
    }
    this.#port = target.port;
    this.#proto = target.proto;
    const a = target.addr;
    const tg = this.#g;
    if (target.family === "inet") {
      if (!parseV4Into(a, 0, a.length, tg, 6)) return;
      for (let k = 0; k < 5; k++) tg[k] = 0;
      tg[5] = 0xffff;
      this.#v4 = true;
    } else {
      let start = 0, end = a.length;
      if (a.charCodeAt(0) === 91 && a.charCodeAt(end - 1) === 93) {
        start = 1;
        end--;
      }
      const pct = a.indexOf("%", start);
      if (pct >= 0 && pct < end) end = pct;
      if (!parseV6(a, start, end, this.#w)) return;
      for (let k = 0; k < 8; k++) tg[k] = this.#w.out[k];
      this.#v4 = isMapped(tg);
    }
    this.#kind = T_INET;
  }

  /** Whether `dest` covers the target last given to {@link prepare}. Allocates nothing. */
  covers(dest: ConnectDest): boolean {
    if (dest.kind === "any") return true;
    switch (this.#kind) {
      case T_INET: {
        if (dest.kind !== "inet") return false;
        if (dest.proto !== null && dest.proto !== this.#proto) return false;
        if (dest.portLo !== 0 && (this.#port < dest.portLo || this.#port > dest.portHi)) return false;
        if (dest.family === null) return true;
        if ((dest.family === "inet") !== this.#v4) return false;
        const m = dest.mask, n = dest.net, tg = this.#g;
        for (let k = 0; k < 8; k++) if ((tg[k] & m[k]) !== n[k]) return false;
        return true;
      }
      case T_UNIX:
        return dest.kind === "unix" && scopeCovers(dest.scope, this.#path);
      case T_ABSTRACT:
        return dest.kind === "abstract" &&
          (dest.prefix ? this.#path.startsWith(dest.name) : this.#path === dest.name);
      default:
        return false;
    }
  }

  /** The prepared internet address as eight groups and whether it is IPv4, or null (not an internet address). */
  inet(): { groups: number[]; v4: boolean } | null {
    return this.#kind === T_INET ? { groups: Array.from(this.#g), v4: this.#v4 } : null;
  }
}

/**
 * Whether `dest` covers `target`.
 *
 * @example
 * ```ts
 * destCovers(parseConnectDest("127.0.0.1"), { family: "inet6", proto: "tcp", addr: "::ffff:127.0.0.1", port: 80 }); // true
 * ```
 */
export function destCovers(dest: ConnectDest, target: ConnectTarget): boolean {
  const t = new PreparedTarget();
  t.prepare(target);
  return t.covers(dest);
}

// ---------------------------------------------------------------------------------------------------------------
// Targets as text.

/** `tcp:127.0.0.1:8080`, `udp:[::1]:53`, `unix:/run/x.sock`, `unix:@name` (`unix:` for an unnamed socket). */
export function formatTarget(target: ConnectTarget): string {
  if (target.family === "unix") {
    if (target.path !== undefined) return "unix:" + target.path;
    if (target.abstract !== undefined) return "unix:@" + target.abstract;
    return "unix:";
  }
  const a = target.family === "inet6" ? "[" + target.addr.replace(/^\[|\]$/g, "") + "]" : target.addr;
  return `${target.proto}:${a}:${target.port}`;
}

/**
 * Parses a concrete destination as {@link formatTarget} writes it (`tcp:` is the default protocol). Addresses
 * are made canonical. Throws {@link UsageError}.
 */
export function parseConnectTarget(text: string): ConnectTarget {
  if (text.startsWith("unix:")) {
    const rest = text.slice(5);
    if (rest.startsWith("@")) return { family: "unix", abstract: rest.slice(1) };
    if (!rest.startsWith("/")) throw bad(text, "unix socket paths must be absolute");
    return { family: "unix", path: normalizePath(rest, "/") };
  }
  const d = parseConnectDest(text);
  if (d.kind !== "inet" || d.family === null || d.portLo === 0 || d.portLo !== d.portHi) {
    throw bad(text, "expected one address and one port, e.g. tcp:127.0.0.1:8080 or udp:[::1]:53");
  }
  if (d.prefix !== (d.family === "inet" ? 32 : 128)) throw bad(text, "a destination has no /N");
  return { family: d.family, proto: d.proto ?? "tcp", addr: d.addr, port: d.portLo };
}

/**
 * Scopes to offer for a destination, narrowest first: the address and port, the address, its /24 (IPv4) or
 * /64 (IPv6) network, and the port on any address. Unix paths: the socket, then its directory `/**`; abstract
 * names: the name, then the prefix up to its last separator (`/ . - _ :`) when it has one.
 */
export function suggestDestScopes(target: ConnectTarget): string[] {
  if (target.family === "unix") {
    if (target.path !== undefined) {
      const p = normalizePath(target.path, "/");
      const dir = parentDir(p);
      return dir === "/" ? ["unix:" + p] : ["unix:" + p, "unix:" + formatScope({ kind: "tree", path: dir })];
    }
    if (target.abstract !== undefined) {
      const n = target.abstract;
      const out = ["unix:@" + n];
      let cut = -1;
      for (let i = n.length - 2; i >= 0 && cut < 0; i--) if ("/.-_:".includes(n[i])) cut = i;
      if (cut > 0) out.push("unix:@" + n.slice(0, cut + 1) + "*");
      return out;
    }
    return [];
  }
  const prepared = new PreparedTarget();
  prepared.prepare(target);
  const inet = prepared.inet();
  if (inet === null) return [];
  const p = target.proto + ":";
  const port = target.port;
  let host: string, net: string;
  if (inet.v4) {
    const v = inet.groups[6] * 65536 + inet.groups[7];
    host = formatV4(v);
    net = formatV4(v - (v % 256)) + "/24";
  } else {
    const g = inet.groups;
    host = "[" + formatV6(g) + "]";
    net = "[" + formatV6([...g.slice(0, 4), 0, 0, 0, 0]) + "]/64";
  }
  const out: string[] = [];
  if (port > 0) out.push(`${p}${host}:${port}`);
  out.push(p + host, p + net);
  if (port > 0) out.push(`${p}*:${port}`);
  return out;
}

/** The canonical form of an address as the supervisor should put it in a {@link ConnectTarget}. */
export function canonicalAddr(family: "inet" | "inet6", addr: string): string | null {
  if (family === "inet") {
    const v = parseV4(addr, 0, addr.length);
    return v < 0 ? null : formatV4(v);
  }
  const w = v6Scratch();
  if (!parseV6(addr, 0, addr.length, w)) return null;
  if (isMapped(w.out)) return "::ffff:" + formatV4(w.out[6] * 65536 + w.out[7]);
  return formatV6(w.out);
}
