/**
 * The exit check of agents' own configuration (lib/policy/agent_config.ts decides; this reads and writes): the
 * files are read before the command starts, and again at exit, when every sandboxed process is gone. A watched
 * key (a hook, an MCP server, a helper command) the sandbox set or changed is put back to what it was, in the
 * file as it is at exit (the agent's state written during the session stays), and named on stderr with the
 * value the sandbox wrote. docs/threat-model.md ("What is left behind to run outside").
 *
 * The agent's other sessions (outside hallpass, or in another hallpass) may rewrite these files at any time:
 * a file is read only when the file read is the one at its path before and after (same device and inode), and
 * is replaced (a new file renamed over it) only when its path still holds the file read, else read again.
 *
 * @module
 */
import { dirEntries } from "../../ffi/dir_entries.ts";
import { Errno } from "../../ffi/errors.ts";
import { fs as fsops, openDirNoSymlinks } from "../../ffi/fsops.ts";
import { cstr } from "../../ffi/libc.ts";
import {
  agentDirs,
  type ConfigFile,
  describeChanges,
  judgeConfig,
  namedPrograms,
  type Verdict,
} from "../policy/agent_config.ts";
import { visible } from "../ui/sanitize.ts";
import { readStable } from "../util/stable_read.ts";
import { checkNestedRepos, realRepoFs } from "./nested_repos.ts";

const ENOENT = Errno.ENOENT;
const QUARANTINE = ".hallpass-quarantined";
const MAX = 64 << 20;

export interface Read {
  text: string;
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  mode: number;
}

/** One file as it was at start. */
interface Before {
  file: ConfigFile;
  text: string | undefined;
  /** The canonical path of its directory, and of itself when it is a symlink. */
  dirReal: string | undefined;
  linkReal: string | undefined;
}

export interface AgentConfigSnapshot {
  before: Before[];
  home: string;
  project: string;
  dirs: { dir: string; prefix: string; template: Omit<ConfigFile, "path">; names: Set<string> }[];
}

function dirOf(p: string): string {
  return p.slice(0, p.lastIndexOf("/")) || "/";
}

function real(p: string): string | undefined {
  try {
    return Deno.realPathSync(p);
  } catch {
    return undefined;
  }
}

/** A file system without entry types: asked with lstat. */
function lstatKind(p: string): string {
  try {
    const st = Deno.lstatSync(p);
    return st.isSymlink ? "symlink" : st.isDirectory ? "dir" : st.isFile ? "file" : "other";
  } catch {
    return "missing";
  }
}

function isLink(p: string): boolean {
  try {
    return Deno.lstatSync(p).isSymlink;
  } catch {
    return false;
  }
}

/** A regular file's text as the agent reads it (following links), or undefined (lib/util/stable_read.ts). */
export function read(path: string): Read | undefined {
  const r = readStable(path, { follow: true, maxBytes: MAX, tries: 5 });
  if (r === undefined) return undefined;
  return {
    text: r.text,
    dev: r.st.dev,
    ino: r.st.ino ?? 0,
    size: r.st.size,
    mtimeMs: r.st.mtime?.getTime() ?? 0,
    mode: (r.st.mode ?? 0o600) & 0o777,
  };
}

function list(dir: string, prefix: string): string[] {
  return (dirEntries(dir) ?? []).filter((e) => e.name.startsWith(prefix) && !e.name.includes(QUARANTINE))
    .map((e) => e.name);
}

/**
 * Where a directory is: itself when no symlink is on its way (one call, no exception for the usual missing
 * ones: start-up cost), else its canonical path; undefined when missing.
 */
function dirWhere(dir: string): string | undefined {
  const fd = openDirNoSymlinks(dir);
  if (fd >= 0) {
    fsops.close(fd);
    return dir;
  }
  return fd === -ENOENT ? undefined : real(dir);
}

function snapshotOne(file: ConfigFile, dirs: Map<string, string | undefined>): Before {
  const dir = dirOf(file.path);
  if (!dirs.has(dir)) dirs.set(dir, dirWhere(dir));
  const text = read(file.path)?.text;
  return {
    file,
    text,
    dirReal: dirs.get(dir),
    linkReal: text !== undefined && isLink(file.path) ? real(file.path) : undefined,
  };
}

/** Reads the files, and the programs their watched keys name, before the command starts. */
export function snapshotAgentConfig(
  files: readonly ConfigFile[],
  dirs: readonly { dir: string; prefix: string; template: Omit<ConfigFile, "path"> }[],
  o: { home: string; project: string },
): AgentConfigSnapshot {
  const where = new Map<string, string | undefined>();
  const before = files.map((f) => snapshotOne(f, where));
  const ds = dirs.map((d) => {
    const names = new Set(list(d.dir, d.prefix));
    for (const n of names) before.push(snapshotOne({ ...d.template, path: `${d.dir}/${n}` }, where));
    return { ...d, names };
  });
  return { before, dirs: ds, home: o.home, project: o.project };
}

/**
 * Whether the file at `path` was made or changed since `sinceMs` (its ctime, which no call sets back), or the
 * file a symlink there leads to, when that lies in `within`.
 */
function changedSince(path: string, sinceMs: number, within: readonly string[]): boolean {
  const after = (st: Deno.FileInfo) => (st.ctime?.getTime() ?? Infinity) >= sinceMs;
  try {
    const l = Deno.lstatSync(path);
    if (after(l)) return true;
    if (!l.isSymlink) return false;
    const t = real(path);
    return t !== undefined && within.some((d) => t.startsWith(d + "/")) && after(Deno.statSync(t));
  } catch {
    return false;
  }
}

/** `~/x` for a path in `home`. */
function shown(p: string, home: string): string {
  return visible(p.startsWith(home + "/") ? "~" + p.slice(home.length) : p);
}

/** The check at exit: the lines to print (one per file put back, or that could not be). */
export function checkAgentConfig(snap: AgentConfigSnapshot, home: string, startMs: number): string[] {
  const todo = [...snap.before];
  for (const d of snap.dirs) {
    for (const n of list(d.dir, d.prefix)) {
      if (!d.names.has(n)) {
        todo.push({
          file: { ...d.template, path: `${d.dir}/${n}` },
          text: undefined,
          dirReal: real(d.dir),
          linkReal: undefined,
        });
      }
    }
  }
  const out: string[] = [];
  // What is at each name, from one listing per directory (no exception per missing file).
  const listed = new Map<string, Map<string, string>>();
  const kinds = (dir: string) => {
    let m = listed.get(dir);
    if (!m) {
      m = new Map(
        (dirEntries(dir) ?? []).map((e) => [e.name, e.unknown ? lstatKind(`${dir}/${e.name}`) : e.kind]),
      );
      listed.set(dir, m);
    }
    return m;
  };
  // Programs the commands kept at start name, in the agents' directories or the project: a hook's script
  // rewritten leaves the key as it was. Read from the text at start only when it could name one (start-up and
  // exit cost: a large ~/.claude.json is not parsed for nothing).
  const within = [...agentDirs(snap.home, snap.project), ...snap.dirs.map((d) => dirOf(d.dir))];
  const hints = [
    "~/",
    "$HOME",
    "${HOME}",
    "$CLAUDE_PROJECT_DIR",
    "${CLAUDE_PROJECT_DIR}",
    ...within.map((d) => d + "/"),
  ];
  const seen = new Set<string>();
  for (const b of snap.before) {
    if (b.text === undefined || !hints.some((h) => b.text!.includes(h))) continue;
    for (const p of namedPrograms(b.text, b.file, { home: snap.home, project: snap.project, within })) {
      if (seen.has(p) || !changedSince(p, startMs - 1000, within)) continue;
      seen.add(p);
      const aside = moveAside(p);
      out.push(
        `hallpass: ${shown(p, home)}: named by a command in ${
          shown(b.file.path, home)
        }, made or changed during ` +
          `the session: ${
            aside ? `moved aside as ${shown(aside, home)}` : "could not be moved aside"
          }; ${TAIL}`,
      );
    }
  }
  // Claude Code runs git in its plugin marketplaces' clones (`~/.claude/plugins/marketplaces/NAME`) to update
  // them: their hooks and config are judged as the project's nested repositories are (lib/sandbox/nested_repos.ts).
  for (const d of new Set(snap.dirs.map((x) => `${dirOf(x.dir)}/plugins`))) {
    if (kinds(dirOf(d)).get("plugins") !== "dir") continue;
    const r = checkNestedRepos(
      { project: d, startMs, protectedGitDirs: [], deadlineMs: Date.now() + 2_000 },
      realRepoFs,
    );
    out.push(...r.lines);
    if (r.incomplete) {
      out.push(
        `hallpass: stopped looking for git repositories in ${
          shown(d, home)
        } after ${r.entries} entries: hooks or ` +
          "config the sandbox wrote in one not reached could run outside it (docs/threat-model.md)",
      );
    }
  }
  for (const b of todo) {
    try {
      const line = checkOne(b, home, kinds, startMs);
      if (line) out.push(line);
    } catch (e) {
      out.push(`hallpass: ${shown(b.file.path, home)}: could not be checked (${visible(String(e))})`);
    }
  }
  return out;
}

const TAIL =
  "an agent started without hallpass would run what the sandbox wrote there (docs/threat-model.md)";

function checkOne(
  b: Before,
  home: string,
  kinds: (dir: string) => Map<string, string>,
  startMs: number,
): string | undefined {
  const path = b.file.path;
  const name = shown(path, home);
  const dir = dirOf(path);
  // Nothing there: nothing to judge (a key removed is never put back).
  const kind = kinds(dir).get(path.slice(dir.length + 1));
  if (kind === undefined && b.text === undefined && read(path) === undefined) return undefined;
  if (kind === "other") {
    // A FIFO, socket or device the agent would open: moved aside (another session's sandbox could feed it).
    const aside = moveAside(path);
    return `hallpass: ${name}: the sandbox made it a special file: ${
      aside ? `moved aside as ${shown(aside, home)}` : "could not be moved aside"
    }; ${TAIL}`;
  }
  if (kind === "file" && read(path) === undefined && changedSince(path, startMs - 1000, [])) {
    // Changed in the session, and not read here (larger than 64 MiB, unreadable, or replaced at every try):
    // it cannot be judged, so it is moved aside and the file as it was put back.
    const aside = moveAside(path);
    const put = aside && b.text !== undefined ? writeNew(path, b.text, 0o600, undefined) : true;
    return `hallpass: ${name}: changed by the sandbox and could not be read to be checked: ${
      aside ? `moved aside as ${shown(aside, home)}` : "could not be moved aside"
    }${b.text === undefined || !aside ? "" : put === true ? ", the file as it was put back" : ""}; ${TAIL}`;
  }
  // A directory or file on the way that now leads elsewhere (a symlink the sandbox made or changed): the link
  // is moved aside, so the agent reads the name again, and the file as it was is put back there.
  const dirNow = dirWhere(dir);
  if (dirNow !== b.dirReal && isLink(dir)) {
    const v = judgeConfig(b.file, b.text, read(path)?.text);
    if (v.kind === "same") return undefined;
    const aside = moveAside(dir);
    return `hallpass: ${name}: its directory was made a symlink to ${visible(dirNow ?? "?")} that sets ` +
      `${describeChanges(v.changes) || "watched keys"}: ${
        aside ? `moved aside as ${shown(aside, home)}` : "could not be moved aside"
      }; ${TAIL}`;
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    const link = isLink(path);
    const now = read(path);
    if (link && (b.linkReal === undefined || real(path) !== b.linkReal)) {
      // Made or changed by the sandbox (dangling, or leading where its content may change later): never written
      // through; the link is moved aside and the file as it was put back under the name.
      const v = judgeConfig(b.file, b.text, now?.text);
      const aside = moveAside(path);
      if (!aside) return `hallpass: ${name}: a symlink the sandbox made could not be moved aside; ${TAIL}`;
      const put = b.text === undefined ? true : writeNew(path, b.text, 0o600, undefined);
      const sets = v.kind === "same" ? "" : ` that sets ${describeChanges(v.changes) || "watched keys"}`;
      let to = "";
      try {
        to = ` to ${visible(Deno.readLinkSync(aside))}`;
      } catch { /* gone */ }
      return `hallpass: ${name}: the sandbox made it a symlink${to}${sets}: the link was moved aside as ${
        shown(aside, home)
      }${
        put === true
          ? (b.text === undefined ? "" : " and the file put back as it was")
          : ", the file not put back"
      }; ${TAIL}`;
    }
    const v: Verdict = judgeConfig(b.file, b.text, now?.text);
    if (v.kind === "same" || !now) return undefined;
    // Where to write: the file itself (through a link the person had at start, its target).
    const target = link ? (real(path) ?? path) : path;
    const what = describeChanges(v.changes);
    if (v.kind === "keys") {
      const r = writeNew(target, v.text, now.mode, now);
      if (r === "again") continue;
      return r
        ? `hallpass: ${name}: the sandbox set ${what}: put back as it was; ${TAIL}`
        : `hallpass: ${name}: the sandbox set ${what}: could not be put back; ${TAIL}`;
    }
    // The whole file as it was: the sandbox's version is moved aside (kept for review), then the old one put.
    if (!sameFile(target, now)) continue;
    const aside = moveAside(target);
    if (!aside) return `hallpass: ${name}: changed by the sandbox and could not be moved aside; ${TAIL}`;
    const why = what || `changed, and ${v.why ?? "not readable key by key"}`;
    const put = v.text === undefined ? true : writeNew(target, v.text, now.mode, undefined);
    return `hallpass: ${name}: the sandbox set ${why}: moved aside as ${shown(aside, home)}${
      v.text === undefined ? "" : put === true ? ", the file as it was put back" : ", the file not put back"
    }; ${TAIL}`;
  }
  return `hallpass: ${name}: kept changing while it was checked; ${TAIL}`;
}

function sameFile(path: string, r: Read): boolean {
  try {
    const st = Deno.statSync(path);
    return st.dev === r.dev && st.ino === r.ino && st.size === r.size &&
      (st.mtime?.getTime() ?? 0) === r.mtimeMs;
  } catch {
    return false;
  }
}

/**
 * Writes `text` to a new file beside `path` and renames it over `path` — when `expect` is given, only if
 * `path` still holds that file ("again" otherwise); without it, only if `path` does not exist. Through the
 * directory opened without following a symlink.
 */
export function writeNew(
  path: string,
  text: string,
  mode: number,
  expect: Read | undefined,
): boolean | "again" {
  const dir = real(dirOf(path));
  if (!dir) return false;
  const dfd = openDirNoSymlinks(dir);
  if (dfd < 0) return false;
  const base = path.slice(path.lastIndexOf("/") + 1);
  const tmp = `.${base}.hallpass-restore.${Deno.pid}`;
  const at = (n: string) => `/proc/self/fd/${dfd}/${n}`;
  try {
    try {
      Deno.removeSync(at(tmp));
    } catch { /* none */ }
    Deno.writeTextFileSync(at(tmp), text, { createNew: true, mode: mode || 0o600 });
    Deno.chmodSync(at(tmp), mode || 0o600);
    if (expect && !sameFile(at(base), expect)) {
      Deno.removeSync(at(tmp));
      return "again";
    }
    const flags = expect ? 0 : 1; /* RENAME_NOREPLACE */
    if (fsops.renameat2(dfd, cstr(tmp), dfd, cstr(base), flags) !== 0) {
      Deno.removeSync(at(tmp));
      return false;
    }
    return true;
  } catch {
    try {
      Deno.removeSync(at(tmp));
    } catch { /* gone */ }
    return false;
  } finally {
    fsops.close(dfd);
  }
}

/** Renames `path` (a file or a link, never followed) to `NAME.hallpass-quarantined[.N]`; its new path. */
function moveAside(path: string): string | undefined {
  const dir = real(dirOf(path));
  if (!dir) return undefined;
  const dfd = openDirNoSymlinks(dir);
  if (dfd < 0) return undefined;
  const base = path.slice(path.lastIndexOf("/") + 1);
  try {
    for (let n = 0; n < 100; n++) {
      const to = `${base}${QUARANTINE}${n ? `.${n}` : ""}`;
      if (fsops.renameat2(dfd, cstr(base), dfd, cstr(to), 1 /* RENAME_NOREPLACE */) === 0) {
        return `${dirOf(path)}/${to}`;
      }
    }
    return undefined;
  } finally {
    fsops.close(dfd);
  }
}
