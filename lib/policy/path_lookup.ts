/** Finding a program in $PATH as a shell would (an executable regular file). */
import { statIfThere } from "../util/exists.ts";

/** `isProgram`: whether a candidate path is a program (default: an executable regular file here). */
export function lookupInPath(
  prog: string,
  pathEnv: string,
  isProgram: (path: string) => boolean = executableFile,
): string | null {
  if (prog.includes("/")) return prog;
  for (const dir of pathEnv.split(":")) {
    if (!dir) continue;
    const p = `${dir}/${prog}`;
    if (isProgram(p)) return p;
  }
  return null;
}

function executableFile(p: string): boolean {
  const st = statIfThere(p); // most $PATH entries do not hold the program: no exception for each
  return st !== undefined && st.isFile && ((st.mode ?? 0) & 0o111) !== 0;
}
