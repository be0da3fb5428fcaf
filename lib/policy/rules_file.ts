/**
 * Rules files (docs/rules.md): `--rules FILE`, the saved answers in `$XDG_CONFIG_HOME/hallpass/rules`, and a
 * project's own file.
 *
 * Grammar, one rule a line:
 *
 *     allow|deny write|exec|connect TARGET [for DURATION]
 *     group @name MEMBER...
 *     protect PATH           PATH (a file or a directory and everything below) is unreadable (lib/policy/secrets.ts)
 *     allow read PATH        lifts the protection of PATH, or makes PATH readable inside a protected directory
 *     # a comment; also after a rule: "allow write /x  # why"
 *
 * * Targets are those of README.md: write → a path scope (`PATH`, `DIR/**`, an existing directory is a tree,
 *   `~` is the home directory, relative paths are relative to `cwd`); exec → a path, `DIR/**`, a program name
 *   looked up in `$PATH` when the file is read (an error if not found), or `@group`; connect → a destination
 *   (connect_dest.ts).
 * * A target containing spaces, `"` or `#` is written as a JSON string: `allow write "/home/me/My Files/**"`.
 *   A `#` starts a comment only where a word starts, so `/a#b` is a path.
 * * `for DURATION` makes the rule expire DURATION after the file is read (`now`).
 * * `group @name MEMBER...` defines a program group or adds members to one (exec_groups.ts); members are
 *   paths, `DIR/**`, program names or `@group`. The group must be defined above its first use.
 * * Every bad line is an error `FILE:LINE: problem` ({@link RulesError}); nothing is skipped silently.
 *
 * Project files (`project: true`): a file inside the project can only narrow what is allowed.
 * Chosen reading: such a file may contain only `deny` and `protect` rules. An `allow` line is an error naming the
 * line, and so is a `group` line (adding a program to a group that a user rule allows would widen that rule).
 *
 * @module
 */

import { formatDest, parseConnectDest } from "./connect_dest.ts";
import { formatDuration, parseDuration } from "./duration.ts";
import { BUILTIN_GROUPS, checkMember, defineGroup, groupName, type GroupTable } from "./exec_groups.ts";
import { clip, formatScope, normalizePath, parsePathScope } from "./path_scope.ts";
import { type Op, OPS, type ReadRule, type Rule, UsageError } from "../types.ts";

/** A bad line in a rules file. `message` is `FILE:LINE: problem`. */
export class RulesError extends UsageError {
  override name = "RulesError";
  constructor(readonly file: string, readonly line: number, readonly problem: string) {
    super(`${file}:${line}: ${problem}`);
  }
}

/** What target parsing needs from the outside world. */
export interface TargetOptions {
  /** Relative paths are relative to this directory. */
  cwd: string;
  /** Expansion of `~`. */
  home?: string;
  /** Whether a path is an existing directory (then a write or exec target covers everything below it). */
  isDir?: (path: string) => boolean;
  /** Finds a program name in `$PATH`: its absolute path, or null. */
  lookup?: (prog: string) => string | null;
  /**
   * Group table for `@group` targets and `group` lines (default: the builtins only; a `group` line then is an
   * error: the caller that reads group lines keeps their table, lib/sandbox/plan.ts).
   */
  groups?: GroupTable;
}

export interface ParseRulesOptions extends TargetOptions {
  /** The file name used in errors and in each rule's source. */
  file: string;
  /** A file inside the project: only `deny` rules (see the module notes). */
  project: boolean;
  /** The time `for DURATION` counts from (ms since epoch); default `Date.now()`. */
  now?: number;
  /**
   * Where `protect PATH` and `allow read PATH` lines go. Without it they are an error: read protections are
   * set at start (a sandbox's Landlock floor, a pod's protect profile: lib/agent/pod_reads.ts).
   */
  reads?: ReadRule[];
}

/**
 * The canonical target of a rule for `op`, as {@link Rule.target} holds it: `/a/b/**` or `/a/b` for write,
 * the same or `@group` for exec (names become the path `lookup` finds), the canonical destination for connect.
 * Throws {@link UsageError} with a one-line message.
 *
 * @example
 * ```ts
 * parseRuleTarget("write", "~/.npm/**", { cwd: "/p", home: "/home/me" }); // "/home/me/.npm/**"
 * parseRuleTarget("connect", "tcp:127.0.0.1:80", { cwd: "/" }); // "tcp:127.0.0.1:80"
 * ```
 */
export function parseRuleTarget(op: Op, text: string, opts: TargetOptions): string {
  switch (op) {
    case "write":
      return formatScope(parsePathScope(text, opts));
    case "connect":
      return formatDest(parseConnectDest(text));
    case "exec": {
      if (text.startsWith("@")) {
        const n = groupName(text);
        const groups = opts.groups ?? BUILTIN_GROUPS;
        if (!groups.has(n)) {
          throw new UsageError(`unknown group ${n} (known: ${[...groups.keys()].join(", ")})`);
        }
        return n;
      }
      if (text.length > 0 && !text.includes("/") && text !== "~" && text !== "." && text !== "..") {
        if (text.includes("\0")) throw new UsageError(`program name contains a NUL byte`);
        const found = opts.lookup?.(text) ?? null;
        if (found === null || !found.startsWith("/")) {
          throw new UsageError(`program ${JSON.stringify(clip(text))} not found in $PATH`);
        }
        return normalizePath(found, "/");
      }
      return formatScope(parsePathScope(text, opts));
    }
  }
}

/** Splits a line into words: bare words, or JSON strings. Stops at a `#` that starts a word. */
function words(line: string): string[] {
  const out: string[] = [];
  let i = 0;
  const n = line.length;
  while (i < n) {
    const c = line.charCodeAt(i);
    if (c === 32 || c === 9) {
      i++;
      continue;
    }
    if (c === 35) break; // "#"
    if (c === 34) { // '"'
      let j = i + 1;
      while (j < n && line.charCodeAt(j) !== 34) j += line.charCodeAt(j) === 92 ? 2 : 1;
      if (j >= n) throw new UsageError(`unterminated quoted target (a " without its closing ")`);
      let s: unknown;
      try {
        s = JSON.parse(line.slice(i, j + 1));
      } catch {
        throw new UsageError(`bad quoted target ${clip(line.slice(i, j + 1))}: use JSON string escapes`);
      }
      out.push(s as string);
      i = j + 1;
      if (i < n && line.charCodeAt(i) !== 32 && line.charCodeAt(i) !== 9) {
        throw new UsageError(`expected a space after the quoted target`);
      }
      continue;
    }
    let j = i;
    while (j < n && line.charCodeAt(j) !== 32 && line.charCodeAt(j) !== 9) j++;
    out.push(line.slice(i, j));
    i = j;
  }
  return out;
}

const q = (s: string) => JSON.stringify(clip(s, 60));

/**
 * Parses a rules file. Throws {@link RulesError} (`FILE:LINE: problem`) at the first bad line. `group` lines
 * add to `opts.groups` as they are read (without a table, a `group` line is an error).
 *
 * @example
 * ```ts
 * parseRules("allow write ~/.npm/**  # npm's cache\n", { file: "rules", project: false, cwd: "/p", home: "/home/me" });
 * // [{ effect: "allow", op: "write", target: "/home/me/.npm/**", source: { kind: "file", file: "rules", line: 1, project: false } }]
 * ```
 */
export function parseRules(text: string, opts: ParseRulesOptions): Rule[] {
  const rules: Rule[] = [];
  const now = opts.now ?? Date.now();
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.endsWith("\r")) line = line.slice(0, -1);
    if (i === 0 && line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    try {
      const rule = parseLine(line, i + 1, opts, now);
      if (rule) rules.push(rule);
    } catch (e) {
      if (e instanceof RulesError) throw e;
      const msg = e instanceof Error ? e.message : String(e);
      throw new RulesError(opts.file, i + 1, msg);
    }
  }
  return rules;
}

function parseLine(line: string, lineNo: number, opts: ParseRulesOptions, now: number): Rule | null {
  if (line.includes("\0")) throw new UsageError("the line contains a NUL byte");
  const w = words(line);
  if (w.length === 0) return null;
  const head = w[0];
  if (head === "group") {
    if (opts.project) {
      throw new UsageError(
        `a project rules file cannot define groups (it could widen what user rules allow)`,
      );
    }
    if (w.length < 2) throw new UsageError(`missing group name: group @name MEMBER...`);
    if (w.length < 3) throw new UsageError(`group ${w[1]} needs at least one member`);
    const members = w.slice(2).map((m) =>
      m.startsWith("@") || !(m.includes("/") || m === "~") ? m : normalizeMember(m, opts)
    );
    for (const m of members) checkMember(m);
    if (!opts.groups) throw new UsageError("group lines are not read here");
    defineGroup(w[1], members, opts.groups);
    return null;
  }
  if (head === "protect" || (head === "allow" && w[1] === "read")) {
    readLine(w, lineNo, opts);
    return null;
  }
  if (head !== "allow" && head !== "deny") {
    throw new UsageError(`expected "allow", "deny", "protect" or "group", got ${q(head)}`);
  }
  if (w.length < 2) throw new UsageError(`missing operation: ${head} write|exec|connect TARGET`);
  const op = w[1] as Op;
  if (!OPS.includes(op)) {
    const hint = head === "deny" && w[1] === "read" ? ` (to make a path unreadable: "protect PATH")` : "";
    throw new UsageError(`unknown operation ${q(w[1])}: expected write, exec or connect${hint}`);
  }
  if (w.length < 3) throw new UsageError(`missing target after "${head} ${op}"`);
  let expiresAt: number | undefined;
  if (w.length > 3) {
    if (w[3] !== "for") {
      throw new UsageError(`unexpected ${q(w[3])} after the target (a duration is written "for 10m")`);
    }
    if (w.length < 5) throw new UsageError(`missing duration after "for"`);
    if (w.length > 5) throw new UsageError(`unexpected ${q(w[5])} after the duration`);
    expiresAt = now + parseDuration(w[4]);
  }
  if (opts.project && head === "allow") {
    throw new UsageError(
      `a project rules file can only deny: "allow ${op} ${clip(w[2], 60)}" would widen what is allowed ` +
        "(a rules file inside the project, which the sandbox could have written: allow rules go in one outside it)",
    );
  }
  const target = parseRuleTarget(op, w[2], opts);
  const rule: Rule = {
    effect: head,
    op,
    target,
    source: { kind: "file", file: opts.file, line: lineNo, project: opts.project },
  };
  if (expiresAt !== undefined) rule.expiresAt = expiresAt;
  return rule;
}

/** `protect PATH` / `allow read PATH`. */
function readLine(w: string[], lineNo: number, opts: ParseRulesOptions): void {
  const allow = w[0] === "allow";
  const form = allow ? "allow read PATH" : "protect PATH";
  const at = allow ? 2 : 1;
  if (w.length <= at) throw new UsageError(`missing path: ${form}`);
  if (w.length > at + 1) {
    throw new UsageError(
      w[at + 1] === "for"
        ? `"${form}" cannot expire: read protection is set in the kernel when the sandbox starts`
        : `unexpected ${q(w[at + 1])} after the path`,
    );
  }
  if (allow && opts.project) {
    throw new UsageError(
      `a project rules file can only add protections: "allow read ${clip(w[at], 60)}" would lift one`,
    );
  }
  if (!opts.reads) {
    throw new UsageError(
      `"${form}" is not available in these rules: read protections are set when a sandbox or pod starts`,
    );
  }
  opts.reads.push({
    effect: allow ? "allow" : "protect",
    path: readPath(w[at], opts),
    source: { kind: "file", file: opts.file, line: lineNo, project: opts.project },
  });
}

/** The path of a read rule: `~`, relative to `cwd`, normalised; a trailing `/**` says the same as without. */
export function readPath(text: string, opts: TargetOptions): string {
  if (text.includes("\0")) throw new UsageError("the path contains a NUL byte");
  const t = text.endsWith("/**") ? text.slice(0, -3) || "/" : text;
  if (t.includes("*")) {
    throw new UsageError(
      `${q(text)}: no wildcard in a read rule's path (a directory covers everything below)`,
    );
  }
  const p = normalizePath(t, opts.cwd, opts.home);
  if (p === "/") throw new UsageError(`"/" cannot be protected or allowed as a whole`);
  return p;
}

function normalizeMember(m: string, opts: TargetOptions): string {
  const tree = m.endsWith("/**");
  const p = normalizePath(tree ? m.slice(0, -3) || "/" : m, opts.cwd, opts.home);
  return tree ? formatScope({ kind: "tree", path: p }) : p;
}

/** A target as one word of a rules line: as it is, or a JSON string when it holds spaces, `"`, `#` etc. */
export function quoteTarget(target: string): string {
  return /^[^\s"#\p{Cc}\p{Zl}\p{Zp}]+$/u.test(target) ? target : JSON.stringify(target);
}

/**
 * A rule in rules-file syntax: `allow write /home/me/.npm/**`. With `now`, an expiring rule gets
 * `for REMAINING` (rounded up to whole seconds), or a `# expired` comment.
 */
export function formatRule(rule: Rule, now?: number): string {
  let s = `${rule.effect} ${rule.op} ${quoteTarget(rule.target)}`;
  if (rule.expiresAt !== undefined && now !== undefined) {
    const left = rule.expiresAt - now;
    s += left > 0 ? ` for ${formatDuration(Math.ceil(left / 1000) * 1000)}` : "  # expired";
  }
  return s;
}

/**
 * The line to append to a rules file for `rule` (saving an answer), ending in a newline, with an optional
 * trailing comment (control characters and newlines in it are replaced by spaces). A rule that expires needs
 * `now` (the line then says `for REMAINING`); an expired one cannot be saved.
 */
export function ruleFileLine(rule: Rule, opts: { now?: number; comment?: string } = {}): string {
  if (rule.expiresAt !== undefined) {
    if (opts.now === undefined) throw new UsageError("saving a rule that expires needs the current time");
    if (rule.expiresAt <= opts.now) throw new UsageError(`the rule "${formatRule(rule)}" has expired`);
  }
  let s = formatRule(rule, opts.now);
  if (opts.comment) s += "  # " + opts.comment.replace(/[\p{Cc}\p{Zl}\p{Zp}]/gu, " ");
  return s + "\n";
}
