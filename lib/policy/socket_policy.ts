/**
 * Which sockets the sandbox may make and where their connects and sends go: pure data and functions, used by
 * the filter plan (lib/filter/filter_plan.ts), the plan's built-in rules (lib/sandbox/plan.ts) and the supervisor
 * (lib/supervisor/connect.ts). docs/connect.md says the same in words; docs/threat-model.md ("Network and
 * local IPC") says why.
 *
 * - **Local IPC is always decided.** A connect or a datagram send to a unix socket (a path or an abstract
 *   name) is a question unless a rule allows it, in every mode: a daemon that acts for the user (tmux, D-Bus,
 *   docker, systemd --user, ssh-agent) is a way out of the sandbox. Allowed without a question: the built-in
 *   rules of {@link builtinConnectRules}, and sockets the sandbox bound itself.
 * - **Network destinations are decided under `--mediate connect`** only; otherwise they are performed as asked.
 * - **Under `--mediate connect` every socket that could reach another host or process is decided or refused**
 *   at `socket()` ({@link refusedSockets}): only unix, TCP, UDP, the harmless netlink protocols and AF_ALG can
 *   be made.
 *
 * @module
 */
import { canonicalAddr, type ConnectTarget } from "./connect_dest.ts";
import type { Rule } from "../types.ts";

export const AF = {
  UNSPEC: 0,
  UNIX: 1,
  INET: 2,
  INET6: 10,
  NETLINK: 16,
  PACKET: 17,
  ALG: 38,
  VSOCK: 40,
  /** The highest family this table knows (AF_MCTP, Linux 5.15). Every higher one is refused. */
  MAX_KNOWN: 45,
} as const;

/** Families a sandbox may still create under `--mediate connect`: none of them reaches a host or process undecided. */
export const ALLOWED_FAMILIES: Readonly<Record<number, string>> = {
  [AF.UNIX]: "unix sockets: connects and datagram sends are decided",
  [AF.INET]: "TCP and UDP over IPv4: connects and sends are decided",
  [AF.INET6]: "TCP and UDP over IPv6: connects and sends are decided",
  [AF.NETLINK]: "the kernel's own netlink protocols that cannot reach another process (below)",
  [AF.ALG]: "the kernel's crypto API: no peer at all",
};

/**
 * Netlink protocols a sandbox may open under `--mediate connect`. Each talks to the kernel; an unprivileged
 * socket of these cannot send to another process (the kernel refuses a destination port or group without
 * CAP_NET_ADMIN: NL_CFG_F_NONROOT_SEND is not set for them). NETLINK_USERSOCK (2), which is IPC between
 * processes, and the rest are refused.
 */
export const ALLOWED_NETLINK: Readonly<Record<number, string>> = {
  0: "NETLINK_ROUTE: addresses and routes (getaddrinfo's AI_ADDRCONFIG, ip addr)",
  4: "NETLINK_SOCK_DIAG: the program's view of sockets (ss)",
  7: "NETLINK_SELINUX: policy change notices",
  9: "NETLINK_AUDIT: login tools' audit records",
  15: "NETLINK_KOBJECT_UEVENT: device events (udev monitors)",
  16: "NETLINK_GENERIC: kernel families (taskstats, nl80211 queries)",
};
const NETLINK_MAX = 31;

/**
 * Whether a netlink address (`len` bytes of a struct sockaddr_nl) names another process or a multicast group
 * (nl_pid or nl_groups set) rather than the kernel. A send or connect to one is refused with EPERM in every
 * mode: it is local IPC with whatever process holds that port (NETLINK_USERSOCK lets any user send there), and
 * for every other protocol the kernel refuses it to a caller without CAP_NET_ADMIN, which no sandbox holds. A
 * shorter address or another family fails in the kernel.
 */
export function netlinkPeer(addr: Uint8Array, len: number): boolean {
  if (len < 12 || addr.length < 12) return false;
  const v = new DataView(addr.buffer, addr.byteOffset, 12);
  return v.getUint16(0, true) === AF.NETLINK && (v.getUint32(4, true) !== 0 || v.getUint32(8, true) !== 0);
}

/** Protocol numbers that are TCP or UDP as the third argument of socket() (0 is the type's default). */
export const IPPROTO = {
  IP: 0,
  ICMP: 1,
  TCP: 6,
  UDP: 17,
  ICMPV6: 58,
  SCTP: 132,
  UDPLITE: 136,
  MPTCP: 262,
} as const;
export const SOCK_TYPE = { STREAM: 1, DGRAM: 2, RAW: 3, RDM: 4, SEQPACKET: 5, DCCP: 6, PACKET: 10 } as const;

/** A comparison as lib/filter/filter_plan.ts writes it. */
export interface SocketArg {
  arg: number;
  op: "masked_eq" | "eq" | "gt";
  mask?: bigint;
  value: bigint;
}

const LOW32 = 0xffffffffn;

/**
 * Values lo..hi (inclusive, 32-bit) as masked comparisons of aligned power-of-two blocks: [1, 16] is
 * {1}, {2,3}, {4..7}, {8..15}, {16}. `mask` limits the compared bits (0xf for a socket type's low bits).
 */
export function rangeArgs(arg: number, lo: number, hi: number, mask = LOW32): SocketArg[] {
  const out: SocketArg[] = [];
  let v = lo;
  while (v <= hi) {
    let size = 1;
    while (v % (size * 2) === 0 && v + size * 2 - 1 <= hi) size *= 2;
    out.push({ arg, op: "masked_eq", mask: mask & ~BigInt(size - 1), value: BigInt(v) });
    v += size;
  }
  return out;
}

/** Each element is one alternative (all its comparisons must hold); `why` goes into the filter plan. */
export interface RefusedSocket {
  args: SocketArg[];
  why: string;
}

/** Alternatives that refuse values outside `allowed` (a sorted list) of 0..max, and everything above max. */
function outside(arg: number, allowed: number[], max: number, mask = LOW32): SocketArg[][] {
  const out: SocketArg[][] = [];
  let lo = 0;
  for (const a of [...allowed, max + 1]) {
    if (a > lo) { for (const c of rangeArgs(arg, lo, a - 1, mask)) out.push([c]); }
    lo = a + 1;
  }
  if (mask === LOW32) out.push([{ arg, op: "gt", value: BigInt(max) }]); // also any value with high bits set
  return out;
}

/**
 * socket(domain, type, protocol) calls refused with EACCES under `--mediate connect`: every family but
 * {@link ALLOWED_FAMILIES}; IPv4/IPv6 sockets that are not plain TCP (SOCK_STREAM, protocol 0 or 6) or UDP
 * (SOCK_DGRAM, 0 or 17) — raw sockets (IP_HDRINCL writes its own destination), SCTP (sendmsg with an address
 * connects, and sctp_connectx is a setsockopt), MPTCP, SMC, UDP-Lite, ping; netlink protocols not in
 * {@link ALLOWED_NETLINK}.
 */
export function refusedSockets(): RefusedSocket[] {
  const out: RefusedSocket[] = [];
  const families = Object.keys(ALLOWED_FAMILIES).map(Number).sort((a, b) => a - b);
  for (const alt of outside(0, families, AF.MAX_KNOWN)) {
    out.push({ args: alt, why: "connect: a socket family that is not decided (vsock, packet, tipc, …)" });
  }
  for (const fam of [AF.INET, AF.INET6]) {
    const dom: SocketArg = { arg: 0, op: "masked_eq", mask: LOW32, value: BigInt(fam) };
    for (const t of outside(1, [SOCK_TYPE.STREAM, SOCK_TYPE.DGRAM], 15, 0xfn)) {
      out.push({ args: [dom, ...t], why: "connect: raw, SCTP and other IP sockets are not decided" });
    }
    for (const [type, proto] of [[SOCK_TYPE.STREAM, IPPROTO.TCP], [SOCK_TYPE.DGRAM, IPPROTO.UDP]]) {
      const ty: SocketArg = { arg: 1, op: "masked_eq", mask: 0xfn, value: BigInt(type) };
      for (const p of outside(2, [0, proto], proto)) {
        out.push({
          args: [dom, ty, ...p],
          why: "connect: IP protocols other than TCP and UDP are not decided",
        });
      }
    }
  }
  const nl: SocketArg = { arg: 0, op: "masked_eq", mask: LOW32, value: BigInt(AF.NETLINK) };
  const protos = Object.keys(ALLOWED_NETLINK).map(Number).sort((a, b) => a - b);
  for (const p of outside(2, protos, NETLINK_MAX)) {
    out.push({ args: [nl, ...p], why: "connect: netlink protocols that reach other processes" });
  }
  return out;
}

/** Whether socket(domain, type, protocol) is allowed under `--mediate connect` (what the filter computes). */
export function socketAllowed(domain: bigint, type: bigint, protocol: bigint): boolean {
  for (const r of refusedSockets()) {
    const a = [domain, type, protocol];
    if (
      r.args.every((c) =>
        c.op === "gt"
          ? a[c.arg] > c.value
          : c.op === "eq"
          ? a[c.arg] === c.value
          : (a[c.arg] & c.mask!) === c.value
      )
    ) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------------------------
// Built-in rules.

/**
 * Unix sockets every program may reach without a question, when network connects are not mediated: the
 * name services glibc asks before its own files and DNS (strace of git, npm, node, python, ssh and bash on
 * Debian: only nscd's socket; nsswitch's systemd, resolve, mdns and sss modules use the others). They look
 * names up and say nothing they are not asked; under `--mediate connect` they are not built in, since a host
 * name lookup is a way to send data (docs/connect.md).
 */
export const NAME_SERVICE_SOCKETS: readonly string[] = [
  "/run/nscd/socket",
  "/var/run/nscd/socket",
  "/var/lib/sss/pipes/nss",
  "/run/systemd/userdb/io.systemd.Multiplexer",
  "/run/systemd/userdb/io.systemd.NameServiceSwitch",
  "/run/systemd/userdb/io.systemd.DynamicUser",
  "/run/systemd/resolve/io.systemd.Resolve",
  "/run/avahi-daemon/socket",
];

/** The built-in connect rules of a session: shown by `hallpass rules`, most specific rule wins as usual. */
export function builtinConnectRules(project: string, mediateConnect: boolean): Rule[] {
  const rules: Rule[] = [{
    effect: "allow",
    op: "connect",
    target: `unix:${project}/**`,
    source: { kind: "builtin", what: "the program's own sockets in the project" },
  }];
  if (!mediateConnect) {
    for (const p of NAME_SERVICE_SOCKETS) {
      rules.push({
        effect: "allow",
        op: "connect",
        target: "unix:" + p,
        source: { kind: "builtin", what: "name service (user and host lookups)" },
      });
    }
  }
  return rules;
}

// ---------------------------------------------------------------------------------------------------------------
// The decision.

/**
 * What the supervisor does with a connect or send whose destination is `target` (null: nothing to decide —
 * an unnamed unix socket, a kernel netlink socket):
 * - "perform": done by the supervisor on its own copy of the socket and address, without a question;
 * - "policy": the rules decide (allow → perform, deny → EACCES, else ask).
 * Nothing is ever continued after its address was read: a racing thread could change it, or swap the fd.
 */
export function netVerdict(
  target: ConnectTarget | null,
  o: { mediateConnect: boolean; ownSocket: boolean },
): "perform" | "policy" {
  if (target === null) return "perform";
  if (target.family === "unix") return o.ownSocket ? "perform" : "policy";
  return o.mediateConnect ? "policy" : "perform";
}

// ---------------------------------------------------------------------------------------------------------------
// The address the kernel will use.

/**
 * The destination the kernel would actually reach for an IPv4/IPv6 target, or the target itself:
 * - `0.0.0.0` is the socket's own bound address, or `127.0.0.1` when it has none (Linux's route lookup);
 * - `::` is `::1` (or `::ffff:127.0.0.1` on a socket bound to an IPv4-mapped address);
 * - `::ffff:a.b.c.d` is the IPv4 address (decided as IPv4 by the rules already), `::ffff:0.0.0.0` as 0.0.0.0;
 * - IPv4-compatible `::a.b.c.d` (deprecated; a sit tunnel sends it to a.b.c.d over IPv4) is decided as
 *   `a.b.c.d`.
 * `bound` is the socket's local address as a target's addr (`0.0.0.0`, `10.0.0.5`, `::ffff:10.0.0.5`), or
 * null when unknown. The supervisor connects to the address returned, so the decision and the kernel agree
 * even if the socket is bound by a racing thread in between.
 */
export function effectiveTarget(t: ConnectTarget, bound: string | null): ConnectTarget {
  if (t.family === "unix") return t;
  const any4 = (a: string) => a === "0.0.0.0";
  if (t.family === "inet") {
    if (!any4(t.addr)) return t;
    const own = bound !== null && !any4(bound) && !bound.includes(":") ? bound : "127.0.0.1";
    return { ...t, addr: own };
  }
  const a = t.addr.toLowerCase();
  if (a === "::") {
    return { ...t, addr: bound !== null && bound.startsWith("::ffff:") ? "::ffff:127.0.0.1" : "::1" };
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (mapped) {
    const v4 = effectiveTarget(
      { ...t, family: "inet", addr: mapped[1] },
      bound?.replace(/^::ffff:/, "") ?? null,
    );
    return { ...t, family: "inet6", addr: "::ffff:" + (v4 as { addr: string }).addr };
  }
  // IPv4-compatible: the first 96 bits zero (canonical text "::x:y" or "::y"), other than :: and ::1.
  const c = canonicalAddr("inet6", a);
  const compat = c === null ? null : /^::(?:([0-9a-f]{1,4}):)?([0-9a-f]{1,4})$/.exec(c);
  if (compat) {
    const v = parseInt(compat[1] ?? "0", 16) * 65536 + parseInt(compat[2], 16);
    if (v > 1) {
      const addr = `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
      return effectiveTarget({ ...t, family: "inet", addr }, null);
    }
  }
  return t;
}

/** A loopback destination or listener: 127.0.0.0/8, ::1, ::ffff:127.0.0.0/104. */
export function isLoopback(t: ConnectTarget): boolean {
  if (t.family === "unix") return false;
  const a = t.addr.toLowerCase();
  return a === "::1" || a.startsWith("127.") || a.startsWith("::ffff:127.");
}
