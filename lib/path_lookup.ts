/** Finding a program in $PATH as a shell would (an executable regular file). */

export function lookupInPath(prog: string, pathEnv: string): string | null {
  if (prog.includes("/")) return prog;
  for (const dir of pathEnv.split(":")) {
    if (!dir) continue;
    const p = `${dir}/${prog}`;
    try {
      const st = Deno.statSync(p);
      if (st.isFile && (st.mode ?? 0) & 0o111) return p;
    } catch {
      // not here
    }
  }
  return null;
}
