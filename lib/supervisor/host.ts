/**
 * The main thread's side of the supervisor: owns the Worker that answers notifications, routes its questions
 * to the ask backend (identical pending questions share one answer), and collects denials for the summary.
 *
 * The Worker is started only when a notification needs it: until then the fast path (ffi/fastpath.ts) answers
 * on the main thread's behalf, on a thread of Deno's pool, what it can decide by itself. Starting a Worker
 * costs ~50 ms (a new isolate and its modules); a command whose every trapped call falls in the floor or runs
 * a system program (a build, `tar x`) never pays for it, nor does one that traps nothing (`hallpass -- true`).
 */
import { pipe, pollReadable, writeAll } from "../../ffi/libc.ts";
import { close } from "../../ffi/libc.ts";
import type { Answer, Question, Rule } from "../types.ts";
import type { AskBackend } from "../ask/backend.ts";
import { ruleFileLine } from "../policy/rules_file.ts";
import { isGlobTarget } from "../policy/path_scope.ts";
import type { SessionConfig, ToMain, ToWorker } from "./session_config.ts";
import type { Summary } from "../cli/summary.ts";
import { groupTableOf } from "../policy/exec_groups.ts";
import { lazyImport } from "../util/lazy_import.ts";

/** How long an answer is given again to the same process asking the same thing (see SupervisorHost.#ask). */
const REUSE_MS = 3000;
/** How long one notification may hold the supervisor before the watchdog fails it (see #startWatchdog). */
const WATCHDOG_MS = Number(Deno.env.get("HALLPASS_WATCHDOG_MS")) || 5000;

export interface HostOptions {
  /** Where `always` and `never` answers are saved (docs/rules.md), or null not to save them. */
  rulesFile: string | null;
  backend: AskBackend;
  summary: Summary;
  /** Prints one line for the person (through the screen gate in pty mode). */
  warn: (line: string) => void;
  /** Print each denial as it happens (docs/ci.md: always under no-ask and ask programs). */
  printDenials: boolean;
  /** Called when the supervisor fails: the sandbox must not go on unsupervised. */
  onFatal: (message: string) => void;
}

export class SupervisorHost {
  readonly #cfg: Omit<SessionConfig, "wakeFd" | "posted">;
  readonly #o: HostOptions;
  #worker: Worker | null = null;
  #wakeR = -1;
  #wakeW = -1;
  readonly #groups = new Map<string, Question[]>();
  readonly #aborts = new Map<number, AbortController>();
  readonly #wakeByte = new Uint8Array(128);
  #closing = false;
  /** Messages the Worker posted (shared counter) and messages received here. */
  readonly #posted = new SharedArrayBuffer(24); // see lib/supervisor/worker.ts (state)
  #watchdog: ReturnType<typeof setInterval> | undefined;
  #received = 0;
  #stopped: (() => void) | null = null;
  /** The Worker said it stopped (or failed): nothing to wait for. */
  #workerDone = false;

  constructor(cfg: Omit<SessionConfig, "wakeFd" | "posted">, o: HostOptions) {
    this.#cfg = cfg;
    this.#o = o;
  }

  #notified = false;
  /**
   * Whether a notification reached this side (it is set before anything answers one): false at exit means the
   * sandbox made no trapped call after the command's own exec (lib/sandbox/wrote_nothing.ts).
   */
  get notified(): boolean {
    return this.#notified;
  }

  /** Serves the listener from the main thread's side, and starts the Worker when a notification needs it. */
  startWhenNeeded(): void {
    pollReadable(this.#cfg.listenerFd).then(async (revents) => {
      if (revents & 1) this.#notified = true;
      // POLLIN: a notification waits. POLLHUP alone: every sandboxed process is gone, nothing to decide.
      if (this.#closing || !(revents & 1)) return;
      let first: Uint8Array<ArrayBuffer> | null | "none" = null;
      try {
        first = await this.#serveHere();
      } catch {
        first = null; // the Worker takes everything (it fails closed on errors of its own)
      }
      if (first !== "none" && !this.#closing) this.#start(first ?? undefined);
    });
  }

  /** The socket of a connect the main thread's fast path started, for the Worker to wait on (-1: none). */
  #firstConnecting = -1;

  /** The main thread's fast path call in progress (stopped through the wake pipe). */
  #here: Promise<number> | null = null;

  /**
   * Lets the fast path answer until a notification needs the mediator, and returns that one; null when the
   * fast path cannot run here (the Worker then takes everything), "none" when nothing is left to decide (the
   * sandbox is gone, or hallpass is stopping).
   */
  async #serveHere(): Promise<Uint8Array<ArrayBuffer> | null | "none"> {
    const cfg = this.#cfg;
    if (!cfg.fastPath || cfg.container || cfg.logPath || Deno.env.get("HALLPASS_FAST_PATH") === "0") {
      return null;
    }
    const [
      { FastPath, SERVE },
      { NotifyFd },
      { Policy },
      { fastRootsOf, performContext },
      { lookupInPath },
    ] = await Promise.all([
      import("../../ffi/fastpath.ts"),
      import("../../ffi/notify.ts"),
      import("../policy/policy.ts"),
      import("./fast_roots.ts"),
      import("../policy/path_lookup.ts"),
    ]);
    // Blocking connects it cannot finish at once are handed to the Worker with the first notification.
    const fast = FastPath.open(cfg.fastPath, true, true);
    if (fast === null) return null;
    try {
      // Only the path rules: the fast path's lists come from them (fastRootsOf), and a connect rule's parse
      // would be paid here while the first trapped call waits.
      const policy = new Policy(cfg.rules.filter((r) => r.op !== "connect"), {
        home: cfg.home,
        cwd: cfg.cwd,
        lookup: (p) => lookupInPath(p, cfg.pathEnv),
        groups: groupTableOf(cfg.groups),
      });
      if (Deno.env.get("HALLPASS_FASTPATH_RECORD")) {
        // The replay check (lib/supervisor/fast_replay.ts, with the decision function it replays against) is
        // loaded only when asked: out of every start-up's modules.
        const { recordContext } = await lazyImport<typeof import("./fast_replay.ts")>(
          new URL("./fast_replay.ts", import.meta.url),
        );
        recordContext(cfg);
      }
      fast.setRoots({
        ...fastRootsOf(policy, cfg.floor, cfg.mediate.exec, performContext(cfg)),
        netDirect: !cfg.mediate.connect,
      });
      if (!fast.active) return null;
      // The answer hands the CPU straight to the waiting thread (the Worker sets the same flag).
      new NotifyFd(cfg.listenerFd).trySyncWakeup();
      if (this.#wakeR < 0) [this.#wakeR, this.#wakeW] = pipe();
      const notif = new Uint8Array(128);
      while (!this.#closing) {
        this.#here = fast.serveAsync(cfg.listenerFd, this.#wakeR, notif, 80);
        const r = await this.#here;
        this.#here = null;
        if (r === SERVE.NOTIFICATION) return notif;
        if (r === SERVE.CONNECTING) {
          this.#firstConnecting = fast.takeConnecting();
          return notif;
        }
        if (r === SERVE.HANGUP || r === SERVE.WAKE) return "none";
        if (r !== SERVE.TIMEOUT) return null; // an error: the Worker takes over
      }
      return "none";
    } finally {
      this.#here = null;
      fast.close();
    }
  }

  /** Stops the main thread's fast path, and waits until its call has returned. */
  async #stopHere(): Promise<void> {
    const here = this.#here;
    if (!here) return;
    try {
      writeAll(this.#wakeW, this.#wakeByte.subarray(0, 1));
    } catch {
      // closed
    }
    await here.catch(() => 0);
  }

  #closePipe(): void {
    if (this.#wakeR < 0) return;
    close(this.#wakeR);
    close(this.#wakeW);
    this.#wakeR = this.#wakeW = -1;
  }

  #start(first?: Uint8Array<ArrayBuffer>): void {
    this.#notified = true;
    if (this.#worker) return;
    if (this.#wakeR < 0) [this.#wakeR, this.#wakeW] = pipe();
    const w = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
    this.#worker = w;
    w.onmessage = (e: MessageEvent<ToMain>) => this.#onMessage(e.data);
    w.onerror = (e) => {
      e.preventDefault();
      this.#o.onFatal(e.message);
    };
    this.#send({
      t: "init",
      config: {
        ...this.#cfg,
        wakeFd: this.#wakeR,
        posted: this.#posted,
        first,
        firstConnecting: this.#firstConnecting,
      },
    });
    this.#startWatchdog();
  }

  /**
   * No single notification may stall the loop: when the Worker has spent WATCHDOG_MS on one (a file system
   * that does not answer, anything the sandbox could make it wait on that the non-blocking opens in
   * lib/supervisor/mediator.ts do not already cover), the call fails (EACCES) from here, and the Worker's
   * thread is signalled so that an interruptible wait it is in returns (EINTR) and the loop goes on. The
   * session goes on; the person is told once.
   */
  #startWatchdog(): void {
    if (this.#watchdog !== undefined) return;
    // Its signal handler lives in the fast path library; a container's config has none (the agent's Worker
    // never runs the fast path), so the agent's sessions look it up here.
    const lib = this.#cfg.fastPath !== undefined && this.#cfg.fastPath !== null
      ? Promise.resolve(this.#cfg.fastPath)
      : this.#cfg.container
      ? import("../sandbox/run.ts").then((r) => r.fastPathLibrary())
      : Promise.resolve(null);
    Promise.all([lib, import("../../ffi/watchdog.ts"), import("../../ffi/notify.ts")]).then(
      ([lib, w, { NotifyFd }]) => {
        if (lib === null || this.#closing || !w.installWatchdogSignal(lib)) return;
        const state = new Int32Array(this.#posted);
        const handling = new BigUint64Array(this.#posted, 16, 1);
        const nfd = new NotifyFd(this.#cfg.listenerFd);
        let seq = -1, since = 0, told = false;
        const timer = setInterval(() => {
          const busy = Atomics.load(state, 1) === 1, now = Date.now(), s = Atomics.load(state, 3);
          if (!busy || s !== seq) {
            seq = s;
            since = now;
            return;
          }
          if (now - since < WATCHDOG_MS) return;
          const id = handling[0];
          if (id !== 0n && nfd.idValid(id)) nfd.fail(id, 13 /* EACCES */);
          const tid = Atomics.load(state, 2);
          if (tid > 0) w.interruptThread(tid);
          if (!told) {
            told = true;
            this.#o.warn(
              `hallpass: a call held the supervisor for ${WATCHDOG_MS / 1000}s: it was failed (EACCES)`,
            );
          }
        }, 500);
        this.#watchdog = timer;
        Deno.unrefTimer(timer);
      },
    ).catch(() => {});
  }

  #send(m: ToWorker): void {
    this.#worker?.postMessage(m);
    try {
      writeAll(this.#wakeW, this.#wakeByte.subarray(0, 1));
    } catch {
      // the Worker is gone
    }
  }

  #onMessage(m: ToMain): void {
    this.#received++;
    switch (m.t) {
      case "ready":
        break;
      case "ask":
        this.#ask(m.q, m.key);
        break;
      case "withdraw":
        this.#aborts.get(m.qid)?.abort();
        break;
      case "decided":
        if (m.effect === "deny") {
          this.#o.summary.denied(m);
          if (this.#o.printDenials) this.#o.warn(this.#o.summary.denialLine(m));
        }
        break;
      case "notice":
        // Like a denial line: not over a program that owns the terminal (the exit summary lists it too).
        if (this.#o.printDenials) this.#o.warn(m.line);
        break;
      case "stopped":
        this.#workerDone = true;
        this.#stopped?.();
        break;
      case "fatal":
        this.#workerDone = true; // its loop is over: it touches no fd any more
        this.#o.onFatal(m.message);
        break;
    }
  }

  /**
   * One question per thing: identical questions pending share one answer (any process); and the same process
   * asking the same thing again right after an answer (`less` retrying its history file, a library retrying
   * an open after a refusal) gets that `deny` again for REUSE_MS instead of a new question. Only a deny: `[o]`
   * means one operation, and a second identical write is a second operation that asks again; the other answers
   * make rules, which decide the next call themselves. Never a hallpass-request.
   */
  #ask(q: Question, key: string): void {
    const now = Date.now();
    const recentKey = `${q.pid}\0${key}`;
    const recent = q.syscall === "request" ? undefined : this.#recent.get(recentKey);
    if (recent && recent.until > now) {
      this.#send({ t: "answer", qid: q.id, answer: recent.a });
      return;
    }
    const group = this.#groups.get(key);
    if (group) {
      group.push(q);
      return;
    }
    const asked = [q];
    this.#groups.set(key, asked);
    const ac = new AbortController();
    this.#aborts.set(q.id, ac);
    askWithTimeout(this.#o.backend, q, ac.signal).then((a) => {
      this.#groups.delete(key);
      this.#aborts.delete(q.id);
      this.#o.summary.answered(q, a);
      if ((a.kind === "always" || a.kind === "never") && q.syscall !== "request") this.#save(q, a);
      if (a.kind === "deny" && q.syscall !== "request" && a.by !== "withdrawn") {
        const until = Date.now() + REUSE_MS;
        if (this.#recent.size > 1000) {
          for (const [k, v] of this.#recent) if (v.until <= Date.now()) this.#recent.delete(k);
        }
        for (const x of asked) this.#recent.set(`${x.pid}\0${key}`, { a, until });
      }
      for (const x of asked) this.#send({ t: "answer", qid: x.id, answer: a });
    });
  }

  /** Answers just given, by pid and question (see #ask). */
  readonly #recent = new Map<string, { a: Answer; until: number }>();

  /** Appends an `always`/`never` answer to the saved rules, so the next run knows it. */
  #save(q: Question, a: Answer): void {
    const file = this.#o.rulesFile;
    if (!file) return;
    const rule: Rule = {
      effect: a.kind === "never" ? "deny" : "allow",
      op: q.op,
      target: a.scope ?? q.suggestedScope,
      source: { kind: "answer", by: a.by },
    };
    // A name holding a `*` would be read back as a glob over its neighbours (`~/.bash*`): not saved (the
    // mediator refuses it as a rule too).
    if (
      q.op !== "connect" && isGlobTarget(rule.target) && [q.target, ...(q.paths ?? [])].some(isGlobTarget)
    ) return;
    try {
      Deno.mkdirSync(file.slice(0, file.lastIndexOf("/")), { recursive: true, mode: 0o700 });
      const when = new Date().toISOString().slice(0, 16).replace("T", " ");
      const line = ruleFileLine(rule, { now: Date.now(), comment: `${a.by}, ${when}, asked by ${q.name}` });
      Deno.writeTextFileSync(file, line, { append: true, create: true, mode: 0o600 });
    } catch (e) {
      this.#o.warn(`hallpass: could not save the rule to ${file}: ${(e as Error).message}`);
    }
  }

  /**
   * The common start of halt() and stop(): no new questions, pending ones withdrawn, the main thread's fast
   * path stopped. The Worker, or null when none runs (the wake pipe is then closed: nothing reads it).
   */
  async #quiesce(): Promise<Worker | null> {
    this.#closing = true;
    if (this.#watchdog !== undefined) clearInterval(this.#watchdog);
    for (const ac of this.#aborts.values()) ac.abort();
    await this.#stopHere();
    if (!this.#worker) this.#closePipe();
    return this.#worker;
  }

  /**
   * Stops mediating while the sandbox goes on (the agent hands the listener to its successor): the Worker leaves
   * its loop between notifications and denies what was waiting for an answer (EACCES); its copy of the
   * listener is then the owner's to close. Resolves with whether it stopped in time.
   */
  async halt(timeoutMs = 5000): Promise<boolean> {
    const w = await this.#quiesce();
    if (!w) return true;
    if (this.#workerDone) {
      this.#worker = null;
      w.terminate();
      this.#closePipe();
      return true;
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = new Promise<boolean>((r) => {
      this.#stopped = () => r(true);
      timer = setTimeout(() => r(false), timeoutMs);
    });
    this.#send({ t: "stop" }); // while #worker is still set: #send posts through it
    this.#worker = null;
    const ok = await done;
    clearTimeout(timer);
    w.terminate();
    // Only once the Worker has said it stopped does it no longer touch the wake pipe: closed earlier, the
    // numbers could be reused (by a runtime's connection) and read by a Worker still finishing.
    if (ok) this.#closePipe();
    return ok;
  }

  /**
   * After the sandbox is gone: receive every message the Worker posted (it counts them), then ask it to stop
   * and wait until it says it has (its RECV sees the listener hang up, so it is not stuck there). Only then is
   * the wake pipe closed: a Worker still in a poll when the numbers were closed read 128 bytes from whatever
   * next took the number — the exit check's read of a repository's config, which then lost its first 128
   * bytes and was moved aside as unsafe. A Worker that does not stop in time is terminated and the pipe left
   * open (two fds until hallpass exits).
   */
  async stop(): Promise<void> {
    const w = await this.#quiesce();
    if (!w) return;
    const state = new Int32Array(this.#posted);
    for (
      let waited = 0;
      (Atomics.load(state, 1) !== 0 || this.#received < Atomics.load(state, 0)) && waited < 2000;
      waited += 2
    ) {
      await new Promise((r) => setTimeout(r, 2));
    }
    let stopped = this.#workerDone;
    if (!stopped) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const done = new Promise<boolean>((r) => {
        this.#stopped = () => r(true);
        timer = setTimeout(() => r(false), 5000);
      });
      this.#send({ t: "stop" });
      stopped = await done;
      clearTimeout(timer);
    }
    w.terminate();
    if (stopped) this.#closePipe();
  }
}

/** Asks the backend; a hallpass-request `--timeout` denies (as a timeout) when nobody answers in time. */
async function askWithTimeout(backend: AskBackend, q: Question, signal: AbortSignal): Promise<Answer> {
  try {
    if (q.requestTimeoutMs === undefined) return await backend.ask(q, signal);
    const ac = new AbortController();
    signal.addEventListener("abort", () => ac.abort());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<Answer>((r) => {
      timer = setTimeout(() => {
        // Settled before the backend is told to withdraw: its "withdrawn" deny must not win the race, or the
        // requester would get EPERM (exit 3) instead of ETIMEDOUT (exit 4).
        r({ kind: "deny", by: "timeout" });
        ac.abort();
      }, q.requestTimeoutMs);
    });
    const a = await Promise.race([backend.ask(q, ac.signal), timeout]);
    clearTimeout(timer);
    return a;
  } catch {
    return { kind: "deny", by: `${backend.name} failed` };
  }
}
