/**
 * What every Python start runs from the user's site-packages, checked at exit: each `*.pth` file there is read
 * by `site` at every interpreter start and its `import` lines run, and a `usercustomize` (or `sitecustomize`)
 * module there is imported — for every python3 run outside, by the person or by any tool written in Python,
 * without asking (red team: a project that is `$HOME`, or `--allow-path ~/.local` for `pip install --user`,
 * wrote one; `python3 -c pass` outside ran it; tests/e2e/redteam6_test.ts).
 *
 * The user's base is `$PYTHONUSERBASE` when absolute, else `~/.local`; its site directories are
 * `lib/python*\/site-packages`. Such a file (or module directory, or compiled form) made or changed during the
 * session (ctime) is moved to `lib/pythonX.Y/site-packages.hallpass-quarantined/` beside it, out of Python's
 * reach, and named (a package `pip install --user` put there in the session loses its `.pth`: move it back). A
 * symlink made in the session at `lib`, `pythonX.Y` or `site-packages` is moved aside the same way.
 *
 * @module
 */
import { moveAside, QUARANTINE } from "./move_aside.ts";
import { realRepoFs, type RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";
import { renamedIn } from "./renamed_in.ts";

const MAX_MOVES = 100;
/** Names `site` runs: `*.pth`, and the modules usercustomize / sitecustomize in any form (.py, .pyc, .so, a package). */
const RUNS = /(\.pth$)|^(usercustomize|sitecustomize)(\.|$)/;

type Fs = RepoFs & { moveInto?(from: string, dir: string, name: string): boolean };

export function checkPythonStartup(
  home: string,
  userBase: string | undefined,
  startMs: number,
  fs: Fs = realRepoFs,
): string[] {
  const since = Math.floor(startMs / 1000) * 1000 - 1000;
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;
  const base = userBase?.startsWith("/") ? userBase.replace(/\/+$/, "") : `${home}/.local`;
  // Renames into place are looked for from a site up to $HOME, or to the base's parent (lib/sandbox/renamed_in.ts).
  const stop = base.startsWith(home + "/") ? home : base.slice(0, base.lastIndexOf("/")) || "/";
  const out: string[] = [];
  const shown = (p: string) => visible(p.startsWith(home + "/") ? `~${p.slice(home.length)}` : p);
  const aside = (from: string, dir: string, name: string, why: string) => {
    const at = moveAside(fs, from, dir, name);
    out.push(
      `hallpass: ${shown(from)}: ${why}: ${
        at ? `moved to ${shown(at)}` : "COULD NOT move it aside"
      }; every python3 started without hallpass would run it (docs/threat-model.md)`,
    );
  };
  const lib = `${base}/lib`;
  const lst = fs.lstat(lib);
  if (lst?.kind === "symlink") {
    if (changed(lst)) aside(lib, `${base}/lib${QUARANTINE}`, "lib", "made a symlink during the session");
    return out;
  }
  for (const v of fs.list(lib) ?? []) {
    if (!v.name.startsWith("python")) continue;
    const vp = `${lib}/${v.name}`;
    if (v.kind === "symlink") {
      if (changed(fs.lstat(vp))) {
        aside(vp, `${lib}/python${QUARANTINE}`, v.name, "made a symlink during the session");
      }
      continue;
    }
    if (v.kind !== "dir") continue;
    const site = `${vp}/site-packages`;
    const qdir = `${site}${QUARANTINE}`;
    const sst = fs.lstat(site);
    if (sst?.kind === "symlink") {
      if (changed(sst)) aside(site, qdir, "site-packages", "made a symlink during the session");
      continue;
    }
    if (sst?.kind !== "dir") continue;
    const touched: string[] = [];
    // Renamed into place during the session (lib/sandbox/renamed_in.ts): every such file counts, whatever its ctime.
    const fresh = renamedIn(site, stop, since, fs);
    for (const e of fs.list(site) ?? []) {
      if (!RUNS.test(e.name)) continue;
      const p = `${site}/${e.name}`;
      const st = fs.lstat(p);
      // A link is judged by where it leads too; a package by its entries (a file rewritten in place).
      const target = st?.kind === "symlink" ? fs.real(p) : undefined;
      if (
        fresh || changed(st) || (target !== undefined && changed(fs.lstat(target))) ||
        (st?.kind === "dir" && (fs.list(p) ?? []).some((c) => changed(fs.lstat(`${p}/${c.name}`))))
      ) touched.push(e.name);
    }
    if (touched.length > MAX_MOVES) {
      // Over MAX_MOVES (a sandbox making hallpass's exit crawl, one rename each): the directory at once.
      aside(
        site,
        qdir,
        "site-packages",
        `${touched.length} files Python runs at every start, made or changed during the session`,
      );
      continue;
    }
    for (const name of touched) {
      aside(
        `${site}/${name}`,
        qdir,
        name,
        "a file Python runs at every start, made or changed during the session",
      );
    }
  }
  return out;
}
