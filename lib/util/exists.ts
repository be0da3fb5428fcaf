/** Whether `p` names something here (symlinks followed: a dangling one does not). */
export function exists(p: string): boolean {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
}
