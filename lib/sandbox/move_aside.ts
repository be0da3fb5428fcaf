/**
 * Moving what the sandbox left behind out of the way at exit (the exit checks: gemini's extensions, copilot's
 * runtime, python's startup files, commands shadowed in `$PATH`): into a quarantine directory beside it, under
 * a free name, never through a symlink and never replacing anything.
 *
 * @module
 */
import { fs as fsops, openDirNoSymlinks } from "../../ffi/fsops.ts";
import { cstr } from "../../ffi/libc.ts";
import type { RepoFs } from "./nested_repos.ts";

/** The suffix of every quarantine directory: `NAME.hallpass-quarantined`. */
export const QUARANTINE = ".hallpass-quarantined";

/** What {@link moveAside} needs: lstat, and a rename to stand in for {@link moveInto} in tests. */
export type AsideFs = Pick<RepoFs, "lstat"> & { moveInto?(from: string, dir: string, name: string): boolean };

/**
 * Moves `from` into directory `dir` as `name`; when `dir/name` is taken (a symlink the sandbox planted there
 * first) as `name.2`, `name.3`…, and when `dir` cannot take it, into `dir.2`, `dir.3`… (up to 99 each). Returns
 * where it went, or "" when it could not be moved.
 */
export function moveAside(fs: AsideFs, from: string, dir: string, name: string): string {
  for (let k = 1; k < 100; k++) {
    const to = `${dir}${k > 1 ? `.${k}` : ""}`;
    let n = name;
    for (let i = 2; fs.lstat(`${to}/${n}`) !== undefined && i < 100; i++) n = `${name}.${i}`;
    if ((fs.moveInto ?? moveInto)(from, to, n)) return `${to}/${n}`;
  }
  return "";
}

/**
 * Renames `from` to `dir/name`, making `dir` (0700) when missing; both directories opened without following a
 * symlink, never replacing anything.
 */
export function moveInto(from: string, dir: string, name: string): boolean {
  try {
    Deno.mkdirSync(dir, { mode: 0o700 });
  } catch { /* there, or not made: the open below says */ }
  const parent = from.slice(0, from.lastIndexOf("/"));
  const a = openDirNoSymlinks(parent);
  const b = openDirNoSymlinks(dir);
  try {
    if (a < 0 || b < 0) return false;
    return fsops.renameat2(
      a,
      cstr(from.slice(parent.length + 1)),
      b,
      cstr(name),
      1, /* RENAME_NOREPLACE */
    ) === 0;
  } finally {
    if (a >= 0) fsops.close(a);
    if (b >= 0) fsops.close(b);
  }
}
