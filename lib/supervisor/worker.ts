/**
 * The supervisor Worker: a synchronous RECV → decide → SEND loop on its own thread (docs/development.md).
 * It never waits for a person: questions go to the main thread, whose answers come back as messages. While a
 * question (or a blocking connect) is pending, the loop polls the listener together with a wake-up pipe the
 * main thread writes to after posting an answer. With nothing pending no message can concern it, so it waits
 * in RECV itself (one system call less per notification); at the end the main thread stops it without its
 * help, having counted every message it posted (`posted`).
 */
/// <reference lib="deno.worker" />
import { libcMore, pollAsync, Poller } from "../../ffi/libc.ts";
import { type Notification, NotifyFd } from "../../ffi/notify.ts";
import { Mediator } from "./mediator.ts";
import { FastPath, SERVE } from "../../ffi/fastpath.ts";
import { ContainerView, SessionView } from "./view.ts";
import { Resolver } from "./resolve.ts";
import { gettid } from "../../ffi/watchdog.ts";
import type { SessionConfig, ToMain, ToWorker } from "./session_config.ts";

/**
 * This Worker's own state, one object made at load and passed along: the messages from the main thread, the
 * counters shared with it, and the file system its sandbox sees.
 */
class WorkerThread {
  readonly inbox: ToWorker[] = [];
  #wake: (() => void) | null = null;
  /** Messages received, and wake-up bytes read: the main thread writes one byte after each message. */
  received = 0;
  announced = 0;
  /**
   * Shared with the main thread: [0] messages posted, [1] 1 while a notification is being handled, [2] this
   * thread's id, [3] notifications handled; bytes 16..24 the id of the one being handled (for the watchdog in
   * lib/supervisor/host.ts).
   */
  state: Int32Array | null = null;
  handlingId: BigUint64Array | null = null;
  /**
   * The file system this Worker's sandbox sees (lib/supervisor/view.ts): ours, or a container's root, opened
   * at start or (`rootPending`) by the first notification. Closed at the end.
   */
  readonly view = new SessionView();
  root: ContainerView | null = null;
  rootPending = false;

  receive(m: ToWorker): void {
    this.inbox.push(m);
    this.received++;
    this.#wake?.();
  }

  nextMessage(): Promise<void> {
    if (this.inbox.length) return Promise.resolve();
    return new Promise((r) => (this.#wake = r));
  }

  readonly post = (m: ToMain): void => {
    if (this.state) Atomics.add(this.state, 0, 1);
    self.postMessage(m);
  };

  openRoot(pid: number): void {
    const v = ContainerView.open(pid);
    if (typeof v === "number") throw new Error(`cannot open the container's root (errno ${-v})`);
    this.root = v;
    this.view.useRoot(v);
  }

  handle(m: Mediator, n: Notification): void {
    if (this.rootPending) {
      this.rootPending = false;
      this.openRoot(n.tid);
    }
    if (this.handlingId) this.handlingId[0] = n.id;
    Atomics.add(this.state!, 3, 1);
    Atomics.store(this.state!, 1, 1);
    try {
      m.handle(n);
    } finally {
      Atomics.store(this.state!, 1, 0);
    }
  }

  /** Work other than a notification that may perform a call (an answer, a retry): watched, with no id to fail. */
  busyDoing(fn: () => void): void {
    if (this.handlingId) this.handlingId[0] = 0n;
    Atomics.add(this.state!, 3, 1);
    Atomics.store(this.state!, 1, 1);
    try {
      fn();
    } finally {
      Atomics.store(this.state!, 1, 0);
    }
  }
}

async function main(t: WorkerThread): Promise<void> {
  await t.nextMessage();
  const init = t.inbox.shift()!;
  if (init.t !== "init") throw new Error("supervisor worker: expected init");
  const cfg: SessionConfig = init.config;
  t.state = new Int32Array(cfg.posted);
  if (cfg.posted.byteLength >= 24) {
    t.handlingId = new BigUint64Array(cfg.posted, 16, 1);
    Atomics.store(t.state, 2, gettid());
  }
  // A container's root: of the process the runtime named, else (crun exec says pid 0) of the first process
  // that traps, which is the runtime's own, already inside the container.
  if (cfg.container) {
    if (cfg.container.rootPid > 0) t.openRoot(cfg.container.rootPid);
    else t.rootPending = true;
  }
  const nfd = new NotifyFd(cfg.listenerFd);
  nfd.trySyncWakeup();
  const m = new Mediator(cfg, nfd, t.post, new Resolver(t.view));
  // The fast path answers writes plainly inside the floor without coming back here (HALLPASS_FAST_PATH=0
  // turns it off, to compare).
  const fast = cfg.fastPath && !cfg.container && Deno.env.get("HALLPASS_FAST_PATH") !== "0"
    ? FastPath.open(cfg.fastPath, true)
    : null;
  if (fast && t.handlingId) fast.watch(cfg.posted); // the watchdog sees what the fast path handles too
  let rootsVersion = -1;
  const notifBuf = new Uint8Array(128);
  t.post({ t: "ready" });
  if (cfg.first && (cfg.firstConnecting ?? -1) >= 0) {
    m.net.waitFor(nfd.decode(cfg.first), cfg.firstConnecting!);
  } else if (cfg.first) t.handle(m, nfd.decode(cfg.first));
  const drain = new Uint8Array(128);
  let listenerOpen = true;
  let stopping = false;
  let lastSweep = Date.now();
  const poller = new Poller();
  // The poll set: [listener, wake pipe] (or just [wake pipe] once the listener hung up), then the sockets of
  // blocking connects in progress (polled for writing). Rebuilt only when that changes.
  let wakeAt = 1;
  let connecting: number[] = [];
  let dirty = true;
  for (;;) {
    if (dirty || m.net.pending.size !== connecting.length) {
      connecting = [...m.net.pending.keys()];
      const base = listenerOpen ? [cfg.listenerFd, cfg.wakeFd] : [cfg.wakeFd];
      wakeAt = base.length - 1;
      poller.set([...base, ...connecting], connecting.length ? base.length : -1);
      dirty = false;
    }
    const busy = m.pendingCount > 0 || connecting.length > 0;
    // (Not for a container: the agent may have to stop this loop to hand the listener over, and a Worker
    // blocked in RECV could only leave it with a notification taken and never answered.)
    if (!busy && listenerOpen && !cfg.container && t.inbox.length === 0 && t.received === t.announced) {
      if (fast) {
        if (rootsVersion !== m.rootsVersion) {
          fast.setRoots(m.fastRoots());
          rootsVersion = m.rootsVersion;
        }
        if (fast.active) {
          // Nothing pending: the fast path waits, answers what is plainly in the floor, and returns the rest.
          // Nothing pending, so no message can matter: no wake pipe, it waits in RECV itself.
          const r = fast.serve(cfg.listenerFd, -1, notifBuf, 80, -1);
          if (r === SERVE.NOTIFICATION) t.handle(m, nfd.decode(notifBuf));
          else if (r === SERVE.CONNECTING) m.net.waitFor(nfd.decode(notifBuf), fast.takeConnecting());
          else if (r === SERVE.HANGUP) {
            listenerOpen = false;
            dirty = true;
          } else if (r < 0) throw new Error(`the fast path failed (errno ${-r})`);
          // SERVE.WAKE: a message; the poll below sees the pipe.
          if (r !== SERVE.WAKE) continue;
        }
      }
      if (!fast?.active) {
        // Nothing pending: only a notification can matter now. Wait for it in RECV itself.
        const n = nfd.recv();
        if (n) t.handle(m, n);
        else if (nfd.hungUp()) {
          listenerOpen = false; // every sandboxed process is gone: RECV would fail at once, forever
          dirty = true;
        }
        continue;
      }
    }
    const ready = poller.wait(busy ? 200 : -1);
    if (ready > 0) {
      for (let i = 0; i < connecting.length; i++) {
        if (poller.revents(wakeAt + 1 + i)) m.net.complete(connecting[i]);
      }
      if (poller.revents(wakeAt)) {
        const got = Number(libcMore().read(cfg.wakeFd, drain, 128n));
        if (got > 0) t.announced += got;
        // Let the announced messages be delivered (the main thread posts before it writes the pipe): turns of the
        // event loop of ~1 ms each, a poll of nothing on a pool thread (a timer would load Deno's node:timers in
        // this isolate, ~6 ms of CPU at every start of the Worker).
        for (let i = 0; i < 1000 && t.received < t.announced; i++) await pollAsync(-1, 0, 1);
        while (t.inbox.length) {
          const msg = t.inbox.shift()!;
          if (msg.t === "answer") t.busyDoing(() => m.answer(msg.qid, msg.answer));
          else if (msg.t === "stop") stopping = true;
        }
        if (stopping) break;
      }
      if (listenerOpen) {
        const ev = poller.revents(0);
        if (ev & 1 /* POLLIN */) {
          const n = nfd.recv();
          if (n) t.handle(m, n);
          else if (nfd.hungUp()) {
            listenerOpen = false;
            dirty = true;
          }
        } else if (ev & (0x10 | 0x08) /* POLLHUP | POLLERR */) {
          listenerOpen = false; // every sandboxed process is gone
          dirty = true;
        }
      }
    }
    if (busy) {
      const now = Date.now();
      if (now - lastSweep > 200) {
        t.busyDoing(() => m.retryWaiting());
        m.withdrawDead();
        m.net.sweep();
        lastSweep = now;
      }
    }
  }
  if (fast) {
    m.respond.addFast(fast.stats());
    fast.close();
  }
  m.close();
  t.root?.close();
  // The listener stays open: its owner closes it (the agent hands it to its successor).
  t.post({ t: "stopped", stats: m.respond.stats });
  self.close();
}

const thread = new WorkerThread();
self.onmessage = (e: MessageEvent<ToWorker>) => thread.receive(e.data);
main(thread).catch((e) => {
  thread.root?.close();
  thread.post({ t: "fatal", message: e instanceof Error ? e.message : String(e) });
});
