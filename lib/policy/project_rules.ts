/**
 * The project's own rules file, `PROJECT/.hallpass/rules`: a project file by where it sits, whatever it
 * points to. It may only narrow (lib/policy/rules_file.ts), and it is read only when it is a real file in a real
 * directory of the project: a symlink anywhere on its way (`.hallpass` or `rules`) is refused with a one-line
 * error (exit 125, nothing run) rather than read as another file — a link to a file outside the project would
 * otherwise be read as that file, whose `allow` lines count — or skipped, which would drop the project owner's
 * deny lines. The sandbox cannot plant one: `.hallpass/**` is a protected path (lib/policy/protected_paths.ts).
 *
 * {@link projectRulesNotice} tells the person at start when the file changed since hallpass last ran in that
 * project (by any route: an editor, a pull, another tool), with one line naming the file.
 *
 * @module
 */
import { UsageError } from "../types.ts";
import { exists, lstatIfThere } from "../util/exists.ts";
import { Sha256 } from "../util/sha256.ts";

export interface ProjectRulesText {
  file: string;
  /** null: there is no project rules file. */
  text: string | null;
}

/** Reads `PROJECT/.hallpass/rules` without following a symlink on its way. */
export function readProjectRules(project: string): ProjectRulesText {
  const dir = `${project}/.hallpass`;
  const file = `${dir}/rules`;
  const refuse = (what: string) =>
    new UsageError(
      `${what} is a symlink: a project's rules are read only from a real file in the project (replace the link by the file itself)`,
    );
  // No exception for a missing one (lib/util/exists.ts): most projects have none.
  const dst = lstatIfThere(dir);
  if (dst === undefined) return { file, text: null };
  if (dst.isSymlink) throw refuse(dir);
  if (!dst.isDirectory) return { file, text: null };
  const fst = lstatIfThere(file);
  if (fst === undefined) return { file, text: null };
  if (fst.isSymlink) throw refuse(file);
  if (!fst.isFile) throw new UsageError(`${file}: not a regular file`);
  if (fst.size > 4 * 1024 * 1024) throw new UsageError(`${file}: larger than 4 MiB`);
  let f: Deno.FsFile;
  try {
    f = Deno.openSync(file, { read: true });
  } catch (e) {
    throw new UsageError(`${file}: ${(e as Error).message}`);
  }
  try {
    // The file opened must be the one checked: a link swapped in between names another file.
    const st = f.statSync();
    if (st.dev !== fst.dev || st.ino !== fst.ino) throw refuse(file);
    const buf = new Uint8Array(Math.min(st.size, 4 * 1024 * 1024) + 1);
    let n = 0;
    for (;;) {
      const r = f.readSync(buf.subarray(n));
      if (r === null || r === 0) break;
      n += r;
      if (n >= buf.length) throw new UsageError(`${file}: larger than 4 MiB`);
    }
    return { file, text: new TextDecoder().decode(buf.subarray(0, n)) };
  } finally {
    f.close();
  }
}

/** Web Crypto (built in): node:crypto would cost ~90 ms of start-up to load. */
/** Synchronous (lib/util/sha256.ts): crypto.subtle answers through the event loop, ~0.25 ms a call at start-up. */
function sha256(s: string): string {
  return new Sha256().update(new TextEncoder().encode(s)).hex();
}

/**
 * Compares the project rules with what hallpass saw there last time (kept in `stateDir`, one small file per
 * project) and records the new state. The one-line notice, or null when nothing changed or hallpass never
 * ran in that project before. Never throws: a notice that cannot be kept is not worth a failed start.
 */
export function projectRulesNotice(
  project: string,
  rules: ProjectRulesText,
  stateDir: string,
): string | null {
  const now = rules.text === null ? "none" : sha256(rules.text);
  const record = `${stateDir}/${sha256(project).slice(0, 32)}`;
  let before: string | null = null;
  try {
    // first run here: no record (asked without an exception: lib/util/exists.ts)
    const lines = exists(record) ? Deno.readTextFileSync(record).split("\n") : [];
    if (lines[0] === project) before = lines[1] ?? null;
  } catch {
    // unreadable: as on a first run
  }
  if (before === now) return null;
  try {
    Deno.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    Deno.writeTextFileSync(record, `${project}\n${now}\n`, { mode: 0o600 });
  } catch {
    // read-only home: no notice kept
  }
  if (before === null) return null;
  if (now === "none") return `hallpass: note: ${rules.file} was removed since hallpass last ran here`;
  if (before === "none") {
    return `hallpass: note: ${rules.file} appeared since hallpass last ran here: its rules apply`;
  }
  return `hallpass: note: ${rules.file} changed since hallpass last ran here: its rules apply`;
}
