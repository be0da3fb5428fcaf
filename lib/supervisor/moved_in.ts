/**
 * Names moved into the project from outside it. A directory the sandbox prepared outside the project in an
 * earlier session (a repository in an `--allow-path` tree or an agent's directory, with a hook) and renamed into
 * the project in a later one keeps its files' ctimes, which the exit check reads as "changed before this
 * session" (lib/sandbox/nested_repos.ts): its hook would run when git is run there outside. So no directory
 * comes in by a rename:
 *   - a rename the kernel makes (continued: both ends in the Landlock floor) is refused by Landlock itself when
 *     it moves a directory in: floor entries outside the project lack a right the project's have
 *     (lib/sandbox/plan.ts landlockPlan), and a rename may not give a directory a right it did not have (EXDEV);
 *   - a rename the supervisor would perform (the project's top, directories made there, trees a rule allows
 *     outside the floor; after a question is allowed) is refused with EXDEV (decide.ts), a file's too: what is at
 *     the name when it renames may not be what it looked at (a racing thread may swap a directory in). The
 *     fast path hands such a rename to the mediator.
 * EXDEV is the error of a move across file systems: `mv` copies instead, and a copy's files are new, so the exit
 * check sees them. A file renamed or linked in by the kernel is new to the check anyway (a rename and a link set
 * the file's ctime). docs/threat-model.md "Repositories below the top".
 *
 * @module
 */

const RENAME_EXCHANGE = 2;

/** Whether `path` is the project or lies in it. */
export function inProject(project: string, path: string): boolean {
  return project === "/" || path === project || path.startsWith(project + "/");
}

/**
 * Whether a rename moves something from outside the project into it: its source lies outside and its
 * destination inside, or (RENAME_EXCHANGE, which moves both) the other way round. `ends`: source, destination
 * (canonical). Without a project (a caller that does not know it) nothing is.
 */
export function movesIntoProject(
  kind: string,
  atFlags: number,
  ends: readonly { path: string }[],
  project: string | undefined,
): boolean {
  if (kind !== "rename" || ends.length !== 2 || project === undefined) return false;
  const [from, to] = ends.map((e) => inProject(project, e.path));
  return (!from && to) || ((atFlags & RENAME_EXCHANGE) !== 0 && from && !to);
}
