/**
 * Carving holes in a Landlock grant. Landlock only adds access: a rule on a directory grants its rights to
 * everything below it, and nothing can take them back lower down. To grant some access everywhere below a
 * root EXCEPT some bits below a few paths (the holes), the grant is split (the approach nono takes on Linux):
 *
 *   - the root gets the bits no hole below it withholds;
 *   - in each directory on the way from the root down to a hole (a "carved" directory), every existing entry
 *     gets the withheld bits too, except the next component on the way, which is carved the same way;
 *   - the hole itself gets only what it does not withhold (nothing of the withheld bits comes from above).
 *
 * Consequences the callers must handle (they are reported, not hidden):
 *   - an entry created after start directly in a carved directory is under no rule of its own: it does not
 *     get the carved directory's withheld bits (`carved[].missing`). A supervisor that performs creates there
 *     knows it and can say so; a fast path must hand such calls to it.
 *   - a hole that does not exist yet is still a hole: its parent chain is carved down to the nearest existing
 *     ancestor, so whatever is created there later gets none of the withheld bits.
 *   - a symlinked entry gets no rule: Landlock judges the target's path, never the link's, so a rule opened
 *     through the link would grant the target (perhaps a hole). A hole reached through a symlink must be
 *     given where it really is (see `withAliases`).
 *   - Landlock knows paths, not files: a hard link made before the run, or a bind mount of a parent, is a
 *     second name that no hole covers.
 *   - a directory everyone creates files in (/tmp) is never carved: the holes below it are dropped and
 *     reported (`dropped`), since every temporary file made during the run would be unreadable otherwise.
 *
 * Pure: the file system is read through the injected `CarveFs`, so every case is a unit test
 * (tests/landlock_carve_test.ts). lib/floor/carve_fs.ts is the real one.
 *
 * @module
 */

/** A directory entry as listed (without following a symlink). */
export interface CarveEntry {
  name: string;
  kind: "dir" | "file" | "symlink" | "other";
  /** How many names the file has (non-directories); more than one may mean a name inside a hole. */
  links?: number;
  /** The file's inode number (non-directories), to tell a file replaced under the same name. */
  ino?: number;
}

export interface CarveFs {
  /** The entries of a directory; undefined when it is not an existing directory (missing, a file, unlistable). */
  list(dir: string): CarveEntry[] | undefined;
  /**
   * Whether everyone creates files in this directory (world-writable and sticky: /tmp, /var/tmp, /dev/shm):
   * such a directory is never carved, and the holes below it are dropped (reported).
   */
  shared?(dir: string): boolean;
  /** What `path` is (without following a final symlink), if it exists; else the parent is listed to learn it. */
  kind?(path: string): CarveEntry["kind"] | undefined;
}

/**
 * Grant `access` everywhere below `path`: absolute and canonical (no symlink in it: the caller resolves it).
 * A grant that does not exist, or turns out to be a symlink, is dropped.
 */
export interface CarveGrant {
  path: string;
  access: bigint;
}

/** Withhold `withhold` at `path` and below (it need not exist). */
export interface CarveHole {
  path: string;
  withhold: bigint;
}

/** One Landlock path-beneath rule. `dir`: whether the path was a directory when listed. */
export interface CarveRule {
  path: string;
  access: bigint;
  dir: boolean;
}

/** A directory on the way to a hole: entries created there after start do not get `missing`. */
export interface CarvedDir {
  path: string;
  missing: bigint;
}

export interface CarveResult {
  /** Sorted by path, one per path (rights merged). */
  rules: CarveRule[];
  /** Sorted by path, one per directory (missing bits merged). */
  carved: CarvedDir[];
  /** How many directories were listed (the cost at start-up is about rules + listed). */
  listed: number;
  /**
   * Files with more than one name found in carved directories and given no rule: Landlock attaches a rule to
   * the file, not the name, so a rule on a second name of a protected file would open it by every name.
   */
  hardLinked: string[];
  /** Holes not kept because a directory on the way to them is shared (see `CarveFs.shared`). */
  dropped: string[];
}

export class CarveLimitError extends Error {
  constructor(readonly limit: number, readonly dir: string) {
    super(`more than ${limit} Landlock rules needed (carving ${dir})`);
  }
}

export interface CarveOptions {
  /** The rights a rule on a non-directory may hold (Landlock refuses directory-only rights on a file). */
  fileRights: bigint;
  /** Stop with CarveLimitError past this many rules (default 20000). */
  maxRules?: number;
  /** Give a rule to a file with several names in a carved directory (default false: see `hardLinked`). */
  grantHardLinks?: boolean;
}

/** Whether `p` is `dir` or below it (both absolute, normalised, no trailing slash except "/"). */
export function isAtOrBelow(p: string, dir: string): boolean {
  if (dir === "/") return p.startsWith("/");
  return p === dir || p.startsWith(dir + "/");
}

function join(dir: string, name: string): string {
  return dir === "/" ? `/${name}` : `${dir}/${name}`;
}

/** The first component of `p` below `dir` (p strictly below dir). */
function nextComponent(p: string, dir: string): string {
  const rest = p.slice(dir === "/" ? 1 : dir.length + 1);
  const i = rest.indexOf("/");
  return i < 0 ? rest : rest.slice(0, i);
}

/** Normalises an absolute path lexically: no ".", "..", doubled or trailing slashes. */
export function normalise(p: string): string {
  if (!p.startsWith("/")) throw new Error(`${p}: not an absolute path`);
  const out: string[] = [];
  for (const c of p.split("/")) {
    if (c === "" || c === ".") continue;
    if (c === "..") out.pop();
    else out.push(c);
  }
  return "/" + out.join("/");
}

/**
 * The rules that grant each grant's access below it except the withheld bits below each hole, and the
 * carved directories. Grants are independent (Landlock adds them up): a grant inside a hole (an allowed file
 * in a protected directory) grants its access there.
 */
export function carve(
  grants: readonly CarveGrant[],
  holes: readonly CarveHole[],
  fs: CarveFs,
  opts: CarveOptions,
): CarveResult {
  const max = opts.maxRules ?? 20000;
  const rules = new Map<string, CarveRule>();
  const carved = new Map<string, bigint>();
  let listed = 0;
  const dropped: string[] = [];
  const hardLinked: string[] = [];
  const hs = holes.filter((h) => h.withhold !== 0n).map((h) => ({
    path: normalise(h.path),
    withhold: h.withhold,
  }));

  const add = (path: string, access: bigint, dir: boolean, where: string) => {
    const a = dir ? access : access & opts.fileRights;
    if (a === 0n) return;
    const old = rules.get(path);
    if (old) old.access |= a;
    else {
      if (rules.size >= max) throw new CarveLimitError(max, where);
      rules.set(path, { path, access: a, dir });
    }
  };

  /** `path` exists as a `dir`-or-not; give it `access` minus what the holes at or below it withhold. */
  const walk = (path: string, access: bigint, dir: boolean, below: { path: string; withhold: bigint }[]) => {
    let acc = access;
    for (const h of below) if (h.path === path) acc &= ~h.withhold;
    // Nothing exists below a file: a hole there cannot be reached through it (a directory made there later
    // is a new file, under no rule but its carved parent's).
    const deeper = dir ? below.filter((h) => h.path !== path) : [];
    let w = 0n;
    for (const h of deeper) w |= h.withhold;
    w &= acc;
    if (w !== 0n && fs.shared?.(path)) {
      // Carving a directory everyone creates files in (/tmp) would leave every new file there unreadable:
      // the holes below it are not kept, and said (`dropped`).
      add(path, acc, dir, path);
      for (const h of deeper) if (h.withhold & acc) dropped.push(h.path);
      return;
    }
    add(path, acc & ~w, dir, path);
    if (w === 0n) return;
    const entries = fs.list(path);
    listed++;
    if (!entries) return; // gone: whatever appears there later gets nothing of w
    carved.set(path, (carved.get(path) ?? 0n) | w);
    const byName = new Map<string, { path: string; withhold: bigint }[]>();
    for (const h of deeper) {
      const n = nextComponent(h.path, path);
      const way = byName.get(n);
      if (way) way.push(h);
      else byName.set(n, [h]);
    }
    for (const e of entries) {
      if (e.kind === "symlink") continue; // judged where it points
      const child = join(path, e.name);
      if (e.kind !== "dir" && (e.links ?? 1) > 1 && !opts.grantHardLinks) {
        hardLinked.push(child);
        continue;
      }
      const way = byName.get(e.name);
      if (way) walk(child, w, e.kind === "dir", way);
      else add(child, w, e.kind === "dir", path);
    }
  };

  for (const g of grants) {
    const root = normalise(g.path);
    const below = hs.filter((h) => isAtOrBelow(h.path, root));
    const parent = root === "/" ? undefined : root.slice(0, root.lastIndexOf("/")) || "/";
    const name = root.slice(root.lastIndexOf("/") + 1);
    const kind = parent === undefined
      ? "dir"
      : fs.kind
      ? fs.kind(root)
      : fs.list(parent)?.find((e) => e.name === name)?.kind;
    if (kind === undefined || kind === "symlink") continue; // missing, or not where it really is
    walk(root, g.access, kind === "dir", below);
  }
  const byPath = <T extends { path: string }>(a: T, b: T) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  return {
    rules: [...rules.values()].sort(byPath),
    carved: [...carved].map(([path, missing]) => ({ path, missing })).sort(byPath),
    listed,
    hardLinked: [...new Set(hardLinked)].sort(),
    dropped: [...new Set(dropped)].sort(),
  };
}

/**
 * The holes plus, for each hole reached through a symlink, the same hole where it really is: with `~/.ssh`
 * a symlink to `/data/ssh`, the hole must (also) be at `/data/ssh`, since Landlock judges that path.
 * `resolve` canonicalises the longest existing prefix of a path and appends the rest (lib/floor/carve_fs.ts).
 */
export function withAliases(holes: readonly CarveHole[], resolve: (p: string) => string): CarveHole[] {
  const out: CarveHole[] = [];
  const seen = new Set<string>();
  const push = (h: CarveHole) => {
    const k = `${h.path}\0${h.withhold}`;
    if (!seen.has(k)) {
      seen.add(k);
      out.push(h);
    }
  };
  for (const h of holes) {
    const p = normalise(h.path);
    push({ path: p, withhold: h.withhold });
    const r = resolve(p);
    if (r !== p) push({ path: normalise(r), withhold: h.withhold });
  }
  return out;
}

/**
 * The carved directory an entry's parent is, if any: `missing` is what a file created at `path` after start
 * would lack. Undefined when `path`'s parent is not carved.
 */
export function carvedParent(carved: readonly CarvedDir[], path: string): CarvedDir | undefined {
  const p = normalise(path);
  if (p === "/") return undefined;
  const parent = p.slice(0, p.lastIndexOf("/")) || "/";
  return carved.find((c) => c.path === parent);
}
