/**
 * Recipes for agent CLIs (`--agent NAME`): the places each keeps its state, as write rules, and the agent's own
 * installed package, as an exec rule. Measured by running each agent under `hallpass --log` in a fresh $HOME
 * (docs/agents.md lists what each writes and says how to redo the measurement for a new version or a new
 * agent; tests/e2e/agents_test.ts checks the recipes against the real CLIs).
 *
 * A recipe is only a short way to write rules: `--agent codex` is the same as these lines in a rules file
 *
 *     allow write ~/.codex/**
 *     allow exec /usr/lib/node_modules/@openai/codex/**
 *
 * so a new agent (or a path a new version adds) can be added in `~/.config/hallpass/rules` without touching
 * this file.
 *
 * What a recipe deliberately leaves out, so that it still asks:
 * * `$HOME` itself and shared directories (`/tmp`, `~/.cache`): only the agent's own subdirectories.
 * * Temporary files with random names are allowed only as narrowly as their pattern (`~/.claude.json*`,
 *   `/tmp/claude-*-cwd`: a glob in the last component, never `~/**` or `/tmp/**`).
 * * Programs in places the sandbox may write, except an agent's copies of its own program that it installs and
 *   runs itself (codex's app-server daemon in `~/.codex/packages/app-server-daemon/releases/`, `ownCopies`):
 *   without them the agent asks at every start; with them, a program put there runs without a question, and
 *   `--agents` says so.
 *
 * What a recipe allows but hallpass checks at exit: the agent's own configuration naming commands it runs by
 * itself (hooks, MCP servers, helpers), put back when the sandbox changed it (lib/policy/agent_config.ts).
 */
import type { Rule } from "../types.ts";
import { UsageError } from "../types.ts";
import { parsePathScope, scopeCovers } from "./path_scope.ts";
import { quoteTarget } from "./rules_file.ts";
import { exists } from "../util/exists.ts";

/** One rule of a recipe: a scope in the notation below, and why the agent needs it (shown by `--agents`). */
export interface RecipeRule {
  scope: string;
  why: string;
}

export interface Recipe {
  name: string;
  description: string;
  /** The program the agent is started as (looked up in `$PATH` to find its package for {@link exec}). */
  program: string;
  /** The npm package the program belongs to. */
  package?: string;
  /**
   * Write scopes: `~` for $HOME, `{uid}` for the user id, `{tmp}` for `/tmp` and `$TMPDIR` (when set elsewhere),
   * `DIR/**` for a tree, `DIR/NAME*` for the names in DIR that match (a temporary file with a random part), else
   * one exact path (a file, or a directory the agent creates, such as a lock directory or a parent of its own).
   */
  write: RecipeRule[];
  /**
   * Exec scopes, same notation, plus `{package}` for the directory the agent's npm package is installed in
   * (found from `program` in `$PATH`; the rule is left out when it is not found, when it does not exist, or
   * when it lies in the project or in one of the write scopes, which the sandbox could write).
   */
  exec: RecipeRule[];
  /**
   * Exec scopes inside the write scopes, kept anyway: copies of its own program that the agent installs there
   * and runs (codex's app-server daemon). The sandbox could put another program there and run it without a
   * question: `--agents` and docs/agents.md say so.
   */
  ownCopies?: RecipeRule[];
  /**
   * Files the agent makes directly in `$HOME` (a directory on the way to a protected location, whose new entries
   * the sandbox cannot read back until the next session: lib/floor/read_floor.ts) and saves by a rename over
   * them. Made at start when missing, with `content` (what the agent itself takes for "no state yet", checked
   * with its binary), and a rename over one is refused with EXDEV so that the agent writes it in place
   * (lib/sandbox/agent_start_files.ts).
   */
  startFiles?: { path: string; content: string; why: string; unlessEnv?: string }[];
  /**
   * Where the agent may be installed inside its own write scopes (claude's "local" install in
   * `~/.claude/local`, which the person's `claude` alias runs): protected when there at start, so the sandbox
   * cannot rewrite the program the person runs next, outside hallpass (see {@link agentProgramPaths}).
   */
  installedIn?: string[];
  /**
   * Variables set for the sandboxed command, each naming a directory only sessions use (made at start, 0700,
   * writable by a `write` rule): copilot's `COPILOT_PKG_CACHE_HOME`, so that the runtime it unpacks inside the
   * sandbox is one no copilot outside reads (lib/sandbox/copilot_runtime.ts).
   */
  env?: { name: string; dir: string; why: string }[];
}

const w = (scope: string, why: string): RecipeRule => ({ scope, why });

/** The runtime copilot unpacks inside sessions (`COPILOT_PKG_CACHE_HOME`), below `$HOME`. */
export const COPILOT_SANDBOX_PKG = ".local/share/hallpass/copilot";

export const RECIPES: Recipe[] = [
  {
    name: "claude",
    description: "Claude Code (@anthropic-ai/claude-code)",
    program: "claude",
    package: "@anthropic-ai/claude-code",
    write: [
      w("~/.claude/**", "its settings, sessions, projects, todos, shell snapshots, backups"),
      w(
        "~/.claude.json*",
        "its main state file, saved as .claude.json.tmp.PID.RANDOM + rename, with .claude.json.lock and .backup",
      ),
      w("{tmp}/claude-*-cwd", "its Bash tool's shell writes its working directory there after each command"),
      w("{tmp}/claude-{uid}/**", "its per-user scratch directory (tool output, file-watch probes)"),
      w("{tmp}/cc-socks-{uid}/**", "a directory for its sockets (as an ordinary user)"),
      w("{tmp}/cc-socks/**", "the same, as root"),
    ],
    exec: [
      w("{package}/**", "its own package (when installed outside the system directories)"),
      w("~/.local/share/claude/versions/**", "the native build its installer puts there"),
    ],
    installedIn: ["~/.claude/local"],
    startFiles: [{
      path: "~/.claude.json",
      // claude 2.1.332 takes `{}` for a fresh state without a word (an empty file: "was empty ... starting with
      // defaults"), and writes it in place when the rename of its atomic save fails with EXDEV.
      content: "{}\n",
      unlessEnv: "CLAUDE_CONFIG_DIR", // then it keeps the file there instead
      why: "its state file, made at the first start: made beforehand so the sandbox can read it back",
    }],
  },
  {
    name: "codex",
    description: "OpenAI Codex CLI (@openai/codex)",
    program: "codex",
    package: "@openai/codex",
    write: [
      w("~/.codex/**", "config.toml, installation_id, sqlite state and logs, the app-server daemon's files"),
      w("{tmp}/codex-daemon-{uid}/**", "the app-server daemon's lock and socket"),
    ],
    exec: [
      w("{package}/**", "its own package (the launcher and, nested, its platform binary)"),
      w("{package}-linux-x64/**", "its platform binary, when npm hoisted it next to the package"),
      w("{package}-linux-arm64/**", "the same on arm64"),
    ],
    ownCopies: [
      w(
        "~/.codex/packages/app-server-daemon/releases/**",
        "it copies its own binary there (via a .staging.RANDOM directory) and runs it as its app-server daemon",
      ),
    ],
  },
  {
    name: "gemini",
    description: "Gemini CLI (@google/gemini-cli)",
    program: "gemini",
    package: "@google/gemini-cli",
    write: [
      w(
        "~/.gemini/**",
        "installation_id, state.json, projects.json (+ lock directory), history/, tmp/ (chats, logs)",
      ),
    ],
    exec: [w("{package}/**", "its own package")],
  },
  {
    name: "copilot",
    description: "GitHub Copilot CLI (@github/copilot)",
    program: "copilot",
    package: "@github/copilot",
    write: [
      w("~/.copilot/**", "config.json, logs/, session-state/, the settings lock"),
      w(
        `~/${COPILOT_SANDBOX_PKG}/**`,
        "the runtime it unpacks at its first session and runs in the next (pkg/linux-x64/VERSION): sessions only",
      ),
      w("~/.cache/copilot/**", "its other caches (the runtime there is checked at exit)"),
      // Not ~/.cache itself: a directory renamed onto it would bring ~/.cache/hallpass with it.
      w("~/.cache/Microsoft", "making the directory of the next line (that name only)"),
      w("~/.cache/Microsoft/DeveloperTools/**", "its device id (shared by Microsoft tools)"),
      w("{tmp}/node-compile-cache/**", "node's compile cache"),
    ],
    exec: [w("{package}/**", "its own package")],
    env: [{
      name: "COPILOT_PKG_CACHE_HOME",
      dir: `~/${COPILOT_SANDBOX_PKG}`,
      why: "where it unpacks its runtime inside sessions: copilot outside never reads it, so nothing the " +
        "sandbox puts there runs outside (its own search directories are checked at exit)",
    }],
  },
];

/** The real directory of npm package `pkg` that provides `program` in `pathEnv`, if any. */
export function findPackageDir(program: string, pkg: string, pathEnv: string): string | undefined {
  for (const dir of pathEnv.split(":")) {
    if (!dir.startsWith("/")) continue;
    let real: string;
    try {
      real = Deno.realPathSync(`${dir}/${program}`);
    } catch {
      continue;
    }
    const marker = `/node_modules/${pkg}/`;
    const i = real.lastIndexOf(marker);
    if (i >= 0) return real.slice(0, i + marker.length - 1);
    return undefined; // the first one found is the one that runs
  }
  return undefined;
}

function uid(): string {
  try {
    return String(Deno.uid() ?? "");
  } catch {
    return "";
  }
}

function inside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : dir + "/");
}

/** Where the recipe's notation is expanded from. */
export interface RecipeContext {
  home: string;
  cwd: string;
  pathEnv?: string;
  tmpdir?: string;
}

/** A recipe's rules for this user, each with why (for `--agents`). */
export function recipeRules(name: string, opts: RecipeContext): { rule: Rule; why: string }[] {
  const r = RECIPES.find((x) => x.name === name);
  if (!r) {
    throw new UsageError(`--agent ${name}: unknown agent (known: ${RECIPES.map((x) => x.name).join(", ")})`);
  }
  const source = { kind: "builtin" as const, what: `--agent ${name}` };
  const id = uid();
  // `{tmp}`: /tmp, and $TMPDIR too when it is set elsewhere (programs put their temp files there).
  const tmps = ["/tmp"];
  const t = opts.tmpdir?.replace(/\/+$/, "");
  if (t && t.startsWith("/") && t !== "/tmp" && !/[*?[]/.test(t)) tmps.push(t);
  const pkgDir = r.package
    ? findPackageDir(r.program, r.package, opts.pathEnv ?? Deno.env.get("PATH") ?? "/usr/bin:/bin")
    : undefined;
  const expand = (s: string): string[] => {
    if (s.includes("{package}") && !pkgDir) return [];
    const x = s.replace(/^~(?=\/|$)/, opts.home).replaceAll("{uid}", id).replaceAll(
      "{package}",
      pkgDir ?? "",
    );
    return x.includes("{tmp}") ? tmps.map((d) => x.replace("{tmp}", d)) : [x];
  };
  const out: { rule: Rule; why: string }[] = [];
  const writes: string[] = [];
  for (const e of r.write) {
    for (const target of expand(e.scope)) {
      writes.push(target);
      out.push({ rule: { effect: "allow", op: "write", target, source }, why: e.why });
    }
  }
  const writable = (p: string) =>
    inside(p, opts.cwd) || writes.some((w) => scopeCovers(parsePathScope(w, { cwd: "/" }), p));
  for (const e of r.exec) {
    for (const target of expand(e.scope)) {
      const root = target.endsWith("/**") ? target.slice(0, -3) : target;
      if (writable(root)) continue;
      if (e.scope.includes("{package}") && !exists(root)) continue;
      out.push({ rule: { effect: "allow", op: "exec", target, source }, why: e.why });
    }
  }
  for (const e of r.ownCopies ?? []) {
    for (const target of expand(e.scope)) {
      out.push({
        rule: { effect: "allow", op: "exec", target, source },
        why: `${e.why} (the sandbox can write there too: a program put there runs without a question)`,
      });
    }
  }
  return out;
}

/**
 * The agent's own program, as the person runs it outside hallpass: the first `DIR/PROGRAM` in `$PATH` (as
 * named, and where it leads), its npm package directory, and the recipe's `installedIn` directories that exist.
 * Protected paths (lib/policy/protected_paths.ts): a recipe's write scope, or the project, may hold them (red
 * team: claude's local install in `~/.claude/local`, inside `~/.claude/**`, rewritten by the sandbox, ran at the
 * person's next `claude`).
 */
export function agentProgramPaths(
  name: string,
  opts: RecipeContext,
): { kind: "exact" | "tree"; path: string }[] {
  const r = RECIPES.find((x) => x.name === name);
  if (!r) return [];
  const out: { kind: "exact" | "tree"; path: string }[] = [];
  for (const dir of (opts.pathEnv ?? "").split(":")) {
    if (!dir.startsWith("/") || !exists(`${dir}/${r.program}`)) continue;
    out.push({ kind: "exact", path: `${dir}/${r.program}` });
    try {
      out.push({ kind: "exact", path: Deno.realPathSync(`${dir}/${r.program}`) });
    } catch { /* dangling: the name is enough */ }
    break;
  }
  const pkg = r.package ? findPackageDir(r.program, r.package, opts.pathEnv ?? "") : undefined;
  if (pkg) out.push({ kind: "tree", path: pkg });
  for (const d of r.installedIn ?? []) {
    const p = d.replace(/^~(?=\/|$)/, opts.home);
    if (exists(p)) out.push({ kind: "tree", path: p });
  }
  return out;
}

/** The variables recipe `name` sets for the sandboxed command (`env`), with `~` expanded. */
export function agentEnv(name: string, home: string): { name: string; dir: string }[] {
  const r = RECIPES.find((x) => x.name === name);
  return (r?.env ?? []).map((e) => ({ name: e.name, dir: e.dir.replace(/^~(?=\/|$)/, home) }));
}

/** The files recipe `name` makes at its first start directly in `$HOME` (`startFiles`), expanded. */
export function agentStartFiles(
  name: string,
  home: string,
  env: (k: string) => string | undefined = () => undefined,
): { path: string; content: string }[] {
  const r = RECIPES.find((x) => x.name === name);
  return (r?.startFiles ?? []).filter((f) => !(f.unlessEnv && env(f.unlessEnv))).map((f) => ({
    path: f.path.replace(/^~(?=\/|$)/, home),
    content: f.content,
  }));
}

export function agentRules(name: string, opts: RecipeContext): Rule[] {
  return recipeRules(name, opts).map((x) => x.rule);
}

/** What `hallpass --agents` prints: each recipe's rules for this user, and why each is there. */
export function formatRecipes(opts: RecipeContext): string[] {
  const lines: string[] = [];
  for (const r of RECIPES) {
    lines.push(
      `${r.name.padEnd(8)} ${r.description}${
        r.package && !findPackageDir(r.program, r.package, opts.pathEnv ?? "") ? "  (not found in $PATH)" : ""
      }`,
    );
    for (const { rule, why } of recipeRules(r.name, opts)) {
      lines.push(`    ${rule.effect} ${rule.op} ${quoteTarget(rule.target)}`);
      lines.push(`        ${why}`);
    }
    for (const f of r.startFiles ?? []) {
      const path = f.path.replace(/^~(?=\/|$)/, opts.home);
      lines.push(
        `    made at start when missing: ${quoteTarget(path)} (${f.content.trim()}); renamed over: EXDEV`,
      );
      lines.push(`        ${f.why}`);
    }
    for (const e of r.env ?? []) {
      lines.push(`    set for the command: ${e.name}=${quoteTarget(e.dir.replace(/^~(?=\/|$)/, opts.home))}`);
      lines.push(`        ${e.why}`);
    }
  }
  lines.push(
    "--agent NAME adds these rules; the same lines in ~/.config/hallpass/rules work too (docs/agents.md).",
    "Commands the sandbox writes into an agent's own configuration (hooks, MCP servers, helpers) are put back at",
    "exit and named: an agent started without hallpass would run them (docs/threat-model.md).",
  );
  return lines;
}

/**
 * The history file of the shell hallpass starts itself (`hallpass` with no command), so that leaving it does not
 * ask: bash saves `~/.bash_history` through `~/.bash_history-PID.tmp` + rename, zsh through `HISTFILE.new` and a
 * `HISTFILE.LOCK`, fish through `fish_history.RANDOM` next to its file. `$HISTFILE` is used when it is exported,
 * lies in `$HOME` and names a history file (its name holds "hist"); otherwise the shell's default. Other shells
 * (sh, dash) keep no history file: no rule.
 */
export function shellHistoryRules(shell: string, opts: { home: string; histfile?: string }): Rule[] {
  const name = shell.slice(shell.lastIndexOf("/") + 1);
  const h = opts.histfile;
  const custom =
    h && h.startsWith(opts.home + "/") && !/[*?[]/.test(h) && /hist/i.test(h.slice(h.lastIndexOf("/")))
      ? h
      : undefined;
  let targets: string[];
  switch (name) {
    case "bash": {
      const f = custom ?? `${opts.home}/.bash_history`;
      targets = [f, `${f}-*.tmp`];
      break;
    }
    case "zsh": {
      const f = custom ?? `${opts.home}/.zsh_history`;
      targets = [f, `${f}.new`, `${f}.LOCK`];
      break;
    }
    case "fish": {
      const f = `${opts.home}/.local/share/fish/fish_history`;
      targets = [f, `${f}.*`];
      break;
    }
    default:
      return [];
  }
  const source = { kind: "builtin" as const, what: `the history of the shell hallpass started (${name})` };
  return targets.map((target) => ({ effect: "allow" as const, op: "write" as const, target, source }));
}
