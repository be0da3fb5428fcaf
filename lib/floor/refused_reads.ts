/**
 * Reads the kernel refused, for people: one line on stderr per protected path (at most MAX_LINES a session),
 * and the exit summary with the option that would allow each. Landlock refuses them (lib/floor/read_floor.ts) and
 * tells only the audit subsystem: with Landlock ABI 7 the launcher asks it to log denials after the exec
 * (LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON), and hallpass reads the records through the audit multicast group
 * (ffi/audit.ts). That needs root (CAP_AUDIT_READ) and audit enabled; elsewhere hallpass says once, at exit,
 * that it cannot know (`reportingStatus`).
 *
 * Only this session's domain counts: the AUDIT_LANDLOCK_DOMAIN record names the process that made it (the
 * command's pid); access records of other domains (other sessions, a program's own Landlock sandbox) are
 * ignored. The parsing and the bookkeeping here are pure; `RefusedReadsWatch` is the loop around the socket.
 *
 * @module
 */
import {
  AUDIT_LANDLOCK_ACCESS,
  AUDIT_LANDLOCK_DOMAIN,
  AUDIT_TRUSTED_APP,
  AuditReader,
  AuditStatusQuery,
  sendAuditMessage,
} from "../../ffi/audit.ts";
import { errnoName } from "../../ffi/errors.ts";
import { formatSource } from "../policy/rule_source.ts";
import { quoteTarget } from "../policy/rules_file.ts";
import { tilde } from "./read_floor.ts";
import type { Protection } from "../policy/secrets.ts";
import { visible } from "../ui/sanitize.ts";

/** Live lines a session prints at most; the rest are in the exit summary. */
export const MAX_LINES = 10;
/** Paths the exit summary lists at most. */
const MAX_LISTED = 20;

export type LandlockRecord =
  | { kind: "access"; serial: string; domain: string; blockers: string[]; path?: string }
  | {
    kind: "domain";
    serial: string;
    domain: string;
    status: string;
    pid?: number;
    /** The program of the process that made the domain, when it made it. */
    exe?: string;
    denials?: number;
  };

/**
 * An audit field's value: `"text"`; a string field (`text`) is hex when it has spaces, quotes or control
 * characters.
 */
function fieldValue(raw: string, text: boolean): string {
  if (raw.startsWith('"')) return raw.slice(1, -1);
  if (text && /^([0-9A-F]{2})+$/.test(raw)) {
    const bytes = new Uint8Array(raw.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(raw.slice(2 * i, 2 * i + 2), 16);
    return new TextDecoder().decode(bytes);
  }
  return raw;
}

/** A Landlock audit record (`audit(TIME:SERIAL): domain=… …`), or null for any other. */
export function parseLandlockRecord(type: number, text: string): LandlockRecord | null {
  if (type !== AUDIT_LANDLOCK_ACCESS && type !== AUDIT_LANDLOCK_DOMAIN) return null;
  const head = /^audit\(\d+\.\d+:(\d+)\):\s*/.exec(text);
  if (!head) return null;
  const f = new Map<string, string>();
  for (const m of text.slice(head[0].length).matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
    if (!f.has(m[1])) f.set(m[1], fieldValue(m[2], m[1] === "path" || m[1] === "exe"));
  }
  const domain = f.get("domain");
  if (!domain || !/^[0-9a-f]+$/.test(domain)) return null;
  const serial = head[1];
  if (type === AUDIT_LANDLOCK_ACCESS) {
    return {
      kind: "access",
      serial,
      domain,
      blockers: (f.get("blockers") ?? "").split(","),
      path: f.get("path"),
    };
  }
  const num = (k: string) => (f.has(k) && /^\d+$/.test(f.get(k)!) ? Number(f.get(k)) : undefined);
  return {
    kind: "domain",
    serial,
    domain,
    status: f.get("status") ?? "",
    pid: num("pid"),
    exe: f.get("exe"),
    denials: num("denials"),
  };
}

export interface RefusedInput {
  /** Protections in force, each also under the path it really has (the record names the file resolved). */
  protect: { path: string; protection: Protection }[];
  /** Paths made readable inside a protection (resolved). */
  readable: string[];
  /** Carved directories (no read rule for what is made in them during the run). */
  carved: ReadonlySet<string>;
  home: string;
  /**
   * The launcher's program (resolved): the domain's DOMAIN record names it, as the launcher's child made the
   * domain before it ran the command. A program the command runs under the same pid that makes a Landlock
   * domain of its own is another program, so its domain cannot pass for the session's (and hide its refusals).
   */
  launcher?: string;
}

interface Refusal {
  path: string;
  count: number;
  protection?: Protection;
  /** The `allow read` it lies in (the file there at start was readable; this one was made during the run). */
  readable?: string;
}

const at = (p: string, dir: string) => p === dir || p.startsWith(dir === "/" ? "/" : dir + "/");

/** The bookkeeping: which domain is this session's, which refusals to say, the exit summary. Pure. */
export class RefusedReads {
  #pid = 0;
  #domain: string | null = null;
  #ended = false;
  #pending = new Map<string, LandlockRecord[]>();
  #refused = new Map<string, Refusal>();
  #lines = 0;
  #total = 0;
  /** Access records of this domain (any kind), and its count of denials when it ended. */
  #logged = 0;
  #denials = 0;
  #input: RefusedInput | (() => RefusedInput);
  /** `input`, or what makes it on first use (a session whose audit is off never needs it). */
  constructor(input: RefusedInput | (() => RefusedInput)) {
    this.#input = input;
  }

  get input(): RefusedInput {
    if (typeof this.#input === "function") this.#input = this.#input();
    return this.#input;
  }

  /** The command's pid: its process made the domain (AUDIT_LANDLOCK_DOMAIN `pid=`). */
  set commandPid(pid: number) {
    this.#pid = pid;
  }

  /** This session's domain has been freed (its last record is in). */
  get ended(): boolean {
    return this.#ended;
  }

  /** This session's domain has shown in the records. */
  get known(): boolean {
    return this.#domain !== null;
  }

  /** Records of a domain not yet known to be this session's or not (its DOMAIN record comes after). */
  get waiting(): boolean {
    return this.#pending.size > 0;
  }

  /** Refused reads of protected (or carved) paths seen so far. */
  get count(): number {
    return this.#total;
  }

  /** Takes records; returns the lines to print now. */
  feed(records: readonly LandlockRecord[]): string[] {
    const out: string[] = [];
    for (const r of records) {
      if (r.kind === "domain") {
        const ours = r.pid === this.#pid &&
          (this.input.launcher === undefined || r.exe === this.input.launcher);
        if (r.status === "allocated" && this.#domain === null && this.#pid !== 0 && ours) {
          this.#domain = r.domain;
          const held = this.#pending.get(r.domain) ?? [];
          this.#pending.clear();
          for (const a of held) this.#access(a, out);
        } else if (r.status === "deallocated" && r.domain === this.#domain) {
          this.#ended = true;
          this.#denials = r.denials ?? 0;
        } else if (r.status === "allocated" && r.domain !== this.#domain) {
          this.#pending.delete(r.domain); // another session's or a program's own sandbox
        }
        continue;
      }
      if (this.#domain === null) {
        const held = this.#pending.get(r.domain) ?? [];
        if (held.length < 64 && (this.#pending.has(r.domain) || this.#pending.size < 64)) {
          held.push(r);
          this.#pending.set(r.domain, held);
        }
      } else if (r.domain === this.#domain) this.#access(r, out);
    }
    return out;
  }

  /**
   * Denials of this session the kernel counted but whose records did not come (audit's backlog limit drops
   * records in a burst): known once the domain has ended.
   */
  get dropped(): number {
    return Math.max(0, this.#denials - this.#logged);
  }

  #access(r: LandlockRecord, out: string[]): void {
    if (r.kind === "access") this.#logged++;
    if (r.kind !== "access" || !r.blockers.includes("fs.read_file") || !r.path?.startsWith("/")) return;
    const path = r.path;
    let best: { path: string; protection: Protection } | undefined;
    for (const p of this.input.protect) {
      if (at(path, p.path) && (!best || p.path.length > best.path.length)) best = p;
    }
    // Inside an `allow read` in a protection, a refusal means the file was made there during the run (the
    // grant holds the one there at start): the protection refused it.
    const readable = this.input.readable.find((x) => at(path, x) && (!best || x.length > best.path.length));
    const protection = best?.protection;
    if (!protection && !this.#carvedAbove(path)) return; // not hallpass's read floor: not ours to explain
    this.#total++;
    const seen = this.#refused.get(path);
    if (seen) {
      seen.count++;
      return;
    }
    if (this.#refused.size >= 1000) return;
    this.#refused.set(path, { path, count: 1, protection, readable });
    if (this.#lines < MAX_LINES) {
      out.push(
        `hallpass: refused read ${visible(tilde(path, this.input.home))}: ${
          this.#why(path, protection, readable)
        }`,
      );
    } else if (this.#lines === MAX_LINES) {
      out.push("hallpass: more reads were refused: listed at exit");
    }
    this.#lines++;
  }

  /** The deepest carved directory above `path`: what is made in it during the run has no read rule. */
  #carvedAbove(path: string): string | undefined {
    for (let d = path; d !== "/";) {
      d = d.slice(0, d.lastIndexOf("/")) || "/";
      if (this.input.carved.has(d)) return d;
    }
    return undefined;
  }

  #why(path: string, p: Protection | undefined, readable?: string): string {
    const home = this.input.home;
    if (p) {
      const rule = `protect ${visible(tilde(p.path, home))} (${visible(formatSource(p.source))})`;
      return readable === undefined
        ? rule
        : `${rule}; allow read ${
          visible(tilde(readable, home))
        } holds the file that was there at start, not one made during the run`;
    }
    const dir = this.#carvedAbove(path) ?? "/";
    return `new in ${
      visible(tilde(dir, home))
    } (made or linked there during the run), a directory on the way to a protected location: readable next session`;
  }

  /** The exit summary's entries: each refused path with the option that would allow it. */
  summaryLines(): string[] {
    if (this.#refused.size === 0) return [];
    const home = this.input.home;
    const all = [...this.#refused.values()];
    const out = [
      `hallpass: the kernel refused reads of ${all.length} protected file(s); to allow one next time:`,
    ];
    for (const r of all.slice(0, MAX_LISTED)) {
      const t = tilde(r.path, home);
      const times = r.count > 1 ? ` (${r.count}×)` : "";
      if (r.protection) {
        out.push(`  read ${visible(t)}${times}, refused by ${this.#why(r.path, r.protection, r.readable)}`);
        out.push(
          `      --allow-read ${visible(quoteTarget(t))}   or rule: allow read ${visible(quoteTarget(t))}`,
        );
      } else {
        out.push(`  read ${visible(t)}${times}`);
        out.push(`      ${this.#why(r.path, undefined)}`);
      }
    }
    if (all.length > MAX_LISTED) out.push(`  … and ${all.length - MAX_LISTED} more`);
    return out;
  }
}

/**
 * Whether this hallpass can be told of refused reads, and why not (for the exit line and `hallpass doctor`).
 * `audit`: the question whether audit is enabled, asked at start and answered later (ffi/audit.ts).
 */
export type ReportingStatus =
  | { ok: true; reader: AuditReader; audit: AuditStatusQuery }
  | { ok: false; why: string };

const UNPRIVILEGED = "the kernel reports them to audit, which an unprivileged hallpass cannot read";
/** CAP_AUDIT_READ (bit 37) in this process's effective set: checked before any socket (or FFI library). */
function mayReadAudit(status?: string): boolean {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status ?? Deno.readTextFileSync("/proc/self/status"));
    return !m || ((BigInt(`0x${m[1]}`) >> 37n) & 1n) === 1n;
  } catch {
    return true; // no /proc: let the socket say
  }
}
const AUDIT_OFF = "audit is off (as root, `auditctl -e 1` turns it on)";
const statusWhy = (e: number) => `the audit status cannot be read (${errnoName(-e)})`;

/**
 * Joins the audit group when refused reads can be reported here, and asks whether audit is on (without
 * waiting for the answer); says why not otherwise. `status`: /proc/self/status when the caller read it already.
 */
export function reportingStatus(abi: number, status?: string): ReportingStatus {
  if (abi < 7) {
    return { ok: false, why: `Landlock ABI 7 (Linux 6.15) logs denials; this kernel has ABI ${abi}` };
  }
  if (!mayReadAudit(status)) return { ok: false, why: UNPRIVILEGED };
  const reader = AuditReader.open();
  if (typeof reader === "number") {
    if (reader === -1) return { ok: false, why: UNPRIVILEGED };
    if (reader === -93 || reader === -97) return { ok: false, why: "the kernel has no audit (CONFIG_AUDIT)" };
    return { ok: false, why: `the audit socket failed (${errnoName(-reader)})` };
  }
  const audit = AuditStatusQuery.send();
  if (typeof audit === "number") {
    reader.close();
    return { ok: false, why: statusWhy(audit) };
  }
  return { ok: true, reader, audit };
}

/** `reportingStatus`, waiting for the answer (`hallpass doctor`). */
export function reportingStatusNow(abi: number): { ok: true } | { ok: false; why: string } {
  const rs = reportingStatus(abi);
  if (!rs.ok) return rs;
  rs.reader.close();
  const on = rs.audit.resultSync(2000);
  if (on === true) return { ok: true };
  return { ok: false, why: on === false ? AUDIT_OFF : statusWhy(on) };
}

/**
 * The loop around the audit socket for one session: feeds records to `RefusedReads` and prints its lines with
 * `say` (null: only the exit summary). At exit it sends a marker message to audit and waits for it to come
 * back: audit queues records in order, so every refusal of the (now ended) command is in by then.
 */
export class RefusedReadsWatch {
  readonly refused: RefusedReads;
  #stopped = false;
  #marker: string | null = null;
  #markerSeen = false;
  #on: Promise<boolean | number> | null = null;
  #say: ((line: string) => void) | null = null;
  #loop: Promise<void> = Promise.resolve();
  #done = false;
  constructor(
    readonly reader: AuditReader,
    readonly audit: AuditStatusQuery,
    input: RefusedInput | (() => RefusedInput),
  ) {
    this.refused = new RefusedReads(input);
  }

  start(commandPid: number, say: ((line: string) => void) | null): void {
    this.refused.commandPid = commandPid;
    this.#on = this.audit.result(2000);
    this.#on.then((on) => {
      if (on !== true) this.#stopped = true; // audit is off: nothing will come
    });
    this.#say = say;
    this.#loop = (async () => {
      while (!this.#stopped) {
        this.#take(await this.reader.next(100));
      }
    })();
  }

  /** The socket is closed once the loop's poll in progress returns (not waited for). */
  #closeAfterLoop(): void {
    this.#done = true;
    this.#loop.then(() => this.reader.close());
  }

  #take(records: { type: number; text: string }[]): void {
    if (this.#done) return; // after the exit summary: too late to say
    const parsed: LandlockRecord[] = [];
    for (const r of records) {
      if (r.type === AUDIT_TRUSTED_APP && this.#marker !== null && r.text.includes(this.#marker)) {
        this.#markerSeen = true;
      }
      const p = parseLandlockRecord(r.type, r.text);
      if (p) parsed.push(p);
    }
    const lines = this.refused.feed(parsed);
    if (this.#say) lines.forEach(this.#say);
  }

  /**
   * Stops after the session's last records (the command has exited): the exit summary's lines, and why
   * refusals could not be reported (audit turned out to be off), or null. `endDomain`, called only when audit
   * is on, closes what still holds the domain's credentials (the seccomp listener).
   */
  async finish(endDomain: () => void = () => {}): Promise<{ lines: string[]; unreported: string | null }> {
    const on = await (this.#on ?? this.audit.result(2000));
    // The loop's last poll (≤ 100 ms) is not waited for: what is left is read here, without waiting.
    this.#stopped = true;
    if (on !== true) {
      this.#closeAfterLoop();
      return { lines: [], unreported: on === false ? AUDIT_OFF : statusWhy(on) };
    }
    endDomain(); // the caller lets go of what still holds the domain (its last record follows)
    this.#marker = `hallpass: end of session ${crypto.randomUUID()}`;
    const sent = sendAuditMessage(this.#marker) === 0;
    const start = Date.now();
    const wait = (ms: number) => {
      this.#take(this.reader.drain());
      return new Promise((r) => setTimeout(r, ms));
    };
    // Every record queued before the marker has come once it has (≤ 2 s; without a marker, 300 ms).
    while (!this.#markerSeen && Date.now() - start < (sent ? 2000 : 300)) await wait(5);
    // The domain's "deallocated" record (its count of denials) follows its last process shortly.
    while (this.refused.known && !this.refused.ended && Date.now() - start < 1000) await wait(5);
    this.#take(this.reader.drain());
    this.#closeAfterLoop();
    const out = this.refused.summaryLines();
    const dropped = this.refused.dropped;
    if (dropped) {
      out.push(
        `hallpass: ${dropped} more refusal(s) in this session were not reported: the kernel dropped their audit records (a burst past audit's backlog limit; \`auditctl -b 8192\` raises it)`,
      );
    } else if (
      this.reader.lost || (sent && !this.#markerSeen) || (this.refused.known && !this.refused.ended)
    ) {
      out.push("hallpass: some refusals in this session may be missing: audit records were lost or late");
    }
    return { lines: out, unreported: null };
  }
}

/** The bookkeeping's input for a session: each protection also where it really is. */
export function refusedInput(
  reads: { protect: Protection[]; readable: Protection[] },
  carved: Iterable<string>,
  resolve: (p: string) => string,
  home: string,
  launcher?: string,
): RefusedInput {
  const protect: RefusedInput["protect"] = [];
  for (const p of reads.protect) {
    protect.push({ path: p.path, protection: p });
    const real = resolve(p.path);
    if (real !== p.path) protect.push({ path: real, protection: p });
  }
  const readable = reads.readable.flatMap((r) => [r.path, resolve(r.path)]);
  return { protect, readable, carved: new Set(carved), home, launcher };
}
