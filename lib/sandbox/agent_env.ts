/**
 * The variables an agent's recipe sets for the sandboxed command (`env` in lib/policy/agent_recipes.ts: copilot's
 * `COPILOT_PKG_CACHE_HOME`), each naming a directory only sessions use. Made here at start (its parents 0755 as
 * usual, itself 0700, never through a symlink at its own name), then set in hallpass's environment, which the
 * launcher passes on. The person's own values are kept for the exit checks ({@link outsideEnv}): what copilot
 * started outside hallpass reads.
 *
 * @module
 */

const before = new Map<string, string | undefined>();

/**
 * Makes each directory and sets each variable; a directory that cannot be made is still named (copilot makes it).
 * Nothing is made when a name on the way below `home` is a symlink (an earlier session with `--allow-path
 * ~/.local` could plant one): hallpass would make directories at its target, outside what the session may write.
 */
export function applyAgentEnv(vars: readonly { name: string; dir: string }[], home: string): void {
  for (const v of vars) {
    try {
      if (!v.dir.startsWith(home + "/")) throw new Error("not below $HOME");
      let p = home;
      for (const c of v.dir.slice(home.length + 1).split("/")) {
        p += `/${c}`;
        const st = lstatOrNull(p);
        if (st === null) break;
        if (st.isSymlink) throw new Error("a symlink on the way");
      }
      Deno.mkdirSync(v.dir.slice(0, v.dir.lastIndexOf("/")) || "/", { recursive: true, mode: 0o755 });
      Deno.mkdirSync(v.dir, { mode: 0o700 });
    } catch {
      // there already, or not made: the agent makes it during the run (a write its rule allows)
    }
    if (!before.has(v.name)) before.set(v.name, Deno.env.get(v.name));
    Deno.env.set(v.name, v.dir);
  }
}

/** The person's environment: `k` as it was before {@link applyAgentEnv}. */
export function outsideEnv(k: string): string | undefined {
  return before.has(k) ? before.get(k) : Deno.env.get(k);
}

function lstatOrNull(p: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(p);
  } catch {
    return null;
  }
}
