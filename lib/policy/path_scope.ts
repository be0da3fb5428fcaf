/**
 * Path scopes: what `--allow-path PATH`, `write PATH` rules and exec `DIR/**` targets cover (README.md, docs/rules.md).
 *
 * A scope is `exact` (one path) or `tree` (a directory and everything below it, written `DIR/**`). All paths are
 * absolute and lexically normalised: `.` and `..` resolved without looking at the file system, `//` collapsed,
 * no trailing `/`. Pure: the only question asked of the outside world is `isDir`, passed in by the caller.
 *
 * Choices where the promise is silent:
 * * `~` and `~/…` expand to the `home` given; `~user` is not expanded (it is an ordinary relative name).
 * * A trailing `/` (`/a/b/`) says "directory": it gives a tree, like `/a/b/**`.
 * * `..` above `/` stays at `/` (as the kernel does).
 * * Two patterns: a trailing `/**` (a tree), and one `*` in the last component (`~/.claude.json*`,
 *   `/tmp/claude-*-cwd`): a `glob` scope, the names in that one directory that start with what is before the
 *   `*` and end with what is after it (possibly nothing: `~/.claude.json*` covers `~/.claude.json` itself). It
 *   never matches across `/` and never below the directory. Any other `*`, `?` or `[` is refused (a file
 *   really named so cannot be written as a scope; use its directory). A glob is never a Landlock rule: writes it
 *   allows are checked and performed by the supervisor.
 *
 * @module
 */

import { type PathScope, UsageError } from "../types.ts";

const SLASH = 47; // "/"

/**
 * Makes `p` absolute (against `cwd`) and lexically normal. A leading `~` or `~/` expands to `home` when given.
 *
 * @example
 * ```ts
 * normalizePath("../b//c/.", "/a/x"); // "/a/b/c"
 * normalizePath("~/.npm", "/", "/home/me"); // "/home/me/.npm"
 * ```
 */
export function normalizePath(p: string, cwd: string, home?: string): string {
  if (p === "~" || p.startsWith("~/")) {
    if (home === undefined) {
      throw new UsageError(`cannot expand "~" in ${JSON.stringify(clip(p))}: no home directory`);
    }
    p = home + p.slice(1);
  }
  if (p.charCodeAt(0) !== SLASH) p = cwd + "/" + p;
  // Fast path: already normal (the supervisor's paths usually are).
  if (isNormal(p)) return p;
  const out: string[] = [];
  for (const part of p.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") out.pop();
    else out.push(part);
  }
  return "/" + out.join("/");
}

function isNormal(p: string): boolean {
  if (p.charCodeAt(0) !== SLASH) return false;
  if (p.length === 1) return true;
  if (p.charCodeAt(p.length - 1) === SLASH) return false;
  return !p.includes("//") && !p.includes("/./") && !p.includes("/../") && !p.endsWith("/.") &&
    !p.endsWith("/..");
}

/** Options for {@link parsePathScope}. */
export interface PathScopeOptions {
  /** Relative paths are relative to this (absolute) directory. */
  cwd: string;
  /** Expansion of a leading `~`; without it `~` is an error. */
  home?: string;
  /** Whether a path is an existing directory (then it gives a tree). Without it, only `/**` gives a tree. */
  isDir?: (path: string) => boolean;
}

/**
 * Parses a path scope as written by a user: `PATH/**` → tree; an existing directory (asks `isDir`) or a path
 * with a trailing `/` → tree; otherwise the exact path. Throws {@link UsageError} with a one-line message.
 *
 * @example
 * ```ts
 * parsePathScope("~/.npm/**", { cwd: "/p", home: "/home/me" }); // { kind: "tree", path: "/home/me/.npm" }
 * parsePathScope("out.txt", { cwd: "/p" }); // { kind: "exact", path: "/p/out.txt" }
 * ```
 */
export function parsePathScope(text: string, opts: PathScopeOptions): PathScope {
  if (text.length === 0) throw new UsageError("empty path");
  if (text.includes("\0")) throw new UsageError(`path contains a NUL byte: ${JSON.stringify(clip(text))}`);
  let body = text;
  let tree = false;
  if (body === "**") {
    throw new UsageError(`bad path "**": write DIR/** (e.g. ./**) for a directory and everything below it`);
  }
  if (body.endsWith("/**")) {
    body = body.slice(0, -3);
    tree = true;
    if (body === "") body = "/";
  }
  const slash = body.lastIndexOf("/");
  const star = body.indexOf("*");
  const bad = body.search(/[?[]/);
  const lastStar = body.lastIndexOf("*");
  const badAt = bad >= 0
    ? bad
    : star >= 0 && (tree || star < slash || lastStar !== star || body.endsWith("/"))
    ? (tree || star < slash ? star : lastStar)
    : -1;
  if (badAt >= 0) {
    throw new UsageError(
      `bad path ${JSON.stringify(clip(text))}: "${
        body[badAt]
      }" is not allowed (the patterns are a trailing /** ` +
        `and one * in the last component)`,
    );
  }
  if (star >= 0) {
    // Normalise the directory only: the pattern component is kept as written.
    const name = body.slice(slash + 1);
    const dir = slash < 0
      ? normalizePath(opts.cwd, "/")
      : normalizePath(body.slice(0, slash) || "/", opts.cwd, opts.home);
    return { kind: "glob", path: (dir === "/" ? "" : dir) + "/" + name };
  }
  if (!tree && body.length > 1 && body.endsWith("/")) tree = true;
  const path = normalizePath(body, opts.cwd, opts.home);
  if (!tree && opts.isDir?.(path)) tree = true;
  return { kind: tree ? "tree" : "exact", path };
}

/**
 * Parses a scope already in canonical form (`/a/b/**` or `/a/b`, as {@link formatScope} writes it), without
 * asking the file system. Used for rule targets that were normalised when the rule was made.
 */
export function scopeFromCanonical(text: string, cwd = "/", home?: string): PathScope {
  return parsePathScope(text, { cwd, home });
}

/**
 * Whether `scope` covers `path` (absolute and normal). Allocates nothing.
 *
 * @example
 * ```ts
 * scopeCovers({ kind: "tree", path: "/a" }, "/a/b"); // true
 * scopeCovers({ kind: "tree", path: "/a" }, "/ab"); // false
 * ```
 */
export function scopeCovers(scope: PathScope, path: string): boolean {
  const sp = scope.path;
  if (scope.kind === "exact") return path === sp;
  if (scope.kind === "glob") return globCovers(sp, path);
  if (sp.length === 1) return path.charCodeAt(0) === SLASH; // "/**"
  if (path.length === sp.length) return path === sp;
  return path.length > sp.length && path.charCodeAt(sp.length) === SLASH && path.startsWith(sp);
}

/**
 * Whether glob pattern `pattern` (`/dir/pre*post`) covers `path` (absolute and normal): the same directory, a
 * name that starts with `pre` and ends with `post`, with room for both. Allocates nothing.
 */
export function globCovers(pattern: string, path: string): boolean {
  const slash = pattern.lastIndexOf("/");
  if (path.lastIndexOf("/") !== slash || !path.startsWith(pattern.slice(0, slash + 1))) return false;
  const star = pattern.indexOf("*", slash);
  const pre = star - slash - 1, post = pattern.length - star - 1;
  if (path.length - slash - 1 < pre + post) return false;
  return path.startsWith(pattern.slice(slash + 1, star), slash + 1) && path.endsWith(pattern.slice(star + 1));
}

/** The directory a glob pattern's names are in (`/a` for `/a/b*`, `/` for `/b*`). */
export function globDir(pattern: string): string {
  const slash = pattern.lastIndexOf("/");
  return slash === 0 ? "/" : pattern.slice(0, slash);
}

/**
 * Whether a path or write target would be read as a glob: a `*` in its last component, other than a trailing
 * `/**`. A file really named `a*` cannot be a rule's exact path: a rule made from it would cover more.
 */
export function isGlobTarget(path: string): boolean {
  return !path.endsWith("/**") && path.indexOf("*", path.lastIndexOf("/")) >= 0;
}

/** `/a/b/**` for a tree (`/**` for the root), `/a/b` for an exact path, the pattern for a glob. */
export function formatScope(scope: PathScope): string {
  if (scope.kind === "exact" || scope.kind === "glob") return scope.path;
  return scope.path === "/" ? "/**" : scope.path + "/**";
}

/** The directory an absolute path is in: `/` for `/` and `/NAME` (and for a bare name). */
export function parentDir(p: string): string {
  const i = p.lastIndexOf("/");
  return i <= 0 ? "/" : p.slice(0, i);
}

/** Number of components: `/` → 0, `/a` → 1, `/a/b` → 2. */
export function pathDepth(path: string): number {
  if (path.length <= 1) return 0;
  let n = 0;
  for (let i = 0; i < path.length; i++) if (path.charCodeAt(i) === SLASH) n++;
  return n;
}

/**
 * How specific a scope is: `2 × depth`, plus 1 for an exact path. Deeper is more specific, and an exact path
 * beats a tree at the same path (`/a` = 3 > `/a/**` = 2), but a tree one level deeper beats both
 * (`/a/b/**` = 4). A glob counts as deep as the names it matches, without the 1 of an exact path: `/a/b*` = 4
 * beats `/a/**` (2) and loses to the exact `/a/bc` (5).
 */
export function scopeSpecificity(scope: PathScope): number {
  return 2 * pathDepth(scope.path) + (scope.kind === "exact" ? 1 : 0);
}

/** Shortens hostile or huge text for an error message. */
export function clip(text: string, max = 80): string {
  return text.length <= max ? text : text.slice(0, max) + "…";
}
