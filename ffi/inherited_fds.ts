/**
 * File descriptors hallpass was given beyond 0–2 (docs/threat-model.md, "Inherited file descriptors"): marked
 * close-on-exec before anything is started, so the sandboxed command (and the ask program) never get them
 * unless the person said so (`--keep-fds`). An inherited fd is a grant made outside the sandbox: `3>>/file`
 * opened /file for writing, and no system call the command makes on that fd is a path hallpass could decide.
 */
import { libc } from "./libc.ts";

/** Sets FD_CLOEXEC on every open fd above 2; returns the numbers it marked that were inheritable before. */
export function closeInheritedOnExec(): number[] {
  const F_GETFD = 1, F_SETFD = 2, FD_CLOEXEC = 1;
  const fds: number[] = [];
  for (const e of Deno.readDirSync("/proc/self/fd")) {
    const fd = Number(e.name);
    if (Number.isInteger(fd) && fd > 2) fds.push(fd);
  }
  const marked: number[] = [];
  for (const fd of fds) {
    const cur = libc().fcntl(fd, F_GETFD, 0);
    if (cur < 0 || cur & FD_CLOEXEC) continue; // gone (the listing's own fd) or already close-on-exec
    if (libc().fcntl(fd, F_SETFD, cur | FD_CLOEXEC) === 0) marked.push(fd);
  }
  return marked;
}
