/**
 * Gemini CLI's extensions, checked at exit: every directory (or link to one) in `~/.gemini/extensions/` is
 * loaded at gemini's start, and its `gemini-extension.json` starts `mcpServers` at once (red team: one the
 * sandbox made there under `--agent gemini` ran outside; tests/e2e/redteam4_project_agent_config_test.ts). An
 * extension whose entry, manifest or install record (`.gemini-extension-install.json`, which can point gemini
 * at a directory elsewhere) was made or changed during the session (ctime) is moved out of that directory, to
 * `~/.gemini/extensions.hallpass-quarantined/` (a name left in `extensions/` would still be loaded), and named.
 * An installed extension's other files (a server's script) are not checked, as Claude Code's plugins' are not.
 *
 * @module
 */
import { realRepoFs, type RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";
import { moveAside, QUARANTINE } from "./move_aside.ts";

export function checkGeminiExtensions(
  home: string,
  startMs: number,
  fs: RepoFs & { moveInto?(from: string, dir: string, name: string): boolean } = realRepoFs,
): string[] {
  const since = Math.floor(startMs / 1000) * 1000 - 1000;
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;
  const dir = `${home}/.gemini/extensions`;
  const out: string[] = [];
  const top = fs.lstat(dir);
  if (top?.kind === "symlink") {
    // Made a link (to a directory the sandbox filled): gemini follows it, hallpass moves nothing through it.
    if (!changed(top)) return out;
    let to = `${dir}${QUARANTINE}-link`;
    for (let n = 2; fs.lstat(to) !== undefined && n < 100; n++) to = `${dir}${QUARANTINE}-link.${n}`;
    const moved = fs.rename(dir, to);
    out.push(
      `hallpass: ~/.gemini/extensions: made a symlink during the session: ${
        moved ? `moved aside as ${visible(to.replace(home, "~"))}` : "COULD NOT move it aside"
      }; gemini started without hallpass would load the extensions where it leads (docs/threat-model.md)`,
    );
    return out;
  }
  const entries = fs.list(dir);
  if (!entries) return out;
  for (const e of entries) {
    if (e.kind !== "dir" && e.kind !== "symlink") continue;
    const p = `${dir}/${e.name}`;
    const files = ["gemini-extension.json", ".gemini-extension-install.json"].map((n) => `${p}/${n}`);
    const touched = changed(fs.lstat(p)) || files.some((f) => {
      const st = fs.lstat(f);
      if (st?.kind !== "symlink") return changed(st);
      const t = fs.real(f);
      return changed(st) || (t !== undefined && changed(fs.lstat(t)));
    });
    if (!touched) continue;
    // A name the sandbox took first (a symlink planted there) is passed by: the next one is tried.
    const at = moveAside(fs, p, `${home}/.gemini/extensions${QUARANTINE}`, e.name);
    const moved = at !== "";
    out.push(
      `hallpass: ${
        visible(`~/.gemini/extensions/${e.name}`)
      }: a gemini extension made or changed during the ` +
        `session: ${
          moved ? `moved to ${visible(at.replace(home, "~"))}` : "COULD NOT move it aside"
        }; gemini ` +
        "started without hallpass would load it (docs/threat-model.md)",
    );
  }
  return out;
}
