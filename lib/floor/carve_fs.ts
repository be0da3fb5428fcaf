/**
 * The real file system for lib/floor/landlock_carve.ts: a directory lister that does not follow symlinks and counts
 * a file's names, and the canonical form of a path that may not exist yet.
 *
 * @module
 */
import type { CarveEntry, CarveFs } from "./landlock_carve.ts";
import { realpath } from "../../ffi/libc.ts";

export const realCarveFs: CarveFs = {
  kind(path: string) {
    try {
      const st = Deno.lstatSync(path);
      return st.isDirectory ? "dir" : st.isSymlink ? "symlink" : st.isFile ? "file" : "other";
    } catch {
      return undefined;
    }
  },
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

/**
 * {@link resolveExisting} for one start-up's many paths (hundreds of protected locations, most missing, most
 * sharing a parent): each distinct path costs at most one realpath, and none below a missing directory.
 * Same answers as resolveExisting; not to be kept across a session (the file system changes).
 */
export function existingResolver(): (p: string) => string {
  const known = new Map<string, string | null>(); // canonical form, or null when missing
  const canonical = (p: string): string | null => {
    const hit = known.get(p);
    if (hit !== undefined) return hit;
    let r: string | null = null;
    const i = p.lastIndexOf("/");
    const parent = i <= 0 ? "/" : p.slice(0, i);
    if (p === "/" || canonical(parent) !== null) {
      const c = realpath(p); // no exception per missing path (each would cost far more than the call)
      r = typeof c === "string" ? c : null;
    }
    known.set(p, r);
    return r;
  };
  const answered = new Map<string, string>(); // read_floor asks for most paths twice
  return (p: string): string => {
    const a = answered.get(p);
    if (a !== undefined) return a;
    const r = resolve(p);
    answered.set(p, r);
    return r;
  };
  function resolve(p: string): string {
    // Only plain absolute paths take the shortcut (no "//", ".", ".." or trailing "/").
    if (!p.startsWith("/") || (p !== "/" && p.endsWith("/")) || /\/\/|\/\.\.?(\/|$)/.test(p)) {
      return resolveExisting(p);
    }
    let head = p;
    let tail = "";
    for (;;) {
      const r = canonical(head);
      if (r !== null) return tail ? (r === "/" ? tail : r + tail) : r;
      if (head === "/") return p;
      const i = head.lastIndexOf("/");
      tail = head.slice(i) + tail;
      head = head.slice(0, i) || "/";
    }
  }
}
