/**
 * The verdict on a write path and the answer it leads to: pure, shared by the mediator
 * (lib/supervisor/mediator.ts) and the replay of the fast path's answers (lib/supervisor/fast_replay.ts), so
 * that the C fast path (helper/fastpath/fastpath.c) is checked against the very code the mediator runs.
 *
 * @module
 */
import type { Policy } from "../policy/policy.ts";
import { scopeCovers } from "../policy/path_scope.ts";
import type { PathScope } from "../types.ts";
import { protectedHit, type ProtectedPath } from "../policy/protected_paths.ts";
import type { WriteCall } from "../filter/syscall_table.ts";
import { isDynamicLoader } from "../policy/loader.ts";

/**
 * floor: allowed, and Landlock lets the sandbox make it itself (a CONTINUE is safe for a call it covers);
 * allow: allowed, performed by the supervisor; deny; ask.
 */
export type Verdict = "floor" | "allow" | "deny" | "ask";

/** What a write is decided against. The arrays may be the mediator's own (it changes its floor). */
export interface WriteContext {
  policy: Policy;
  /** The Landlock write floor. */
  floor: readonly PathScope[];
  /** Floor trees holding a deny rule (fast_roots.ts taintedFloor): allowed writes there are performed. */
  tainted: readonly PathScope[];
  /** lib/policy/protected_paths.ts: ask even where a rule allows. */
  protected: readonly ProtectedPath[];
}

/**
 * Whether Landlock lets the sandbox make this write itself. `contents` (open, truncate): a rule on the file or
 * a tree above it; any other call changes a name in the parent directory, which a tree must cover (a tree's
 * own top is a name in a directory outside it: a carved one, or outside the floor).
 */
export function inFloor(floor: readonly PathScope[], path: string, contents = true): boolean {
  for (const f of floor) {
    if (
      contents
        ? scopeCovers(f, path)
        : f.kind === "tree" && path.length > f.path.length && scopeCovers(f, path)
    ) {
      return true;
    }
  }
  return false;
}

/** Whether no deny rule lies in the floor tree holding `path` (else an allowed write there is performed). */
export function floorSafe(tainted: readonly PathScope[], path: string): boolean {
  for (const f of tainted) if (scopeCovers(f, path)) return false;
  return true;
}

/**
 * The verdict on writing the canonical `path`. `contents`: the call writes a file's contents (open,
 * truncate); `names`: it moves or makes a name (rename, link), so a protected path below counts too.
 */
export function writeVerdict(
  ctx: WriteContext,
  path: string,
  contents: boolean,
  names = false,
  now = Date.now(),
): Verdict {
  const d = ctx.policy.decide("write", path, now);
  if (d.effect === "allow") {
    if (ctx.protected.length > 0 && protectedHit(ctx.protected, path, names, d.rule)) return "ask";
    return inFloor(ctx.floor, path, contents) && floorSafe(ctx.tainted, path) ? "floor" : "allow";
  }
  return d.effect;
}

/** What the mediator answers a write call with the verdicts on its ends. */
export type WriteAnswer = "continue" | "perform" | "deny" | "ask";

/**
 * The answer to a write call given its ends' verdicts: a deny anywhere denies, an ask asks, and an allowed
 * call is continued only when every end is in the floor, Landlock covers the call and it is not an fd form
 * (nothing in the kernel would re-check an fd's file); otherwise it is performed here.
 */
export function writeAnswer(call: WriteCall, verdicts: readonly Verdict[], fdForm: boolean): WriteAnswer {
  if (verdicts.includes("deny")) return "deny";
  if (verdicts.includes("ask")) return "ask";
  return call.landlock && !fdForm && verdicts.every((v) => v === "floor") ? "continue" : "perform";
}

/** The verdict on an exec: `at` is the program it is about (the script's interpreter when that decided). */
export interface ExecVerdict {
  effect: "allow" | "deny" | "ask";
  at: string;
  /** Denied as the dynamic loader run as a program (lib/policy/loader.ts): said why. */
  loader?: boolean;
}

/**
 * The verdict on running `target` (canonical; `anon`: a memfd or deleted file, which no rule can name: it
 * asks). An allowed script is decided on its `#!` interpreter too, up to the kernel's 4 levels, so an allowed
 * script cannot start a program that would have asked. `interpreterOf` reads a file's `#!` interpreter,
 * canonical (null: not a script).
 */
export function execVerdict(
  policy: Policy,
  target: string,
  anon: boolean,
  interpreterOf: (path: string) => string | null,
  now = Date.now(),
): ExecVerdict {
  const d = !anon && target.startsWith("/") ? policy.decide("exec", target, now).effect : "ask";
  if (d === "allow" && !anon) {
    let script = target;
    for (let level = 0; level < 4; level++) {
      const interp = interpreterOf(script);
      if (interp === null) break;
      const di = policy.decide("exec", interp, now).effect;
      if (di !== "allow") return { effect: di, at: interp };
      script = interp;
    }
  }
  if (d === "deny" && !anon && isDynamicLoader(target)) return { effect: "deny", at: target, loader: true };
  return { effect: d, at: target };
}
