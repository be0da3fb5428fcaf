/**
 * Git repositories in the project that hallpass did not protect at start — one the sandbox made in a
 * subdirectory (`git init sub`, `git clone URL sub`, a bare-form directory with HEAD, objects/ and refs/), or
 * one that was already there below the project's top — are checked at exit, when no sandboxed process is
 * left: a hook written during the session, or a config changed during it that sets anything but the inert
 * keys `git init`, `git clone` and everyday git write, would run outside the sandbox the next time someone
 * runs git there. Such a file is renamed to `NAME.hallpass-quarantined` (nothing is deleted) and named on
 * stderr. docs/threat-model.md ("What is left behind to run outside").
 *
 * "During the session" is the file's ctime, which the kernel sets and no system call can set back.
 *
 * @module
 */
import { dirEntries, type DirScan, type Mark, MARKS, scanDir } from "../../ffi/dir_entries.ts";
import { fs as fsops, openDirNoSymlinks } from "../../ffi/fsops.ts";
import { cstr, lstatCtime } from "../../ffi/libc.ts";
import { visible } from "../ui/sanitize.ts";
import { readStable } from "../util/stable_read.ts";

/** Keys a config may hold that run nothing (section, or `section.*` for any subsection; then the key). */
const INERT: Record<string, readonly string[]> = {
  core: [
    "repositoryformatversion",
    "filemode",
    "bare",
    "logallrefupdates",
    "ignorecase",
    "precomposeunicode",
    "symlinks",
    "worktree",
    "autocrlf",
    "eol",
    "safecrlf",
  ],
  "remote.*": ["url", "pushurl", "fetch", "push", "tagopt", "prune", "mirror"],
  "branch.*": ["remote", "merge", "rebase", "pushremote"],
  "submodule.*": ["url", "active", "branch"],
  extensions: ["objectformat", "worktreeconfig", "refstorage"],
  user: ["name", "email"],
  init: ["defaultbranch"],
  pull: ["rebase", "ff"],
  push: ["default", "autosetupremote"],
  fetch: ["prune"],
  gc: ["auto"],
  lfs: ["repositoryformatversion"],
};

/**
 * Why a git config text could run something, or null when every line is a key of {@link INERT} in a plain
 * form. Strict on purpose: a line this reading does not fully understand (a continuation, an escape, a quote,
 * a control character, the old `[section.sub]` form, an include) counts as unsafe, so git cannot read a key
 * here that this reading did not see.
 */
export function unsafeConfig(text: string): string | null {
  let section: string | null = null;
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.includes("\\") || hasControl(line) || line.charCodeAt(0) === 0xfeff) {
      return `line ${i + 1} is not a plain key (${visible(line.slice(0, 40))})`;
    }
    if (/^\s*([#;].*)?$/.test(line)) continue;
    const h = /^\s*\[([A-Za-z0-9-]+)(?:\s+"([^"]*)")?\]\s*([#;].*)?$/.exec(line);
    if (h) {
      section = h[2] !== undefined ? `${h[1].toLowerCase()}.*` : h[1].toLowerCase();
      continue;
    }
    const plainKey = `line ${i + 1} is not a plain key (${visible(line.slice(0, 40))})`;
    if (line.includes('"')) return plainKey;
    const k = /^\s*([A-Za-z][A-Za-z0-9-]*)\s*(=.*)?$/.exec(line);
    if (!k || section === null) return plainKey;
    const key = k[1].toLowerCase();
    if (!(INERT[section] ?? []).includes(key)) return `it sets ${section.replace(".*", ".<name>")}.${key}`;
  }
  return null;
}

/** A control character other than tab (a CR, a NUL, an escape). */
function hasControl(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if ((c < 0x20 && c !== 9) || c === 0x7f) return true;
  }
  return false;
}

/** What {@link checkNestedRepos} reads and does; the real one is {@link realRepoFs}. */
export interface RepoFs {
  /** lstat: the kind and ctime (ms), or undefined when missing. Never follows a final symlink. */
  lstat(path: string): { kind: "dir" | "file" | "symlink" | "other"; ctimeMs: number } | undefined;
  /** Entries of a directory with their kinds (without stat), or undefined when it cannot be read. */
  list(path: string): { name: string; kind: "dir" | "file" | "symlink" | "other" }[] | undefined;
  /**
   * What the walk needs of a directory (its subdirectories, and the kinds of `HEAD`, `objects`, `commondir` and
   * `.git` in it), or undefined when it cannot be read; when absent, made from {@link list}.
   */
  scan?(path: string): Omit<DirScan, "unknown"> | undefined;
  /** A small regular file's text (undefined when larger than 1 MiB or unreadable). */
  read(path: string): string | undefined;
  /** Canonical form of an existing path, or undefined. */
  real(path: string): string | undefined;
  /** Renames `from` to `to` (both in one directory); false on failure. */
  rename(from: string, to: string): boolean;
}

export interface NestedRepoOptions {
  project: string;
  /** When the sandbox started (ms): files with a ctime from this second on were changed during the session. */
  startMs: number;
  /** Git directories protected at start (lib/policy/protected_paths.ts): Landlock kept them, not judged. */
  protectedGitDirs: readonly string[];
  /** Stop walking after this many entries (the result says the walk was cut short). */
  maxEntries?: number;
  /** Stop walking at this time (ms, Date.now()). */
  deadlineMs?: number;
}

export interface NestedRepoResult {
  /** One line per file renamed (or that could not be renamed). */
  lines: string[];
  /** The walk stopped early (too many entries, or the deadline): not every repository was seen. */
  incomplete: boolean;
  entries: number;
  /** The agents' directories (`.claude`, `.codex`, `.gemini`: dirs or symlinks) below the top: lib/sandbox/project_agent_config.ts. */
  agentDirs: string[];
}

const QUARANTINE = ".hallpass-quarantined";

/**
 * Walks the project (never following symlinks) for git directories — a directory holding a `HEAD` file and
 * `objects/` or a `commondir` file, and where `.git` files, `.git` symlinks and `commondir` files point — and
 * moves aside, in each one not protected at start, every hook and config changed during the session that
 * could run something.
 */
export function checkNestedRepos(o: NestedRepoOptions, fs: RepoFs): NestedRepoResult {
  const since = Math.floor(o.startMs / 1000) * 1000 - 1000;
  const skip = new Set(o.protectedGitDirs);
  const maxEntries = o.maxEntries ?? 2_000_000;
  const gitDirs = new Set<string>();
  /** A pointer (`.git` file or link, `commondir`), and the one in the project that led to it. */
  const pointed: { path: string; origin: string }[] = [];
  /** Git directories outside the project, with the pointers in the project that lead there. */
  const via = new Map<string, Set<string>>();
  const inProject = (p: string) => p === o.project || p.startsWith(o.project + "/");
  let entries = 0;
  let incomplete = false;
  const unlisted: string[] = [];
  const agentDirs: string[] = [];

  let nextClock = 1024;
  const stack: [string, number][] = [[o.project, 0]];
  while (stack.length > 0) {
    const [dir, depth] = stack.pop()!;
    // A protected `.git` (its objects may be many) is not walked; other protected directories are.
    if (skip.has(dir) && dir.endsWith("/.git")) continue;
    const sc = fs.scan ? fs.scan(dir) : scanOfList(fs.list(dir));
    if (sc === undefined) {
      // A directory the sandbox made unreadable (chmod 000) hides what is below it: said, not skipped silently.
      if (unlisted.length < 5) unlisted.push(dir);
      continue;
    }
    const m = sc.marks;
    const isGitDir = m.HEAD === "file" && (m.objects === "dir" || m.commondir === "file");
    if (isGitDir && !skip.has(dir)) {
      gitDirs.add(dir);
    }
    entries += sc.count;
    const late = o.deadlineMs !== undefined && entries >= nextClock && Date.now() > o.deadlineMs;
    if (entries >= nextClock) nextClock = entries + 1024;
    if (entries > maxEntries || late) {
      incomplete = true;
      break;
    }
    for (const name of sc.dirs) {
      if (depth < 256) stack.push([`${dir}/${name}`, depth + 1]);
      else incomplete = true;
    }
    if (m[".git"] !== undefined && m[".git"] !== "dir") {
      pointed.push({ path: `${dir}/.git`, origin: `${dir}/.git` });
    }
    if (m.commondir === "file") pointed.push({ path: `${dir}/commondir`, origin: `${dir}/commondir` });
    if (dir !== o.project) {
      for (const a of [".claude", ".codex", ".gemini"] as const) {
        if (m[a] === "dir" || m[a] === "symlink") agentDirs.push(`${dir}/${a}`);
      }
    }
  }
  // Where `.git` files and links and `commondir` files point (maybe outside the project): git uses those.
  for (let i = 0; i < pointed.length && i < 4096; i++) {
    const { path: p, origin } = pointed[i];
    const k = fs.lstat(p);
    let target: string | undefined;
    if (k?.kind === "symlink") target = fs.real(p);
    else if (k?.kind === "file") {
      const text = fs.read(p) ?? "";
      const base = p.slice(0, p.lastIndexOf("/"));
      const m = p.endsWith("/.git") ? /^gitdir:\s*(.+?)\s*$/m.exec(text)?.[1] : text.trim();
      if (m) target = fs.real(m.startsWith("/") ? m : `${base}/${m}`);
    }
    if (target && !skip.has(target)) {
      gitDirs.add(target);
      if (!inProject(target)) via.set(target, (via.get(target) ?? new Set()).add(origin));
      const c = `${target}/commondir`;
      if (fs.lstat(c)?.kind === "file" && !pointed.some((q) => q.path === c)) {
        pointed.push({ path: c, origin });
      }
    }
  }

  const lines: string[] = [];
  const moveAside = (path: string, why: string) => {
    let to = `${path}${QUARANTINE}`;
    for (let n = 2; fs.lstat(to) !== undefined && n < 100; n++) to = `${path}${QUARANTINE}.${n}`;
    if (fs.rename(path, to)) {
      lines.push(
        `hallpass: ${visible(`${path} ${why}`)} (git would run it outside the sandbox): moved to ${
          visible(to)
        }`,
      );
    } else {
      lines.push(
        `hallpass: ${
          visible(`${path} ${why}`)
        } (git would run it outside the sandbox): COULD NOT move it aside`,
      );
    }
  };
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;

  for (const g of [...gitDirs].sort()) {
    // A directory prepared in an earlier session (hooks, no HEAD: not a git directory then, so not checked) and
    // completed in this one: what makes it a git directory is from this session, and then every hook and config
    // counts, however old (tests/e2e/moved_in_repos_test.ts "completed"). So does every hook of a repository
    // that was there, when git run in the session changed those (a checkout, a first object in a new directory).
    const completed = inProject(g) &&
      ["HEAD", "objects", "refs", "commondir"].some((n) => changed(fs.lstat(`${g}/${n}`)));
    const found = offending(g, fs, changed);
    for (const f of completed ? offending(g, fs, (st) => st !== undefined, "completed") : []) {
      if (!found.some((x) => x.path === f.path)) found.push(f);
    }
    if (inProject(g)) {
      for (const f of found) moveAside(f.path, f.why);
      continue;
    }
    // Outside the project hallpass renames nothing of its own accord (a pointer planted by the sandbox must not
    // make hallpass move a file the sandbox could not touch): the pointer in the project is moved aside when it
    // was made during the session, otherwise named. A pointer made during the session is moved aside when the git
    // directory it leads to has any hook or unsafe config, whenever written: one the sandbox prepared in an
    // earlier session where it may write outside the project (an --allow-path tree, an agent's directory) is not
    // from this session, and git run here would run it (tests/e2e/nested_repos_test.ts "prepared earlier").
    const any = offending(g, fs, (st) => st !== undefined, "any");
    for (const ptr of via.get(g) ?? []) {
      if (changed(fs.lstat(ptr))) {
        if (any.length) moveAside(ptr, `points git at ${g}, where ${any[0].path} ${any[0].why}`);
      } else if (found.length) {
        lines.push(
          `hallpass: ${visible(`${ptr} points git at ${g}, where ${found[0].path} ${found[0].why}`)}: ` +
            "not moved (outside the project); git run there would run it",
        );
      }
    }
  }
  if (unlisted.length) {
    lines.push(
      `hallpass: could not look for git repositories in ${
        unlisted.map((d) => visible(d)).join(", ")
      } (unreadable): hooks or config written there were not checked`,
    );
  }
  return { lines, incomplete, entries, agentDirs };
}

/** {@link RepoFs.scan} from {@link RepoFs.list}. */
function scanOfList(list: ReturnType<RepoFs["list"]>): Omit<DirScan, "unknown"> | undefined {
  if (list === undefined) return undefined;
  const marks: DirScan["marks"] = {};
  for (const e of list) {
    if ((MARKS as readonly string[]).includes(e.name)) marks[e.name as Mark] = e.kind;
  }
  return { count: list.length, dirs: list.filter((e) => e.kind === "dir").map((e) => e.name), marks };
}

/**
 * The hooks and configs of git directory `g` that could run something and that `changed` picks (those changed
 * during the session: `how` "during"; or all of them: "any", or "completed" in a git directory completed during it).
 */
function offending(
  g: string,
  fs: RepoFs,
  changed: (st: { ctimeMs: number } | undefined) => boolean,
  how: "during" | "any" | "completed" = "during",
): { path: string; why: string }[] {
  const out: { path: string; why: string }[] = [];
  const during = how === "during";
  const made = how === "completed"
    ? " in a repository whose HEAD, objects or refs changed during the session"
    : "";
  const moveAside = (path: string, why: string) => out.push({ path, why });
  {
    for (const name of ["config", "config.worktree"]) {
      const p = `${g}/${name}`;
      const st = fs.lstat(p);
      if (!changed(st)) continue;
      if (st!.kind !== "file") moveAside(p, `is a ${st!.kind}${during ? " made during the session" : made}`);
      else {
        const text = fs.read(p);
        const why = text === undefined ? "unreadable" : unsafeConfig(text);
        if (why) moveAside(p, `${during ? "changed during the session" : `is unsafe${made}`}: ${why}`);
      }
    }
    const hooks = `${g}/hooks`;
    const hs = fs.lstat(hooks);
    if (hs?.kind === "symlink" || (hs !== undefined && hs.kind !== "dir")) {
      if (changed(hs)) moveAside(hooks, `is a ${hs.kind}${during ? " made during the session" : made}`);
      return out;
    }
    for (const e of fs.list(hooks) ?? []) {
      if (e.kind === "dir" || e.name.endsWith(".sample") || e.name.includes(QUARANTINE)) continue;
      const p = `${hooks}/${e.name}`;
      if (changed(fs.lstat(p))) moveAside(p, `is a hook${during ? " written during the session" : made}`);
    }
  }
  return out;
}

/** The real file system for {@link checkNestedRepos}. */
export const realRepoFs: RepoFs = {
  lstat(path) {
    // One statx, no exception: most paths asked at exit are missing (~/.gemini/extensions, hooks).
    const st = lstatCtime(path);
    if (st === undefined) return undefined;
    const kind = st.type === 0o120000
      ? "symlink"
      : st.type === 0o040000
      ? "dir"
      : st.type === 0o100000
      ? "file"
      : "other";
    return { kind, ctimeMs: st.ctimeMs };
  },
  list(path) {
    // A file system that does not give types (DT_UNKNOWN) is asked with lstat.
    return dirEntries(path)?.map((e) => {
      if (!e.unknown) return e;
      const st = realRepoFs.lstat(`${path}/${e.name}`);
      return { name: e.name, kind: st?.kind ?? "other" };
    });
  },
  scan(path) {
    const sc = scanDir(path);
    if (sc === undefined) return undefined;
    // A file system that does not give types (DT_UNKNOWN) is asked with lstat.
    for (const name of sc.unknown) {
      const kind = realRepoFs.lstat(`${path}/${name}`)?.kind ?? "other";
      if (kind === "dir") sc.dirs.push(name);
      if ((MARKS as readonly string[]).includes(name)) sc.marks[name as Mark] = kind;
    }
    return sc;
  },
  read(path) {
    // Not following a final symlink; taken only when the file read is the one at `path` before and after it.
    return readStable(path, { follow: false, maxBytes: 1 << 20, tries: 3 })?.text;
  },
  real(path) {
    try {
      return Deno.realPathSync(path);
    } catch {
      return undefined;
    }
  },
  rename(from, to) {
    // Through the directory opened without following any symlink: another session's sandbox may still run and
    // swap a directory on the way for a symlink to outside the project between the walk and this rename
    // (renaming by path would then move the person's own hooks and config there). Never replaces a file.
    const dir = from.slice(0, from.lastIndexOf("/"));
    if (to.slice(0, to.lastIndexOf("/")) !== dir) return false;
    const dfd = openDirNoSymlinks(dir);
    if (dfd < 0) return false;
    try {
      const name = (p: string) => cstr(p.slice(p.lastIndexOf("/") + 1));
      return fsops.renameat2(dfd, name(from), dfd, name(to), 1 /* RENAME_NOREPLACE */) === 0;
    } finally {
      fsops.close(dfd);
    }
  },
};
