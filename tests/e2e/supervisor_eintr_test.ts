/**
 * A signal to the supervisor's thread fails the listener's SEND, ID_VALID and ADDFD with EINTR having done
 * nothing (the kernel takes the listener's lock interruptibly). Taken for "the thread is gone", the call stays
 * unanswered and the sandboxed program blocks for good. Here a preloaded library makes every other such call of
 * the C fast path fail with EINTR: the session must end as it does without it, every call answered.
 * (The JavaScript side, ffi/notify.ts, calls libc through its own handle, which a preload does not reach.)
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { HALLPASS_ARGV, scratch } from "./harness.ts";
import { until } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";
import { gcc, sharedTempDir } from "../helpers/compile.ts";

const SHIM = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>
static int (*real)(int, unsigned long, void *);
static unsigned long calls;
int ioctl(int fd, unsigned long req, ...) {
  va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
  if (!real) real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT, "ioctl");
  /* SECCOMP_IOCTL_NOTIF_SEND, _ID_VALID, _ADDFD */
  if (req == 0xc0182101UL || req == 0x40082102UL || req == 0x40182103UL) {
    const char *every = getenv("HP_EINTR_EVERY"), *log = getenv("HP_EINTR_LOG");
    long n = every ? atol(every) : 2;
    if (n > 0 && __atomic_fetch_add(&calls, 1, __ATOMIC_RELAXED) % n == 0) {
      if (log) { int f = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600); if (f >= 0) { write(f, "x", 1); close(f); } }
      errno = EINTR;
      return -1;
    }
  }
  return real(fd, req, arg);
}
`;

let shim: Promise<string> | null = null;
function shimLibrary(): Promise<string> {
  return shim ??= (async () => {
    const dir = await sharedTempDir("hallpass-eintr-");
    await Deno.writeTextFile(`${dir}/shim.c`, SHIM);
    await gcc(`${dir}/shim.c`, `${dir}/shim.so`, ["-shared", "-fPIC", "-ldl"]);
    return `${dir}/shim.so`;
  })();
}

/** Writes, chmods and reads in the project: calls the fast path answers (SEND), performs (ID_VALID) or opens. */
const WORK =
  `for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo "$i" > "f$i"; chmod 600 "f$i"; ` +
  `mkdir -p "d$i"; done; cat f* | sort -n | tr '\\n' ' '`;

/** hallpass --no-ask running WORK in `project`, with the library preloaded failing one such call in `every`. */
function session(project: string, lib: string, log: string, every: number, piped: boolean): Deno.Command {
  return new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), "--no-ask", "-q", "--", "sh", "-c", WORK],
    cwd: project,
    env: { HP_EINTR_EVERY: String(every), HP_EINTR_LOG: log, LD_PRELOAD: lib },
    stdin: "null",
    stdout: piped ? "piped" : "null",
    stderr: piped ? "piped" : "null",
    // A call left unanswered blocks the session for good: ended (SIGKILL) well after any slow machine's finish.
    signal: AbortSignal.timeout(120_000),
  });
}

test({
  name: "EINTR from the listener's SEND, ID_VALID and ADDFD: the fast path asks again; every call answered",
  ignore: tool("gcc"),
}, async () => {
  const lib = await shimLibrary();
  const s = await scratch();
  try {
    const log = `${s.outside}/eintr.log`;
    // Control: every such call fails, so the library reaches the fast path's calls, and the fast path asks
    // again (here 1000 times and on) rather than take the first EINTR for an answer given.
    const ctl = session(s.project, lib, log, 1, false).spawn();
    try {
      await until(async () => (await Deno.readTextFile(log).catch(() => "")).length >= 1000, "1000 EINTRs");
    } finally {
      ctl.kill("SIGKILL");
      await ctl.status;
    }
    await Deno.remove(log);
    for (const f of await Array.fromAsync(Deno.readDir(s.project))) {
      await Deno.remove(`${s.project}/${f.name}`, { recursive: true });
    }
    // Every other call fails once: the session ends as without the library.
    const out = await session(s.project, lib, log, 2, true).output();
    const text = new TextDecoder().decode(out.stdout);
    assertEquals(
      [out.code, text.trim()],
      [0, Array.from({ length: 20 }, (_, i) => i + 1).join(" ")],
      new TextDecoder().decode(out.stderr),
    );
    const injected = (await Deno.readTextFile(log).catch(() => "")).length;
    assert(injected > 0, "no call of the fast path was failed");
    const mode = (await Deno.stat(`${s.project}/f7`)).mode! & 0o777;
    assertEquals(mode, 0o600);
  } finally {
    await s.cleanup();
  }
});
