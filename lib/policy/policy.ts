/**
 * The decision: given the rules, does an operation go through, get denied, or ask? Pure; the supervisor calls
 * {@link Policy.decide} on its hot path.
 *
 * Reading of the rules' promise (docs/rules.md: "Deny wins over allow; a more specific rule wins over a broader one"):
 *
 * 1. Only rules for the same operation that have not expired (`expiresAt > now`) and cover the target count.
 * 2. The most specific of them decides. Paths: deeper is more specific, and an exact path beats a tree at the
 *    same path (`scopeSpecificity`): `allow write ~/.npm/**` beats `deny write ~/**` for `~/.npm/x`, and
 *    `deny write ~/.npm/_logs/**` beats both. Connect: see `destSpecificity` (smaller sets of address, port and
 *    protocol are more specific; `*` is the broadest). A rule for `@group` or a program name counts as each of
 *    its paths.
 * 3. At equal specificity, deny wins over allow ("deny wins").
 * 4. No rule: `ask` (the caller turns it into a deny under `--no-ask`).
 * 5. exec: an `allow` that comes from the `@system` group (e.g. the builtin `allow exec @system`) does not apply
 *    to a program the sandbox may write without asking (`isWritable(path)`): such a program asks, or whatever
 *    the other rules say. An allow written as a path (`allow exec /usr/**`) is the user's choice and applies.
 * 6. exec of the dynamic loader (lib/policy/loader.ts): denied unless an allow names the loader's own path (an exact
 *    rule, a program name): neither `@system` nor a tree rule allows it, and without a rule it is denied, not
 *    asked.
 *
 * Preconditions: write and exec targets are absolute, normalised paths (normalizePath); anything else is
 * denied. Connect targets are {@link ConnectTarget}s with canonical addresses (or their text, parsed per call).
 *
 * Speed: rules are compiled once (constructor, {@link Policy.add}) into hash indexes keyed by path prefix. A
 * path decision walks the target once, hashing each prefix, and looks up matches by number: no
 * allocation, cost proportional to the path length, not the number of rules. Decision objects are built at
 * compile time and shared (frozen): never mutate them.
 *
 * @module
 */

import {
  type ConnectDest,
  type ConnectTarget,
  destSpecificity,
  parseConnectDest,
  parseConnectTarget,
  PreparedTarget,
} from "./connect_dest.ts";
import { BUILTIN_GROUPS, expandGroup, type ReadonlyGroupTable } from "./exec_groups.ts";
import { formatScope, globCovers, globDir, parsePathScope, scopeSpecificity } from "./path_scope.ts";
import { isDynamicLoader } from "./loader.ts";
import { formatRule } from "./rules_file.ts";
import type { Op, PathScope, Rule } from "../types.ts";
import { UsageError } from "../types.ts";
import { formatSource } from "./rule_source.ts";

/** What the policy says about one operation. Shared and frozen: do not mutate. */
export interface Decision {
  readonly effect: "allow" | "deny" | "ask";
  /** The rule that decided (absent for `ask` and for refusals of malformed targets). */
  readonly rule?: Rule;
  /** One line for logs and `hallpass rules`: `allowed by "allow write /x/**" (rules:3)`. */
  readonly why: string;
}

export interface PolicyOptions {
  /** For `~` in rule targets. */
  home: string;
  /** For relative rule targets. */
  cwd: string;
  /** Finds a program name in `$PATH` (for `@group` members and name targets). */
  lookup: (prog: string) => string | null;
  /** Whether the sandbox may write `path` without asking; makes `@system` allows not apply there. */
  isWritable?: (path: string) => boolean;
  /** Group table (default: the builtins, exec_groups.ts BUILTIN_GROUPS). */
  groups?: ReadonlyGroupTable;
}

interface Entry {
  readonly rule: Rule;
  readonly deny: boolean;
  readonly spec: number;
  readonly expiresAt: number;
  readonly decision: Decision;
  /** exec allow from `@system`: skip when the program is writable. */
  readonly conditional: boolean;
  readonly path: string;
  readonly tree: boolean;
  /** A glob (`/dir/pre*post`, in `path`): indexed by its directory. */
  readonly glob: boolean;
  readonly dest: ConnectDest | null;
}

/**
 * A rule's decision. Its `why` is made when first read: most decisions are never logged, and the supervisor's
 * fast path compiles a policy while the first trapped call waits (lib/supervisor/host.ts).
 */
function decisionOf(rule: Rule): Decision {
  let why: string | undefined;
  return Object.freeze({
    effect: rule.effect,
    rule,
    get why(): string {
      return why ??= `${rule.effect === "allow" ? "allowed" : "denied"} by "${formatRule(rule)}" (${
        formatSource(rule.source)
      })`;
    },
  });
}

/** A rule's target as the policy compiled it: one path or tree (see {@link Policy.pathEntries}). */
export interface PathEntry {
  readonly effect: "allow" | "deny";
  /** The path, the tree's root, or the glob pattern (`/dir/pre*post`). */
  readonly path: string;
  readonly tree: boolean;
  /** `path` is a glob pattern: it covers names in its directory only (path_scope.ts globCovers). */
  readonly glob: boolean;
  /** ms since epoch; Infinity for rules without a duration. */
  readonly expiresAt: number;
  /** An exec allow from `@system`: it does not apply to programs the sandbox may write. */
  readonly conditional: boolean;
}

export { formatSource };

const ASK: Decision = Object.freeze({ effect: "ask", why: "no rule covers it" });
const ASK_WRITABLE: Decision = Object.freeze({
  effect: "ask",
  why: "the sandbox may write this program, so @system does not allow it",
});
const DENY_NOT_ABSOLUTE: Decision = Object.freeze({ effect: "deny", why: "not an absolute path" });
const DENY_BAD_TARGET: Decision = Object.freeze({ effect: "deny", why: "malformed target" });
const DENY_LOADER: Decision = Object.freeze({
  effect: "deny",
  why:
    "the dynamic loader as a program runs any file: only a rule naming its path allows it (lib/policy/loader.ts)",
});

// Prefix hash: h = (h * 31 + c) mod 2^25, written so that every intermediate value is below 2^30 and stays a
// small integer (a Smi) in every V8 tier: hashing never boxes a number, even before the code is optimised.
const HASH_SEED = 0x1505;
const HASH_MASK = 0x1ffffff;

function hashOf(s: string): number {
  let h = HASH_SEED;
  for (let i = 0; i < s.length; i++) h = ((h << 5) - h + s.charCodeAt(i)) & HASH_MASK;
  return h;
}
const ROOT_HASH = hashOf("/");

function better(e: Entry, best: Entry | null): boolean {
  return best === null || e.spec > best.spec || (e.spec === best.spec && e.deny && !best.deny);
}

/** Path entries indexed by the hash of their path. */
class PathIndex {
  readonly exact = new Map<number, Entry[]>();
  readonly tree = new Map<number, Entry[]>();
  /** Globs, by the hash of their directory. */
  readonly glob = new Map<number, Entry[]>();
  readonly root: Entry[] = [];

  add(e: Entry): void {
    if (e.glob) {
      const h = hashOf(globDir(e.path));
      const list = this.glob.get(h);
      if (list) list.push(e);
      else this.glob.set(h, [e]);
      return;
    }
    if (e.tree && e.path === "/") {
      this.root.push(e);
      return;
    }
    const map = e.tree ? this.tree : this.exact;
    const h = hashOf(e.path);
    const list = map.get(h);
    if (list) list.push(e);
    else map.set(h, [e]);
  }

  // Per-call state, kept in fields so that a decision allocates nothing (no closures, no result objects).
  #best: Entry | null = null;
  #now = 0;
  #path = "";
  #isWritable: ((p: string) => boolean) | undefined = undefined;
  #visit: ((e: Entry) => void) | null = null;
  /** 0 = not asked yet, 1 = not writable, 2 = writable. After {@link best}: 2 when a `@system` allow was skipped. */
  writable = 0;

  /**
   * The deciding entry for `path`, or null. `isWritable` is asked at most once, and only when an `@system`
   * allow covers the path. Calls `visit` for every live match when given (explain); the hot path passes null.
   */
  best(
    path: string,
    now: number,
    isWritable: ((p: string) => boolean) | undefined,
    visit: ((e: Entry) => void) | null,
  ): Entry | null {
    this.#best = null;
    this.#now = now;
    this.#path = path;
    this.#isWritable = isWritable;
    this.#visit = visit;
    this.writable = 0;
    if (this.root.length > 0) this.#consider(this.root, 1);
    const n = path.length;
    let h = HASH_SEED;
    let dirHash = ROOT_HASH; // the hash of the path's directory (the prefix before its last "/")
    for (let i = 0; i < n; i++) {
      h = ((h << 5) - h + path.charCodeAt(i)) & HASH_MASK;
      const end = i + 1;
      if (end < n && path.charCodeAt(end) !== 47) continue;
      if (end === 1) continue; // "/" itself: root trees are handled above
      if (end < n) dirHash = h;
      const t = this.tree.get(h);
      if (t !== undefined) this.#consider(t, end);
      if (end === n) {
        const x = this.exact.get(h);
        if (x !== undefined) this.#consider(x, end);
      }
    }
    if (this.glob.size > 0 && n > 1) {
      const g = this.glob.get(dirHash);
      if (g !== undefined) this.#consider(g, -1);
    }
    const best = this.#best;
    this.#best = null;
    this.#visit = null;
    this.#isWritable = undefined;
    return best;
  }

  /**
   * Entries of a bucket whose path is path[0, end) (a bucket may hold other paths with the same hash); for
   * `end` -1, globs that cover the path.
   */
  #consider(list: Entry[], end: number): void {
    for (let k = 0; k < list.length; k++) {
      const e = list[k];
      if (e.expiresAt <= this.#now) continue;
      if (
        end < 0 ? !globCovers(e.path, this.#path) : e.path.length !== end || !this.#path.startsWith(e.path)
      ) {
        continue;
      }
      if (e.conditional && this.#isWritable !== undefined) {
        if (this.writable === 0) {
          // isWritable may call decide() again (even on this index): keep this call's state across it.
          const path = this.#path,
            now = this.#now,
            best = this.#best,
            visit = this.#visit,
            isW = this.#isWritable;
          const w = isW(path) ? 2 : 1;
          this.#path = path;
          this.#now = now;
          this.#best = best;
          this.#visit = visit;
          this.#isWritable = isW;
          this.writable = w;
        }
        if (this.writable === 2) continue;
      }
      if (this.#visit !== null) this.#visit(e);
      if (better(e, this.#best)) this.#best = e;
    }
  }
}

/**
 * The rules of a session, compiled for fast decisions.
 *
 * @example
 * ```ts
 * const p = new Policy([{ effect: "allow", op: "write", target: "/home/me/.npm/**", source: { kind: "cli", option: "--allow-path" } }],
 *   { home: "/home/me", cwd: "/p", lookup: () => null });
 * p.decide("write", "/home/me/.npm/_cacache/x", Date.now()).effect; // "allow"
 * ```
 */
export class Policy {
  readonly #opts: PolicyOptions;
  #rules: Rule[] = [];
  #write = new PathIndex();
  #exec = new PathIndex();
  #connect: Entry[] = [];
  /** The connect target being decided, parsed in place (no allocation per decision). */
  readonly #prepared = new PreparedTarget();
  #systemScopes: Set<string> | null = null;

  constructor(rules: readonly Rule[], opts: PolicyOptions) {
    this.#opts = opts;
    for (const r of rules) this.add(r);
  }

  /** The rules, in the order they were added. */
  get rules(): readonly Rule[] {
    return this.#rules;
  }

  /** Compiles and adds a rule. Throws {@link UsageError} when its target does not parse. */
  add(rule: Rule): void {
    const entries = this.#compile(rule);
    this.#rules.push(rule);
    for (const e of entries) this.#insert(e);
  }

  /** Removes the rules `pred` picks; returns how many. */
  remove(pred: (r: Rule) => boolean): number {
    const keep = this.#rules.filter((r) => !pred(r));
    const removed = this.#rules.length - keep.length;
    if (removed > 0) {
      this.#rules = [];
      this.#write = new PathIndex();
      this.#exec = new PathIndex();
      this.#connect = [];
      for (const r of keep) this.add(r);
    }
    return removed;
  }

  /** Drops rules that expired at `now`; returns how many. */
  prune(now: number): number {
    return this.remove((r) => r.expiresAt !== undefined && r.expiresAt <= now);
  }

  /**
   * The decision for `op` on `target` at time `now` (ms since epoch). Allocates nothing for path targets and
   * prepared connect targets.
   */
  decide(op: Op, target: string | ConnectTarget, now: number): Decision {
    if (op === "connect") {
      let t: ConnectTarget;
      if (typeof target === "string") {
        try {
          t = parseConnectTarget(target);
        } catch {
          return DENY_BAD_TARGET;
        }
      } else t = target;
      const prepared = this.#prepared;
      prepared.prepare(t);
      let best: Entry | null = null;
      const list = this.#connect;
      for (let k = 0; k < list.length; k++) {
        const e = list[k];
        if (e.expiresAt > now && better(e, best) && prepared.covers(e.dest!)) best = e;
      }
      return best === null ? ASK : best.decision;
    }
    if (typeof target !== "string") return DENY_BAD_TARGET;
    if (target.charCodeAt(0) !== 47) return DENY_NOT_ABSOLUTE;
    const index = op === "write" ? this.#write : this.#exec;
    const best = index.best(target, now, op === "exec" ? this.#opts.isWritable : undefined, null);
    // 6. The dynamic loader: allowed only by a rule naming it (not @system, a tree or a glob).
    if (op === "exec" && (best === null || (!best.deny && (best.tree || best.conditional || best.glob)))) {
      if (isDynamicLoader(target)) return DENY_LOADER;
    }
    if (best !== null) return best.decision;
    return index.writable === 2 ? ASK_WRITABLE : ASK;
  }

  /**
   * Every compiled path entry of `op` (groups and program names expanded), for the supervisor's fast path
   * (lib/supervisor/fast_roots.ts).
   */
  pathEntries(op: "write" | "exec"): PathEntry[] {
    const index = op === "write" ? this.#write : this.#exec;
    const out: PathEntry[] = [];
    for (
      const list of [index.root, ...index.exact.values(), ...index.tree.values(), ...index.glob.values()]
    ) {
      for (const e of list) {
        out.push({
          effect: e.deny ? "deny" : "allow",
          path: e.path,
          tree: e.tree,
          glob: e.glob,
          expiresAt: e.expiresAt,
          conditional: e.conditional,
        });
      }
    }
    return out;
  }

  /** The decision and every live rule that covers the target, most specific first (for `hallpass rules`). */
  explain(
    op: Op,
    target: string | ConnectTarget,
    now: number,
  ): { decision: Decision; matching: { rule: Rule; specificity: number }[] } {
    const decision = this.decide(op, target, now);
    const found = new Map<Rule, number>();
    const visit = (e: Entry) => found.set(e.rule, Math.max(found.get(e.rule) ?? -Infinity, e.spec));
    if (op === "connect") {
      let t: ConnectTarget | null = null;
      try {
        t = typeof target === "string" ? parseConnectTarget(target) : target;
      } catch { /* malformed: nothing matches */ }
      if (t !== null) {
        const prepared = new PreparedTarget();
        prepared.prepare(t);
        for (const e of this.#connect) if (e.expiresAt > now && prepared.covers(e.dest!)) visit(e);
      }
    } else if (typeof target === "string" && target.startsWith("/")) {
      (op === "write" ? this.#write : this.#exec).best(
        target,
        now,
        op === "exec" ? this.#opts.isWritable : undefined,
        visit,
      );
    }
    const matching = [...found].map(([rule, specificity]) => ({ rule, specificity }));
    matching.sort((a, b) =>
      b.specificity - a.specificity ||
      (a.rule.effect === b.rule.effect ? 0 : a.rule.effect === "deny" ? -1 : 1)
    );
    return { decision, matching };
  }

  #insert(e: Entry): void {
    if (e.rule.op === "connect") this.#connect.push(e);
    else (e.rule.op === "write" ? this.#write : this.#exec).add(e);
  }

  #compile(rule: Rule): Entry[] {
    const decision = decisionOf(rule);
    const base = {
      rule,
      deny: rule.effect === "deny",
      expiresAt: rule.expiresAt ?? Infinity,
      decision,
    };
    const { cwd, home } = this.#opts;
    if (rule.op === "connect") {
      const dest = parseConnectDest(rule.target);
      return [{
        ...base,
        spec: destSpecificity(dest),
        conditional: false,
        path: "",
        tree: false,
        glob: false,
        dest,
      }];
    }
    let scopes: PathScope[];
    let fromSystem = false;
    const t = rule.target;
    if (rule.op === "exec" && t.startsWith("@")) {
      scopes = expandGroup(t, this.#opts.lookup, this.#groups());
      fromSystem = true;
    } else if (rule.op === "exec" && t.length > 0 && !t.includes("/") && t !== "~") {
      const p = this.#opts.lookup(t);
      if (p === null || !p.startsWith("/")) {
        throw new UsageError(`program ${JSON.stringify(t)} not found in $PATH`);
      }
      scopes = [parsePathScope(p, { cwd: "/" })];
    } else {
      scopes = [parsePathScope(t, { cwd, home })];
    }
    const system = fromSystem && rule.effect === "allow" ? this.#system() : null;
    return scopes.map((s) => ({
      ...base,
      spec: scopeSpecificity(s),
      conditional: system !== null && system.has(formatScope(s)),
      path: s.path,
      tree: s.kind === "tree",
      glob: s.kind === "glob",
      dest: null,
    }));
  }

  #groups(): ReadonlyGroupTable {
    return this.#opts.groups ?? BUILTIN_GROUPS;
  }

  /** The scopes of `@system`, formatted (computed once). */
  #system(): Set<string> {
    if (this.#systemScopes === null) {
      this.#systemScopes = new Set(
        expandGroup("@system", this.#opts.lookup, this.#groups()).map(formatScope),
      );
    }
    return this.#systemScopes;
  }
}
