/**
 * The agents' configuration in the project's subdirectories, checked at exit: claude runs the hooks of the
 * `.claude/settings*.json` of the directory it is started in, codex loads a trusted project's `.codex/config.toml`
 * from each directory between its root and there, gemini a trusted folder's `.gemini/settings.json` (red team:
 * each ran what a sandbox wrote in `P/pkg/`; tests/e2e/redteam4_project_agent_config_test.ts). The ones at the
 * project's top are read at start and judged key by key (lib/sandbox/agent_config_check.ts); these are found by
 * the walk for nested repositories (lib/sandbox/nested_repos.ts `agentDirs`), so nothing was read at start: a
 * file made or changed during the session (its ctime) that sets a watched key (lib/policy/agent_config.ts), or
 * cannot be read to be judged, is moved aside as `NAME.hallpass-quarantined`; so is a symlink made during the
 * session at such a directory's name or a file's (the agent follows it).
 *
 * @module
 */
import { projectAgentConfig, watchedKeys } from "../policy/agent_config.ts";
import type { RepoFs } from "./nested_repos.ts";
import { visible } from "../ui/sanitize.ts";

const QUARANTINE = ".hallpass-quarantined";
const TAIL = "an agent started there without hallpass would run it (docs/threat-model.md)";

export function checkProjectAgentConfig(
  found: readonly string[],
  o: { project: string; startMs: number },
  fs: RepoFs,
): string[] {
  const since = Math.floor(o.startMs / 1000) * 1000 - 1000;
  const changed = (st: { ctimeMs: number } | undefined) => st !== undefined && st.ctimeMs >= since;
  const inProject = (p: string) => p.startsWith(o.project + "/");
  const lines: string[] = [];
  const moveAside = (path: string, why: string) => {
    let to = `${path}${QUARANTINE}`;
    for (let n = 2; fs.lstat(to) !== undefined && n < 100; n++) to = `${path}${QUARANTINE}.${n}`;
    lines.push(
      `hallpass: ${visible(`${path} ${why}`)}: ${
        fs.rename(path, to) ? `moved aside as ${visible(to)}` : "COULD NOT move it aside"
      }; ${TAIL}`,
    );
  };
  for (const d of found) {
    const l = fs.lstat(d);
    if (!l) continue;
    if (l.kind === "symlink" && changed(l)) {
      moveAside(d, "was made a symlink during the session");
      continue;
    }
    // An older link into the project: the files where it leads (a link of the person's to outside: not ours).
    const at = l.kind === "symlink" ? fs.real(d) : d;
    if (!at || !inProject(at)) continue;
    for (const t of projectAgentConfig(d.slice(d.lastIndexOf("/") + 1))) {
      const p = `${at}/${t.name}`;
      const g = fs.lstat(p);
      if (!g) continue;
      if (g.kind === "symlink") {
        const to = fs.real(p);
        if (changed(g) || (to !== undefined && inProject(to) && changed(fs.lstat(to)) && sets(to, t))) {
          moveAside(
            p,
            `is a symlink${changed(g) ? " made during the session" : " to a file changed during it"}`,
          );
        }
        continue;
      }
      if (!changed(g)) continue;
      if (g.kind !== "file") moveAside(p, `was made a ${g.kind} during the session`);
      else {
        const why = sets(p, t);
        if (why) moveAside(p, `was written during the session: ${why}`);
      }
    }
  }
  return lines;

  /** What a config file sets that an agent would run (undefined: nothing watched). */
  function sets(p: string, t: Parameters<typeof watchedKeys>[1]): string | undefined {
    const text = fs.read(p);
    if (text === undefined) return "it could not be read to be checked";
    const w = watchedKeys(text, t);
    if (typeof w === "string") return `it is ${w}`;
    if (w.size === 0) return undefined;
    return `it sets ${
      [...w.keys()].map((k) => (JSON.parse(k) as string[]).join(".")).slice(0, 5).join(", ")
    }`;
  }
}
