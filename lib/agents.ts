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
 * * Programs an agent copies into its own state directory and runs from there (codex's app-server daemon in
 *   `~/.codex/packages/`): the sandbox may write there, so allowing exec would let it run anything it writes.
 */
import type { Rule } from "./types.ts";
import { UsageError } from "./types.ts";
import { parsePathScope, scopeCovers } from "./path_scope.ts";

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
   * one exact path (a file, or a directory the agent creates and removes, such as a lock directory).
   */
  write: string[];
  /**
   * Exec scopes, same notation, plus `{package}` for the directory the agent's npm package is installed in
   * (found from `program` in `$PATH`; the rule is left out when it is not found, or when it lies in the project
   * or in one of the write scopes, which the sandbox could write).
   */
  exec: string[];
}

export const RECIPES: Recipe[] = [
  {
    name: "claude",
    description: "Claude Code (@anthropic-ai/claude-code)",
    program: "claude",
    package: "@anthropic-ai/claude-code",
    write: [
      "~/.claude/**", // settings, sessions, backups of .claude.json, todos, shell snapshots
      // its main state file, written as ~/.claude.json.tmp.PID.RANDOM + rename; ~/.claude.json.lock (a lock
      // directory made and removed around each write) and ~/.claude.json.backup
      "~/.claude.json*",
      "{tmp}/claude-*-cwd", // its Bash tool's shell writes its working directory here after each command
      "{tmp}/claude-{uid}/**", // per-user scratch
      "{tmp}/cc-socks-{uid}/**", // a directory it makes at start (measured as an ordinary user)
      "{tmp}/cc-socks/**", // the same, measured as root
    ],
    exec: ["{package}/**", "~/.local/share/claude/versions/**"],
  },
  {
    name: "codex",
    description: "OpenAI Codex CLI (@openai/codex)",
    program: "codex",
    package: "@openai/codex",
    write: [
      "~/.codex/**", // config.toml, installation_id, sqlite state and logs, app-server daemon files
      "{tmp}/codex-daemon-{uid}/**", // the app-server daemon's lock and socket
    ],
    exec: ["{package}/**"],
  },
  {
    name: "gemini",
    description: "Gemini CLI (@google/gemini-cli)",
    program: "gemini",
    package: "@google/gemini-cli",
    write: [
      "~/.gemini/**", // installation_id, state.json, projects.json (+ lock dir), history/, tmp/ (chats, logs)
    ],
    exec: ["{package}/**"],
  },
  {
    name: "copilot",
    description: "GitHub Copilot CLI (@github/copilot)",
    program: "copilot",
    package: "@github/copilot",
    write: [
      "~/.copilot/**", // config.json, logs/, session-state/, settings lock
      "~/.cache/copilot/**", // the unpacked runtime (pkg/linux-x64/VERSION)
      "~/.cache/Microsoft/DeveloperTools/**", // deviceid (shared by Microsoft tools)
      "{tmp}/node-compile-cache/**", // node's compile cache (NODE_COMPILE_CACHE)
    ],
    exec: ["{package}/**"],
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

export function agentRules(
  name: string,
  opts: { home: string; cwd: string; pathEnv?: string; tmpdir?: string },
): Rule[] {
  const r = RECIPES.find((x) => x.name === name);
  if (!r) {
    throw new UsageError(`--agent ${name}: unknown agent (known: ${RECIPES.map((x) => x.name).join(", ")})`);
  }
  const source = { kind: "builtin" as const, what: `--agent ${name}` };
  const id = uid();
  const expand = (s: string) => s.replace(/^~(?=\/|$)/, opts.home).replaceAll("{uid}", id);
  // `{tmp}`: /tmp, and $TMPDIR too when it is set elsewhere (programs put their temp files there).
  const tmps = ["/tmp"];
  const t = opts.tmpdir?.replace(/\/+$/, "");
  if (t && t.startsWith("/") && t !== "/tmp" && !/[*?[]/.test(t)) tmps.push(t);
  const writes = r.write.flatMap((w) =>
    w.includes("{tmp}") ? tmps.map((d) => expand(w.replace("{tmp}", d))) : [expand(w)]
  );
  const rules: Rule[] = writes.map((target) => ({
    effect: "allow" as const,
    op: "write" as const,
    target,
    source,
  }));
  const pkgDir = r.package
    ? findPackageDir(r.program, r.package, opts.pathEnv ?? Deno.env.get("PATH") ?? "/usr/bin:/bin")
    : undefined;
  const writable = (p: string) =>
    inside(p, opts.cwd) || writes.some((w) => scopeCovers(parsePathScope(w, { cwd: "/" }), p));
  for (const e of r.exec) {
    if (e.includes("{package}") && !pkgDir) continue;
    const target = expand(e.replaceAll("{package}", pkgDir ?? ""));
    const root = target.endsWith("/**") ? target.slice(0, -3) : target;
    if (writable(root)) continue;
    rules.push({ effect: "allow", op: "exec", target, source });
  }
  return rules;
}
