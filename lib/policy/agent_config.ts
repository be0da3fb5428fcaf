/**
 * Agents' own configuration that names commands the agent runs by itself — Claude Code's hooks, MCP servers,
 * status line and credential helpers, codex's `notify` and `mcp_servers`, gemini's and copilot's MCP servers —
 * lies where an agent's recipe lets the sandbox write (`~/.claude/**`, `~/.codex/**`, …) or in the project
 * (`.claude/settings.json`). An agent started later _without_ hallpass would run what the sandbox wrote there.
 *
 * This module is the pure part of the exit check (lib/sandbox/agent_config_check.ts does the I/O): which files,
 * which of their keys can run something, and what to put back. A file is judged on its **watched keys**:
 *
 * * `all-but` files (settings the person writes: `~/.claude/settings.json`, `~/.codex/config.toml`, …): every
 *   key except a short list of inert ones the agents write in normal use (`model`, `permissions`, a folder's
 *   trust). Strict like the git config check: a key this list does not know (one a later version adds) counts.
 * * `only` files (state files the agent rewrites all the time: `~/.claude.json`, `~/.copilot/config.json`):
 *   only the listed keys (`mcpServers`, `projects.*.mcpServers`, …), so the agent's counters, tips and session
 *   state keep changing freely.
 *
 * An empty value (`{}`, `[]`, `false`, `null`, `""`) counts as absent: an agent that adds `"mcpServers": {}` to a
 * new project entry changed nothing. docs/threat-model.md ("What is left behind to run outside").
 *
 * @module
 */

import { visible } from "../ui/sanitize.ts";

/** `env`: a dotenv file the agent loads into its environment (and its children's); every line is watched. */
export type ConfigFormat = "json" | "toml" | "env";

/** One configuration file an agent reads at its start, and how it is judged. */
export interface ConfigFile {
  path: string;
  agent: string;
  format: ConfigFormat;
  /** `all-but`: every key path but {@link ConfigFile.keys} is watched; `only`: only those. */
  mode: "all-but" | "only";
  /** Key paths, `.`-separated, `*` for any one key. */
  keys: readonly string[];
}

/** Directories where an agent keeps copies of a config file it may restore from (`~/.claude/backups/`). */
export interface ConfigDir {
  dir: string;
  /** Names in `dir` starting with this are judged as {@link template}. */
  prefix: string;
  template: Omit<ConfigFile, "path">;
}

/** Claude Code's settings: inert keys it or the person sets in normal use. Everything else is watched. */
const CLAUDE_SETTINGS_INERT = [
  "$schema",
  "model",
  "permissions", // the person's "don't ask again" answers: what the agent may do when it decides to
  "outputStyle",
  "alwaysThinkingEnabled",
  "showThinkingSummaries",
  "verbose",
  "includeCoAuthoredBy",
  "attribution",
  "cleanupPeriodDays",
  "feedbackSurveyState",
  "spinnerTipsEnabled",
  "autoCompactEnabled",
  "editorMode",
  "fastMode",
  "promptSuggestionEnabled",
  "todoFeatureEnabled",
  "respectGitignore",
  "syntaxHighlightingDisabled",
  "prefersReducedMotion",
  "terminalProgressBarEnabled",
  "autoScrollEnabled",
  "showMessageTimestamps",
  "skipDangerousModePermissionPrompt",
  "theme",
  "language",
];

/** Claude Code's state file: the keys that name or approve commands it runs (top level, and per project). */
const CLAUDE_STATE_WATCHED = [
  "mcpServers",
  "env",
  "hooks",
  "statusLine",
  "apiKeyHelper",
  "awsAuthRefresh",
  "awsCredentialExport",
  "gcpAuthRefresh",
  "otelHeadersHelper",
  "proxyAuthHelper",
  "processWrapper",
  "sshHostCommands",
  "fileSuggestion",
  "enabledPlugins",
  "extraKnownMarketplaces",
  "additionalMarketplaces",
  "enableAllProjectMcpServers",
  "enabledMcpjsonServers",
  "projects.*.mcpServers",
  "projects.*.enabledMcpjsonServers",
  "projects.*.enableAllProjectMcpServers",
  "projects.*.env",
  "projects.*.hooks",
];

/** Codex's config.toml: what it writes itself (a folder's trust, notices, the model picked). */
const CODEX_INERT = [
  "model",
  "model_reasoning_effort",
  "model_reasoning_summary",
  "model_verbosity",
  "personality",
  "projects.*.trust_level",
  "notice",
];

const GEMINI_INERT = ["$schema", "ui", "general", "ide", "model", "security.auth.selectedType"];

const COPILOT_STATE_WATCHED = [
  "mcpServers",
  "hooks",
  "env",
  "statusLine",
  "enabledPlugins",
  "plugins",
  "marketplaces",
];

/**
 * The configuration files judged at exit: each agent's in `home` (and in `$CLAUDE_CONFIG_DIR`/`$CODEX_HOME`
 * when set), and the project's `.claude/settings.json` and `.claude/settings.local.json`, `.mcp.json` is not
 * among them: Claude Code asks before it runs a server the project lists, unless the person's settings approve
 * it (`enabledMcpjsonServers`, `enableAllProjectMcpServers`: watched).
 */
export function agentConfigFiles(
  home: string,
  project: string,
  env: (k: string) => string | undefined = () => undefined,
): { files: ConfigFile[]; dirs: ConfigDir[] } {
  const claudeSettings = (path: string): ConfigFile => ({
    path,
    agent: "claude",
    format: "json",
    mode: "all-but",
    keys: CLAUDE_SETTINGS_INERT,
  });
  const claudeState = { agent: "claude", format: "json" as const, mode: "only" as const };
  const claudeDirs = [`${home}/.claude`];
  const ccd = absolute(env("CLAUDE_CONFIG_DIR"));
  if (ccd && ccd !== `${home}/.claude`) claudeDirs.push(ccd);
  const files: ConfigFile[] = [];
  const dirs: ConfigDir[] = [];
  for (const d of claudeDirs) {
    files.push(claudeSettings(`${d}/settings.json`), claudeSettings(`${d}/settings.local.json`));
    files.push({ path: `${d}/.claude.json`, ...claudeState, keys: CLAUDE_STATE_WATCHED });
    dirs.push({
      dir: `${d}/backups`,
      prefix: ".claude.json",
      template: { ...claudeState, keys: CLAUDE_STATE_WATCHED },
    });
  }
  for (const name of ["", ".backup"]) {
    files.push({ path: `${home}/.claude.json${name}`, ...claudeState, keys: CLAUDE_STATE_WATCHED });
  }
  files.push(claudeSettings(`${project}/.claude/settings.json`));
  files.push(claudeSettings(`${project}/.claude/settings.local.json`));
  const codexDirs = [`${home}/.codex`];
  const ch = absolute(env("CODEX_HOME"));
  if (ch && ch !== `${home}/.codex`) codexDirs.push(ch);
  for (const d of codexDirs) {
    files.push({
      path: `${d}/config.toml`,
      agent: "codex",
      format: "toml",
      mode: "all-but",
      keys: CODEX_INERT,
    });
  }
  // Gemini CLI reads its settings and a `.env` from `~/.gemini` and from the project's `.gemini` (a `.env` at
  // the project's top is the project's own, read by many tools: not judged). Codex reads a project's
  // `.codex/config.toml` too.
  for (const d of [`${home}/.gemini`, `${project}/.gemini`]) {
    files.push({
      path: `${d}/settings.json`,
      agent: "gemini",
      format: "json",
      mode: "all-but",
      keys: GEMINI_INERT,
    });
    files.push({ path: `${d}/.env`, agent: "gemini", format: "env", mode: "all-but", keys: [] });
  }
  files.push({
    path: `${project}/.codex/config.toml`,
    agent: "codex",
    format: "toml",
    mode: "all-but",
    keys: CODEX_INERT,
  });
  files.push({
    path: `${home}/.copilot/config.json`,
    agent: "copilot",
    format: "json",
    mode: "only",
    keys: COPILOT_STATE_WATCHED,
  });
  files.push({
    path: `${home}/.copilot/mcp-config.json`,
    agent: "copilot",
    format: "json",
    mode: "all-but",
    keys: [],
  });
  // One file under two names (a config dir that is the default): judged once.
  const seen = new Set<string>();
  return { files: files.filter((f) => !seen.has(f.path) && seen.add(f.path)), dirs };
}

/**
 * The files an agent reads from a directory named `dir` (`.claude`, `.codex`, `.gemini`) in the directory it is
 * started in — a project's subdirectory too (claude: the working directory's; codex: each one from the
 * project's root down to it) — by name, judged as the same files at the project's top.
 */
export function projectAgentConfig(dir: string): (Omit<ConfigFile, "path"> & { name: string })[] {
  const claude = {
    agent: "claude",
    format: "json" as const,
    mode: "all-but" as const,
    keys: CLAUDE_SETTINGS_INERT,
  };
  if (dir === ".claude") {
    return [{ ...claude, name: "settings.json" }, { ...claude, name: "settings.local.json" }];
  }
  if (dir === ".codex") {
    return [{ name: "config.toml", agent: "codex", format: "toml", mode: "all-but", keys: CODEX_INERT }];
  }
  if (dir === ".gemini") {
    return [{ name: "settings.json", agent: "gemini", format: "json", mode: "all-but", keys: GEMINI_INERT }];
  }
  return [];
}

/** The directory names {@link projectAgentConfig} knows. */
export const PROJECT_AGENT_DIRS = [".claude", ".codex", ".gemini"] as const;

function absolute(p: string | undefined): string | undefined {
  if (!p || !p.startsWith("/")) return undefined;
  const q = p.replace(/\/+$/, "");
  return q.split("/").some((c) => c === "." || c === "..") ? undefined : q;
}

// --- reading

/** Watched key path (JSON array of its parts) → the value's canonical text. */
export type Watched = Map<string, string>;

/** The watched keys of a config text, or a reason it cannot be judged (then any change to it counts). */
export function watchedKeys(text: string, f: Pick<ConfigFile, "format" | "mode" | "keys">): Watched | string {
  if (f.format === "env") {
    // Every line but blanks and comments, as written (`export`, quotes: the loader's business).
    const out: Watched = new Map();
    text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#")).forEach((l, i) =>
      out.set(JSON.stringify([`line ${i + 1}`]), l)
    );
    return out;
  }
  if (f.format === "toml") {
    const t = tomlEntries(text);
    if (typeof t === "string") return t;
    const out: Watched = new Map();
    for (const [path, value] of t) {
      const inert = f.keys.some((k) => covers(k.split("."), path));
      if (f.mode === "all-but" ? !inert : inert) out.set(JSON.stringify(path), value);
    }
    return out;
  }
  let v: unknown;
  try {
    v = JSON.parse(noBom(text));
  } catch {
    return "not valid JSON";
  }
  if (!isObject(v)) return "not a JSON object";
  const out: Watched = new Map();
  const pats = f.keys.map((k) => k.split("."));
  if (f.mode === "only") {
    collect(v, trie(pats), [], out);
  } else {
    walkAllBut(v, pats, [], out);
  }
  return out;
}

/** Whether pattern `pat` names `path` or one of its parents. */
function covers(pat: string[], path: string[]): boolean {
  return pat.length <= path.length && pat.every((s, i) => s === "*" || s === path[i]);
}

/**
 * A byte-order mark an editor left, or copilot's `//` comment lines, are not a reason to judge the whole file:
 * read past them (an agent that does not would read nothing from the file, which runs nothing either).
 */
function noBom(text: string): string {
  const t = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  // Whole lines of `//` comments, as copilot writes at the top of its ~/.copilot/config.json: no JSON value
  // can start a line with `//` (a string cannot span lines), so reading past them hides nothing an agent's
  // parser could see. Any other comment form stays "not valid JSON" (the file is then judged whole).
  return /^[ \t]*\/\//m.test(t) ? t.split("\n").filter((l) => !/^[ \t]*\/\//.test(l)).join("\n") : t;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function empty(v: unknown): boolean {
  return v === null || v === false || v === "" || (Array.isArray(v) && v.length === 0) ||
    (isObject(v) && Object.keys(v).length === 0);
}

/** Canonical text of a JSON value: keys sorted, so a reordering is no change. */
export function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/** Key patterns as a tree (`*` for any key), walked once for all of them. */
type Trie = Map<string, Trie>;

function trie(pats: string[][]): Trie {
  const root: Trie = new Map();
  for (const p of pats) {
    let t = root;
    for (const seg of p) {
      if (!t.has(seg)) t.set(seg, new Map());
      t = t.get(seg)!;
    }
  }
  return root;
}

function collect(v: Record<string, unknown>, t: Trie, at: string[], out: Watched): void {
  const visit = (k: string, sub: Trie) => {
    const x = v[k];
    if (sub.size === 0) {
      if (!empty(x)) out.set(JSON.stringify([...at, k]), canonical(x));
    } else if (isObject(x)) collect(x, sub, [...at, k], out);
  };
  for (const [seg, sub] of t) {
    if (seg === "*") { for (const k of Object.keys(v)) visit(k, sub); }
    else if (Object.hasOwn(v, seg)) visit(seg, sub);
  }
}

function walkAllBut(v: Record<string, unknown>, inert: string[][], at: string[], out: Watched): void {
  for (const k of Object.keys(v)) {
    const path = [...at, k];
    const x = v[k];
    if (inert.some((p) => p.length === path.length && covers(p, path))) continue;
    const deeper = inert.some((p) => p.length > path.length && covers(p.slice(0, path.length), path));
    if (deeper && isObject(x)) walkAllBut(x, inert, path, out);
    else if (!empty(x)) out.set(JSON.stringify(path), canonical(x));
  }
}

// --- deciding

/** One watched key the sandbox set, changed or removed. */
export interface KeyChange {
  /** `a.b.c` (for the message). */
  key: string;
  /** What the sandbox left there (canonical JSON or TOML text), or undefined when it removed the key. */
  now?: string;
}

export type Verdict =
  | { kind: "same" }
  /** Put back the watched keys in the file as it is now (JSON): `text` is the file to write. */
  | { kind: "keys"; text: string; changes: KeyChange[] }
  /** Put back the whole file as it was at start (`text`; undefined: it did not exist, remove it). */
  | { kind: "whole"; text: string | undefined; changes: KeyChange[]; why?: string };

/**
 * What to put back in a config file, from its text at start and at exit (undefined: no such file). Removing a
 * watched key is never put back (it runs nothing more), so a file deleted at exit is left deleted.
 */
export function judgeConfig(
  f: Pick<ConfigFile, "format" | "mode" | "keys">,
  start: string | undefined,
  now: string | undefined,
): Verdict {
  if (start === now || now === undefined) return { kind: "same" };
  const before = start === undefined ? new Map() : watchedKeys(start, f);
  const after = watchedKeys(now, f);
  if (typeof after === "string" || typeof before === "string") {
    // Cannot be judged key by key: the file as it was, unless nothing watched could have been added.
    if (typeof after !== "string" && after.size === 0) return { kind: "same" };
    return {
      kind: "whole",
      text: start,
      changes: [],
      why: typeof after === "string" ? after : `at start ${before}`,
    };
  }
  const changes: KeyChange[] = [];
  for (const [k, v] of after) {
    if (before.get(k) !== v) changes.push({ key: (JSON.parse(k) as string[]).join("."), now: v });
  }
  if (changes.length === 0) return { kind: "same" };
  if (f.format !== "json") return { kind: "whole", text: start, changes };
  // JSON: the watched keys of the file as it is now are set back to their values at start (or removed).
  const obj = JSON.parse(noBom(now)) as Record<string, unknown>;
  const old = start === undefined ? {} : JSON.parse(noBom(start)) as Record<string, unknown>;
  for (const [k, v] of after) {
    if (before.get(k) === v) continue;
    const path = JSON.parse(k) as string[];
    const was = before.has(k) ? get(old, path) : undefined;
    set(obj, path, was);
  }
  return { kind: "keys", text: JSON.stringify(obj, null, 2) + (now.endsWith("\n") ? "\n" : ""), changes };
}

function get(v: Record<string, unknown>, path: string[]): unknown {
  let x: unknown = v;
  for (const p of path) {
    if (!isObject(x) || !Object.hasOwn(x, p)) return undefined;
    x = x[p];
  }
  return x;
}

/** Sets (or, with undefined, removes) the key at `path`; own properties only (`__proto__` is a plain key). */
function set(v: Record<string, unknown>, path: string[], value: unknown): void {
  let x = v;
  for (const p of path.slice(0, -1)) {
    const next = Object.hasOwn(x, p) ? x[p] : undefined;
    if (!isObject(next)) return; // the parent itself was the change: its own path is judged
    x = next;
  }
  const last = path[path.length - 1];
  if (value === undefined) delete x[last];
  else Object.defineProperty(x, last, { value, enumerable: true, writable: true, configurable: true });
}

// --- TOML, strictly

/**
 * The `key path → value text` entries of a TOML text, or why it is not read: tables (`[a.b]`, `[[a]]` with
 * its index), dotted and quoted keys, and values on one line or an array/inline table over several. Strict:
 * a multi-line string, a key with an escape, a repeated key, or a line this does not fully understand makes
 * the file unjudgeable (then any change to it puts the whole file back).
 */
export function tomlEntries(text: string): [string[], string][] | string {
  const out: [string[], string][] = [];
  const seen = new Set<string>();
  const arrays = new Map<string, number>();
  let table: string[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, "");
    const bad = `line ${i + 1} is not understood`;
    if (/^\s*(#.*)?$/.test(line)) continue;
    const h = /^\s*(\[\[?)(.*?)(\]\]?)\s*(#.*)?$/.exec(line);
    if (h && h[1].length === h[3].length) {
      const k = keyPath(h[2]);
      if (!k) return bad;
      if (h[1] === "[[") {
        const n = arrays.get(JSON.stringify(k)) ?? 0;
        arrays.set(JSON.stringify(k), n + 1);
        table = [...k, String(n)];
      } else table = k;
      continue;
    }
    const eq = keyEnd(line);
    if (eq < 0) return bad;
    const k = keyPath(line.slice(0, eq));
    if (!k) return bad;
    let value = line.slice(eq + 1);
    let scan = scanValue(value);
    while (scan === "open" && i + 1 < lines.length) {
      value += "\n" + lines[++i].replace(/\r$/, "");
      scan = scanValue(value);
    }
    if (typeof scan !== "string" || scan === "open" || scan === "bad") return bad;
    const path = [...table, ...k];
    const id = JSON.stringify(path);
    if (seen.has(id)) return `line ${i + 1} repeats a key`;
    seen.add(id);
    out.push([path, scan]);
  }
  return out;
}

/** Where the `=` after a key is (quoted keys may hold one), or -1. */
function keyEnd(line: string): number {
  let q = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (q) {
      if (c === q) q = "";
    } else if (c === '"' || c === "'") q = c;
    else if (c === "=") return i;
  }
  return -1;
}

/** `a.b."c d".'e'` → its parts; undefined when not a plain key path (escapes, empty parts, odd characters). */
function keyPath(s: string): string[] | undefined {
  const parts: string[] = [];
  // A quoted key may not hold a control character (checked below) or an escape.
  const re = /\s*(?:([A-Za-z0-9_-]+)|"([^"\\]*)"|'([^']*)')\s*(\.|$)/y;
  let at = 0;
  while (at < s.length) {
    re.lastIndex = at;
    const m = re.exec(s);
    if (!m) return undefined;
    parts.push(m[1] ?? m[2] ?? m[3]);
    at = re.lastIndex;
    if (m[4] === "") break;
  }
  const plain = parts.every((p) => ![...p].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f));
  return at === s.length && parts.length > 0 && plain ? parts : undefined;
}

/**
 * A value's text without its comment, "open" while an array or inline table is not closed yet, "bad" for what
 * this does not read (a multi-line string, a stray closing bracket, nothing).
 */
function scanValue(v: string): string | "open" | "bad" {
  let depth = 0;
  let end = v.length;
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c === '"' || c === "'") {
      if (v.startsWith(c.repeat(3), i)) return "bad";
      let j = i + 1;
      while (j < v.length && v[j] !== c && v[j] !== "\n") j += c === '"' && v[j] === "\\" ? 2 : 1;
      if (j >= v.length || v[j] !== c) return "bad";
      i = j;
    } else if (c === "[" || c === "{") depth++;
    else if (c === "]" || c === "}") {
      if (--depth < 0) return "bad";
    } else if (c === "#") {
      const nl = v.indexOf("\n", i);
      if (nl < 0) {
        end = i;
        break;
      }
      v = v.slice(0, i) + v.slice(nl); // a comment inside an array, to its line's end
      i--;
    }
  }
  if (depth > 0) return "open";
  const t = v.slice(0, end).replace(/\s+/g, " ").trim();
  return t === "" ? "bad" : t;
}

/** The message for one file put back: keys and values the sandbox chose, made visible (no escape reaches the terminal). */
export function describeChanges(changes: readonly KeyChange[], max = 160): string {
  return visible(
    changes.map((c) => {
      const v = c.now === undefined ? "(removed)" : c.now.length > max ? c.now.slice(0, max) + "…" : c.now;
      return `${c.key} = ${v}`;
    }).join("; "),
  );
}

/**
 * Programs a config's watched keys name by path (`bash ~/.claude/hooks/check.sh`, `"command":
 * "$CLAUDE_PROJECT_DIR/.claude/hooks/lint.sh"`) that lie in `within` (the agents' directories, the project): the
 * sandbox could rewrite such a script and leave the key alone. Paths in a command's text, `~`, `$HOME` and
 * `$CLAUDE_PROJECT_DIR` expanded; a path with `.` or `..` components is left out (never canonical here).
 */
export function namedPrograms(
  text: string,
  f: Pick<ConfigFile, "format" | "mode" | "keys">,
  o: { home: string; project: string; within: readonly string[] },
): string[] {
  const w = watchedKeys(text, f);
  if (typeof w === "string") return [];
  const out = new Set<string>();
  const re = /(?:^|[\s"'=:\[,])(~|"?\$\{?(?:HOME|CLAUDE_PROJECT_DIR)\}?"?)?(\/[^\s"'`;|&<>(){}$\\,\]]+)/g;
  for (const v of w.values()) {
    // Quotes inside a string are escaped in the text (JSON, TOML): `"$CLAUDE_PROJECT_DIR"/x` in a command.
    for (const m of v.replaceAll('\\"', '"').matchAll(re)) {
      const base = m[1] === undefined ? "" : m[1].includes("PROJECT") ? o.project : o.home;
      const p = (base + m[2]).replace(/\/+$/, "");
      if (p.split("/").some((c) => c === "." || c === "..")) continue;
      if (o.within.some((d) => p.startsWith(d + "/"))) out.add(p);
    }
  }
  return [...out];
}

/** The directories whose programs {@link namedPrograms} checks: the agents' own, and the project. */
export function agentDirs(home: string, project: string): string[] {
  return [`${home}/.claude`, `${home}/.codex`, `${home}/.gemini`, `${home}/.copilot`, project];
}
