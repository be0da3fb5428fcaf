/**
 * A small regular file's text, read where another session's sandbox may still race hallpass: the exit checks of
 * nested repositories (lib/sandbox/nested_repos.ts) and of agents' own configuration
 * (lib/sandbox/agent_config_check.ts).
 *
 * - Only a regular file is opened (to read): what the path names comes from an O_PATH fd, which opens nothing,
 *   so a FIFO is never waited on and a device whose open does something (a watchdog, a tape) is never opened.
 * - The read is taken only when the file read is the one at the path before and after it (same device and
 *   inode): an fd number reused under us, or a file renamed over the path meanwhile, would hand over another
 *   file's text. Read again, up to `tries` times, then undefined.
 *
 * @module
 */
import { fs as fsops } from "../../ffi/fsops.ts";
import { AT_FDCWD, cstr, O } from "../../ffi/libc.ts";

export interface StableRead {
  text: string;
  /** The file read (its stat through the fd the text came from). */
  st: Deno.FileInfo;
}

export interface StableReadOptions {
  /** Follow a final symlink (as the program that reads the file does), or treat one as unreadable. */
  follow: boolean;
  /** Larger files are unreadable. */
  maxBytes: number;
  tries: number;
}

const AGAIN = Symbol("again");

function readOnce(path: string, o: StableReadOptions): StableRead | undefined | typeof AGAIN {
  const pfd = fsops.openat(AT_FDCWD, cstr(path), O.PATH | O.CLOEXEC | (o.follow ? 0 : O.NOFOLLOW), 0);
  if (pfd < 0) return undefined;
  let fd = -1;
  try {
    // Through /proc, not fsops.fileType: its library's table costs ~10 ms to open, and the agent-config check
    // runs before the command starts. An O_PATH fd of a symlink (not followed) stats as that symlink.
    const before = Deno.statSync(`/proc/self/fd/${pfd}`);
    if (!before.isFile || before.size > o.maxBytes) return undefined;
    fd = fsops.openat(AT_FDCWD, cstr(`/proc/self/fd/${pfd}`), O.RDONLY | O.NONBLOCK | O.CLOEXEC, 0);
    if (fd < 0) return undefined;
    const text = Deno.readTextFileSync(`/proc/self/fd/${fd}`); // a regular file: never blocks
    const after = Deno.statSync(`/proc/self/fd/${fd}`);
    const named = o.follow ? Deno.statSync(path) : Deno.lstatSync(path);
    const same = (a: Deno.FileInfo, b: Deno.FileInfo) => a.dev === b.dev && a.ino === b.ino;
    return same(before, after) && same(before, named) ? { text, st: after } : AGAIN;
  } catch {
    return undefined;
  } finally {
    if (fd >= 0) fsops.close(fd);
    fsops.close(pfd);
  }
}

export function readStable(path: string, o: StableReadOptions): StableRead | undefined {
  for (let i = 0; i < o.tries; i++) {
    const r = readOnce(path, o);
    if (r !== AGAIN) return r;
  }
  return undefined;
}
