/**
 * lib/floor/read_floor.ts readFloor in one call of helper/start/start.c (ffi/start.ts): the same carve of the
 * same protections over the same file system, its rules added to the ruleset by the call (and kept packed,
 * not built as objects). Start-up's largest piece of JavaScript was that carve: a pass per
 * protected path (~300 as root: every home's credential locations) for resolving, aliasing, carving and the
 * rules. readFloor stays the reference (`hallpass rules`, and whenever this one cannot answer);
 * tests/start_lib_test.ts compares the two.
 *
 * @module
 */
import { FILE_RIGHTS, FS } from "../../ffi/landlock.ts";
import type { RawReadFloor, StartLib } from "../../ffi/start.ts";
import type { ReadProtection } from "../policy/secrets.ts";
import { CarveLimitError, normalise } from "./landlock_carve.ts";
import type { ReadFloor } from "./read_floor.ts";

/** A ReadFloor whose rules are packed (`rules` is empty): the ruleset it was given holds them. */
export interface PackedReadFloor extends ReadFloor {
  packed: { rules: Uint8Array<ArrayBuffer>; count: number };
  /**
   * The canonical form (lib/floor/carve_fs.ts resolveExisting) of a protected path as start.c found it, or
   * undefined for another path: what the refused-reads watch asks of every protection, answered without a
   * realpath each.
   */
  real(path: string): string | undefined;
}

/**
 * readFloor's answer through the library, its rules added to `ruleset.fd` (-1: none) with the rights
 * `ruleset.handled` holds; null when it cannot give it (a protected path that is not plain: with "//", "." or
 * "..", or a trailing "/"; the call failed): the caller then runs readFloor, into a new ruleset. Rejects with
 * CarveLimitError as readFloor throws it, and with SysError when the kernel refused a rule.
 */
export async function readFloorFast(
  reads: ReadProtection,
  project: string,
  lib: StartLib,
  ruleset: { fd: number; handled: bigint } = { fd: -1, handled: 0n },
): Promise<PackedReadFloor | null> {
  return (await carveFast(reads, project, lib, ruleset))?.() ?? null;
}

/**
 * readFloorFast in two steps: resolves once the call returned (the ruleset then holds every rule), to the
 * function that makes the answer from the call's output (~0.5 ms of JavaScript: lib/sandbox/run.ts calls it
 * once the launcher has its configuration, while the launcher applies it).
 */
export async function carveFast(
  reads: ReadProtection,
  project: string,
  lib: StartLib,
  ruleset: { fd: number; handled: bigint },
): Promise<(() => PackedReadFloor) | null> {
  const protect = reads.protect;
  const readable = reads.readable.map((r) => r.path); // resolved by the call: grants after these
  const grants = ["/", project].map(normalise);
  const maxRules = 20000; // lib/floor/landlock_carve.ts's default
  const r = await lib.readFloor(
    {
      right: FS.READ_FILE,
      fileRights: FILE_RIGHTS,
      maxRules,
      project,
      grants,
      readable,
      ruleset: ruleset.fd,
      handled: ruleset.handled,
    },
    protect.map((p) => ({ path: p.path, builtin: p.source.kind === "builtin" })),
  );
  if (r === null) return null;
  if ("limit" in r) throw new CarveLimitError(maxRules, r.limit);
  return () => packed(r(), protect, readable);
}

function packed(
  r: RawReadFloor,
  protect: ReadProtection["protect"],
  readable: string[],
): PackedReadFloor {
  const byPath = <T extends { path: string }>(a: T, b: T) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  const carved = r.carved.sort(byPath);
  let known: Map<string, string> | null = null;
  // What each carved directory held: made at the first use (the supervisor's, after the command's first exec).
  let before: Map<string, Map<string, number | undefined>> | undefined;
  return {
    rules: [],
    packed: { rules: r.rules, count: r.ruleCount },
    carved: carved.map((c) => ({ path: c.path, missing: FS.READ_FILE })),
    listed: r.listed,
    hardLinked: [...new Set(r.hardLinked)].sort(),
    dropped: [...new Set(r.dropped)].sort(),
    get before() {
      return (before ??= new Map(carved.map((c) => [c.path, c.names()])));
    },
    inProject: r.notKept.map((i) => protect[i].path),
    real(path) {
      const at = (i: number) => (i < protect.length ? protect[i].path : readable[i - protect.length]);
      known ??= new Map([
        ...[...protect.map((p) => p.path), ...readable].map((p): [string, string] => [p, p]),
        ...r.real.map((a): [string, string] => [at(a.index), a.path]),
      ]);
      return known.get(path);
    },
  };
}
