/**
 * The file system as the sandboxed processes see it, for the supervisor's look-ups and emulation.
 *
 * On a workstation that is simply ours (`hostView`). In a container (`hallpass agent`) it is the container's
 * root: a path a process wrote is looked up inside that root, with its own symlinks read the way the kernel
 * reads them for the process (openat2 RESOLVE_IN_ROOT: `..` and absolute symlinks stay inside), and emulated
 * writes open their directory the same way. Paths in decisions are the container's own (`/tmp/x`).
 *
 * The kernel shows paths in another mount namespace as seen from that namespace's root (checked with runc: the
 * agent reads `/tmp` for a container process's cwd, not the bundle path), so links read from `/proc/PID/…` are
 * already container paths. `/proc/self` of a sandboxed process is rewritten to `/proc/PID` (PID as the agent
 * sees it): those paths are read through the agent's /proc (`noteSelf`), every other /proc path is the
 * container's own procfs.
 */
import { cstr, libc, O, readlink as hostReadlink, realpath as hostRealpath, result } from "../../ffi/libc.ts";
import { accessExec, isDirectory, openDirNoSymlinks, readHead } from "../../ffi/fsops.ts";
import { openat2, RESOLVE } from "../../ffi/notify.ts";
import { Errno } from "../../ffi/errors.ts";
import { lexists } from "../util/exists.ts";

export interface FsView {
  /** realpath(3): the canonical path, or -errno. */
  realpath(p: string): string | number;
  /** readlink(2) of the last component (not followed), or -errno (EINVAL: not a symlink). */
  readlink(p: string): string | number;
  /** Whether anything (a dangling symlink too) is at `p`. */
  exists(p: string): boolean;
  /** O_PATH|O_DIRECTORY fd of a canonical directory, never following a symlink; or -errno. */
  openDir(dir: string): number;
  /** O_PATH fd of whatever is at a canonical path (a socket), never following a symlink; or -errno. */
  openPath(p: string): number;
  /** The first bytes of a file (followed), or null. */
  readHead(p: string): Uint8Array | null;
  /** access(X_OK): 0 or -errno. */
  accessExec(p: string): number;
  isDirectory(p: string): boolean;
  /** [dev, ino] of the file (followed), or null. */
  fileId(p: string): [number, number] | null;
  /** `/proc/self` of a sandboxed process was rewritten to `/proc/pid` (see above). */
  noteSelf(pid: number): void;
}

function statId(p: string): [number, number] | null {
  try {
    const s = Deno.statSync(p);
    return s.ino === null ? null : [s.dev, s.ino];
  } catch {
    return null;
  }
}

export const hostView: FsView = {
  realpath: hostRealpath,
  readlink: hostReadlink,
  exists: lexists,
  openDir: openDirNoSymlinks,
  openPath: (p) => openat2(-100, cstr(p), O.PATH | O.CLOEXEC, 0, RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS),
  readHead,
  accessExec,
  isDirectory,
  fileId: statId,
  noteSelf: () => {},
};

const IN_ROOT = RESOLVE.IN_ROOT;

/**
 * A container's root, from `/proc/PID/root` of one of its processes. The root fd is held for the view's life:
 * the root stays the same directory even if that process goes away.
 */
export class ContainerView implements FsView {
  readonly rootFd: number;
  readonly #prefix: string;
  readonly #own = new Set<number>();

  private constructor(rootFd: number, prefix: string) {
    this.rootFd = rootFd;
    this.#prefix = prefix;
  }

  /** The view of process `pid`'s root, or -errno. */
  static open(pid: number): ContainerView | number {
    const fd = result(libc().openat(-100, cstr(`/proc/${pid}/root`), O.PATH | O.DIRECTORY | O.CLOEXEC, 0));
    if (fd < 0) return fd;
    const link = hostReadlink(`/proc/self/fd/${fd}`);
    if (typeof link === "number") {
      libc().close(fd);
      return link;
    }
    return new ContainerView(fd, link === "/" ? "" : link);
  }

  close(): void {
    libc().close(this.rootFd);
  }

  noteSelf(pid: number): void {
    if (this.#own.size > 4096) this.#own.clear();
    this.#own.add(pid);
  }

  /** Whether `p` is under /proc/PID of a sandboxed process's rewritten /proc/self: read through our /proc. */
  #host(p: string): boolean {
    if (!p.startsWith("/proc/")) return false;
    const m = /^\/proc\/(\d+)(\/|$)/.exec(p);
    return m !== null && this.#own.has(Number(m[1]));
  }

  /** A path the kernel gave for an fd of ours inside the root, as the container sees it. */
  #inside(link: string): string | number {
    if (!this.#prefix) return link;
    if (link === this.#prefix) return "/";
    if (link.startsWith(this.#prefix + "/")) return link.slice(this.#prefix.length);
    return -18; // EXDEV: not inside the root (cannot happen with RESOLVE_IN_ROOT)
  }

  /** Opens `p` inside the root (O_PATH, following symlinks the container's way); fd or -errno. */
  #open(p: string, flags = 0): number {
    return openat2(this.rootFd, cstr(p), O.PATH | O.CLOEXEC | flags, 0, IN_ROOT);
  }

  #with<T>(p: string, fail: T, fn: (viaFd: string) => T, flags = 0): T {
    const fd = this.#open(p, flags);
    if (fd < 0) return fail;
    try {
      return fn(`/proc/self/fd/${fd}`);
    } finally {
      libc().close(fd);
    }
  }

  /** Runs `fn` on `DIRFD-PATH/name` for p's parent directory opened inside the root. */
  #withParent<T>(p: string, fail: (errno: number) => T, fn: (entry: string) => T): T {
    const i = p.lastIndexOf("/");
    const dir = i <= 0 ? "/" : p.slice(0, i);
    const name = p.slice(i + 1);
    if (name === "" || name === "." || name === "..") return fail(-Errno.EINVAL);
    const fd = this.#open(dir, O.DIRECTORY);
    if (fd < 0) return fail(fd);
    try {
      return fn(`/proc/self/fd/${fd}/${name}`);
    } finally {
      libc().close(fd);
    }
  }

  realpath(p: string): string | number {
    if (this.#host(p)) return hostRealpath(p);
    const fd = this.#open(p);
    if (fd < 0) return fd;
    try {
      const link = hostReadlink(`/proc/self/fd/${fd}`);
      return typeof link === "number" ? link : this.#inside(link);
    } finally {
      libc().close(fd);
    }
  }

  readlink(p: string): string | number {
    if (this.#host(p)) return hostReadlink(p);
    return this.#withParent(p, (e) => e, (entry) => hostReadlink(entry));
  }

  exists(p: string): boolean {
    if (this.#host(p)) return lexists(p);
    if (p === "/") return true;
    return this.#withParent(p, () => false, lexists);
  }

  openDir(dir: string): number {
    return openat2(
      this.rootFd,
      cstr(dir),
      O.PATH | O.DIRECTORY | O.CLOEXEC,
      0,
      IN_ROOT | RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS,
    );
  }

  openPath(p: string): number {
    return openat2(
      this.rootFd,
      cstr(p),
      O.PATH | O.CLOEXEC,
      0,
      IN_ROOT | RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS,
    );
  }

  readHead(p: string): Uint8Array | null {
    if (this.#host(p)) return readHead(p);
    return this.#with(p, null, readHead);
  }

  accessExec(p: string): number {
    if (this.#host(p)) return accessExec(p);
    const fd = this.#open(p);
    if (fd < 0) return fd;
    try {
      return accessExec(`/proc/self/fd/${fd}`);
    } finally {
      libc().close(fd);
    }
  }

  isDirectory(p: string): boolean {
    if (this.#host(p)) return isDirectory(p);
    return this.#with(p, false, isDirectory);
  }

  fileId(p: string): [number, number] | null {
    if (this.#host(p)) return statId(p);
    return this.#with(p, null, statId);
  }
}

/**
 * The view one supervisor works in (a Worker serves one sandbox or container): ours, until lib/supervisor/worker.ts
 * opens the container's root (`useRoot`; at the first notification when the runtime named no process). Made by
 * the Worker and passed to what looks at files (lib/supervisor/resolve.ts Resolver, emulate.ts, ...).
 */
export class SessionView implements FsView {
  #v: FsView = hostView;

  useRoot(v: ContainerView): void {
    this.#v = v;
  }

  realpath(p: string): string | number {
    return this.#v.realpath(p);
  }
  readlink(p: string): string | number {
    return this.#v.readlink(p);
  }
  exists(p: string): boolean {
    return this.#v.exists(p);
  }
  openDir(dir: string): number {
    return this.#v.openDir(dir);
  }
  openPath(p: string): number {
    return this.#v.openPath(p);
  }
  readHead(p: string): Uint8Array | null {
    return this.#v.readHead(p);
  }
  accessExec(p: string): number {
    return this.#v.accessExec(p);
  }
  isDirectory(p: string): boolean {
    return this.#v.isDirectory(p);
  }
  fileId(p: string): [number, number] | null {
    return this.#v.fileId(p);
  }
  noteSelf(pid: number): void {
    this.#v.noteSelf(pid);
  }
}
