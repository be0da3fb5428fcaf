/**
 * Plan: turn the validated options and rules files into data — the rules, the Landlock floor, the filter —
 * before anything is applied. File system reads (realpath, stat, rules files) happen here; no kernel state
 * changes.
 */
import type { CliOptions } from "../cli/options.ts";
import { globDir, normalizePath, parentDir, parsePathScope } from "../policy/path_scope.ts";
import { parseRules, parseRuleTarget } from "../policy/rules_file.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import { type ReadRule, type Rule, UsageError } from "../types.ts";
import { FS, type LandlockRuleset, NET, SCOPE } from "../../ffi/landlock.ts";
import { formatScope } from "../policy/path_scope.ts";
import {
  agentEnv,
  agentProgramPaths,
  agentRules,
  agentStartFiles,
  shellHistoryRules,
} from "../policy/agent_recipes.ts";
import { pagerHistoryRules } from "../policy/pager_history.ts";
import { builtinConnectRules } from "../policy/socket_policy.ts";
import { findProtectedPaths, holesOf, type ProtectedPath, realProtectFs } from "../policy/protected_paths.ts";
import { readProjectRules } from "../policy/project_rules.ts";
import { carve, type CarveFs, CarveLimitError } from "../floor/landlock_carve.ts";
import { realCarveFs } from "../floor/carve_fs.ts";
import { type ReadProtection, readProtection } from "../policy/secrets.ts";
import { readPath } from "../policy/rules_file.ts";
import { type GroupTable, newGroupTable } from "../policy/exec_groups.ts";
import { exists, lstatIfThere, statIfThere, unreachable } from "../util/exists.ts";
import { stdioCharDevices } from "../util/stdio_devices.ts";

export interface Plan {
  project: string;
  home: string;
  cwd: string;
  rules: Rule[];
  /**
   * What the Landlock floor grants: trees and single files. Carved ({@link carveFloor}) so that no protected
   * path and no deny rule lies in it; `nofollow`: a carved entry, opened without following a symlink.
   */
  floor: { kind: "exact" | "tree"; path: string; nofollow?: boolean }[];
  /** The write floor before the carve: the trees the person granted (lib/floor/exec_floor.ts grants inside them). */
  writeGrants?: { kind: "exact" | "tree"; path: string }[];
  /** Directories on the way to a hole: entries created there after start are outside the floor. */
  carved?: string[];
  /** Why the floor could not be carved (too many entries): the trees holding a hole are performed instead. */
  uncarved?: string;
  /** Paths that ask even where the sandbox may write (lib/policy/protected_paths.ts). */
  protected?: ProtectedPath[];
  /** The project's rules file as read (for the notice at start). */
  projectRules?: { file: string; text: string | null };
  program: string;
  argv: string[];
  pathEnv: string;
  userRulesFile: string;
  /** Credential locations the sandbox cannot read (lib/policy/secrets.ts; enforced by lib/floor/read_floor.ts). */
  reads: ReadProtection;
  /** The program groups: the builtins and those the rules files define (lib/policy/exec_groups.ts). */
  groups: GroupTable;
  /** The files the agents' recipes make at their first start (lib/sandbox/agent_start_files.ts). */
  agentFiles?: { path: string; content: string }[];
  /** Variables the agents' recipes set for the command, each a directory made at start (`env` in a recipe). */
  agentEnv?: { name: string; dir: string }[];
}

/**
 * Devices every program may write (docs/threat-model.md). The terminal of fds 0-2 is added when it is one; a pty under
 * /dev/pts only when it is the sandbox's own (lib/sandbox/run.ts: {@link addTerminal}).
 */
export const DEVICES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts/ptmx"];

export function isDir(p: string): boolean {
  return statIfThere(p)?.isDirectory === true; // no exception for a missing path (lib/util/exists.ts)
}

export function userRulesPath(env: (k: string) => string | undefined, home: string): string {
  const xdg = env("XDG_CONFIG_HOME");
  return `${xdg && xdg.startsWith("/") ? xdg : home + "/.config"}/hallpass/rules`;
}

/**
 * The names a start reads the saved rules `file` through: its directory as written and canonical (trees), and
 * the file's own target when it is a symlink (exact; also one whose target is not there yet).
 */
export function ownNames(file: string): ["tree" | "exact", string][] {
  const dir = file.slice(0, file.lastIndexOf("/"));
  const realDir = realProtectFs.real(dir);
  const out = new Map<string, ["tree" | "exact", string]>();
  for (const d of [dir, realDir]) out.set(`tree:${d}`, ["tree", d]);
  if (lstatIfThere(file)?.isSymlink) {
    let target = realProtectFs.real(file);
    if (target === `${realDir}/${file.slice(dir.length + 1)}`) {
      // dangling: where it would lead
      try {
        const t = Deno.readLinkSync(file);
        target = realProtectFs.real(normalizePath(t, realDir));
      } catch { /* gone meanwhile */ }
    }
    if (!target.startsWith(`${realDir}/`)) out.set(`exact:${target}`, ["exact", target]);
  }
  return [...out.values()];
}

/** Where hallpass remembers each project's rules file (for the notice when it changed): beside the saved rules. */
export function projectStateDir(userRulesFile: string): string {
  return `${userRulesFile.slice(0, userRulesFile.lastIndexOf("/"))}/projects`;
}

export function readRulesFile(
  file: string,
  opts: {
    project: string;
    cwd: string;
    home: string;
    pathEnv: string;
    reads?: ReadRule[];
    groups: GroupTable;
  },
): Rule[] {
  let text: string;
  try {
    const st = Deno.statSync(file);
    if (!st.isFile) throw new UsageError(`${file}: not a regular file`);
    if (st.size > 4 * 1024 * 1024) throw new UsageError(`${file}: larger than 4 MiB`);
    text = Deno.readTextFileSync(file);
  } catch (e) {
    if (e instanceof UsageError) throw e;
    if (e instanceof Deno.errors.NotFound) throw new UsageError(`${file}: no such file`);
    if (e instanceof Deno.errors.PermissionDenied) {
      throw new UsageError(
        `${file}: permission denied (it, or a directory on the way to it, is not readable)`,
      );
    }
    throw new UsageError(`${file}: ${(e as Error).message}`);
  }
  const real = (() => {
    try {
      return Deno.realPathSync(file);
    } catch {
      return file;
    }
  })();
  // A project file by where it sits or where it leads: either way the sandbox may have written it.
  const abs = normalizePath(file, opts.cwd);
  const inProject = [real, abs].some((p) => p === opts.project || p.startsWith(opts.project + "/"));
  return parseRules(text, {
    file,
    project: inProject,
    cwd: opts.cwd,
    home: opts.home,
    isDir,
    lookup: (p) => lookupInPath(p, opts.pathEnv),
    reads: opts.reads,
    groups: opts.groups,
  });
}

export function makePlan(o: CliOptions, env: (k: string) => string | undefined): Plan {
  const cwd = Deno.cwd();
  const home = env("HOME") ?? "/";
  const pathEnv = env("PATH") ?? "/usr/local/bin:/usr/bin:/bin";
  let project: string;
  try {
    project = Deno.realPathSync(o.project ?? cwd);
  } catch {
    throw new UsageError(`--project ${o.project}: no such directory`);
  }
  if (!isDir(project)) throw new UsageError(`--project ${o.project}: not a directory`);
  if (project === "/") throw new UsageError("--project /: the whole file system cannot be the project");

  const rules: Rule[] = [];
  const floor: Plan["floor"] = [{ kind: "tree", path: project }];
  const cli = (option: string) => ({ kind: "cli" as const, option });
  rules.push({
    effect: "allow",
    op: "write",
    target: formatScope({ kind: "tree", path: project }),
    source: cli("--project"),
  });
  for (const d of new Set([...DEVICES, ...terminalDevices()])) {
    floor.push({ kind: "exact", path: d });
    rules.push({
      effect: "allow",
      op: "write",
      target: d,
      source: { kind: "builtin", what: "terminal and null devices" },
    });
  }
  for (const p of o.allowPaths) {
    let s;
    try {
      s = parsePathScope(p, { cwd, home, isDir });
    } catch (e) {
      throw new UsageError(`--allow-path ${p}: ${(e as Error).message}`);
    }
    // Canonical: a symlinked directory is allowed where it really is.
    let path = s.path;
    try {
      if (s.kind !== "glob") path = Deno.realPathSync(s.path);
      else {
        const dir = Deno.realPathSync(globDir(s.path));
        path = (dir === "/" ? "" : dir) + s.path.slice(s.path.lastIndexOf("/"));
      }
    } catch {
      // does not exist yet: mediated by the supervisor, not in the Landlock floor
    }
    const scope = { kind: s.kind, path };
    // A glob (`~/.claude.json*`) has no Landlock form: its writes are checked and performed by the supervisor.
    if (scope.kind !== "glob") floor.push({ kind: scope.kind, path });
    rules.push({ effect: "allow", op: "write", target: formatScope(scope), source: cli("--allow-path") });
  }
  const groups = newGroupTable();
  const targetOpts = { cwd, home, isDir, lookup: (p: string) => lookupInPath(p, pathEnv), groups };
  rules.push({
    effect: "allow",
    op: "exec",
    target: "@system",
    source: { kind: "builtin", what: "system programs" },
  });
  for (const p of o.allowExec) {
    rules.push({
      effect: "allow",
      op: "exec",
      target: ruleTarget("exec", p, "--allow-exec", targetOpts),
      source: cli("--allow-exec"),
    });
  }
  for (const d of o.allowConnect) {
    rules.push({
      effect: "allow",
      op: "connect",
      target: ruleTarget("connect", d, "--allow-connect", targetOpts),
      source: cli("--allow-connect"),
    });
  }
  for (const name of o.agents) rules.push(...agentRules(name, { home, cwd, tmpdir: env("TMPDIR") }));
  rules.push(...builtinConnectRules(project, o.mediate.connect)); // local IPC: lib/policy/socket_policy.ts

  const userRulesFile = userRulesPath(env, home);
  // The sandbox must never write hallpass's own rules: that would grant it more next time. More specific than
  // any allow of a parent directory, and a deny inside the floor makes the supervisor emulate, not continue.
  // By every name the next start reads them through: writes are decided where a symlink leads, and a dotfiles
  // project holding the target (`~/.config/hallpass -> ~/dot/hallpass`) was written (red team).
  const ownRules = { kind: "builtin", what: "hallpass's own rules" } as const;
  for (const [kind, path] of ownNames(userRulesFile)) {
    rules.push({ effect: "deny", op: "write", target: formatScope({ kind, path }), source: ownRules });
  }
  // Nor the copies a compiled hallpass runs its launcher and fast path from: a changed one would run the next
  // sandbox.
  const xdgCache = env("XDG_CACHE_HOME");
  const ownCache = `${xdgCache && xdgCache.startsWith("/") ? xdgCache : home + "/.cache"}/hallpass`;
  for (const path of new Set([ownCache, realProtectFs.real(ownCache)])) {
    rules.push({
      effect: "deny",
      op: "write",
      target: formatScope({ kind: "tree", path }),
      source: { kind: "builtin", what: "hallpass's own programs" },
    });
  }
  const reads: ReadRule[] = [];
  for (
    const [option, list, effect] of [
      ["--protect", o.protect, "protect"],
      ["--allow-read", o.allowRead, "allow"],
    ] as const
  ) {
    for (const text of list) {
      let path: string;
      try {
        path = readPath(text, { cwd, home });
      } catch (e) {
        throw new UsageError(`${option} ${text}: ${(e as Error).message}`);
      }
      reads.push({ effect, path, source: cli(option) });
    }
  }
  const fileOpts = { project, cwd, home, pathEnv, reads, groups };
  // Unreadable (a directory on the way denies search) is said, as an unreadable file is: not taken as missing.
  if (statIfThere(userRulesFile)?.isFile || unreachable(userRulesFile)) {
    rules.push(...readRulesFile(userRulesFile, fileOpts));
  }
  for (const f of o.rulesFiles) rules.push(...readRulesFile(f, fileOpts));
  // The project's file is a project file by where it sits (never read through a symlink): it only narrows.
  const projectRules = readProjectRules(project);
  if (projectRules.text !== null) {
    rules.push(...parseRules(projectRules.text, {
      file: projectRules.file,
      project: true,
      cwd,
      home,
      isDir,
      lookup: (p) => lookupInPath(p, pathEnv),
      reads,
      groups,
    }));
  }

  const xdgConfig = env("XDG_CONFIG_HOME");
  const prot = findProtectedPaths({
    project,
    home,
    xdgConfig: xdgConfig && xdgConfig.startsWith("/") ? xdgConfig : undefined,
    // git's own config moved elsewhere (`GIT_CONFIG_GLOBAL=~/dot/gitconfig`: red team, a dotfiles project)
    gitConfigEnv: ["GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"].map((k) => env(k) ?? "").filter((v) =>
      v.startsWith("/")
    ),
    // zsh's and gpg's startup files moved (`ZDOTDIR=~/dot/zsh`)
    zdotdir: absEnv(env("ZDOTDIR")),
    gnupgHome: absEnv(env("GNUPGHOME")),
    rulesFiles: o.rulesFiles.map((f) => f.startsWith("/") ? f : `${cwd}/${f}`),
    logFile: o.logPath ? (o.logPath.startsWith("/") ? o.logPath : `${cwd}/${o.logPath}`) : undefined,
    askProgramFiles: o.askProgram ? askProgramFiles(o.askProgram, pathEnv, cwd) : [],
    // Not compiled: the checkout this module was loaded from (a compiled binary's embedded path is not on disk).
    ownTree: import.meta.url.startsWith("file:")
      ? decodeURIComponent(new URL("../..", import.meta.url).pathname).replace(/\/$/, "")
      : undefined,
    denoDir: import.meta.url.startsWith("file:") ? denoDirOf(env, home) : undefined,
    // Compiled: hallpass itself; from source: the deno that runs it (the next session runs it outside too).
    ownBinary: Deno.execPath(),
    pathDirs: pathEnv.split(":"),
    agentPrograms: o.agents.flatMap((n) => agentProgramPaths(n, { home, cwd, pathEnv })),
  }, realProtectFs);
  const carvedFloor = carveFloor(floor, [
    ...holesOf(prot, isDir),
    // Deny rules inside the floor are holes too: a write there can never be continued.
    ...rules.filter((r) => r.op === "write" && r.effect === "deny").map((r) => {
      try {
        return parsePathScope(r.target, { cwd: "/" }).path;
      } catch {
        return null;
      }
    }).filter((p): p is string => p !== null),
  ]);

  const command = o.command.length ? o.command : [env("SHELL") || "/bin/sh"];
  const program = resolveCommand(command[0], pathEnv, cwd);
  // The shell hallpass starts itself keeps its history without asking (lib/policy/agent_recipes.ts shellHistoryRules).
  if (!o.command.length) rules.push(...shellHistoryRules(program, { home, histfile: env("HISTFILE") }));
  // less's history, saved by every pager session without asking (lib/policy/pager_history.ts).
  rules.push(...pagerHistoryRules(home, env));
  const protection = readProtection({
    home,
    uid: Deno.uid() ?? -1,
    env,
    rules: reads,
    list: (d) => {
      if (!exists(d)) return undefined; // no exception for a missing one
      try {
        return [...Deno.readDirSync(d)].map((e) => e.name);
      } catch {
        return undefined;
      }
    },
  });
  return {
    project,
    home,
    cwd,
    rules,
    floor: carvedFloor.floor,
    writeGrants: floor,
    carved: carvedFloor.carved,
    uncarved: carvedFloor.uncarved,
    protected: prot,
    projectRules,
    program,
    argv: command,
    pathEnv,
    userRulesFile,
    reads: protection,
    groups,
    agentFiles: o.agents.flatMap((name) => agentStartFiles(name, home, env)),
    agentEnv: o.agents.flatMap((name) => agentEnv(name, home)),
  };
}

/**
 * The floor with holes: no tree of it covers a hole (a protected path, a deny rule), so a write the fast path
 * continues can never reach one, however a racing thread swaps the path — Landlock refuses it. Each
 * directory on the way to a hole (the project's top, `.git`, ...) is granted entry by entry instead; what is
 * created there later is in no rule, and the supervisor performs writes there.
 */
export function carveFloor(
  floor: Plan["floor"],
  holes: string[],
  fs: CarveFs = realCarveFs,
): { floor: Plan["floor"]; carved: string[]; uncarved?: string } {
  const trees = floor.filter((f) => f.kind === "tree");
  const below = holes.filter((h) => trees.some((t) => h === t.path || h.startsWith(t.path + "/")));
  if (below.length === 0) return { floor, carved: [] };
  // The carve looks each grant's kind up in its parent's listing; the parent of the project (~/src, /tmp) may
  // hold thousands of entries, and the grants are directories: answer that lookup without listing.
  const within = (p: string) => trees.some((t) => p === t.path || p.startsWith(t.path + "/"));
  const lookup: CarveFs = {
    ...fs,
    list(dir) {
      if (within(dir)) return fs.list(dir);
      const names = trees.filter((t) => parentDir(t.path) === dir).map((t) =>
        t.path.slice(t.path.lastIndexOf("/") + 1)
      );
      return names.length > 0 ? names.map((name) => ({ name, kind: "dir" as const })) : fs.list(dir);
    },
  };
  const untouched = new Set(
    trees.filter((t) => !below.some((h) => h === t.path || h.startsWith(t.path + "/"))),
  );
  let r: ReturnType<typeof carve>;
  try {
    r = carve(
      trees.map((t) => ({ path: t.path, access: 1n })),
      below.map((h) => ({ path: h, withhold: 1n })),
      lookup,
      { fileRights: 1n },
    );
  } catch (e) {
    if (!(e instanceof CarveLimitError)) throw e;
    // Too many entries to grant one by one (a directory on the way holds thousands): the trees that hold a
    // hole leave the floor, and every write in them is decided and performed by the supervisor (slower, and
    // as safe). A sandbox that fills a directory cannot keep the next session from starting.
    return {
      floor: [...floor.filter((f) => f.kind === "exact"), ...untouched],
      carved: [],
      uncarved: e.message,
    };
  }
  const out: Plan["floor"] = floor.filter((f) => f.kind === "exact");
  for (const t of untouched) out.push(t);
  for (const rule of r.rules) {
    if ([...untouched].some((t) => t.path === rule.path)) continue;
    // A file directly in a carved directory is left to the supervisor (its opens are performed): Landlock's
    // rule would hold the file's inode, and the file is replaced whenever an editor saves it (a new inode
    // under the old name, made outside the sandbox too), after which a continued open would fail.
    if (!rule.dir) continue;
    out.push({ kind: rule.dir ? "tree" : "exact", path: rule.path, nofollow: true });
  }
  return { floor: out, carved: r.carved.map((c) => c.path) };
}

/** Where Deno keeps its cache for this process: `$DENO_DIR`, else `$XDG_CACHE_HOME/deno`, else `~/.cache/deno`. */
export function denoDirOf(env: (k: string) => string | undefined, home: string): string {
  const d = env("DENO_DIR");
  if (d && d.startsWith("/")) return d;
  const x = env("XDG_CACHE_HOME");
  return `${x && x.startsWith("/") ? x : `${home}/.cache`}/deno`;
}

/** The sandbox's own terminal (its pty, or the terminal of fds 0-2 without one): writable without asking. */
export function addTerminal(plan: Plan, path: string): void {
  if (plan.floor.some((f) => f.kind === "exact" && f.path === path)) return;
  plan.floor.push({ kind: "exact", path });
  plan.rules.push({
    effect: "allow",
    op: "write",
    target: path,
    source: { kind: "builtin", what: "the sandbox's terminal" },
  });
}

function ruleTarget(
  op: "exec" | "connect",
  text: string,
  option: string,
  opts: Parameters<typeof parseRuleTarget>[2],
): string {
  try {
    return parseRuleTarget(op, text, opts);
  } catch (e) {
    throw new UsageError(`${option} ${text}: ${(e as Error).message}`);
  }
}

export class CommandError extends Error {
  constructor(message: string, readonly status: 126 | 127) {
    super(message);
  }
}

/** Finds the program as a shell would: a name in $PATH, or a path. 127 not found, 126 not executable. */
/**
 * The files an `--ask-program` command line (run by `sh -c` in hallpass's directory) names: its program (looked
 * up in $PATH when it has no slash) and every word with a slash (`python3 ./approve.py`). Existing or not;
 * lib/policy/protected_paths.ts keeps the regular files.
 */
export function askProgramFiles(command: string, pathEnv: string, cwd: string): string[] {
  const words = command.trim().split(/\s+/).filter((w) => w !== "");
  const out: string[] = [];
  words.forEach((w, i) => {
    const bare = w.replace(/^['"]|['"]$/g, "");
    if (bare.includes("/")) out.push(bare.startsWith("/") ? bare : `${cwd}/${bare}`);
    else if (i === 0) {
      const found = lookupInPath(bare, pathEnv);
      if (found) out.push(found.startsWith("/") ? found : `${cwd}/${found}`);
    }
  });
  return out;
}

export function resolveCommand(name: string, pathEnv: string, cwd: string): string {
  const check = (p: string): string => {
    let st;
    try {
      st = Deno.statSync(p);
    } catch {
      throw new CommandError(`${name}: command not found`, 127);
    }
    if (st.isDirectory) throw new CommandError(`${name}: is a directory`, 126);
    if (!((st.mode ?? 0) & 0o111)) throw new CommandError(`${name}: permission denied (not executable)`, 126);
    return p;
  };
  if (name.includes("/")) return check(name.startsWith("/") ? name : `${cwd}/${name}`);
  const found = lookupInPath(name, pathEnv);
  if (!found) throw new CommandError(`${name}: command not found`, 127);
  return check(found.startsWith("/") ? found : `${cwd}/${found}`);
}

/** The character devices of fds 0-2 (the user's terminal), so writing to it always goes through. */
function terminalDevices(): string[] {
  return stdioCharDevices((t) => t.startsWith("/dev/") && !t.startsWith("/dev/pts/"));
}

/**
 * The Landlock ruleset for a plan: write rights only in the floor; signal scope; net when asked; with an
 * execute floor (lib/floor/exec_floor.ts), EXECUTE only there; with `read` (lib/floor/read_floor.ts), READ_FILE
 * everywhere but the protected credential locations.
 */
export function landlockPlan(
  plan: Plan,
  abi: number,
  mediateConnect: boolean,
  execFloor?: { path: string }[],
  read?: { rules: { path: string; access: bigint; dir: boolean }[] },
): LandlockRuleset {
  let write = FS.WRITE_FILE | FS.REMOVE_DIR | FS.REMOVE_FILE | FS.MAKE_CHAR | FS.MAKE_DIR | FS.MAKE_REG |
    FS.MAKE_SOCK | FS.MAKE_FIFO | FS.MAKE_BLOCK | FS.MAKE_SYM;
  if (abi >= 2) write |= FS.REFER;
  if (abi >= 3) write |= FS.TRUNCATE;
  // Abstract unix sockets outside the sandbox are out of reach in every mode (local IPC is always decided:
  // lib/policy/socket_policy.ts); the supervisor performs the connects the rules allow.
  const scoped = abi >= 6 ? SCOPE.SIGNAL | SCOPE.ABSTRACT_UNIX_SOCKET : 0n;
  const exec = execFloor ? execFloor.map((e) => ({ path: e.path, access: FS.EXECUTE })) : [];
  return {
    handledFs: write | (execFloor ? FS.EXECUTE : 0n) | (read ? FS.READ_FILE : 0n),
    // With connect mediated, the kernel refuses every TCP connect the sandbox makes itself (Landlock ABI ≥ 4):
    // the supervisor performs the allowed ones on the program's socket.
    handledNet: mediateConnect && abi >= 4 ? NET.CONNECT_TCP : 0n,
    scoped,
    // A carved entry is opened where it is, never through a symlink (ffi/landlock.ts `dir`). Floor entries
    // outside the project lack MAKE_BLOCK (no call may make a block device anyway: privileged_bits.ts), so the
    // kernel refuses to move a directory from there into the project (EXDEV: Landlock's rename may not gain a
    // right), a repository prepared outside whose old hooks the exit check would not see as new
    // (lib/sandbox/nested_repos.ts, lib/supervisor/moved_in.ts).
    paths: [
      ...plan.floor.map((f) => ({
        path: f.path,
        access: inProject(plan.project, f.path) ? write : write & ~FS.MAKE_BLOCK,
        ...(f.nofollow ? { dir: f.kind === "tree" } : {}),
      })),
      ...exec,
      ...(read?.rules ?? []),
    ],
    ports: [],
  };
}

function inProject(project: string, path: string): boolean {
  return project === "/" || path === project || path.startsWith(project + "/");
}

/** An environment variable's value when it is an absolute path, its trailing slashes cut. */
function absEnv(v: string | undefined): string | undefined {
  return v && v.startsWith("/") ? v.replace(/(?<=.)\/+$/, "") : undefined;
}
