/**
 * The session's Landlock ruleset, built at start-up: the write side (and the execute floor) from the plan, the
 * read side from the carve of the protected paths (lib/floor/read_floor.ts). With the start-up library the
 * carve runs in one call on another thread (lib/floor/read_floor_fast.ts) and adds its rules to the same
 * ruleset, while this thread adds the write side and goes on with the start (the filter, the refused-reads
 * watch) until it awaits the result; without it (or when it cannot answer), readFloor carves here, into a new
 * ruleset.
 *
 * @module
 */
import { addRules, createRuleset, type LandlockRuleset, newRuleset } from "../../ffi/landlock.ts";
import { close } from "../../ffi/libc.ts";
import type { StartLib } from "../../ffi/start.ts";
import type { ReadProtection } from "../policy/secrets.ts";
import { realCarveFs } from "./carve_fs.ts";
import { type ReadFloor, readFloor } from "./read_floor.ts";
import { carveFast, type PackedReadFloor } from "./read_floor_fast.ts";

export interface SessionRuleset {
  /** The ruleset, complete. */
  fd: number;
  /** Paths of the write side and the execute floor that could not be opened (ffi/landlock.ts createRuleset). */
  skipped: string[];
  /**
   * The read side's carve (what was listed, for the start and exit lines and the supervisor): with the library,
   * made from its output at the first call (lib/sandbox/run.ts makes it while the launcher applies the ruleset).
   */
  reads(): ReadFloor | PackedReadFloor;
}

/**
 * The ruleset `rulesFor` makes of the read side's rules (its handled rights include the read right), which
 * handles what `handles` says (`rulesFor`'s answer without its costlier rules: the carve starts before those
 * are made). Rejects with CarveLimitError as readFloor throws it, and with SysError when the kernel refuses a
 * rule.
 */
export async function sessionRuleset(
  rulesFor: (read: { rules: { path: string; access: bigint; dir: boolean }[] }) => LandlockRuleset,
  handles: Omit<LandlockRuleset, "paths" | "ports">,
  abi: number,
  protection: ReadProtection,
  project: string,
  lib: StartLib | null,
  resolve: (p: string) => string,
): Promise<SessionRuleset> {
  if (lib) {
    const fd = newRuleset(handles, abi);
    const carving = carveFast(protection, project, lib, { fd, handled: handles.handledFs });
    let skipped: string[];
    try {
      const rules = rulesFor({ rules: [] });
      if (
        rules.handledFs !== handles.handledFs || rules.handledNet !== handles.handledNet ||
        rules.scoped !== handles.scoped
      ) {
        throw new Error("the ruleset handles other rights than it was made with");
      }
      skipped = addRules(fd, rules);
    } catch (e) {
      await carving.catch(() => {}); // its thread adds to the ruleset until it returns
      close(fd);
      throw e;
    }
    let reads;
    try {
      reads = await carving;
    } catch (e) {
      close(fd);
      throw e;
    }
    if (reads) {
      let made: PackedReadFloor | undefined;
      return { fd, skipped, reads: () => (made ??= reads()) };
    }
    close(fd); // it may hold some of the read side's rules
  }
  const reads = readFloor(protection, project, realCarveFs, resolve);
  return { ...createRuleset(rulesFor(reads), abi), reads: () => reads };
}
