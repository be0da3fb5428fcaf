/**
 * Path forms the kernel refuses before any permission check: a last component written with a trailing slash
 * (`f/`) or as `.` or `..` (`d/sub/.`). The supervisor decides on canonical paths (lib/supervisor/resolve.ts
 * drops the slash and folds the dot), so a call it performed on that name did what the kernel refuses:
 * `rmdir("d/sub/.")` removed d/sub (EINVAL), `unlink("f/")` removed f (ENOTDIR), `open("new/", O_CREAT)` made a
 * file (EISDIR), `mkdir("nx/.")` made nx (ENOENT), `rename("a/", "b")` moved a file (ENOTDIR). The decoder
 * (lib/supervisor/decode.ts decodeWrite) answers them with the kernel's errno before any decision, as it does a
 * missing directory; the fast path hands them to the mediator (helper/fastpath/fastpath.c in_floor_at). Each
 * answer was checked against this kernel (tests/e2e/write_forms_test.ts, bare and both engines).
 *
 * @module
 */
import type { WriteKind } from "../filter/syscall_table.ts";
import { Errno } from "../../ffi/errors.ts";

/** How a path's last component is written. */
export type Tail = "plain" | "slash" | "dot" | "dotdot";

/** What is at a path: the last component not followed (`link`: a symlink), or followed. */
export type Found = "none" | "dir" | "link" | "other";

const { ENOENT, EPERM, EEXIST, ENOTDIR, EISDIR, EINVAL, EBUSY, ENOTEMPTY } = Errno;

/** The tail of a path as written ("/" itself is plain). */
export function tailOf(p: string): Tail {
  const t = p.replace(/\/+$/, "");
  if (t === "") return "plain";
  const last = t.slice(t.lastIndexOf("/") + 1);
  if (last === ".") return "dot";
  if (last === "..") return "dotdot";
  return t.length < p.length ? "slash" : "plain";
}

/** Calls whose last component is followed through a tail (they act on the directory a `.` or `/` names). */
export function tailFollows(kind: WriteKind): boolean {
  return !["unlink", "rmdir", "mkdir", "mknod", "symlink", "rename", "link"].includes(kind);
}

/**
 * The kernel's errno for a write whose end `end` (0, or 1: the new name of a rename or link) is written with
 * `tail`, or 0 when the form acts as the plain name would (then decided as usual). `at` is what is at the
 * path not followed, `followed` what it leads to. `rmdir`: unlinkat's AT_REMOVEDIR too; `creat`: O_CREAT.
 */
export function tailErrno(
  kind: WriteKind,
  end: 0 | 1,
  tail: Tail,
  at: Found,
  followed: Found,
  o: { rmdir?: boolean; creat?: boolean } = {},
): number {
  if (tail === "plain") return 0;
  const rmdir = kind === "rmdir" || (kind === "unlink" && o.rmdir === true);
  if (tail === "dot" || tail === "dotdot") {
    // The directory the dot names must be there (the walk goes through it).
    if (followed === "none") return ENOENT;
    if (followed !== "dir") return ENOTDIR;
    if (rmdir) return tail === "dot" ? EINVAL : ENOTEMPTY;
    switch (kind) {
      case "unlink":
        return EISDIR;
      case "rename":
        return EBUSY;
      case "link":
        return end === 0 ? EPERM : EEXIST;
      case "mkdir":
      case "mknod":
      case "symlink":
        return EEXIST;
      case "open":
        return EISDIR; // a write open of a directory
      default:
        return 0; // chmod, chown, utime, xattrs, truncate: on the directory
    }
  }
  // A trailing slash: the name must be a directory.
  if (rmdir || kind === "mkdir") return 0;
  switch (kind) {
    case "unlink":
      return at === "none" ? ENOENT : at === "dir" ? EISDIR : ENOTDIR;
    case "rename":
      return 0; // either end: the source must be a directory itself (decode.ts tailError checks it)
    case "link":
      if (end === 1) return at === "none" ? ENOENT : EEXIST;
      return followed === "none" ? ENOENT : followed === "dir" ? EPERM : ENOTDIR;
    case "mknod":
    case "symlink":
      return at === "none" ? ENOENT : EEXIST;
    case "open":
      if (o.creat) return EISDIR;
      return followed === "none" ? ENOENT : followed === "dir" ? EISDIR : ENOTDIR;
    default:
      return followed === "none" ? ENOENT : followed === "dir" ? 0 : ENOTDIR;
  }
}
