/**
 * Starting a program with posix_spawn, and waiting for it through a pidfd. hallpass starts its launcher this
 * way: Deno.Command costs ~7 ms at start-up (its process machinery starts with it), posix_spawn under 1 ms.
 * Like Deno.Command with "inherit": stdio, working directory and environment are the caller's; fds without
 * close-on-exec are inherited (that is how the launcher gets its socket). Signal dispositions and the signal
 * mask are inherited too: the launcher resets both itself.
 *
 * posix_spawn runs on one of Deno's blocking threads (a nonblocking symbol): it returns only once the child
 * has exec'd (~0.3-1.5 ms at start-up, more on a loaded machine), and the start-up's main thread goes on
 * meanwhile. While it is in flight the caller must not change the environment (it is read from libc's
 * `environ` by that thread) nor close an fd the child is to inherit.
 */
import { cstr, libc, pollReadable, ptrOf, SYS, sys } from "./libc.ts";
import { Errno, SysError } from "./errors.ts";

export interface ExitStatus {
  /** The exit code, or 0 when a signal ended it. */
  code: number;
  /** The number of the signal that ended it, or 0. */
  signal: number;
}

export interface Spawned {
  pid: number;
  /** Resolves once, when the process has ended (it is then reaped). */
  status: Promise<ExitStatus>;
  /** Sends a signal (through the pidfd: never to a process that reused the pid). */
  kill(signal: number): void;
}

const P_PIDFD = 3, WEXITED = 4, CLD_EXITED = 1;

/**
 * Starts `path` with `args` (argv[0] first); resolves once it runs. Rejects with SysError when it cannot be
 * started.
 */
export async function spawn(path: string, args: string[]): Promise<Spawned> {
  const strings = args.map((a) => cstr(a));
  const argv = new BigUint64Array(strings.length + 1);
  strings.forEach((s, i) => (argv[i] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(s)))));
  const pidBuf = new Int32Array(2);
  const file = cstr(path);
  const L = libc();
  const envp = new Deno.UnsafePointerView(L.environ!).getPointer();
  // What the other thread reads stays referenced until it returned.
  const keep: unknown[] = [strings, argv, file, pidBuf];
  const rc = await L.posix_spawn(
    new Uint8Array(pidBuf.buffer),
    file,
    null,
    null,
    new Uint8Array(argv.buffer),
    envp,
  );
  keep.length = 0;
  if (rc !== 0) throw new SysError(`posix_spawn ${path}`, rc);
  const pid = pidBuf[0];
  const pidfd = sys(SYS.pidfd_open, pid, 0);
  if (pidfd < 0) throw new SysError("pidfd_open", -pidfd);
  let open = true;
  const status = (async () => {
    const info = new Uint8Array(128);
    for (;;) {
      await pollReadable(pidfd);
      // siginfo_t: si_code at 8, si_status at 24 (x86_64 and aarch64)
      const r = sys(SYS.waitid, P_PIDFD, pidfd, ptrOf(info), WEXITED);
      if (r === -Errno.EINTR) continue;
      open = false;
      libc().close(pidfd);
      if (r < 0) return { code: 255, signal: 0 };
      const v = new DataView(info.buffer);
      const code = v.getInt32(8, true), st = v.getInt32(24, true);
      return code === CLD_EXITED ? { code: st, signal: 0 } : { code: 0, signal: st };
    }
  })();
  return {
    pid,
    status,
    kill(signal: number) {
      if (open) sys(SYS.pidfd_send_signal, pidfd, signal, 0, 0);
    },
  };
}
