/**
 * Commands shadowed in `$PATH`, checked at exit. A program the sandbox puts in an earlier `$PATH` directory
 * under the name of one in a later directory (`~/.local/bin/ls` before `/usr/bin/ls`, as Ubuntu's profile
 * orders them) runs the next time the person types that name, anywhere (red team: with the project `$HOME`, or
 * `--allow-path ~/.local` for `pip install --user`, the next `ls` outside ran it; tests/e2e/redteam6_test.ts).
 * A new command name is not checked (nobody runs it without asking for it); a shadow is.
 *
 * Checked: each absolute `$PATH` directory in `$HOME` but not inside the project, or any in `$HOME` when the
 * project is `$HOME` or above it (a project's own `bin/` or `node_modules/.bin` on `$PATH` is its content, and
 * shadowing there is what it is for). An entry made or changed in the session (ctime) whose name is a program
 * in a later `$PATH` directory is moved to `DIR.hallpass-quarantined/` and named (over 100 at once: the
 * directory, whole). `pip install --user --upgrade pip` under hallpass makes such a shadow too: move it back.
 *
 * @module
 */
import { moveAside, QUARANTINE } from "./move_aside.ts";
import { realRepoFs, type RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";
import { renamedIn } from "./renamed_in.ts";

const MAX_MOVES = 100;

type Fs = RepoFs & { moveInto?(from: string, dir: string, name: string): boolean };

const inside = (p: string, dir: string) => p === dir || p.startsWith(dir === "/" ? "/" : dir + "/");

export function checkPathShadows(
  pathEnv: string,
  home: string,
  project: string,
  startMs: number,
  fs: Fs = realRepoFs,
): string[] {
  const since = Math.floor(startMs / 1000) * 1000 - 1000;
  const dirs = pathEnv.split(":").filter((d) => d.startsWith("/")).map((d) => d.replace(/\/+$/, "") || "/");
  const homeProject = inside(home, project);
  const out: string[] = [];
  const shown = (p: string) => visible(p.startsWith(home + "/") ? `~${p.slice(home.length)}` : p);
  for (let i = 0; i < dirs.length; i++) {
    const dir = dirs[i];
    if (!inside(dir, home) || dir === home || (!homeProject && inside(dir, project))) continue;
    if (dirs.indexOf(dir) !== i) continue; // the first time only
    const shadows: string[] = [];
    // Renamed into place during the session (lib/sandbox/renamed_in.ts): every entry counts, whatever its ctime.
    const fresh = renamedIn(dir, home, since, fs);
    for (const e of fs.list(dir) ?? []) {
      if (e.kind === "dir") continue;
      const st = fs.lstat(`${dir}/${e.name}`);
      if (st === undefined || (!fresh && st.ctimeMs < since)) continue;
      const later = dirs.slice(i + 1).some((d) => d !== dir && fs.lstat(`${d}/${e.name}`) !== undefined);
      if (later) shadows.push(e.name);
    }
    if (shadows.length > MAX_MOVES) {
      // Over MAX_MOVES (a sandbox making hallpass's exit crawl, one rename each): the directory at once.
      const parent = dir.slice(0, dir.lastIndexOf("/")) || "/";
      const base = dir.slice(dir.lastIndexOf("/") + 1);
      const at = moveAside(fs, dir, `${parent}/${base}${QUARANTINE}-all`, base);
      out.push(
        `hallpass: ${
          shown(dir)
        }: ${shadows.length} programs made or changed during the session run instead of ` +
          `commands further along $PATH: ${
            at ? `the directory moved to ${shown(at)}` : "COULD NOT move it aside"
          } (docs/threat-model.md)`,
      );
      continue;
    }
    for (const name of shadows) {
      const at = moveAside(fs, `${dir}/${name}`, `${dir}${QUARANTINE}`, name);
      out.push(
        `hallpass: ${shown(`${dir}/${name}`)}: made or changed during the session, and runs instead of ${
          visible(name)
        } further along $PATH: ${
          at ? `moved to ${shown(at)}` : "COULD NOT move it aside"
        } (docs/threat-model.md)`,
      );
    }
  }
  return out;
}
