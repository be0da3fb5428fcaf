/**
 * Which trees the supervisor's fast path (helper/fastpath/fastpath.c) may decide in by itself. Pure: the
 * mediator calls these with its floor and its policy's compiled entries whenever the rules change.
 *
 * Both answers are conservative: a tree is left out whenever any rule could make a decision inside it differ
 * from "allow", and then the mediator decides there, as before.
 *
 * @module
 */
import type { PathEntry, Policy } from "../policy/policy.ts";
import type { FastRoots, PerformRegion } from "../../ffi/fastpath.ts";
import type { PathScope } from "../types.ts";
import { globDir, scopeCovers } from "../policy/path_scope.ts";
import type { ProtectedPath } from "../policy/protected_paths.ts";

interface Scope {
  path: string;
  tree: boolean;
  glob?: boolean;
}

/**
 * Whether the scopes (a tree or an exact path each) have a path in common. A glob counts as its whole
 * directory tree (more than it covers): conservative, it can only leave a root out.
 */
function overlap(a: Scope, b: Scope): boolean {
  if (a.glob) a = { path: globDir(a.path), tree: true };
  if (b.glob) b = { path: globDir(b.path), tree: true };
  return (a.tree && scopeCovers({ kind: "tree", path: a.path }, b.path)) ||
    (b.tree && scopeCovers({ kind: "tree", path: b.path }, a.path)) ||
    a.path === b.path;
}

/**
 * The exec trees the fast path may continue an exec in, without asking the mediator: trees of `allow exec`
 * rules without a duration such that, for every program below them, the policy says allow:
 *   - no deny rule for exec overlaps the tree (inside it, at it, or above it: whichever is more specific,
 *     leaving the tree out never changes an answer);
 *   - for an allow from `@system` (which does not apply to a program the sandbox may write), nothing in the
 *     tree may be written without asking: no floor entry and no write allow overlaps it.
 * Never "/" (an `allow exec /**` is decided by the mediator).
 */
export function fastExecRoots(
  exec: readonly PathEntry[],
  write: readonly PathEntry[],
  floor: readonly PathScope[],
): string[] {
  const out: string[] = [];
  for (const c of exec) {
    if (c.effect !== "allow" || !c.tree || c.path === "/" || c.expiresAt !== Infinity) continue;
    if (exec.some((e) => e.effect === "deny" && overlap(e, c))) continue;
    if (c.conditional) {
      if (write.some((w) => w.effect === "allow" && overlap(w, c))) continue;
      if (floor.some((f) => overlap({ path: f.path, tree: f.kind === "tree", glob: f.kind === "glob" }, c))) {
        continue;
      }
    }
    if (!out.includes(c.path)) out.push(c.path);
  }
  return out;
}

/**
 * The floor trees that hold (or lie inside) a deny rule for writes: Landlock allows the whole tree, so an
 * allowed write there must be performed by the supervisor (checked and done on the same file), never
 * continued.
 */
export function taintedFloor(floor: readonly PathScope[], write: readonly PathEntry[]): PathScope[] {
  return floor.filter((f) =>
    f.kind === "tree" && write.some((w) => w.effect === "deny" && overlap(w, { path: f.path, tree: true }))
  );
}

/** The floor trees the fast path may continue writes in: the trees no deny rule taints. */
export function fastWriteRoots(floor: readonly PathScope[], write: readonly PathEntry[]): string[] {
  const tainted = taintedFloor(floor, write);
  return floor.filter((f) => f.kind === "tree" && !tainted.includes(f)).map((f) => f.path);
}

/** The floor's single files (/dev/null...) whose opens for writing the fast path may continue: no deny on them. */
export function fastFileRoots(floor: readonly PathScope[], write: readonly PathEntry[]): string[] {
  return floor.filter((f) =>
    f.kind === "exact" && !write.some((w) => w.effect === "deny" && overlap(w, { path: f.path, tree: false }))
  ).map((f) => f.path);
}

/**
 * How many paths one list of the fast path holds (MAX_ROOTS in helper/fastpath/fastpath.c). A carved project
 * top with more entries gives only the first ones: any part of a list is a correct list (what is left out
 * goes to the mediator, which decides the same).
 */
export const FAST_LIST_MAX = 512;

/** Where the fast path may perform a write itself: ffi/fastpath.ts {@link PerformRegion}. */
export type { PerformRegion };

/** What besides the policy and the floor decides a write the mediator performs (its session config). */
export interface PerformContext {
  /** lib/policy/protected_paths.ts: these ask where a rule allows. */
  protected?: readonly ProtectedPath[];
  /** Read protections (lib/policy/secrets.ts): a rename or link must not carry one elsewhere. */
  readProtect?: readonly string[];
  /** Directories whose new entries cannot be read back: the mediator says so (lib/floor/read_floor.ts). */
  readCarved?: Iterable<string>;
  /** The project: a rename into it from outside is the mediator's (moved_in.ts). */
  project?: string;
}

/** The perform context of a session's config (lib/supervisor/session_config.ts). */
export function performContext(cfg: {
  protected?: readonly ProtectedPath[];
  readProtected?: { protect: readonly string[] };
  readCarved?: ReadonlyMap<string, unknown>;
  project?: string;
}): PerformContext {
  return {
    protected: cfg.protected,
    readProtect: cfg.readProtected?.protect,
    readCarved: cfg.readCarved?.keys(),
    project: cfg.project,
  };
}

/** How many exceptions the fast path takes (EXCEPT_MAX in helper/fastpath/fastpath.c). */
export const FAST_EXCEPT_MAX = 60000;

/**
 * The perform region (see {@link PerformRegion}). Roots: trees of `allow write` rules without a duration, not
 * "/", with no deny on the same tree (at equal specificity deny wins; anything deeper, or an exact deny of the
 * root itself, is an exception).
 * Exceptions: every deny rule, every floor entry (there the mediator continues, or it is tainted), every
 * protected path, every read protection, and the new entries of every read-carved directory.
 */
export function fastPerformRegion(
  write: readonly PathEntry[],
  floor: readonly PathScope[],
  ctx: PerformContext,
): PerformRegion {
  const none: PerformRegion = { roots: [], tree: [], exact: [], children: [], newNames: [] };
  const roots: string[] = [];
  for (const c of write) {
    if (c.effect !== "allow" || !c.tree || c.glob || c.path === "/" || c.expiresAt !== Infinity) continue;
    if (write.some((e) => e.effect === "deny" && e.tree && !e.glob && e.path === c.path)) continue;
    if (!roots.includes(c.path)) roots.push(c.path);
  }
  if (roots.length === 0) return none;
  const tree = new Set<string>(), exact = new Set<string>(), children = new Set<string>();
  const newNames = new Set<string>();
  const add = (s: { path: string; kind?: string; tree?: boolean; glob?: boolean }) => {
    if (s.glob || s.kind === "glob") children.add(globDir(s.path));
    else if (s.tree || s.kind === "tree") tree.add(s.path);
    else exact.add(s.path);
  };
  for (const e of write) if (e.effect === "deny") add(e);
  for (const f of floor) add(f);
  for (const p of ctx.protected ?? []) add(p.scope);
  for (const p of ctx.readProtect ?? []) tree.add(p);
  for (const d of ctx.readCarved ?? []) newNames.add(d);
  if (tree.size + exact.size + children.size + newNames.size > FAST_EXCEPT_MAX) return none;
  return {
    roots: roots.slice(0, FAST_LIST_MAX),
    tree: [...tree],
    exact: [...exact],
    children: [...children],
    newNames: [...newNames],
    ...(ctx.project !== undefined ? { project: ctx.project } : {}),
  };
}

/** All the lists for a session's policy and floor. */
export function fastRootsOf(
  policy: Policy,
  floor: readonly PathScope[],
  mediateExec: boolean,
  perform?: PerformContext,
): FastRoots {
  const write = policy.pathEntries("write");
  return {
    write: fastWriteRoots(floor, write).slice(0, FAST_LIST_MAX),
    exec: mediateExec ? fastExecRoots(policy.pathEntries("exec"), write, floor).slice(0, FAST_LIST_MAX) : [],
    files: fastFileRoots(floor, write).slice(0, FAST_LIST_MAX),
    perform: perform ? fastPerformRegion(write, floor, perform) : undefined,
  };
}
