/**
 * The questions the Worker puts to the main thread, and the calls waiting for their answers: one place that
 * builds a Question (who asks, and in `hallpass agent` the container: every kind of question carries it, so
 * the answer service shows the pod and counts its flood limit per pod), one table of pending calls, and one
 * `release()` that frees what a pending call holds (our copy of its fd, a socket to bind, a network
 * operation) whichever way it ends: answered, denied, its caller gone, or the session over.
 *
 * @module
 */
import type { Notification, NotifyFd } from "../../ffi/notify.ts";
import { fs } from "../../ffi/fsops.ts";
import type { Op, Question } from "../types.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import type { NetMediator, NetOp } from "./connect.ts";
import type { ProcInfo } from "./proc_info.ts";
import type { Respond } from "./respond.ts";
import type { SessionConfig, ToMain } from "./session_config.ts";
import type { End } from "./decode.ts";
import { type FsView, hostView } from "./view.ts";
import { suggestExecScopes, suggestScopes } from "../policy/suggest_scope.ts";
import { siblingScope } from "../policy/atomic_save.ts";
import { type ConnectTarget, formatTarget, suggestDestScopes } from "../policy/connect_dest.ts";

export type { End };

/** A call that waits: for an answer, or (an open of a FIFO) for a reader. */
export interface Pending {
  n: Notification;
  op: Op;
  call: WriteCall | null;
  targets: End[];
  /** For fd forms: our copy of the thread's fd. */
  fdCopy: number;
  /** For exec: continue on allow. */
  exec?: boolean;
  /** For exec: execveat rather than execve. */
  execAt?: boolean;
  /** For bind of a unix socket path: the program's socket fd. */
  bindFd?: number;
  /** For connect: the operation, copied into our memory, its destination, and as a rule would name it. */
  net?: NetOp;
  dest?: ConnectTarget;
  suggest?: string;
  /** The end the question was about (its scopes are that end's). */
  asked?: string;
  /** What the emulation reads from the caller's memory (lib/supervisor/emulate.ts). */
  mem?: {
    text: Uint8Array | null;
    times: Uint8Array<ArrayBuffer> | null | number;
    xattr?: { name: Uint8Array<ArrayBuffer>; value: Uint8Array<ArrayBuffer>; size: number } | number;
  };
  /** For an open waiting for a FIFO's reader: writes its log line once performed. */
  log?: (rec: Record<string, unknown>) => void;
  /** How many of its ends still asked when the question was put (a rename or link: 1 or 2). */
  asking?: number;
  /** Why this asks although a rule allows it (a protected path, another terminal): shown in the bar. */
  warning?: string;
  /** The scopes `[t]`/`[a]` may cover, when narrower than the usual suggestions (a protected path). */
  scopes?: string[];
  qid: number;
  /** Set by release(): what it held is freed. */
  released?: boolean;
}

/** The system call a pending call made (for its denial line). */
export function syscallOf(p: Pending): string {
  if (p.call) return p.call.name;
  if (p.net) return p.net.kind;
  if (p.bindFd !== undefined) return "bind";
  return p.execAt ? "execveat" : "execve";
}

/** What a question says beyond who asks (Question without the asker's fields). */
export type Asked = Omit<Question, "id" | "pid" | "name" | "exe" | "chain" | "container">;

export class Questions {
  readonly #cfg: SessionConfig;
  readonly #proc: ProcInfo;
  readonly #post: (m: ToMain) => void;
  readonly #respond: Respond;
  readonly #net: NetMediator;
  readonly #pending = new Map<number, Pending>();
  readonly #nfd: NotifyFd | null;
  readonly #writable: (path: string) => boolean;
  readonly #view: FsView;
  #nextQid = 1;

  /**
   * `nfd` reads an exec's arguments; `writable` says whether the sandbox can write a path without asking (an
   * exec question warns about such a program).
   */
  constructor(
    cfg: SessionConfig,
    proc: ProcInfo,
    post: (m: ToMain) => void,
    respond: Respond,
    net: NetMediator,
    nfd: NotifyFd | null = null,
    writable: (path: string) => boolean = () => false,
    view: FsView = hostView,
  ) {
    this.#view = view;
    this.#cfg = cfg;
    this.#proc = proc;
    this.#post = post;
    this.#respond = respond;
    this.#net = net;
    this.#nfd = nfd;
    this.#writable = writable;
  }

  /**
   * Asks about `target` (the end the question is about) for pending call `p`: the scopes offered (an atomic
   * save's siblings first, a destination's for a connect), both ends of a rename or link, an exec's arguments
   * and a warning when the sandbox could write the program itself.
   */
  ask(p: Pending, target: string, syscall: string): void {
    if (p.op === "connect") {
      const t = p.dest!;
      const scopes = suggestDestScopes(t);
      const q: Asked = {
        op: "connect",
        target: p.targets[0].path,
        syscall,
        suggestedScope: scopes[0] ?? formatTarget(t),
        scopes: scopes.length ? scopes : [formatTarget(t)],
      };
      this.put(p, q, `connect\0${formatTarget(t)}`);
      return;
    }
    const cfg = this.#cfg;
    const choice = p.op === "exec"
      ? suggestExecScopes(target)
      : suggestScopes(target, { home: cfg.home, project: cfg.project });
    if (p.op === "write") {
      // An atomic save (lib/policy/atomic_save.ts): "NAME and its temporary siblings" offered first and suggested.
      const from = p.targets.length === 2 && p.call?.kind === "rename" && target === p.targets[1].path
        ? p.targets[0].path
        : null;
      const sib = p.targets.length === 1 || from !== null
        ? siblingScope(target, from, (x) => this.#view.exists(x), (d) => {
          // In a container the directory is the container's: not listed here, so not offered.
          if (cfg.container) return null;
          try {
            return [...Deno.readDirSync(d)].map((e) => e.name);
          } catch {
            return null;
          }
        })
        : null;
      if (sib !== null && !choice.scopes.includes(sib)) {
        choice.scopes.splice(1, 0, sib);
        choice.suggested = 1;
      }
    }
    // An operation with two paths (rename, link) shows both ends: an answer grants only what the bar showed.
    const shown = p.op === "write" && p.targets.length > 1
      ? p.targets.map((t) => t.path).join(" → ")
      : target;
    const q: Asked = {
      op: p.op,
      target: shown,
      syscall,
      suggestedScope: p.scopes?.[0] ?? choice.scopes[choice.suggested],
      scopes: p.scopes ?? choice.scopes,
      warning: p.warning,
      paths: shown !== target ? p.targets.map((t) => t.path) : undefined,
    };
    p.asked = target;
    if (p.op === "exec") {
      const argv = this.#nfd ? this.#proc.argvOf(p.n, this.#nfd, p.execAt === true) : null;
      if (argv) q.argv = argv;
      if (this.#writable(target)) {
        q.warning =
          "the sandbox can write this program without asking: allowing it lets the sandbox run anything it writes there";
      }
    }
    // Calls with the same key join one question and get its answer: for exec the bar shows the arguments too,
    // so a run with other arguments asks on its own.
    const argvKey = p.op === "exec" ? `\0${JSON.stringify(q.argv ?? null)}` : "";
    this.put(p, q, `${p.op}\0${shown}${argvKey}`);
  }

  /** A new question id (operations and hallpass-request requests share them). */
  nextQid(): number {
    return this.#nextQid++;
  }

  /**
   * The one place a Question is built: the asker (the thread's process, its names, executable and chain) and,
   * in `hallpass agent`, its container.
   */
  build(qid: number, tid: number, asked: Asked): Question {
    const pid = this.#proc.tgid(tid);
    const { op, target, syscall, ...rest } = asked;
    const q: Question = {
      id: qid,
      op,
      pid,
      name: this.#proc.comm(pid),
      exe: this.#proc.exe(pid),
      target,
      syscall,
      chain: this.#proc.chain(pid),
      ...rest,
    };
    for (const k of Object.keys(q) as (keyof Question)[]) if (q[k] === undefined) delete q[k];
    if (this.#cfg.container) q.container = this.#cfg.container.identity;
    return q;
  }

  /** Puts `p`'s question to the main thread; calls with the same `key` join one question. */
  put(p: Pending, asked: Asked, key: string): Question {
    const qid = this.nextQid();
    p.qid = qid;
    const q = this.build(qid, p.n.tid, asked);
    this.#pending.set(qid, p);
    this.#post({ t: "ask", q, key });
    return q;
  }

  /** The pending call of question `qid`, no longer pending. */
  take(qid: number): Pending | undefined {
    const p = this.#pending.get(qid);
    if (p) this.#pending.delete(qid);
    return p;
  }

  /** Frees what `p` holds (our fd copy, the socket to bind, the network operation); once. */
  release(p: Pending): void {
    if (p.released) return;
    p.released = true;
    fs.close(p.fdCopy);
    if (p.bindFd !== undefined) fs.close(p.bindFd);
    if (p.net) this.#net.release(p.net);
  }

  /** Questions whose caller is gone: released and withdrawn from the prompt. */
  withdrawDead(): void {
    for (const [qid, p] of this.#pending) {
      if (this.#respond.valid(p.n)) continue;
      this.release(p);
      this.#pending.delete(qid);
      this.#post({ t: "withdraw", qid });
    }
  }

  get size(): number {
    return this.#pending.size;
  }

  /** The session ends: every call still asking fails (EACCES) and is released. */
  close(): void {
    for (const p of this.#pending.values()) {
      this.#respond.error(p.n, 13 /* EACCES */);
      this.release(p);
    }
    this.#pending.clear();
  }
}
