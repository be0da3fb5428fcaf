/**
 * What the supervisor says about its decisions: the `--log` lines (one JSON line per decision, naming the
 * process, its chain and, in `hallpass agent`, the container and the question an answer came from), and the
 * denial lines and exit summary entries it posts to the main thread ("decided"). Answering the kernel is
 * lib/supervisor/respond.ts's; this only reports.
 *
 * @module
 */
import { formatSource, type Policy } from "../policy/policy.ts";
import { formatRule } from "../policy/rules_file.ts";
import { suggestScopes } from "../policy/suggest_scope.ts";
import type { Op } from "../types.ts";
import type { ProcInfo } from "./proc_info.ts";
import type { SessionConfig, ToMain } from "./session_config.ts";

/** The process a log line names (read before answering: once answered, it may exit at once). */
export interface Who {
  pid: number;
  exe: string;
  name: string;
  chain: string[];
}

export class Report {
  readonly #cfg: SessionConfig;
  readonly #proc: ProcInfo;
  readonly #post: (m: ToMain) => void;
  readonly #policy: Policy;
  readonly #log: Deno.FsFile | null;
  readonly #enc = new TextEncoder();
  /** The question whose answer is being applied (its log lines say so), or undefined. */
  answering: number | undefined;

  constructor(cfg: SessionConfig, proc: ProcInfo, post: (m: ToMain) => void, policy: Policy) {
    this.#cfg = cfg;
    this.#proc = proc;
    this.#post = post;
    this.#policy = policy;
    this.#log = cfg.logPath ? Deno.openSync(cfg.logPath, { append: true, create: true, mode: 0o600 }) : null;
  }

  /** Whether every decision is logged (--log). */
  get logging(): boolean {
    return this.#log !== null;
  }

  /** The process of thread `tid`, for a log line; null without --log (nothing to read). */
  who(tid: number): Who | null {
    if (!this.#log) return null;
    const pid = this.#proc.tgid(tid);
    return { pid, exe: this.#proc.exe(pid), name: this.#proc.comm(pid), chain: this.#proc.chain(pid) };
  }

  /** One --log line. Every line names the process and its chain of command lines (callers that answer first pass them). */
  line(rec: Record<string, unknown>): void {
    if (!this.#log) return;
    if (typeof rec.pid === "number" && rec.chain === undefined) {
      const pid = this.#proc.tgid(rec.pid);
      rec = {
        ...rec,
        pid,
        exe: rec.exe ?? this.#proc.exe(pid),
        name: rec.name ?? this.#proc.comm(pid),
        chain: this.#proc.chain(pid),
      };
    }
    if (this.#cfg.container) rec = { container: this.#cfg.container.identity, ...rec };
    if (this.answering !== undefined) rec = { question: this.answering, ...rec };
    const line = JSON.stringify({ time: new Date().toISOString(), event: "decision", ...rec }) + "\n";
    try {
      this.#log.writeSync(this.#enc.encode(line));
    } catch {
      // A full disk must not stop mediation.
    }
  }

  /**
   * Who is denied, read before the call is answered (once answered, the process may exit at once and its
   * name be gone: "?").
   */
  denying(tid: number): Who & { logChain: string[] | undefined } {
    const pid = this.#proc.tgid(tid);
    return {
      pid,
      name: this.#proc.comm(pid),
      exe: this.#proc.exe(pid),
      chain: [],
      logChain: this.#log ? this.#proc.chain(pid) : undefined,
    };
  }

  /**
   * A denial: the line and summary entry (with the rule that denied it, or a scope to allow), and the log
   * line. `suggestEnd` picks, for a write, the end a suggestion is about when none is given.
   */
  denied(
    who: Who & { logChain: string[] | undefined },
    syscall: string,
    target: string,
    op: Op,
    by: string,
    suggestion: string | undefined,
    suggestEnd: (ends: string[]) => string,
  ): void {
    const { pid, name, exe } = who;
    // A rename or link: the end that was not allowed, the destination first (what a person means to allow).
    const ends = target.startsWith("/") ? target.split(" → ").reverse() : [];
    // Denied by a rule (a saved `never`, a rules file): an --allow-path would not override it; the summary
    // names that rule instead.
    let rule: string | undefined;
    if (by === "rule" && (op === "write" || op === "exec")) {
      for (const t of ends) {
        const d = this.#policy.decide(op, t, Date.now());
        if (d.effect === "deny" && d.rule) {
          rule = `${formatRule(d.rule)}   (${formatSource(d.rule.source)})`;
          break;
        }
      }
    }
    let suggest = suggestion;
    if (suggestion === undefined && op === "write" && ends.length) {
      const s = suggestScopes(suggestEnd(ends), { home: this.#cfg.home, project: this.#cfg.project });
      suggest = s.scopes[s.suggested];
    }
    this.#post({ t: "decided", effect: "deny", op, target, pid, name, syscall, by, suggest, rule });
    this.line({ pid, exe, name, op, syscall, target, decision: "deny", by, chain: who.logChain });
  }

  /** A call failed closed because deciding it threw (the log line says why). */
  failed(tid: number, e: unknown): void {
    this.line({ pid: tid, op: "write", target: "?", decision: "deny", by: "error", error: String(e) });
  }

  /** A refusal lib/supervisor/sys_calls.ts made (another process, a keyring, an ioctl). */
  sysDenied(tid: number, syscall: string, op: string, target: string, suggest: string): void {
    const pid = this.#proc.tgid(tid), name = this.#proc.comm(pid);
    this.#post({ t: "decided", effect: "deny", op, target, pid, name, syscall, by: "rule", suggest });
    this.line({ pid, name, op, syscall, target, decision: "deny", by: "rule" });
  }

  close(): void {
    this.#log?.close();
  }
}
