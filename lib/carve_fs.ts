/**
 * The real file system for lib/landlock_carve.ts: a directory lister that does not follow symlinks and counts
 * a file's names, and the canonical form of a path that may not exist yet.
 *
 * @module
 */
import type { CarveEntry, CarveFs } from "./landlock_carve.ts";

export const realCarveFs: CarveFs = {
  shared(dir: string): boolean {
    try {
      const m = Deno.lstatSync(dir).mode ?? 0;
      return (m & 0o1002) === 0o1002; // sticky and writable by others
    } catch {
      return false;
    }
  },
  list(dir: string): CarveEntry[] | undefined {
    let it;
    try {
      if (!Deno.lstatSync(dir).isDirectory) return undefined;
      it = [...Deno.readDirSync(dir)];
    } catch {
      return undefined;
    }
    const out: CarveEntry[] = [];
    for (const e of it) {
      if (e.isDirectory) out.push({ name: e.name, kind: "dir" });
      else if (e.isSymlink) out.push({ name: e.name, kind: "symlink" });
      else {
        let links = 1;
        let ino: number | undefined;
        try {
          const st = Deno.lstatSync(`${dir === "/" ? "" : dir}/${e.name}`);
          links = st.nlink ?? 1;
          ino = st.ino ?? undefined;
        } catch {
          // gone meanwhile: no rule is harmless
        }
        out.push({ name: e.name, kind: e.isFile ? "file" : "other", links, ino });
      }
    }
    return out;
  },
};

/** `p` with its longest existing prefix made canonical (symlinks resolved) and the rest appended. */
export function resolveExisting(p: string): string {
  let head = p;
  let tail = "";
  for (;;) {
    try {
      const r = Deno.realPathSync(head);
      return tail ? (r === "/" ? tail : r + tail) : r;
    } catch {
      if (head === "/" || head === "") return p;
      const i = head.lastIndexOf("/");
      tail = head.slice(i) + tail;
      head = head.slice(0, i) || "/";
    }
  }
}
