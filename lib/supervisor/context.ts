/**
 * What the decisions are made against, as it changes during a session: the rules (answers add some), the
 * Landlock write floor (a carved directory's entries leave it once changed), the floor trees holding a deny
 * rule, the protected paths; the DecideContext lib/supervisor/decide.ts reads, and what the fast path may
 * decide by itself (fastRoots, with `rootsVersion` bumped whenever that may have changed).
 *
 * @module
 */
import { Policy } from "../policy/policy.ts";
import { groupTableOf } from "../policy/exec_groups.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import type { PathScope, Rule } from "../types.ts";
import type { ProtectedPath } from "../policy/protected_paths.ts";
import type { FastRoots } from "../../ffi/fastpath.ts";
import { type DecideContext, inFloor } from "./decide.ts";
import { fastRootsOf, performContext, taintedFloor } from "./fast_roots.ts";
import { recordContext } from "./fast_replay.ts";
import { shebang } from "./decode.ts";
import { otherProcessPath } from "./sys_calls.ts";
import type { Resolver } from "./resolve.ts";
import type { End } from "./decode.ts";
import type { SessionConfig } from "./session_config.ts";
import { parentDir } from "../policy/path_scope.ts";

export class Context {
  readonly policy: Policy;
  /** What decide() reads (its floor and tainted trees are this object's, kept current). */
  readonly ctx: DecideContext;
  readonly #cfg: SessionConfig;
  readonly #floor: PathScope[];
  /** Carved floor directories (session_config.ts). */
  readonly #carved: Set<string>;
  /** Changes whenever what the fast path may decide may have. */
  rootsVersion = 0;

  constructor(cfg: SessionConfig, fs: Resolver) {
    this.#cfg = cfg;
    this.#floor = cfg.floor.map((f) => ({ kind: f.kind, path: f.path }));
    this.#carved = new Set(cfg.carved ?? []);
    const policy: Policy = new Policy(cfg.rules, {
      home: cfg.home,
      cwd: cfg.cwd,
      // In a container, a program in its $PATH is looked up inside its root.
      lookup: (p) =>
        cfg.container ? lookupInPath(p, cfg.pathEnv, (x) => programIn(fs, x)) : lookupInPath(p, cfg.pathEnv),
      isWritable: (p) => inFloor(this.#floor, p) || policy.decide("write", p, Date.now()).effect === "allow",
      groups: groupTableOf(cfg.groups),
    });
    this.policy = policy;
    this.ctx = {
      policy,
      floor: this.#floor,
      tainted: [],
      protected: cfg.protected ?? [],
      allowPrivileged: cfg.allowPrivilegedFiles === true,
      container: cfg.container !== undefined,
      project: cfg.container ? undefined : cfg.project, // the exit check's project (moved_in.ts)
      readProtected: cfg.readProtected,
      inPlace: cfg.inPlace,
      mediate: cfg.mediate,
      look: {
        exists: (p) => fs.view.exists(p),
        otherProcess: (p) => otherProcessPath(p, cfg.launcherPid),
        interpreterOf: (p, tid) => shebang(fs, p, tid),
      },
    };
    this.#retaint();
  }

  /** Paths that ask even where a rule allows (lib/policy/protected_paths.ts). */
  get protectedPaths(): readonly ProtectedPath[] {
    return this.ctx.protected;
  }

  /** Whether Landlock lets the sandbox make this write itself (decide.ts inFloor). */
  inFloor(path: string, contents = true): boolean {
    return inFloor(this.#floor, path, contents);
  }

  addRule(rule: Rule): void {
    this.policy.add(rule);
    this.#retaint(); // any rule may change what the fast path may decide (fastRoots)
  }

  removeRules(pred: (r: Rule) => boolean): number {
    const n = this.policy.remove(pred);
    this.#retaint();
    return n;
  }

  /**
   * What the fast path (ffi/fastpath.ts) may decide by itself: the floor trees it may continue writes in, and
   * the trees it may continue execs in (lib/supervisor/fast_roots.ts). Nothing while every decision is logged
   * (--log) or in a container (no floor).
   */
  fastRoots(logging: boolean): FastRoots {
    if (logging || this.#cfg.container) return { write: [], exec: [], files: [] };
    // HALLPASS_FASTPATH_RECORD: what the fast path's answers from now on are replayed against.
    recordContext({ ...this.#cfg, rules: [...this.policy.rules], floor: [...this.#floor] });
    // With connects not mediated, the fast path performs IP connects and sends (lib/policy/socket_policy.ts).
    return {
      ...fastRootsOf(this.policy, this.#floor, this.#cfg.mediate.exec, performContext(this.#cfg)),
      netDirect: !this.#cfg.mediate.connect,
    };
  }

  /**
   * After a performed change of names in a carved directory: the entries it removed or replaced there are no
   * longer what Landlock granted at start (its rules hold the inodes), so they leave the floor, and writes
   * there are performed from now on.
   */
  forgetCarved(ends: readonly End[]): void {
    if (this.#carved.size === 0) return;
    let changed = false;
    for (const t of ends) {
      const parent = parentDir(t.path);
      if (!this.#carved.has(parent)) continue;
      for (let i = this.#floor.length - 1; i >= 0; i--) {
        if (this.#floor[i].path === t.path) {
          this.#floor.splice(i, 1);
          changed = true;
        }
      }
    }
    if (changed) this.#retaint();
  }

  /** Floor roots that contain a deny rule: allowed writes there are emulated, not continued. */
  #retaint(): void {
    this.rootsVersion++;
    this.ctx.tainted = taintedFloor(this.#floor, this.policy.pathEntries("write"));
  }
}

function programIn(fs: Resolver, p: string): boolean {
  return p.startsWith("/") && fs.view.accessExec(p) === 0 && !fs.view.isDirectory(p);
}
