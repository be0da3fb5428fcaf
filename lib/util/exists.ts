import { errno, existsOnDisk, lexistsOnDisk } from "../../ffi/libc.ts";

/**
 * Whether `p` names something here (symlinks followed: a dangling one does not). Asked with access(2) (ffi/libc.ts
 * existsOnDisk): a missing path costs no exception, and start-up asks this of dozens that are not there (Deno's
 * statSync throws for each, ~50 µs in code that runs once).
 */
export function exists(p: string): boolean {
  return existsOnDisk(p);
}

/** Deno.statSync of `p`, or undefined when it is not there (checked first with access(2), no exception). */
export function statIfThere(p: string): Deno.FileInfo | undefined {
  if (!existsOnDisk(p)) return undefined;
  try {
    return Deno.statSync(p);
  } catch {
    return undefined;
  }
}

/** Deno.lstatSync of `p` (a final symlink not followed), or undefined when it is not there (no exception). */
export function lstatIfThere(p: string): Deno.FileInfo | undefined {
  if (!lexistsOnDisk(p)) return undefined;
  try {
    return Deno.lstatSync(p);
  } catch {
    return undefined;
  }
}

/** Whether `p` names something here, a symlink itself (dangling or not) included. */
export function lexists(p: string): boolean {
  try {
    Deno.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `p` cannot even be looked for: a directory on the way denies search (access(2) EACCES), as with a
 * `chmod 000 ~/.config/hallpass`. Such a file is not "missing": the caller says so instead of going on without it.
 */
export function unreachable(p: string): boolean {
  if (p.includes("\0") || existsOnDisk(p)) return false;
  return errno() === 13; // EACCES
}
