/**
 * Whether the exit checks can be skipped because the sandbox provably wrote nothing: the supervisor received no
 * notification after the command's own exec (answered by hallpass before anything else ran), and the command
 * inherited no file it could write without a trapped call.
 *
 * Why that is enough: every call that makes, changes, renames or removes a file by path, or changes its mode,
 * owner, times or xattrs (by fd too), every exec, connect, sendmsg/sendmmsg and sendto with an address, chdir
 * and credential change is a seccomp notification (lib/filter/filter_plan.ts; openat2, io_uring and
 * open_by_handle_at are refused), and a trapped call does nothing until the supervisor answers it. With none
 * answered, the only fds the sandbox could write through are the ones it was given: fds 0-2 (a terminal,
 * /dev/null, a pipe, a socket, a directory, or a file open only to read; one open to write could be written
 * with write(2), ftruncate(2) or mmap(2)), and more with --keep-fds. The exit checks (nested repositories,
 * agents' configuration, gemini extensions, copilot's runtime, python's user site) look for what the sandbox wrote; a change another
 * process makes meanwhile is that process's (another session checks its own). docs/threat-model.md ("What is
 * left behind to run outside").
 *
 * @module
 */

/** What fds 0-2 may be: a terminal or /dev/null, a pipe, a socket, a directory, or closed (-1). */
const HARMLESS = new Set([0o020000, 0o010000, 0o140000, 0o040000, -1]);
/** Regular files and block devices: harmless only when not open for writing. */
const DATA = new Set([0o100000, 0o060000]);

export interface WroteNothingInput {
  /** The command's exec was the only notification hallpass answered before the supervisor started. */
  onlyFirstExec: boolean;
  /** The supervisor received a notification (lib/supervisor/host.ts `notified`). */
  notified: boolean;
  /** --keep-fds: fds above 2 reached the command. */
  keepFds: boolean;
  /** Fds 0-2 as the command got them: type (st_mode & S_IFMT; -1 closed, undefined not known), open to write. */
  stdio: { type: number | undefined; writable: boolean }[];
}

export function sandboxWroteNothing(i: WroteNothingInput): boolean {
  if (!i.onlyFirstExec || i.notified || i.keepFds) return false;
  return i.stdio.every(({ type, writable }) =>
    type !== undefined && (HARMLESS.has(type) || (DATA.has(type) && !writable))
  );
}
