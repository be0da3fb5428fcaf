/**
 * lib/supervisor/questions.ts: one place builds every question (the container on each kind, connect included:
 * `hallpass agent` showed connect questions as "(no pod)" and counted them under one flood limit), and one
 * release() frees what a pending call holds (close() forgot the socket to bind and the network operation).
 */
import assert from "node:assert/strict";
import type { Notification, NotifyFd } from "../ffi/notify.ts";
import { Questions } from "../lib/supervisor/questions.ts";
import { NetMediator } from "../lib/supervisor/connect.ts";
import type { ProcInfo } from "../lib/supervisor/proc_info.ts";
import type { Respond } from "../lib/supervisor/respond.ts";
import type { SessionConfig, ToMain } from "../lib/supervisor/session_config.ts";
import type { ContainerIdentity } from "../lib/types.ts";
import { fs } from "../ffi/fsops.ts";
import { cstr } from "../ffi/libc.ts";

const POD: ContainerIdentity = { namespace: "shop", pod: "web-7d9f", container: "builder", id: "c0ffee" };

function setup(container: boolean, alive = true) {
  const posted: ToMain[] = [];
  const failed: number[] = [];
  const cfg = { container: container ? { identity: POD } : undefined } as unknown as SessionConfig;
  const proc = {
    tgid: (tid: number) => tid,
    comm: () => "curl",
    exe: () => "/usr/bin/curl",
    chain: () => ["curl example.com"],
  } as unknown as ProcInfo;
  const respond = {
    valid: () => alive,
    error: (_n: Notification, errno: number) => failed.push(errno),
  } as unknown as Respond;
  const net = new NetMediator({} as NotifyFd, respond, true);
  const qs = new Questions(cfg, proc, (m) => posted.push(m), respond, net);
  return { qs, posted, failed };
}

const n = (tid: number): Notification => ({ id: 1n, tid, nr: 42, arch: 0, args: [0n, 0n, 0n, 0n, 0n, 0n] });

/** A new fd of this process (what a pending call would hold: an fd copy, a socket, an O_PATH fd). */
function openFd(): number {
  const fd = fs.openat(-100, cstr("/dev/null"), 0o2000000, /* O_RDONLY | O_CLOEXEC */ 0);
  assert.ok(fd >= 0);
  return fd;
}

function isOpen(fd: number): boolean {
  try {
    Deno.readLinkSync(`/proc/self/fd/${fd}`);
    return true;
  } catch {
    return false;
  }
}

Deno.test("every question carries the container, a connect question too; none outside a container", () => {
  for (const container of [true, false]) {
    const { qs, posted } = setup(container);
    for (const op of ["connect", "write", "exec"] as const) {
      const q = qs.put(
        { n: n(7), op, call: null, targets: [{ path: "x", anon: false }], fdCopy: -1, qid: 0 },
        { op, target: "tcp:1.2.3.4:443", syscall: op, suggestedScope: "tcp:1.2.3.4:443", scopes: ["x"] },
        `${op}\0x`,
      );
      assert.deepEqual(q.container, container ? POD : undefined, `${op} container=${container}`);
      assert.equal(q.pid, 7);
      assert.equal(q.exe, "/usr/bin/curl");
    }
    assert.equal(posted.length, 3);
    assert.equal(qs.size, 3);
  }
});

Deno.test("close(): every pending call fails and releases its fd copy, its socket to bind and its network op", () => {
  const { qs, failed } = setup(true);
  const fdCopy = openFd(), bindFd = openFd(), netFd = openFd(), pathFd = openFd();
  const held = [fdCopy, bindFd, netFd, pathFd];
  qs.put(
    { n: n(1), op: "write", call: null, targets: [{ path: "/a", anon: false }], fdCopy, qid: 0 },
    { op: "write", target: "/a", syscall: "openat", suggestedScope: "/a", scopes: ["/a"] },
    "k1",
  );
  qs.put(
    { n: n(2), op: "write", call: null, targets: [{ path: "/s", anon: false }], fdCopy: -1, bindFd, qid: 0 },
    { op: "write", target: "/s", syscall: "bind", suggestedScope: "/s", scopes: ["/s"] },
    "k2",
  );
  qs.put(
    {
      n: n(3),
      op: "connect",
      call: null,
      targets: [{ path: "unix:/run/x", anon: false }],
      fdCopy: -1,
      net: { kind: "connect", fd: netFd, addr: null, addrLen: 0, flags: 0, pathFd },
      qid: 0,
    },
    { op: "connect", target: "unix:/run/x", syscall: "connect", suggestedScope: "x", scopes: ["x"] },
    "k3",
  );
  for (const fd of held) assert.ok(isOpen(fd), `fd ${fd} open before`);
  qs.close();
  assert.deepEqual(failed, [13, 13, 13]);
  for (const fd of held) assert.ok(!isOpen(fd), `fd ${fd} still open after close()`);
  assert.equal(qs.size, 0);
});

Deno.test("release() frees once; withdrawDead() releases and withdraws the questions of callers that are gone", () => {
  const { qs, posted } = setup(false, false);
  const fd = openFd();
  const p = {
    n: n(1),
    op: "write" as const,
    call: null,
    targets: [{ path: "/a", anon: false }],
    fdCopy: fd,
    qid: 0,
  };
  qs.put(p, { op: "write", target: "/a", syscall: "openat", suggestedScope: "/a", scopes: ["/a"] }, "k");
  qs.withdrawDead();
  assert.ok(!isOpen(fd));
  assert.equal(qs.size, 0);
  assert.deepEqual(posted[1], { t: "withdraw", qid: p.qid });
  // A second release (the answer arriving late) must not close an fd number reused since.
  const reused = openFd();
  qs.release(p);
  assert.equal(reused, fd, "the fd number is reused (what a second close would hit)");
  assert.ok(isOpen(reused));
  fs.close(reused);
});
