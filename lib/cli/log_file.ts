/**
 * `--log FILE` checked before anything runs (hallpass and hallpass agent): the decision log is opened only at the
 * first decision, so a log hallpass cannot write would otherwise stop the sandbox in the middle of the command,
 * and a FIFO nobody reads would block it for ever.
 *
 * A regular file is made (0600, appended to) as the log would be; a FIFO must have its reader already (it is
 * kept open for writing until hallpass exits, so a reader started first, `cat FIFO &`, does not see an end of
 * file before the first line); devices such as /dev/stderr are taken as they are.
 *
 * @example
 * ```ts
 * import { checkLogFile } from "./log_file.ts";
 * checkLogFile("--log", "decisions.jsonl"); // made if missing; throws a UsageError for /nonexistent/x
 * ```
 */
import { UsageError } from "../types.ts";
import { openFifoWriterNow } from "../../ffi/libc.ts";

/** FIFO write ends held until exit (see above). */
const held: number[] = [];

export function checkLogFile(option: string, path: string): void {
  let st: Deno.FileInfo | null = null;
  try {
    st = Deno.statSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      throw new UsageError(`${option} ${path}: ${(e as Error).message}`);
    }
  }
  if (st?.isDirectory) throw new UsageError(`${option} ${path}: is a directory`);
  if (st?.isFifo) {
    const fd = openFifoWriterNow(path);
    if (fd === -6 /* ENXIO */) {
      throw new UsageError(`${option} ${path}: a FIFO nobody reads (start its reader first)`);
    }
    if (fd < 0) throw new UsageError(`${option} ${path}: cannot open it for writing (errno ${-fd})`);
    held.push(fd);
    return;
  }
  try {
    Deno.openSync(path, { append: true, create: true, mode: 0o600 }).close();
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) || "/" : ".";
      throw new UsageError(`${option} ${path}: no such directory ${dir}`);
    }
    throw new UsageError(`${option} ${path}: ${(e as Error).message}`);
  }
}
