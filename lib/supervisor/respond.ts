/**
 * The answers to the kernel: the only code that answers a notification on the notify fd (CONTINUE, fail,
 * succeed, ADDFD), and where the statistics are counted, once per answer given. Every other supervisor module
 * (lib/supervisor/mediator.ts, sys_calls.ts, connect.ts, other_terminals.ts, requests.ts) answers through it.
 *
 * Counted: `continued` (CONTINUE), `emulated` (a call the supervisor performed, whatever its result),
 * `denied` (refused by a decision). An error the kernel would have given (ENOENT of what is not there, a
 * thread whose memory cannot be read) is answered but counted as none of these, as before.
 *
 * @module
 */
import type { Notification, NotifyFd } from "../../ffi/notify.ts";
import { Errno } from "../../ffi/errors.ts";

export interface Stats {
  notifications: number;
  continued: number;
  emulated: number;
  denied: number;
}

/** What the fast path (ffi/fastpath.ts) counted: added at the end of a session. */
export interface FastStats {
  continued: number;
  emulated: number;
  refused: number;
}

const { EACCES } = Errno;

export class Respond {
  readonly stats: Stats = { notifications: 0, continued: 0, emulated: 0, denied: 0 };
  readonly #nfd: NotifyFd;

  constructor(nfd: NotifyFd) {
    this.#nfd = nfd;
  }

  /** Whether the notification is still pending (its thread did not die or get interrupted). */
  valid(n: Notification): boolean {
    return this.#nfd.idValid(n.id);
  }

  /**
   * Lets the call run in the kernel. `check`: only while the notification is still valid (else nothing is
   * answered or counted); without it, answering a notification whose thread is gone simply fails in the
   * kernel (the hot path saves the ID_VALID call).
   */
  continue(n: Notification, check = false): void {
    if (check && !this.#nfd.idValid(n.id)) return;
    this.#nfd.continue(n.id);
    this.stats.continued++;
  }

  /** A call the supervisor performed: its result `r` (≥ 0: the return value, < 0: -errno). */
  performed(n: Notification, r: number, check = false): void {
    this.stats.emulated++;
    if (check && !this.#nfd.idValid(n.id)) return;
    if (r >= 0) this.#nfd.succeed(n.id, r);
    else this.#nfd.fail(n.id, -r);
  }

  /** The result of a call already counted where it was performed (a connect the fast path started). */
  result(n: Notification, r: number): void {
    if (!this.#nfd.idValid(n.id)) return;
    if (r >= 0) this.#nfd.succeed(n.id, r);
    else this.#nfd.fail(n.id, -r);
  }

  /** A performed call that ADDFD with SEND already answered (or whose answer cannot be given): counted only. */
  performedSent(): void {
    this.stats.emulated++;
  }

  /**
   * Installs our `fd` in the caller and completes its call with the new number (SECCOMP_ADDFD_FLAG_SEND).
   * Returns the new fd or -errno; counted by the caller with performed()/performedSent().
   */
  addFd(n: Notification, fd: number, cloexec: boolean): number {
    return this.#nfd.addFdAndReturn(n.id, fd, cloexec);
  }

  /** Refused by a decision: counted as denied. */
  deny(n: Notification, errno: number = EACCES): void {
    this.#nfd.fail(n.id, errno);
    this.stats.denied++;
  }

  /** Refused by a decision, only while the notification is still valid (false: the caller is gone). */
  denyIfValid(n: Notification, errno: number = EACCES): boolean {
    if (!this.#nfd.idValid(n.id)) return false;
    this.deny(n, errno);
    return true;
  }

  /** The error the kernel itself would give (not a decision: not counted), while the call is pending. */
  error(n: Notification, errno: number): void {
    if (this.#nfd.idValid(n.id)) this.#nfd.fail(n.id, errno);
  }

  /** The fast path's own counters, at the end of the session. */
  addFast(f: FastStats): void {
    this.stats.notifications += f.continued + f.emulated + f.refused;
    this.stats.continued += f.continued;
    this.stats.emulated += f.emulated;
  }
}
