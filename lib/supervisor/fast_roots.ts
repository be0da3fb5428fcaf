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
import type { FastRoots } from "../../ffi/fastpath.ts";
import type { PathScope } from "../types.ts";
import { globDir, scopeCovers } from "../policy/path_scope.ts";

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

/** All three lists for a session's policy and floor. */
export function fastRootsOf(policy: Policy, floor: readonly PathScope[], mediateExec: boolean): FastRoots {
  const write = policy.pathEntries("write");
  return {
    write: fastWriteRoots(floor, write).slice(0, FAST_LIST_MAX),
    exec: mediateExec ? fastExecRoots(policy.pathEntries("exec"), write, floor).slice(0, FAST_LIST_MAX) : [],
    files: fastFileRoots(floor, write).slice(0, FAST_LIST_MAX),
  };
}
