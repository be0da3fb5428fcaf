/**
 * The read side of the Landlock ruleset: "/" readable except the protected credential locations
 * (lib/policy/secrets.ts), carved with lib/floor/landlock_carve.ts. Landlock handles READ_FILE only: listing a directory
 * (READ_DIR) stays allowed everywhere, since withholding it on the way to a hole would withhold it below too.
 *
 * What the carve costs (lib/floor/landlock_carve.ts): entries created after start directly in a carved directory
 * (`/`, `/home`, `~`, `~/.config`, ...) are under no read rule, so the sandbox cannot read them back in this
 * session. `newInCarved` finds them at exit for the summary.
 *
 * @module
 */
import { FILE_RIGHTS, FS } from "../../ffi/landlock.ts";
import { carve, type CarveFs, type CarveResult, withAliases } from "./landlock_carve.ts";
import type { ReadProtection } from "../policy/secrets.ts";
import type { Rule } from "../types.ts";
import { visible } from "../ui/sanitize.ts";

export interface ReadFloor extends CarveResult {
  /** The names each carved directory held at start, with the file's inode number (non-directories). */
  before: Map<string, Map<string, number | undefined>>;
  /**
   * Built-in protections in the project (a $HOME that is the project, or inside it): not kept, since carving
   * the sandbox's workspace would leave every file it makes at the project's top unreadable to it. Yours
   * (`--protect`, `protect`) are kept there.
   */
  inProject: string[];
}

/**
 * The read rules for a session. Grants: "/", the project (always readable: a protection above it does not
 * reach into it) and each `allow read` path inside a protection. Holes: each protection, also where it really
 * is when reached through a symlink.
 */
export function readFloor(
  reads: ReadProtection,
  project: string,
  fs: CarveFs,
  resolve: (p: string) => string,
): ReadFloor {
  const before = new Map<string, Map<string, number | undefined>>();
  const recording: CarveFs = {
    shared: fs.shared?.bind(fs),
    kind: fs.kind?.bind(fs),
    list(dir) {
      const entries = fs.list(dir);
      if (entries) before.set(dir, new Map(entries.map((e) => [e.name, e.ino])));
      return entries;
    },
  };
  const grants = [
    { path: "/", access: FS.READ_FILE },
    { path: project, access: FS.READ_FILE },
    ...reads.readable.map((r) => ({ path: resolve(r.path), access: FS.READ_FILE })),
  ];
  const inside = (p: string) => p === project || p.startsWith(project + "/");
  const kept = reads.protect.filter((p) => p.source.kind !== "builtin" || !inside(resolve(p.path)));
  const inProject = reads.protect.filter((p) => !kept.includes(p)).map((p) => p.path);
  const holes = withAliases(kept.map((p) => ({ path: p.path, withhold: FS.READ_FILE })), resolve);
  const res = carve(grants, holes, recording, { fileRights: FILE_RIGHTS });
  for (const k of [...before.keys()]) if (!res.carved.some((c) => c.path === k)) before.delete(k);
  return { ...res, before, inProject };
}

/**
 * Entries of carved directories that were not there at start, or are another file under the same name (an
 * atomic save renames a new file over the old one): the sandbox cannot read them in this session.
 */
export function newInCarved(floor: ReadFloor, fs: CarveFs): string[] {
  const out: string[] = [];
  for (const [dir, names] of floor.before) {
    for (const e of fs.list(dir) ?? []) {
      if (e.kind === "symlink") continue;
      const had = names.has(e.name);
      if (!had || (e.kind !== "dir" && names.get(e.name) !== e.ino)) {
        out.push(`${dir === "/" ? "" : dir}/${e.name}`);
      }
    }
  }
  return out.sort();
}

/** A path for people: `~/…` below the home directory. */
export function tilde(p: string, home: string): string {
  return home !== "/" && (p === home || p.startsWith(home + "/")) ? "~" + p.slice(home.length) : p;
}

/** Lines for the start of a session (before the command runs): what the person should know about reads. */
export function readStartLines(
  floor: ReadFloor,
  reads: ReadProtection,
  project: string,
  home: string,
): string[] {
  const out: string[] = [];
  for (const a of reads.unused) {
    out.push(
      `hallpass: allow read ${
        visible(tilde(a.path, home))
      }: nothing protected there (\`hallpass rules\` lists what is)`,
    );
  }
  const inProject = floor.carved.filter((c) => c.path === project || c.path.startsWith(project + "/"));
  if (inProject.length) {
    out.push(
      `hallpass: files the sandbox creates directly in ${
        few(inProject.map((c) => visible(tilde(c.path, home))))
      } cannot be read back in this session (a protected location is below it)`,
    );
  }
  // A protection dropped below /tmp is said here only when it lies outside $HOME (a link such as
  // ~/.ssh -> /tmp/keys, or GNUPGHOME=/tmp/g): a $HOME that is itself in /tmp stays quiet (a test's, a container's).
  const away = floor.dropped.filter((p) => !(p === home || p.startsWith(home + "/")));
  if (away.length) {
    out.push(
      `hallpass: NOT protected this session, as they lie below a directory everyone creates files in: ${
        few(away.map((p) => visible(p)))
      } (\`hallpass rules\` lists the protections)`,
    );
  }
  if (floor.hardLinked.length) {
    out.push(
      `hallpass: unreadable in this session, as they have other names (hard links) that may be protected files: ${
        floor.hardLinked.slice(0, 5).map((p) => visible(tilde(p, home))).join(", ")
      }${floor.hardLinked.length > 5 ? ", …" : ""}`,
    );
  }
  return out;
}

/** At most five of `items` for a line at start (3000 `--protect` paths in /tmp made one 60 KB line). */
function few(items: string[]): string {
  return items.length > 5 ? `${items.slice(0, 5).join(", ")}, … (${items.length} in all)` : items.join(", ");
}

/**
 * Protections not enforced, for `hallpass rules` (not said at every start: a $HOME in /tmp or in the
 * project is usually a test's or a container's, and the start stays quiet).
 */
export function notEnforcedLines(floor: ReadFloor, home: string): string[] {
  const out: string[] = [];
  if (floor.dropped.length) {
    out.push(
      `# not protected, as they lie below a directory everyone creates files in (such as /tmp): ${
        floor.dropped.map((p) => visible(tilde(p, home))).join(", ")
      }`,
    );
  }
  if (floor.inProject.length) {
    out.push(
      `# not protected, as they lie in the project (the sandbox's workspace; use a narrower --project): ${
        floor.inProject.map((p) => visible(tilde(p, home))).join(", ")
      }`,
    );
  }
  return out;
}

/**
 * Lines for the exit summary. `failed`: the command did not exit 0. `unreported`: why the kernel's refusals
 * were not reported to hallpass (lib/floor/refused_reads.ts), or null when they were (then they are listed instead).
 * `agentOf`: the agent (`--agent NAME`) whose own file a path is, if any.
 */
export function readExitLines(
  created: string[],
  failed: boolean,
  home: string,
  unreported: string | null = "the kernel does not report them",
  agentOf: (p: string) => string | undefined = () => undefined,
): string[] {
  const out: string[] = [];
  if (created.length) {
    out.push(
      `hallpass: made during the run where the sandbox cannot read them back until it starts again (a directory on the way to a protected location):`,
    );
    for (const p of created.slice(0, 10)) {
      const agent = agentOf(p);
      // An agent's own state: there at the next start, so read normally then; a command that failed on it now
      // works when run again.
      out.push(
        `  ${visible(tilde(p, home))}${
          agent
            ? ` (${agent}'s own file: readable from its next start; if ${agent} failed on it, run it again)`
            : ""
        }`,
      );
    }
    if (created.length > 10) out.push(`  … and ${created.length - 10} more`);
  }
  if (failed && unreported !== null) {
    out.push(
      `hallpass: reads of protected credential locations are refused (EACCES) by the kernel, unseen by hallpass here (${unreported}); if the command failed on one, \`hallpass rules read PATH\` names the rule and --allow-read PATH lifts it`,
    );
  }
  return out;
}

/**
 * The line to show when the supervisor has just made `targets` (the new name: the last target of a rename
 * or link, else the first) directly in a carved directory: a file that was not there at start, or another
 * file under the same name, cannot be read back in this session. Once per path (`noticed`); null otherwise.
 * Reads the file's inode number (lstat) to tell a replaced file from the one that was there.
 */
export function carvedCreateNotice(
  carved: Map<string, Map<string, number | undefined>>,
  kind: string,
  targets: string[],
  noticed: Set<string>,
): string | null {
  if (!["open", "mkdir", "mknod", "symlink", "rename", "link"].includes(kind) || targets.length === 0) {
    return null;
  }
  const path = targets[targets.length - 1];
  const slash = path.lastIndexOf("/");
  const dir = path.slice(0, slash) || "/";
  const names = carved.get(dir);
  if (!names || noticed.has(path)) return null;
  const name = path.slice(slash + 1);
  let st: Deno.FileInfo;
  try {
    st = Deno.lstatSync(path);
  } catch {
    return null;
  }
  if (st.isSymlink) return null; // judged where it points
  if (names.has(name) && (st.isDirectory || names.get(name) === (st.ino ?? undefined))) return null;
  noticed.add(path);
  return `hallpass: ${visible(path)} is new in ${
    visible(dir)
  }, a directory on the way to a protected location: the sandbox cannot read it back until it starts again`;
}

/**
 * The directories to make at start so the sandbox can read back what it writes there: trees it may write
 * (`allow write DIR/**` from options, recipes and your rules) that do not exist yet and would be made directly
 * in a directory on the way to a protected location (`~/.claude` for a first run of Claude Code, with
 * `~/.ssh` protected: made during the run, it would be under no read rule). Made empty, mode 0700, before the
 * ruleset, they are ordinary entries of that directory and get its read rule. Pure: `exists` and the
 * protected paths are passed in; a tree below a shared directory (/tmp) is left alone, as nothing there is
 * carved.
 */
export function treesToMake(
  rules: readonly Rule[],
  protectedPaths: readonly string[],
  exists: (p: string) => boolean,
  shared: (p: string) => boolean,
): string[] {
  const out: string[] = [];
  for (const r of rules) {
    if (r.effect !== "allow" || r.op !== "write" || !r.target.endsWith("/**") || r.expiresAt !== undefined) {
      continue;
    }
    if (r.source.kind === "file" && r.source.project) continue;
    const dir = r.target.slice(0, -3);
    if (dir === "" || dir.includes("*") || exists(dir)) continue;
    let a = dir;
    do a = a.slice(0, a.lastIndexOf("/")) || "/"; while (a !== "/" && !exists(a));
    // `a` is carved when a protection lies strictly below it (and it is not shared).
    const carved = protectedPaths.some((p) => p.startsWith(a === "/" ? "/" : a + "/")) && !shared(a);
    if (carved && !out.includes(dir)) out.push(dir);
  }
  return out;
}
