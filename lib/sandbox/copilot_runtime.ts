/**
 * GitHub Copilot CLI's unpacked runtime, checked at exit. The `copilot` binary unpacks its JavaScript and native
 * addons (index.js, app.js, cli-main.js, prebuilds/…) to `CACHE/copilot/pkg/PLATFORM/VERSION/` at its first
 * start and runs them from there at every start after; `--agent copilot` lets the sandbox write
 * `~/.cache/copilot/**` (where it unpacks). Red team (copilot 1.0.102): a line the sandbox added to index.js ran
 * at the person's next `copilot -p` outside hallpass (tests/e2e/redteam6_test.ts).
 *
 * A version directory in which any entry was made or changed during the session (ctime; the `inuse.PID.hold` /
 * `.lock` files copilot makes and removes at each start aside, when they are plain files) is moved to
 * `CACHE/copilot/pkg.hallpass-quarantined/` and named: copilot unpacks its own again at its next start. A
 * symlink made in the session at `copilot`, `pkg`, a platform or a version directory is moved aside the same
 * way (copilot would follow it). `CACHE` is `~/.cache` and `$XDG_CACHE_HOME` (copilot uses the latter when set).
 *
 * @module
 */
import { changedBelow } from "../../ffi/dir_entries.ts";
import { moveInto } from "./gemini_extensions.ts";
import { realRepoFs, type RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";

const QUARANTINE = ".hallpass-quarantined";
const INUSE = /^inuse\.\d+\.(hold|lock)$/;
const MAX_ENTRIES = 20_000;
const MAX_DEPTH = 24;

type Fs = RepoFs & { moveInto?(from: string, dir: string, name: string): boolean };

export function checkCopilotRuntime(
  home: string,
  xdgCache: string | undefined,
  startMs: number,
  fs: Fs = realRepoFs,
): string[] {
  const since = Math.floor(startMs / 1000) * 1000 - 1000;
  const caches = [`${home}/.cache`];
  if (xdgCache?.startsWith("/") && !caches.includes(xdgCache.replace(/\/+$/, ""))) {
    caches.push(xdgCache.replace(/\/+$/, ""));
  }
  const out: string[] = [];
  for (const cache of caches) out.push(...checkCache(cache, home, since, fs));
  return out;
}

function checkCache(cache: string, home: string, since: number, fs: Fs): string[] {
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;
  const base = `${cache}/copilot`;
  const out: string[] = [];
  const aside = (from: string, dir: string, name: string, why: string) => {
    let at = "";
    for (let k = 1; k < 100 && !at; k++) {
      const to = `${dir}${k > 1 ? `.${k}` : ""}`;
      let n = name;
      for (let i = 2; fs.lstat(`${to}/${n}`) !== undefined && i < 100; i++) n = `${name}.${i}`;
      if ((fs.moveInto ?? moveInto)(from, to, n)) at = `${to}/${n}`;
    }
    const shown = (p: string) => visible(p.startsWith(home + "/") ? `~${p.slice(home.length)}` : p);
    out.push(
      `hallpass: ${shown(from)}: ${why}: ${
        at ? `moved to ${shown(at)}` : "COULD NOT move it aside"
      }; copilot started without hallpass would run it (docs/threat-model.md)`,
    );
  };
  const top = fs.lstat(base);
  if (top?.kind === "symlink") {
    if (changed(top)) {
      aside(base, `${cache}/copilot${QUARANTINE}`, "copilot", "made a symlink during the session");
    }
    return out;
  }
  if (top?.kind !== "dir") return out;
  const qdir = `${base}/pkg${QUARANTINE}`;
  const pkg = `${base}/pkg`;
  const pst = fs.lstat(pkg);
  if (pst?.kind === "symlink") {
    if (changed(pst)) aside(pkg, qdir, "pkg", "made a symlink during the session");
    return out;
  }
  for (const plat of fs.list(pkg) ?? []) {
    const pp = `${pkg}/${plat.name}`;
    if (plat.kind === "symlink") {
      if (changed(fs.lstat(pp))) aside(pp, qdir, plat.name, "made a symlink during the session");
      continue;
    }
    if (plat.kind !== "dir") continue;
    for (const ver of fs.list(pp) ?? []) {
      const vp = `${pp}/${ver.name}`;
      if (ver.kind === "symlink") {
        if (changed(fs.lstat(vp))) {
          aside(vp, qdir, `${plat.name}-${ver.name}`, "made a symlink during the session");
        }
      } else if (ver.kind === "dir" && touched(vp, since, fs)) {
        aside(vp, qdir, `${plat.name}-${ver.name}`, "copilot's unpacked runtime, changed during the session");
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
