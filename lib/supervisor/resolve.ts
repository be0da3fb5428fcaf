/**
 * Turning a path as a sandboxed thread wrote it into the canonical absolute path hallpass decides on.
 *
 * The decision is made on this canonical path; what is then done with it is safe even if the answer here is
 * stale or a racing thread changes things afterwards: a CONTINUE only happens inside the Landlock floor (the
 * kernel re-checks), and an emulated write walks the canonical path again without following any symlink
 * (openat2 RESOLVE_NO_SYMLINKS), so it can only touch what was decided on.
 *
 * `/proc/self`, `/proc/thread-self`, `/dev/fd` and `/dev/std*` mean the sandboxed process, not hallpass.
 */
import { readlink } from "../../ffi/libc.ts";
import type { FsView } from "./view.ts";
import { normalizePath } from "../policy/path_scope.ts";
import { Errno } from "../../ffi/errors.ts";

export type Resolved =
  | { kind: "path"; path: string }
  /** Not a file system object (a pipe, a socket, an anonymous inode reached through /proc/PID/fd). */
  /** `via`: the /proc magic link it was reached through. */
  | { kind: "anon"; what: string; via?: string }
  | { kind: "error"; errno: number };

const { ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG } = Errno;

/**
 * Resolves paths in one sandbox's file system (its {@link FsView}), with a short-lived cache of canonical
 * directories. One per supervisor (lib/supervisor/mediator.ts makes it).
 */
export class Resolver {
  /** Directory realpath cache: safe to be stale (see above), so kept small and short-lived. */
  readonly #dirCache = new Map<string, string>();
  #dirCacheStamp = 0;

  constructor(readonly view: FsView) {}

  #canonicalDir(dir: string): string | number {
    const now = Date.now();
    if (now - this.#dirCacheStamp > 500 || this.#dirCache.size > 2048) {
      this.#dirCache.clear();
      this.#dirCacheStamp = now;
    }
    const hit = this.#dirCache.get(dir);
    if (hit !== undefined) return hit;
    const r = this.view.realpath(dir);
    // Not through /proc: what /proc/PID/fd/N or /proc/PID/cwd names changes with every dup2 or chdir.
    if (typeof r === "string" && !dir.startsWith("/proc/")) this.#dirCache.set(dir, r);
    return r;
  }

  /** Whether anything (a file, a directory, a dangling symlink) is at `p`. */
  pathExists(p: string): boolean {
    return this.view.exists(p);
  }

  /** Rewrites the self-referring /proc and /dev names to the sandboxed process's own. */
  rewriteSelf(p: string, tgid: number, tid: number): string {
    const r = rewriteSelfOnly(p, tgid, tid);
    if (r !== p) this.view.noteSelf(tgid);
    return r;
  }

  /** The canonical directory a relative path starts from: the thread's cwd or one of its fds. */
  baseDir(tid: number, dirfd: number): Resolved {
    const link = readlink(dirfd === -100 ? `/proc/${tid}/cwd` : `/proc/${tid}/fd/${dirfd}`);
    if (typeof link === "number") return { kind: "error", errno: link === -ENOENT ? 9 /* EBADF */ : -link };
    if (!link.startsWith("/")) return { kind: "error", errno: ENOTDIR };
    if (link.endsWith(" (deleted)")) return { kind: "error", errno: ENOENT };
    return { kind: "path", path: link };
  }

  /**
   * Resolves `p` (as written by thread `tid` of process `tgid`, relative to `base` when not absolute).
   * `follow`: whether a symlink in the last component is followed (as the system call would).
   * `missing`: what a directory on the way that does not exist means. "fail" (a system call's path): the error
   * the kernel's walk stops with (ENOENT, ENOTDIR), never a path folded lexically over it — `/tmp/nonexist/../x`
   * names nothing, it is not `/tmp/x`. "lexical" (a scope a person is shown, hallpass-request): the deepest
   * existing ancestor, then the rest folded as written.
   */
  resolvePath(
    p: string,
    base: string,
    follow: boolean,
    tgid: number,
    tid: number,
    missing: "fail" | "lexical" = "fail",
  ): Resolved {
    if (p.length === 0) return { kind: "error", errno: ENOENT };
    if (p.length >= 4096) return { kind: "error", errno: ENAMETOOLONG };
    let full = p.startsWith("/") ? p : base === "/" ? "/" + p : base + "/" + p;
    full = this.rewriteSelf(normalizeKeepDots(full), tgid, tid);
    for (let hops = 0; hops < 40; hops++) {
      const slash = full.lastIndexOf("/");
      const dir = slash === 0 ? "/" : full.slice(0, slash);
      const name = full.slice(slash + 1);
      if (name === "" || name === "." || name === "..") {
        // The target is a directory named by its path: resolve it whole.
        const r = this.#canonicalDir(full);
        if (typeof r === "number") return this.#fallback(full, missing);
        return { kind: "path", path: r };
      }
      const r = dir === "/" ? "/" : this.#canonicalDir(dir);
      if (typeof r === "number") {
        if (r === -ENOENT || r === -ENOTDIR) return this.#fallback(full, missing);
        return { kind: "error", errno: -r };
      }
      const cdir = r;
      const candidate = cdir === "/" ? "/" + name : cdir + "/" + name;
      if (!follow) return { kind: "path", path: candidate };
      const link = this.view.readlink(candidate);
      if (typeof link === "number") return { kind: "path", path: candidate }; // not a symlink, or absent
      if (candidate.startsWith("/proc/") && (link.endsWith(" (deleted)") || link.startsWith("/memfd:"))) {
        // A magic link to a file without a path (a memfd, a deleted file). Its text is not a path: a memfd
        // named "x/../../usr/bin/true" reads "/memfd:x/../../usr/bin/true (deleted)".
        return { kind: "anon", what: link, via: candidate };
      }
      if (!link.startsWith("/")) {
        if (/^[a-z_]+:\[?/.test(link) && candidate.startsWith("/proc/")) {
          return { kind: "anon", what: link, via: candidate };
        }
        full = cdir === "/" ? "/" + link : cdir + "/" + link;
      } else {
        full = link;
      }
      full = this.rewriteSelf(normalizeKeepDots(full), tgid, tid);
    }
    return { kind: "error", errno: ELOOP };
  }

  #fallback(full: string, missing: "fail" | "lexical"): Resolved {
    return missing === "fail" ? this.#kernelWalkError(full) : this.#lexicalFallback(full);
  }

  /**
   * For a system call's path whose directory part does not resolve: only its last component may be missing
   * (the call may create it); anything beyond a missing or non-directory component fails as the kernel's walk
   * fails, with that component's error. `..` is never folded over a name the kernel could not walk.
   */
  #kernelWalkError(full: string): Resolved {
    const parts = full.split("/").filter((c) => c !== "" && c !== ".");
    let err = -ENOENT;
    for (let i = parts.length - 1; i >= 0; i--) {
      const head = "/" + parts.slice(0, i).join("/");
      const r = this.view.realpath(head);
      if (typeof r === "number") {
        err = r;
        continue;
      }
      const rest = parts.slice(i);
      if (rest.length === 1 && rest[0] !== "..") {
        return { kind: "path", path: (r === "/" ? "" : r) + "/" + rest[0] };
      }
      return { kind: "error", errno: -err };
    }
    return { kind: "error", errno: -err };
  }

  /** For a path whose directory does not exist (yet): the deepest existing ancestor, then the rest lexically. */
  #lexicalFallback(full: string): Resolved {
    const parts = normalizePath(full, "/").split("/").filter(Boolean);
    for (let i = parts.length - 1; i >= 0; i--) {
      const head = "/" + parts.slice(0, i).join("/");
      const r = this.view.realpath(head);
      if (typeof r === "string") {
        const rest = parts.slice(i).join("/");
        return { kind: "path", path: normalizePath((r === "/" ? "" : r) + "/" + rest, "/") };
      }
    }
    return { kind: "path", path: normalizePath(full, "/") };
  }
}

function rewriteSelfOnly(p: string, tgid: number, tid: number): string {
  if (p.startsWith("/proc/self/") || p === "/proc/self") return `/proc/${tgid}` + p.slice(10);
  if (p.startsWith("/proc/thread-self/") || p === "/proc/thread-self") {
    return `/proc/${tgid}/task/${tid}` + p.slice(17);
  }
  if (p.startsWith("/dev/fd/") || p === "/dev/fd") return `/proc/${tgid}/fd` + p.slice(7);
  if (p === "/dev/stdin") return `/proc/${tgid}/fd/0`;
  if (p === "/dev/stdout") return `/proc/${tgid}/fd/1`;
  if (p === "/dev/stderr") return `/proc/${tgid}/fd/2`;
  return p;
}

/** Collapses `//` and `.` but keeps `..` (it must be resolved after symlinks, by realpath). */
function normalizeKeepDots(p: string): string {
  if (!p.includes("//") && !p.includes("/./") && !p.endsWith("/.") && !(p.length > 1 && p.endsWith("/"))) {
    return p;
  }
  const parts = p.split("/").filter((c) => c !== "" && c !== ".");
  return "/" + parts.join("/");
}
