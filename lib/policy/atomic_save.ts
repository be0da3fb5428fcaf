/**
 * Atomic saves, for the prompt: a program writes `NAME.tmp.*`, `NAME.XXXXXX`, `.NAME.XXXXXX` or `NAME~` next to
 * NAME and renames it over NAME. The question is about NAME (lib/supervisor/mediator.ts asks about a rename's
 * destination and shows both ends), and the scopes it offers start with "NAME and its temporary siblings"
 * (`DIR/NAME*`, the one-`*` form of lib/policy/path_scope.ts, which never matches across `/`) when one `*` can say it:
 * a `[t]` or `[a]` answer then covers the temporary file and the rename over NAME alike. Pure.
 */

/** NAME when `name` looks like a temporary sibling of NAME (an atomic save's), else null. */
export function tempSiblingBase(name: string): string | null {
  let m = /^(.+?)\.(?:tmp|temp)(?:[.~_-].*)?$/i.exec(name);
  if (m) return m[1];
  m = /^(.+)~$/.exec(name);
  if (m) return m[1];
  m = /^\.(.+)\.[A-Za-z0-9_]{6,}$/.exec(name); // mkstemp's .NAME.XXXXXX
  if (m) return m[1];
  m = /^(.+)\.[A-Za-z0-9_]{6}$/.exec(name); // NAME.XXXXXX (only where NAME exists: see siblingScope)
  if (m) return m[1];
  return null;
}

function split(p: string): [string, string] {
  const i = p.lastIndexOf("/");
  return [i <= 0 ? "" : p.slice(0, i), p.slice(i + 1)];
}

/**
 * The scope "NAME and its temporary siblings" for a write to `path` (a temporary file) or a rename of `from`
 * over `path`: `DIR/NAME*` when `path` (or `from`) is a temporary sibling of NAME in the same directory, NAME
 * exists or is the rename's destination, the sibling's name starts with NAME (else one `*` cannot cover both),
 * and nothing else in DIR starts with NAME (`names` lists DIR): `~/.b*` for a save of `~/.b` would cover
 * `~/.bashrc` too, and is not offered then. Null otherwise, and when DIR cannot be listed.
 */
export function siblingScope(
  path: string,
  from: string | null,
  exists: (p: string) => boolean,
  names: (dir: string) => string[] | null,
): string | null {
  let dir: string, base: string | null;
  if (from !== null) {
    const [d1, src] = split(from);
    const [d2, dst] = split(path);
    if (d1 !== d2 || dst === "" || tempSiblingBase(src) !== dst || !src.startsWith(dst)) return null;
    [dir, base] = [d2, dst];
  } else {
    const [d, name] = split(path);
    base = tempSiblingBase(name);
    if (base === null || base === "" || !name.startsWith(base) || !exists(`${d}/${base}`)) return null;
    dir = d;
  }
  const b = base;
  const here = names(dir === "" ? "/" : dir);
  if (here === null || here.some((n) => n !== b && n.startsWith(b) && tempSiblingBase(n) !== b)) return null;
  return `${dir}/${base}*`;
}
