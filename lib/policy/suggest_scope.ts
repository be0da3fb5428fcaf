/**
 * The scopes a prompt offers for `[t]` and `[a]` (docs/terminal.md): the arrows move along `scopes`, narrowest first,
 * and `suggested` is where the bar starts: "the directory that holds the tool's state".
 *
 * For a write to PATH the scopes are PATH itself, then each ancestor directory as `DIR/**`, up to depth 1
 * (`/home/**`, `/tmp/**`; never `/**`). The suggestion:
 *
 * * under `$HOME`, in a dot-directory: that directory plus one level (`~/.npm/_cacache/tmp/x` →
 *   `~/.npm/_cacache/**`; a file right in it → the dot-directory). In the XDG bases `~/.cache`, `~/.config`,
 *   `~/.local/share` and `~/.local/state`: the application's directory (`~/.cache/pip/http/x` →
 *   `~/.cache/pip/**`);
 * * under `/tmp`, `/var/tmp` or `/dev/shm`: the first directory below it (`/tmp/build-1/a/b` → `/tmp/build-1/**`);
 * * elsewhere: the file's parent directory.
 *
 * Chosen where the promise is silent, for safety: the suggestion is never a scope that covers `$HOME`, the project
 * directory, or a top-level directory (`/etc/**`, `/tmp/**`); the exact file is suggested instead
 * (`~/.bashrc`, `/tmp/x`, `/etc/hosts`, `~/.cache/x`). The person can still widen with the arrows.
 *
 * Paths are absolute and normalised. Pure.
 *
 * @module
 */

import { formatScope, parentDir, pathDepth, scopeCovers } from "./path_scope.ts";

/** Scopes narrowest first, and the index of the suggested one. */
export interface ScopeChoice {
  scopes: string[];
  suggested: number;
}

const XDG_BASES = [".cache", ".config", ".local/share", ".local/state"];
const TEMP_DIRS = ["/tmp", "/var/tmp", "/dev/shm"];

function under(dir: string, p: string): boolean {
  return p.length > dir.length && p.charCodeAt(dir.length) === 47 && p.startsWith(dir);
}

/** The first `levels` components of `p` below `dir` (p is under dir): `dir/a` for levels 1. */
function below(dir: string, p: string, levels: number): string {
  let i = dir.length;
  for (let k = 0; k < levels; k++) {
    const j = p.indexOf("/", i + 1);
    if (j < 0) return p;
    i = j;
  }
  return p.slice(0, i);
}

/** The directory that holds the tool's state, per the module notes (before the safety rule); null: the file. */
function stateDir(path: string, home: string | undefined): string | null {
  if (home && home !== "/" && under(home, path)) {
    const rel = path.slice(home.length + 1);
    if (rel.startsWith(".")) {
      for (const base of XDG_BASES) {
        const b = home + "/" + base;
        if (under(b, path)) {
          const app = below(b, path, 1);
          return app === path ? null : app;
        }
      }
      const dot = below(home, path, 1);
      if (dot === path) return null; // a dot-file right in $HOME
      const plusOne = below(dot, path, 1);
      return plusOne === path ? dot : plusOne;
    }
  }
  for (const t of TEMP_DIRS) {
    if (under(t, path)) {
      const first = below(t, path, 1);
      return first === path ? null : first;
    }
  }
  return parentDir(path);
}

/**
 * Scopes for a write to `path`.
 *
 * @example
 * ```ts
 * suggestScopes("/home/me/.npm/_cacache/tmp/x", { home: "/home/me" });
 * // { scopes: ["/home/me/.npm/_cacache/tmp/x", "/home/me/.npm/_cacache/tmp/**", "/home/me/.npm/_cacache/**",
 * //            "/home/me/.npm/**", "/home/me/**", "/home/**"], suggested: 2 }
 * ```
 */
export function suggestScopes(path: string, opts: { home?: string; project?: string }): ScopeChoice {
  const scopes = [path];
  const dirs: string[] = [];
  for (let d = parentDir(path); pathDepth(d) >= 1; d = parentDir(d)) {
    dirs.push(d);
    scopes.push(formatScope({ kind: "tree", path: d }));
  }
  const dir = stateDir(path, opts.home);
  const tooWide = (d: string) =>
    pathDepth(d) <= 1 ||
    (opts.home !== undefined && scopeCovers({ kind: "tree", path: d }, opts.home)) ||
    (opts.project !== undefined && scopeCovers({ kind: "tree", path: d }, opts.project));
  const at = dir === null ? -1 : dirs.indexOf(dir);
  return { scopes, suggested: at < 0 || tooWide(dirs[at]) ? 0 : at + 1 };
}

/** Scopes for running `progPath`: the program, then its directory `/**`; the program itself is suggested. */
export function suggestExecScopes(progPath: string): ScopeChoice {
  // A program without a path (a memfd, a deleted file: `anon:…`) can only be allowed once.
  if (!progPath.startsWith("/")) return { scopes: [progPath], suggested: 0 };
  const dir = parentDir(progPath);
  return { scopes: [progPath, formatScope({ kind: "tree", path: dir })], suggested: 0 };
}
