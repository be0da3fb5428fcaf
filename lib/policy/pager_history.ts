/**
 * less keeps a history of searches and `!` commands, and saves it on every exit through a temporary file in
 * the same directory named like the history file with its last letter changed (`~/.lesshst` through
 * `~/.lesshsQ`, or R, S, … when that exists) and a rename. Any program that pages (`git log`, `man`) runs less,
 * so without a rule every session would ask about a random-looking name (issue 15). The file only lists what
 * was typed in less; nothing runs it (less shows it for recall, never executes it), so writing it is allowed
 * in every session, by builtin rules `hallpass rules` shows.
 *
 * Where less 590+ keeps it: `$LESSHISTFILE` (none when `-` or `/dev/null`), else `$XDG_STATE_HOME/lesshst`,
 * `~/.local/state/lesshst`, `$XDG_DATA_HOME/lesshst`, `~/.lesshst`. Only names in `$HOME` are allowed, and a
 * `$LESSHISTFILE` only when its name says it is a history (holds "hst" or "hist"), as for `$HISTFILE`.
 *
 * @module
 */
import type { Rule } from "../types.ts";

export function pagerHistoryRules(home: string, env: (name: string) => string | undefined): Rule[] {
  const inHome = (p: string | undefined) =>
    p !== undefined && p.startsWith(home + "/") && !/[*?[\]]|\/\.\.?(\/|$)/.test(p.slice(home.length));
  const files: string[] = [];
  const custom = env("LESSHISTFILE");
  if (custom !== undefined && custom !== "") {
    const name = custom.slice(custom.lastIndexOf("/") + 1);
    if (inHome(custom) && /hi?st/i.test(name) && name.length > 1) files.push(custom);
  } else {
    for (const dir of [env("XDG_STATE_HOME"), `${home}/.local/state`, env("XDG_DATA_HOME")]) {
      if (inHome(dir)) files.push(`${dir!.replace(/\/+$/, "")}/lesshst`);
    }
    files.push(`${home}/.lesshst`);
  }
  const source = { kind: "builtin" as const, what: "less's history of searches (saved at every exit)" };
  return [...new Set(files)].flatMap((f) => [f, `${f.slice(0, -1)}*`]).map((target) => ({
    effect: "allow" as const,
    op: "write" as const,
    target,
    source,
  }));
}
