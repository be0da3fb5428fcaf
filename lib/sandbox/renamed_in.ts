/**
 * Whether a directory's entries must all count as made in the session, whatever their own ctimes: the directory,
 * or one on the way to it below `stop`, was renamed into place (or made) during the session. A rename changes
 * the ctime of the directory moved and of the one it lands in, and never those of the files inside it: a tree
 * made before the session (in a writable place) and renamed to `~/.local/bin` keeps its old ctimes (review5:
 * `mv ~/.local/share/kit/bin ~/.local/bin` under `--allow-path ~/.local`, then `ls` outside ran it). A directory
 * whose entries changed and whose parent's did too in the session counts as well (ctimes cannot tell them
 * apart): its entries are then judged as new (the checks using this move what they find aside, and say so).
 * Pure over `lstat`.
 *
 * @module
 */
import type { RepoFs } from "./nested_repos.ts";

/** `dir` itself, then each parent strictly below `stop`: true when one of them and its parent changed from `since`. */
export function renamedIn(dir: string, stop: string, since: number, fs: Pick<RepoFs, "lstat">): boolean {
  const changed = (p: string) => {
    const st = fs.lstat(p);
    return st !== undefined && st.ctimeMs >= since;
  };
  const prefix = stop === "/" ? "/" : stop + "/";
  for (let p = dir; p !== stop && p.startsWith(prefix);) {
    const parent = p.slice(0, p.lastIndexOf("/")) || "/";
    if (changed(p) && changed(parent)) return true;
    p = parent;
  }
  return false;
}
