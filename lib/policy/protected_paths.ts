/**
 * Protected paths: files the sandbox could write without asking (they lie in the project or another allowed
 * tree) but that decide what runs *outside* the sandbox later — git's hooks and configuration (git runs them
 * with the person's full rights at the next `git status`/`commit`), and hallpass's own project rules (the next
 * session reads them). Writing, renaming or linking them asks (denied under `--no-ask`); a rule that names
 * the path (or a path inside it) allows it on purpose. docs/threat-model.md ("What is left behind to run
 * outside") lists them.
 *
 * Two halves: {@link findProtectedPaths} reads the file system once at start (which `.git` directories the
 * project has, where `core.hooksPath` points); {@link protectedHit} is the pure check the supervisor makes on
 * an allowed write.
 *
 * @module
 */
import { hookManagerFiles } from "./hook_managers.ts";
import {
  formatScope,
  globDir,
  normalizePath,
  parentDir,
  parsePathScope,
  scopeCovers,
  scopeSpecificity,
} from "./path_scope.ts";
import type { PathScope, Rule } from "../types.ts";
import { exists, statIfThere } from "../util/exists.ts";
import { lstatType, realpath } from "../../ffi/libc.ts";
import { Errno } from "../../ffi/errors.ts";
import {
  globName,
  hasGlob,
  shellSourcedPaths,
  sourcingShellFiles,
  sshIncludePaths,
  STARTUP_REASON,
  startupFiles,
  startupFilesOfEnv,
} from "./startup_files.ts";

export interface ProtectedPath {
  scope: PathScope;
  /** Why, in a few words, for the bar and `hallpass rules`. */
  reason: string;
}

export const GIT_REASON = "git runs this outside the sandbox";
export const HALLPASS_REASON = "hallpass's own rules for this project: the next session obeys them";
export const RULES_FILE_REASON = "a rules file hallpass reads at start";
export const LOG_REASON = "hallpass's log of its decisions (--log)";
export const OWN_PROGRAM_REASON = "hallpass's own program: the next session runs it outside the sandbox";
export const ASK_PROGRAM_REASON = "hallpass runs it outside the sandbox to answer questions (--ask-program)";
export const AGENT_PROGRAM_REASON = "the agent's own program: you run it outside the sandbox too";

/** What {@link findProtectedPaths} reads; injected so that the discovery is a unit test. */
export interface ProtectFs {
  /** "dir", "file", "symlink" or undefined (missing); never follows a final symlink. */
  kind(path: string): "dir" | "file" | "symlink" | "other" | undefined;
  /** A small text file's contents (follows symlinks), or undefined. */
  read(path: string): string | undefined;
  /** Entry names of a directory, or []. */
  list(path: string): string[];
  /** Canonical form of a path (symlinks resolved), or the path itself when it does not exist. */
  real(path: string): string;
}

/** `p` made absolute (against `/`) and lexically normal (lib/policy/path_scope.ts). */
const normalise = (p: string) => normalizePath(p, "/");

function resolveFrom(base: string, p: string, home: string): string {
  if (p === "~" || p.startsWith("~/")) return normalise(home + p.slice(1));
  return normalise(p.startsWith("/") ? p : `${base}/${p}`);
}

/**
 * The value of `key` in `[section]` of a git config text (the last one wins, as in git), or undefined. A
 * small reading of git's format: section names case-insensitive, `[section "sub"]` skipped, keys
 * case-insensitive, optional double quotes, `#`/`;` comments. Includes are not followed (docs: known limits).
 */
export function gitConfigValue(text: string, section: string, key: string): string | undefined {
  let inSection = false;
  let value: string | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("[")) {
      const m = /^\[\s*([A-Za-z0-9.-]+)\s*(?:"[^"]*")?\s*\]/.exec(line);
      inSection = m !== null && m[1].toLowerCase() === section.toLowerCase() && !line.includes('"');
      const rest = line.slice(line.indexOf("]") + 1).trim();
      if (!inSection || rest === "") continue;
      // `[core] hooksPath = x` on one line
      const kv = /^([A-Za-z0-9-]+)\s*=\s*(.*)$/.exec(rest);
      if (kv && kv[1].toLowerCase() === key.toLowerCase()) value = unquote(kv[2]);
      continue;
    }
    if (!inSection) continue;
    const kv = /^([A-Za-z0-9-]+)\s*=\s*(.*)$/.exec(line);
    if (kv && kv[1].toLowerCase() === key.toLowerCase()) value = unquote(kv[2]);
  }
  return value;
}

/** Every `path` of `[include]` and `[includeIf "…"]` sections, in order. */
export function gitIncludePaths(text: string): string[] {
  const out: string[] = [];
  let inSection = false;
  for (const raw of text.split("\n")) {
    let line = raw.trim();
    if (line.startsWith("[")) {
      inSection = /^\[\s*include(if)?\b/i.test(line);
      line = line.slice(line.indexOf("]") + 1).trim();
      if (!inSection || line === "") continue;
    }
    if (!inSection) continue;
    const kv = /^path\s*=\s*(.*)$/i.exec(line);
    if (kv) {
      const v = unquote(kv[1]);
      if (v) out.push(v);
    }
  }
  return out;
}

function unquote(v: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < v.length; i++) {
    const c = v[i];
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === "#" || c === ";")) break;
    else if (c === "\\" && i + 1 < v.length) out += v[++i];
    else out += c;
  }
  return out.trim();
}

export interface FindOptions {
  project: string;
  home: string;
  /** $XDG_CONFIG_HOME when absolute. */
  xdgConfig?: string;
  /** $GIT_CONFIG_GLOBAL and $GIT_CONFIG_SYSTEM when absolute: git reads them instead of its usual files. */
  gitConfigEnv?: string[];
  /** $ZDOTDIR and $GNUPGHOME when absolute: zsh's and gpg's startup files live there instead. */
  zdotdir?: string;
  gnupgHome?: string;
  /** `--rules` files (absolute): protected when they lie where the sandbox may write. */
  rulesFiles?: string[];
  /** The `--log` file (absolute): the sandbox must not rewrite the record of what it did. */
  logFile?: string;
  /** The files `--ask-program` runs (absolute): rewritten, they would answer the sandbox's own questions. */
  askProgramFiles?: string[];
  /**
   * The checkout hallpass runs from when it is not compiled (its sources, launcher, fast path and filters are
   * read from there at every start): rewritten, the next session would run unsandboxed.
   */
  ownTree?: string;
  /**
   * Run from source: Deno's cache, which holds the compiled form of hallpass's modules and its packages (a
   * changed entry there would run at the next start, outside any sandbox).
   */
  denoDir?: string;
  /** Compiled: the binary itself (installed where the sandbox may write, e.g. ~/.local/bin); else the deno running it. */
  ownBinary?: string;
  /**
   * The directories of $PATH: a `hallpass` in one is what the person runs next — `make install`'s wrapper
   * script, a symlink to the checkout, a copy of the binary — and one made in an earlier directory would be
   * run instead. Each `DIR/hallpass` (the name, existing or not) is protected.
   */
  pathDirs?: string[];
  /** The `--agent`s' own programs (lib/policy/agent_recipes.ts agentProgramPaths). */
  agentPrograms?: { kind: "exact" | "tree"; path: string }[];
}

/**
 * Every protected path of a project: for each git directory found (the project's `.git` directory or the one
 * its `.git` file points to, the common directory of a linked worktree, every submodule's under
 * `modules/`, the repository enclosing the project), its `hooks/**`, `config`, `config.worktree`,
 * `info/attributes` and `commondir`; the project's `.git` entry itself (a `.git` file or symlink planted there
 * would point git at hooks of the sandbox's choosing) and its `HEAD` (a bare repository's mark); every
 * submodule's `.git` file; the directory
 * `core.hooksPath` names; the person's own git configuration (`~/.gitconfig`, `~/.config/git/config`); the
 * project's `.hallpass/**`; `--rules` files; the `--log` file; the files `--ask-program` runs; the checkout
 * hallpass runs from (not compiled). Paths are canonical.
 */
export function findProtectedPaths(o: FindOptions, fs: ProtectFs): ProtectedPath[] {
  const out: ProtectedPath[] = [];
  const seen = new Set<string>();
  const add = (kind: PathScope["kind"], path: string, reason: string) => {
    const k = `${kind}:${path}`;
    if (seen.has(k)) return;
    seen.add(k);
    out.push({ scope: { kind, path }, reason });
  };
  const project = o.project;
  const gitDirs: { dir: string; worktree: string | null }[] = [];
  const addGitDir = (dir: string, worktree: string | null) => {
    const real = fs.real(dir);
    if (gitDirs.some((g) => g.dir === real)) return;
    gitDirs.push({ dir: real, worktree });
  };

  // The project's own `.git`, and the repository enclosing it (the project may be a subdirectory).
  for (let d = project, depth = 0; depth < 64; depth++) {
    const dotgit = d === "/" ? "/.git" : `${d}/.git`;
    const k = fs.kind(dotgit);
    if (k === "dir") addGitDir(dotgit, d);
    else if (k === "file") {
      const g = gitdirOf(fs.read(dotgit));
      if (g) addGitDir(resolveFrom(d, g, o.home), d);
      add("exact", dotgit, GIT_REASON);
    } else if (k === "symlink") {
      addGitDir(fs.real(dotgit), d);
      add("exact", dotgit, GIT_REASON);
    }
    if (k !== undefined || d === "/") break;
    d = parentDir(d);
  }
  // Whatever is there now, these always ask: a repository the sandbox creates at the project's top is one the
  // person will run git in.
  add("exact", `${project}/.git`, GIT_REASON);
  gitFiles(`${project}/.git`, add);
  // git also takes a directory holding HEAD, objects/ and refs/ as a git directory (a bare repository) when
  // its `.git` is missing or unusable: a HEAD planted at the top (after moving `.git/objects` away) would make
  // git run the top's `config`. A project that is such a directory already is a git directory.
  add("exact", `${project}/HEAD`, GIT_REASON);
  if (fs.kind(`${project}/HEAD`) === "file" && fs.kind(`${project}/objects`) === "dir") {
    addGitDir(project, null);
  }

  const hookPaths = new Set<string>();
  for (let i = 0; i < gitDirs.length && i < 256; i++) {
    const { dir, worktree } = gitDirs[i];
    gitFiles(dir, add);
    add("exact", `${dir}/commondir`, GIT_REASON);
    add("exact", `${dir}/gitdir`, GIT_REASON);
    const common = fs.read(`${dir}/commondir`)?.trim();
    if (common) addGitDir(resolveFrom(dir, common, o.home), null);
    const config = fs.read(`${dir}/config`) ?? "";
    const hooksPath = gitConfigValue(config, "core", "hooksPath") ??
      gitConfigValue(fs.read(`${dir}/config.worktree`) ?? "", "core", "hooksPath");
    if (hooksPath && worktree) hookPaths.add(resolveFrom(worktree, hooksPath, o.home));
    else if (hooksPath && hooksPath.startsWith("/")) hookPaths.add(normalise(hooksPath));
    // Files the config includes are config too (`[include] path = ../.gitconfig-shared`), one level deep;
    // a relative path is relative to the including file.
    for (const f of [`${dir}/config`, `${dir}/config.worktree`]) {
      for (const inc of gitIncludePaths(fs.read(f) ?? "")) {
        const file = resolveFrom(dir, inc, o.home);
        add("exact", fs.real(file), GIT_REASON);
        // its core.hooksPath too (any of them: which one wins is git's order, not read here)
        const h = gitConfigValue(fs.read(file) ?? "", "core", "hooksPath");
        if (h && worktree) hookPaths.add(resolveFrom(worktree, h, o.home));
        else if (h && (h.startsWith("/") || h.startsWith("~"))) hookPaths.add(resolveFrom(dir, h, o.home));
      }
    }
    // A submodule's working tree: its `.git` file points here, and rewriting it points git elsewhere.
    const wt = gitConfigValue(config, "core", "worktree");
    if (wt) add("exact", `${resolveFrom(dir, wt, o.home)}/.git`, GIT_REASON);
    // Linked worktrees and submodules keep their git directories below the common one.
    for (const name of fs.list(`${dir}/worktrees`)) addGitDir(`${dir}/worktrees/${name}`, null);
    submodules(`${dir}/modules`, fs, 0, (m) => addGitDir(m, null));
  }
  // core.hooksPath from the person's own configuration, relative to the project's top.
  const xdg = o.xdgConfig ?? `${o.home}/.config`;
  for (
    const f of [`${o.home}/.gitconfig`, `${xdg}/git/config`, ...(o.gitConfigEnv ?? []), "/etc/gitconfig"]
  ) {
    const v = gitConfigValue(fs.read(f) ?? "", "core", "hooksPath");
    if (v) hookPaths.add(resolveFrom(gitDirs[0]?.worktree ?? project, v, o.home));
    // The person's own git configuration runs commands in every repository (a project that is $HOME holds it),
    // and so do the files it includes, one level (`[include] path = ~/dotfiles/gitconfig`: red team, a
    // dotfiles project's included config got `core.fsmonitor`, run by git outside).
    if (f !== "/etc/gitconfig") {
      add("exact", fs.real(f), GIT_REASON);
      const base = f.slice(0, f.lastIndexOf("/"));
      for (const inc of gitIncludePaths(fs.read(f) ?? "")) {
        const file = resolveFrom(base, inc, o.home);
        add("exact", fs.real(file), GIT_REASON);
        // a core.hooksPath set there (`~/dotfiles/hooks`): hooks every repository runs
        const h = gitConfigValue(fs.read(file) ?? "", "core", "hooksPath");
        if (h) hookPaths.add(resolveFrom(gitDirs[0]?.worktree ?? project, h, o.home));
      }
    }
  }
  for (const h of hookPaths) add("tree", fs.real(h), GIT_REASON);
  // What hook managers' hooks run from the working tree (lib/policy/hook_managers.ts).
  const managed = [
    ...gitDirs.filter((g) => g.worktree).map((g) => ({ hooks: `${g.dir}/hooks`, worktree: g.worktree! })),
    ...[...hookPaths].map((h) => ({ hooks: fs.real(h), worktree: gitDirs[0]?.worktree ?? project })),
  ];
  for (const m of managed) {
    for (const f of hookManagerFiles(m.hooks, m.worktree, fs)) add(f.kind, fs.real(f.path), GIT_REASON);
  }

  // Shell startup files and what runs at login: by their canonical names (`~/.bashrc -> dot/bashrc`).
  // (each directory made canonical once; a name there only when it is a symlink: most are not there)
  const realDirs = new Map<string, string>();
  const kinds = new Map<string, ReturnType<ProtectFs["kind"]>>();
  for (const f of startupFiles(o.home, xdg)) {
    const k = f.path.lastIndexOf("/");
    const dir = f.path.slice(0, k);
    let rd = realDirs.get(dir);
    if (rd === undefined) realDirs.set(dir, rd = fs.real(dir));
    const kind = fs.kind(f.path);
    kinds.set(f.path, kind);
    add(f.kind, kind === "symlink" ? fs.real(f.path) : rd + f.path.slice(k), STARTUP_REASON);
  }
  for (const f of startupFilesOfEnv(o.home, o.zdotdir, o.gnupgHome)) add("exact", fs.real(f), STARTUP_REASON);
  sourcedFiles(o, fs, kinds, (kind, path) => add(kind, path, STARTUP_REASON));
  add("tree", `${project}/.hallpass`, HALLPASS_REASON);
  for (const f of o.rulesFiles ?? []) add("exact", fs.real(f), RULES_FILE_REASON);
  if (o.logFile) {
    // A regular file (or one still to be made), never a terminal or /dev/stderr named as the log.
    const real = fs.real(o.logFile);
    const k = fs.kind(real);
    if (k === undefined || k === "file") add("exact", real, LOG_REASON);
  }
  for (const t of [o.ownTree, o.denoDir]) {
    if (t && fs.kind(fs.real(t)) === "dir") add("tree", fs.real(t), OWN_PROGRAM_REASON);
  }
  if (o.ownBinary && fs.kind(fs.real(o.ownBinary)) === "file") {
    add("exact", fs.real(o.ownBinary), OWN_PROGRAM_REASON);
  }
  for (const d of o.pathDirs ?? []) {
    const dir = d.startsWith("/") ? fs.real(d) : undefined;
    if (dir && fs.kind(dir) === "dir") add("exact", `${dir === "/" ? "" : dir}/hallpass`, OWN_PROGRAM_REASON);
  }
  for (const a of o.agentPrograms ?? []) add(a.kind, fs.real(a.path), AGENT_PROGRAM_REASON);
  for (const f of o.askProgramFiles ?? []) {
    const real = fs.real(f);
    if (fs.kind(real) === "file") add("exact", real, ASK_PROGRAM_REASON);
  }
  return out;
}

/**
 * What the shell startup files and the ssh client config pull in by literal path, one level deep
 * (`. "$HOME/dot/aliases"`, `Include ~/dot/ssh/*.conf`): a dotfiles project holds them, and the next shell or
 * ssh outside runs them. Read only where the file is there (a regular file ≤ 1 MiB: {@link ProtectFs.read}).
 * An `Include` glob protects what it matches now and the pattern in its (canonical) directory: a name made
 * there later would be included too (a one-`*` pattern as a glob scope, any other as the whole directory).
 */
function sourcedFiles(
  o: FindOptions,
  fs: ProtectFs,
  kinds: Map<string, ReturnType<ProtectFs["kind"]>>,
  add: (kind: PathScope["kind"], path: string) => void,
) {
  const there = (f: string) => {
    const k = kinds.has(f) ? kinds.get(f) : fs.kind(f);
    return k === "file" || k === "symlink";
  };
  for (const f of sourcingShellFiles(o.home, o.zdotdir)) {
    if (!there(f)) continue;
    for (const p of shellSourcedPaths(fs.read(f) ?? "", o.home)) add("exact", fs.real(p));
  }
  const ssh = `${o.home}/.ssh/config`;
  if (!there(ssh)) return;
  for (const p of sshIncludePaths(fs.read(ssh) ?? "", o.home)) {
    const k = p.lastIndexOf("/");
    const [dir, name] = [normalise(p.slice(0, k) || "/"), p.slice(k + 1)];
    if (!hasGlob(name)) {
      if (!hasGlob(dir)) add("exact", fs.real(`${dir}/${name}`));
      continue;
    }
    if (hasGlob(dir) || !name) continue; // a glob in a directory part: not followed (docs/threat-model.md)
    const rdir = fs.real(dir);
    const re = globName(name);
    for (const e of fs.list(rdir)) if (re.test(e)) add("exact", fs.real(`${rdir}/${e}`));
    if (/^[^*?[]*\*[^*?[]*$/.test(name)) add("glob", `${rdir === "/" ? "" : rdir}/${name}`);
    else add("tree", rdir);
  }
}

function gitFiles(dir: string, add: (k: PathScope["kind"], p: string, r: string) => void): void {
  add("tree", `${dir}/hooks`, GIT_REASON);
  add("exact", `${dir}/config`, GIT_REASON);
  add("exact", `${dir}/config.worktree`, GIT_REASON);
  add("exact", `${dir}/info/attributes`, GIT_REASON);
}

function gitdirOf(text: string | undefined): string | undefined {
  const m = text ? /^gitdir:\s*(.+?)\s*$/m.exec(text) : null;
  return m ? m[1] : undefined;
}

/** Git directories of submodules below `modules/` (a git directory holds `HEAD`; names may have slashes). */
function submodules(dir: string, fs: ProtectFs, depth: number, found: (d: string) => void): void {
  if (depth > 8) return;
  for (const name of fs.list(dir)) {
    const d = `${dir}/${name}`;
    if (fs.kind(d) !== "dir") continue;
    if (fs.kind(`${d}/HEAD`) === "file") {
      found(d); // its own modules/ are walked as a git directory
    } else submodules(d, fs, depth + 1, found);
  }
}

/**
 * The real file system for {@link findProtectedPaths}. A missing path is told apart without an exception
 * (lib/util/exists.ts): start-up asks about a dozen that are not there, and Deno's first exception alone costs
 * ~2 ms.
 */
export const realProtectFs: ProtectFs = {
  kind(path) {
    const t = lstatType(path);
    if (t === undefined) return undefined;
    return t === 0o120000 ? "symlink" : t === 0o040000 ? "dir" : t === 0o100000 ? "file" : "other";
  },
  read(path) {
    const st = statIfThere(path);
    if (st === undefined || !st.isFile || st.size > 1 << 20) return undefined;
    try {
      return Deno.readTextFileSync(path);
    } catch {
      return undefined;
    }
  },
  list(path) {
    if (!exists(path)) return [];
    try {
      return [...Deno.readDirSync(path)].map((e) => e.name).slice(0, 4096);
    } catch {
      return [];
    }
  },
  real(path) {
    // The longest existing prefix made canonical, the rest appended.
    let head = path;
    let tail = "";
    for (let i = 0; i < 4096; i++) {
      // realpath(3), as Deno.realPathSync, but a failure is a number, not an exception
      const r = head.includes("\0") ? -Errno.EINVAL : realpath(head);
      if (typeof r === "string") return tail ? (r === "/" ? tail : r + tail) : r;
      if (head === "/" || head === "") return path;
      const k = head.lastIndexOf("/");
      tail = head.slice(k) + tail;
      head = head.slice(0, k) || "/";
    }
    return path;
  },
};

/**
 * Whether an allowed write of `path` touches a protected path, and which. `names`: the call moves or makes a
 * name (rename, link, symlink) — then a path *above* a protected one counts too (renaming `.git` moves its
 * hooks). An allow rule at least as specific as the protected scope, and inside it, is a choice made on
 * purpose: it wins (`allow write /p/.git/hooks/**`, `--allow-path /p/.git/hooks`).
 */
export function protectedHit(
  list: readonly ProtectedPath[],
  path: string,
  names: boolean,
  allowedBy: Rule | undefined,
): ProtectedPath | null {
  for (const p of list) {
    if (scopeCovers(p.scope, path)) {
      if (allowedBy && allowedOnPurpose(allowedBy, p)) continue;
      return p;
    }
    if (
      names && p.scope.path.length > path.length && p.scope.path.startsWith(path) &&
      (path === "/" || p.scope.path.charCodeAt(path.length) === 47)
    ) {
      return p;
    }
  }
  return null;
}

function allowedOnPurpose(rule: Rule, p: ProtectedPath): boolean {
  if (rule.source.kind === "builtin") return false;
  // The project's own grant names no protected path on purpose (a project that holds hallpass's checkout).
  if (rule.source.kind === "cli" && rule.source.option === "--project") return false;
  let s: PathScope;
  try {
    s = parsePathScope(rule.target, { cwd: "/" });
  } catch {
    return false;
  }
  return scopeSpecificity(s) >= scopeSpecificity(p.scope) &&
    (scopeCovers(p.scope, s.path) || (s.kind === "tree" && s.path === p.scope.path));
}

/** The protected paths that a Landlock hole must keep out of the write floor (see lib/sandbox/plan.ts). */
export function holesOf(list: readonly ProtectedPath[], isDir: (p: string) => boolean): string[] {
  // An exact path that is an existing directory (the project's `.git`) is not a hole: its contents are
  // ordinary, and creating or renaming it happens in its parent, which the holes below it carve anyway.
  return list.filter((p) => p.scope.kind !== "exact" || !isDir(p.scope.path)).map((p) =>
    p.scope.kind === "glob" ? globDir(p.scope.path) : p.scope.path
  );
}

/** One line per protected path, for `hallpass rules`. */
export function formatProtected(p: ProtectedPath): string {
  return `${`ask write ${formatScope(p.scope)}`.padEnd(60)} # protected: ${p.reason}`;
}
