/**
 * Red team (session 4): a root supervisor's fast path keeps its thread's capabilities lowered to the caller's
 * from one metadata call to the next (helper/fastpath/fastpath.c caps_keep_as_caller). Two callers with
 * different effective sets — two threads of one process (capabilities are per thread) and two processes —
 * interleave chmod/chown/utimensat/fchmod and write opens on files at the project's top (performed by the fast
 * path), the one with CHOWN, DAC_OVERRIDE, FOWNER and FSETID, the other with none: a call performed with the
 * other's capabilities would change a file the caller could not (or refuse what it could). Judged from outside:
 * every call's result and the files' modes and owners equal a bare run's, both engines.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, isRoot, scratch } from "./harness.ts";
import { type Need, test, tool } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

const PY = `
import ctypes, os, sys, threading, errno
from collections import Counter
libc = ctypes.CDLL(None, use_errno=True)
class Hdr(ctypes.Structure): _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure): _fields_ = [("eff", ctypes.c_uint32), ("perm", ctypes.c_uint32), ("inh", ctypes.c_uint32)]
def set_eff(mask):  # this thread's effective set
    h = Hdr(0x20080522, 0); d = (Data * 2)()
    assert libc.capget(ctypes.byref(h), d) == 0
    d[0].eff = mask & d[0].perm; d[1].eff = 0
    assert libc.capset(ctypes.byref(h), d) == 0, ctypes.get_errno()
META = (1 << 0) | (1 << 1) | (1 << 3) | (1 << 4)
d, n, how = sys.argv[1], int(sys.argv[2]), sys.argv[3]
f1, f2, f3, f4 = (os.path.join(d, x) for x in ("f1", "f2", "f3", "f4"))
out = []
def rec(tag, fn):
    try: fn(); out.append(tag + ":ok")
    except OSError as e: out.append(tag + ":" + errno.errorcode[e.errno])
def a_step(i):
    rec("A.chmod", lambda: os.chmod(f1, 0o600 | (i % 8) << 3))
    rec("A.chown", lambda: os.chown(f1, 65534, 65534 + i % 2))
    rec("A.utime", lambda: os.utime(f1, (i, i)))
    rec("A.open", lambda: os.close(os.open(f3, os.O_WRONLY)))
def b_step(i):
    rec("B.chmod", lambda: os.chmod(f2, 0o644))
    rec("B.chown", lambda: os.chown(f2, 0, 0))
    rec("B.utime", lambda: os.utime(f2, (i, i)))
    rec("B.touch", lambda: os.utime(f2, None))
    rec("B.open", lambda: os.close(os.open(f3, os.O_WRONLY)))
    fd = os.open(f4, os.O_RDONLY)
    rec("B.fchmod", lambda: os.fchmod(fd, 0o666)); os.close(fd)
if how == "threads":
    ga, gb = threading.Semaphore(1), threading.Semaphore(0)
    def ta():
        set_eff(META)
        for i in range(n): ga.acquire(); a_step(i); gb.release()
    def tb():
        set_eff(0)
        for i in range(n): gb.acquire(); b_step(i); ga.release()
    ts = [threading.Thread(target=ta), threading.Thread(target=tb)]
    for t in ts: t.start()
    for t in ts: t.join()
    res = out
else:
    r1, w1 = os.pipe(); r2, w2 = os.pipe(); ro, wo = os.pipe()
    pid = os.fork()
    if pid == 0:
        set_eff(0)
        for i in range(n): os.read(r1, 1); b_step(i); os.write(w2, b"x")
        os.write(wo, ("\\n".join(out) + "\\n").encode()); os._exit(0)
    os.close(wo)
    set_eff(META)
    for i in range(n): a_step(i); os.write(w1, b"x"); os.read(r2, 1)
    b = b""
    while True:
        c = os.read(ro, 65536)
        if not c: break
        b += c
    os.waitpid(pid, 0)
    res = out + b.decode().split()
for k, v in sorted(Counter(res).items()): print(k, v)
for f in (f1, f2, f3, f4):
    st = os.stat(f); print(os.path.basename(f), oct(st.st_mode), st.st_uid, st.st_gid, int(st.st_mtime) if st.st_mtime < 10**6 else "planted")
`;

const PATH = "/usr/local/bin:/usr/bin:/bin";
const need: Need = !isRoot()
  ? { reason: "needs root (a root sandbox with capabilities to lower)" }
  : tool("python3");

/** Four files owned by nobody, mode 0600 (f4 0644), in `dir`. */
async function plant(dir: string): Promise<void> {
  for (const f of ["f1", "f2", "f3", "f4"]) {
    await Deno.writeTextFile(`${dir}/${f}`, "x\n");
    await Deno.chown(`${dir}/${f}`, 65534, 65534);
    await Deno.chmod(`${dir}/${f}`, f === "f4" ? 0o644 : 0o600);
  }
}

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "kept capabilities");
  for (const how of ["threads", "processes"]) {
    test({
      name: `redteam4 kept caps (${engine}): metadata calls and opens of two ${how} with other capabilities`,
      ignore: need,
      async fn() {
        const s = await scratch();
        try {
          const py = `${s.outside}/interleave.py`;
          await Deno.writeTextFile(py, PY);
          const ctl = `${s.outside}/ctl`;
          await Deno.mkdir(ctl);
          await plant(ctl);
          const b = await bare(["/usr/bin/python3", py, ctl, "40", how], { env: { PATH } });
          assertEquals(b.code, 0, b.stderr);
          await plant(s.project);
          const r = await hp(["--no-ask", "-q", "--", "/usr/bin/python3", py, s.project, "40", how], {
            cwd: s.project,
          });
          assertEquals(r.code, 0, r.stderr);
          assertEquals(r.stdout, b.stdout);
        } finally {
          await s.cleanup();
        }
      },
    });
  }
}
