/**
 * An allowed call performed here and answered: a write by lib/supervisor/emulate.ts on our own copy of what was
 * decided, a bind, a connect or send (lib/supervisor/connect.ts), or an exec continued after an answer; and
 * the opens that wait, as the caller would, for a FIFO's reader (retried at every sweep, the loop goes on).
 *
 * @module
 */
import { carvedCreateNotice } from "../floor/read_floor.ts";
import type { NetMediator } from "./connect.ts";
import type { Context } from "./context.ts";
import type { Emulate } from "./emulate.ts";
import type { Pending, Questions } from "./questions.ts";
import type { Report } from "./report.ts";
import type { Respond } from "./respond.ts";
import type { SessionConfig, ToMain } from "./session_config.ts";
import { Errno } from "../../ffi/errors.ts";

const { EACCES } = Errno;

export interface PerformDeps {
  cfg: SessionConfig;
  respond: Respond;
  emulate: Emulate;
  report: Report;
  questions: Questions;
  context: Context;
  net: NetMediator;
  post: (m: ToMain) => void;
}

export class Perform {
  readonly #d: PerformDeps;
  /** Performed opens waiting for a FIFO's reader. */
  readonly #waiting = new Set<Pending>();
  /** Paths already named by a carved-directory notice (lib/floor/read_floor.ts carvedCreateNotice). */
  readonly #noticed = new Set<string>();

  constructor(d: PerformDeps) {
    this.#d = d;
  }

  /** Allowed and performed here (lib/supervisor/emulate.ts, connect.ts), or an exec continued after an answer. */
  perform(p: Pending, by: string): void {
    const { n, call } = p;
    const who = this.#d.report.who(n.tid); // before answering: once answered, the process may exit at once
    const log = (rec: Record<string, unknown>) =>
      who && this.#d.report.line({ ...who, ...rec, decision: "allow", by });
    const target = p.targets.map((t) => t.path).join(" → ");
    if (p.bindFd !== undefined) {
      const r = this.#d.emulate.asCaller(n.tid, () => this.#d.emulate.bind(p));
      this.#d.respond.performed(n, r >= 0 ? 0 : r);
      log({ op: "write", syscall: "bind", target, emulated: true, result: r });
      return;
    }
    if (p.net) {
      const net = p.net;
      const r = this.#d.emulate.asCaller(n.tid, () => this.#d.net.perform(n, net));
      log({ op: "connect", syscall: p.net.kind, target, result: r });
      return;
    }
    if (p.exec) {
      this.#d.respond.continue(n);
      log({ op: "exec", target });
      return;
    }
    if (!this.#d.respond.valid(n)) return this.#d.questions.release(p);
    if (call) this.#d.emulate.mem(p);
    const r = this.#d.emulate.asCaller(n.tid, () => this.#d.emulate.call(p));
    if (r.wait) {
      // A FIFO without a reader (the kernel would block the caller until one comes): the call waits, the loop
      // does not; tried again at every sweep (retryWaiting) while the caller lives.
      this.#waiting.add(p);
      p.log = log;
      return;
    }
    this.#d.questions.release(p);
    if (p.fdCopy < 0) this.#d.context.forgetCarved(p.targets);
    if (r.sent) this.#d.respond.performedSent(); // ADDFD with SEND completed the call
    else this.#d.respond.performed(n, r.value);
    log({ op: "write", syscall: call!.name, target, emulated: true, result: r.value });
    if ((r.sent || r.value >= 0) && this.#d.cfg.readCarved) {
      const paths = p.targets.map((t) => t.path);
      const line = carvedCreateNotice(this.#d.cfg.readCarved, call!.kind, paths, this.#noticed);
      if (line) this.#d.post({ t: "notice", line });
    }
  }

  /** Tries the waiting opens again; forgets those whose caller is gone. */
  retryWaiting(): void {
    for (const p of this.#waiting) {
      if (!this.#d.respond.valid(p.n)) {
        this.#waiting.delete(p);
        continue;
      }
      let r: { value: number; sent: boolean; wait?: boolean };
      try {
        r = this.#d.emulate.asCaller(p.n.tid, () => this.#d.emulate.call(p));
      } catch {
        r = { value: -EACCES, sent: false }; // fail closed
      }
      if (r.wait) continue;
      this.#waiting.delete(p);
      if (r.sent) this.#d.respond.performedSent();
      else this.#d.respond.performed(p.n, r.value);
      p.log?.({
        op: "write",
        syscall: p.call!.name,
        target: p.targets[0].path,
        emulated: true,
        result: r.value,
      });
    }
  }

  /** Opens waiting for a FIFO's reader. */
  get waiting(): number {
    return this.#waiting.size;
  }

  /** The session ends: the waiting opens fail. */
  close(): void {
    for (const p of this.#waiting) this.#d.respond.error(p.n, EACCES);
    this.#waiting.clear();
  }
}
