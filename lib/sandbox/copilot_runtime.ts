/**
 * GitHub Copilot CLI's runtime, checked at exit. The `copilot` binary (1.0.102's loader, `sea-loader.js`) runs
 * JavaScript and native addons (index.js, app.js, cli-main.js, prebuilds/…) from `PKG/PLATFORM/VERSION/`, where
 * PLATFORM is `universal` or `linux-x64` and PKG each directory of its search list: `$COPILOT_PKG_CACHE_HOME/pkg`,
 * `$COPILOT_CACHE_HOME/pkg`, `CACHE/copilot/pkg` (CACHE: `$XDG_CACHE_HOME`, else `~/.cache`),
 * `$COPILOT_HOME/pkg`, `~/.copilot/pkg`. It unpacks its own version into the first of the first three, and —
 * auto-update, on by default — runs instead the highest version above its own found in any of them with a
 * readable index.js (a bare `index.js` is enough). Red team (copilot 1.0.102): a line the sandbox added to the
 * unpacked index.js, or a `~/.copilot/pkg/linux-x64/9.9.9/index.js` it planted (`--agent copilot` writes
 * `~/.copilot/**`), ran at the person's next `copilot --version` outside hallpass (tests/e2e/redteam6_test.ts,
 * tests/e2e/copilot_pkg_test.ts).
 *
 * Inside a session `--agent copilot` sets `COPILOT_PKG_CACHE_HOME` to a directory only sessions use
 * (lib/policy/agent_recipes.ts): copilot unpacks there once and runs it in every later session, never outside.
 * At exit each search directory copilot outside reads (with the person's own environment) is looked at:
 *   - a version directory in which an entry was made or changed during the session (ctime; the `inuse.PID.hold`
 *     / `.lock` files copilot's runtime makes and removes at each start aside, when they are plain files);
 *   - a version or platform directory (or `pkg`) that may have been renamed in: its own ctime and its parent's
 *     are from the session (a rename changes both; a tree moved in keeps its old ctimes inside);
 *   - a symlink made in the session at the directory holding `pkg`, at `pkg`, a platform or a version;
 * each is moved to `PKG.hallpass-quarantined/` (the holder's symlink: to `HOLDER.hallpass-quarantined/`) and
 * named. Copilot outside unpacks its own again at its next start when its own was moved.
 *
 * @module
 */
import { changedBelow } from "../../ffi/dir_entries.ts";
import { moveAside, QUARANTINE } from "./move_aside.ts";
import { realRepoFs, type RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";

const INUSE = /^inuse\.\d+\.(hold|lock)$/;
const MAX_ENTRIES = 20_000;
const MAX_DEPTH = 24;
/** More entries than this in a `pkg` or platform directory changed in the session: it is moved whole. */
const CROWD = 100;

type Fs = RepoFs & { moveInto?(from: string, dir: string, name: string): boolean };

/** The variables copilot's loader reads to find its runtime, as the person's environment has them. */
export const COPILOT_ENV = ["COPILOT_PKG_CACHE_HOME", "COPILOT_CACHE_HOME", "XDG_CACHE_HOME", "COPILOT_HOME"];

/**
 * The directories holding a `pkg` that copilot started outside hallpass reads (its loader's search list, with
 * the person's environment `env`), plus `~/.cache/copilot` when `$XDG_CACHE_HOME` points elsewhere (copilot
 * started without it). Values that are not absolute paths are left out (relative to wherever copilot starts).
 * Pure.
 */
export function copilotSearchHolders(home: string, env: (k: string) => string | undefined): string[] {
  const abs = (v: string | undefined) => {
    if (!v?.startsWith("/")) return undefined;
    const n = v.replace(/\/+/g, "/").replace(/\/$/, "");
    return n.split("/").some((c) => c === "." || c === "..") ? undefined : n;
  };
  const cache = abs(env("XDG_CACHE_HOME")) ?? `${home}/.cache`;
  const out: string[] = [];
  for (
    const d of [
      abs(env("COPILOT_PKG_CACHE_HOME")),
      abs(env("COPILOT_CACHE_HOME")),
      `${cache}/copilot`,
      `${home}/.cache/copilot`,
      abs(env("COPILOT_HOME")),
      `${home}/.copilot`,
    ]
  ) {
    if (d && d !== "" && !out.includes(d)) out.push(d);
  }
  return out;
}

export function checkCopilotRuntime(
  home: string,
  env: (k: string) => string | undefined,
  startMs: number,
  fs: Fs = realRepoFs,
): string[] {
  const since = Math.floor(startMs / 1000) * 1000 - 1000;
  const out: string[] = [];
  for (const holder of copilotSearchHolders(home, env)) out.push(...checkHolder(holder, home, since, fs));
  return out;
}

function checkHolder(holder: string, home: string, since: number, fs: Fs): string[] {
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;
  const out: string[] = [];
  const aside = (from: string, dir: string, name: string, why: string) => {
    const at = moveAside(fs, from, dir, name);
    const shown = (p: string) => visible(p.startsWith(home + "/") ? `~${p.slice(home.length)}` : p);
    out.push(
      `hallpass: ${shown(from)}: ${why}: ${
        at ? `moved to ${shown(at)}` : "COULD NOT move it aside"
      }; copilot started without hallpass would run it (docs/threat-model.md)`,
    );
  };
  const MOVED_IN = "made or moved in during the session";
  const slash = holder.lastIndexOf("/");
  const top = fs.lstat(holder);
  if (top?.kind === "symlink") {
    // The holder itself (never $HOME or above it): only a symlink made in the session, moved, not its target.
    if (changed(top) && slash > 0 && !(home + "/").startsWith(holder + "/")) {
      aside(holder, `${holder}${QUARANTINE}`, holder.slice(slash + 1), "made a symlink during the session");
    }
    return out;
  }
  if (top?.kind !== "dir") return out;
  const qdir = `${holder}/pkg${QUARANTINE}`;
  const pkg = `${holder}/pkg`;
  const pst = fs.lstat(pkg);
  if (pst?.kind === "symlink") {
    if (changed(pst)) aside(pkg, qdir, "pkg", "made a symlink during the session");
    return out;
  }
  if (pst?.kind !== "dir") return out;
  if (changed(pst) && changed(top)) {
    aside(pkg, qdir, "pkg", `copilot's runtime directory, ${MOVED_IN}`);
    return out;
  }
  // A flood of entries made in the session (thousands of version directories) is moved whole, in one line:
  // copilot keeps a few versions; a bounded exit matters more than keeping a planted crowd's neighbours.
  const plats = fs.list(pkg) ?? [];
  if (plats.length > CROWD && changed(pst)) {
    aside(pkg, qdir, "pkg", `copilot's runtime directory, ${plats.length} entries, ${MOVED_IN}`);
    return out;
  }
  for (const plat of plats) {
    const pp = `${pkg}/${plat.name}`;
    if (plat.kind === "symlink") {
      if (changed(fs.lstat(pp))) aside(pp, qdir, plat.name, "made a symlink during the session");
      continue;
    }
    if (plat.kind !== "dir") continue;
    const platSt = fs.lstat(pp);
    if (changed(platSt) && changed(pst)) {
      aside(pp, qdir, plat.name, `copilot's runtime directory, ${MOVED_IN}`);
      continue;
    }
    const platChanged = changed(platSt);
    const vers = fs.list(pp) ?? [];
    if (vers.length > CROWD && platChanged) {
      aside(pp, qdir, plat.name, `copilot's runtime directory, ${vers.length} entries, ${MOVED_IN}`);
      continue;
    }
    for (const ver of vers) {
      const vp = `${pp}/${ver.name}`;
      if (ver.kind === "symlink") {
        if (changed(fs.lstat(vp))) {
          aside(vp, qdir, `${plat.name}-${ver.name}`, "made a symlink during the session");
        }
      } else if (ver.kind === "dir" && platChanged && changed(fs.lstat(vp))) {
        aside(vp, qdir, `${plat.name}-${ver.name}`, `copilot's runtime, ${MOVED_IN}`);
      } else if (ver.kind === "dir" && touched(vp, since, fs)) {
        aside(vp, qdir, `${plat.name}-${ver.name}`, "copilot's runtime, changed during the session");
      }
    }
  }
  return out;
}

/**
 * Whether any entry below version directory `dir` (not followed through symlinks) has a ctime from `since` on,
 * the directory's own ctime and its plain `inuse.*` files aside; a tree too large or deep, or one that cannot be
 * read, counts as changed.
 */
function touched(dir: string, since: number, fs: RepoFs): boolean {
  if (fs === realRepoFs) {
    // The same walk without a string or object per entry (ffi/dir_entries.ts): hundreds of files at every exit.
    const fast = changedBelow(dir, since, {
      maxDepth: MAX_DEPTH,
      maxEntries: MAX_ENTRIES,
      skipTopFile: (name) => INUSE.test(name),
    });
    if (fast !== undefined) return fast;
  }
  let entries = 0;
  const walk = (d: string, depth: number): boolean => {
    const list = fs.list(d);
    if (list === undefined || depth > MAX_DEPTH) return true;
    for (const e of list) {
      if (++entries > MAX_ENTRIES) return true;
      const p = `${d}/${e.name}`;
      const st = fs.lstat(p);
      if (st === undefined) continue; // gone since the listing: copilot's own inuse file, or nothing to run
      if (depth === 0 && e.kind === "file" && st.kind === "file" && INUSE.test(e.name)) continue;
      if (st.ctimeMs >= since) return true;
      if (st.kind === "dir" && walk(p, depth + 1)) return true;
    }
    return false;
  };
  return walk(dir, 0);
}
