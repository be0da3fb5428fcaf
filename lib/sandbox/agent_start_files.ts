/**
 * An agent's first session: the files its recipe names (`startFiles`, lib/policy/agent_recipes.ts) that it
 * makes directly in a directory on the way to a protected location (`~/.claude.json` in `$HOME`, with `~/.ssh`
 * protected). Such a directory is carved (lib/floor/read_floor.ts): an entry made there during the run is under
 * no read rule, and the agent could not read back the state it had just saved (`claude mcp add` in a fresh home
 * failed: "could not be read to confirm the change (EACCES)").
 *
 * Two parts, both only for the recipes in use:
 *   - made at start, when missing, before the ruleset (so it is an ordinary entry with the directory's read
 *     rule): with the content the agent takes for "no state yet" (`{}` for claude), mode 0600, never following
 *     a symlink and never over anything (O_EXCL);
 *   - a rename over it (the agent's atomic save: `.claude.json.tmp.PID.RANDOM` renamed onto it) is refused with
 *     EXDEV (lib/supervisor/decide.ts): the renamed file would be a new one, unreadable again. claude then writes
 *     the file in place (its fallback when a rename fails with EXDEV), the same inode, which stays readable.
 *     The save is not atomic then: a crash in the middle of it can leave the file cut short (claude keeps
 *     backups in `~/.claude/backups/`).
 * A directory that is not carved (no protection below it, or a shared one such as /tmp) gets neither: there
 * the agent makes and renames its file as without hallpass.
 *
 * @module
 */

import type { Rule } from "../types.ts";
import { parsePathScope, scopeCovers } from "../policy/path_scope.ts";

/** Where `p` lies (its directory). */
function dirOf(p: string): string {
  return p.slice(0, p.lastIndexOf("/")) || "/";
}

/**
 * The start files whose directory is carved: a protection lies strictly below it and it is not shared. Pure.
 * These are the files kept in place (a rename over one is refused) and, when missing, made.
 */
export function startFilesInCarved(
  files: readonly { path: string; content: string }[],
  protectedPaths: readonly string[],
  shared: (dir: string) => boolean,
): { path: string; content: string }[] {
  return files.filter((f) => {
    const d = dirOf(f.path);
    return protectedPaths.some((p) => p.startsWith(d === "/" ? "/" : d + "/")) && !shared(d);
  });
}

/**
 * Makes the missing ones (O_CREAT|O_EXCL|O_NOFOLLOW, 0600) and returns the paths kept in place: each one that is
 * a regular file now (made here, or there before). A file that cannot be made is left to the agent (then named
 * at exit as made during the run).
 */
export function makeStartFiles(files: readonly { path: string; content: string }[]): string[] {
  const kept: string[] = [];
  for (const f of files) {
    try {
      const st = Deno.lstatSync(f.path);
      if (st.isFile) kept.push(f.path);
      continue;
    } catch {
      // missing (or unreadable: the open below says which)
    }
    try {
      Deno.writeTextFileSync(f.path, f.content, { createNew: true, mode: 0o600 });
      if (Deno.lstatSync(f.path).isFile) kept.push(f.path);
    } catch {
      // not made: the agent makes it during the run
    }
  }
  return kept;
}

/**
 * The agent (`--agent NAME`) whose recipe lets the sandbox write `path`, for the exit line about files made where
 * the sandbox cannot read them back: such a file is the agent's own state, read normally from its next start.
 */
export function agentOwning(rules: readonly Rule[], path: string): string | undefined {
  for (const r of rules) {
    if (r.effect !== "allow" || r.op !== "write" || r.source.kind !== "builtin") continue;
    if (!r.source.what.startsWith("--agent ")) continue;
    try {
      if (scopeCovers(parsePathScope(r.target, { cwd: "/" }), path)) return r.source.what.slice(8);
    } catch {
      // not a path scope
    }
  }
  return undefined;
}
