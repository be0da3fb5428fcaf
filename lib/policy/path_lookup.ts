/** Finding a program in $PATH as a shell would (an executable regular file). */

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
  try {
    const st = Deno.statSync(p);
    return st.isFile && ((st.mode ?? 0) & 0o111) !== 0;
  } catch {
    return false; // not here
  }
}
