/**
 * The supervisor Worker: a synchronous poll → RECV → decide → SEND loop on its own thread (DESIGN §1).
 * It never waits for a person: questions go to the main thread, whose answers come back as messages. To read
 * them, the loop also polls a wake-up pipe the main thread writes to after posting, then yields to the event
 * loop once.
 */
/// <reference lib="deno.worker" />
import { close, libc, Poller } from "../../ffi/libc.ts";
import { NotifyFd } from "../../ffi/notify.ts";
import { Mediator } from "./mediator.ts";
import type { SessionConfig, ToMain, ToWorker } from "./session_config.ts";

const inbox: ToWorker[] = [];
let wake: (() => void) | null = null;
/** Messages received, and wake-up bytes read: the main thread writes one byte after each message. */
let received = 0;
let announced = 0;
self.onmessage = (e: MessageEvent<ToWorker>) => {
  inbox.push(e.data);
  received++;
  wake?.();
};
const post = (m: ToMain) => self.postMessage(m);

function nextMessage(): Promise<void> {
  if (inbox.length) return Promise.resolve();
  return new Promise((r) => (wake = r));
}

async function main(): Promise<void> {
  await nextMessage();
  const init = inbox.shift()!;
  if (init.t !== "init") throw new Error("supervisor worker: expected init");
  const cfg: SessionConfig = init.config;
  const nfd = new NotifyFd(cfg.listenerFd);
  nfd.trySyncWakeup();
  const m = new Mediator(cfg, nfd, post);
  post({ t: "ready" });
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
    const ready = poller.wait(busy ? 200 : -1);
    if (ready > 0) {
      for (let i = 0; i < connecting.length; i++) {
        if (poller.revents(wakeAt + 1 + i)) m.net.complete(connecting[i]);
      }
      if (poller.revents(wakeAt)) {
        const got = Number(libc().read(cfg.wakeFd, drain, 128n));
        if (got > 0) announced += got;
        // Let the announced messages be delivered (the main thread posts before it writes the pipe).
        for (let i = 0; i < 1000 && received < announced; i++) await new Promise((r) => setTimeout(r, 0));
        while (inbox.length) {
          const msg = inbox.shift()!;
          if (msg.t === "answer") m.answer(msg.qid, msg.answer);
          else if (msg.t === "stop") stopping = true;
        }
        if (stopping) break;
      }
      if (listenerOpen) {
        const ev = poller.revents(0);
        if (ev & 1 /* POLLIN */) {
          const n = nfd.recv();
          if (n) m.handle(n);
        } else if (ev & (0x10 | 0x08) /* POLLHUP | POLLERR */) {
          listenerOpen = false; // every sandboxed process is gone
          dirty = true;
        }
      }
    }
    if (busy) {
      const now = Date.now();
      if (now - lastSweep > 200) {
        m.withdrawDead();
        m.net.sweep();
        lastSweep = now;
      }
    }
  }
  m.close();
  close(cfg.listenerFd);
  post({ t: "stopped", stats: m.stats });
  self.close();
}

main().catch((e) => {
  post({ t: "fatal", message: e instanceof Error ? e.message : String(e) });
});
