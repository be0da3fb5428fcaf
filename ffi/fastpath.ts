/**
 * The supervisor's fast path (helper/fastpath/fastpath.c): a loop in C that answers CONTINUE to the writes
 * that plainly fall inside the Landlock floor, performs the metadata calls (chmod, chown, utimensat) on files
 * plainly inside it, runs programs of the allowed exec trees, and hands every other notification back. Its
 * file comment says why that is safe. One handle per listener and thread: the main thread's until the
 * supervisor Worker starts, then the Worker's.
 */
// Three symbols per table: each costs ~0.15 ms when the table is opened, which the main thread does when the
// first notification is waiting (lib/supervisor/host.ts). The rest goes through hp_fast_ctl (CTL below).
const COMMON = {
  hp_fast_new: { parameters: [], result: "pointer" },
  hp_fast_ctl: { parameters: ["pointer", "i32", "buffer", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
const SERVE_ARGS = ["pointer", "i32", "i32", "buffer", "i32", "i32"] as const;
/** The supervisor Worker's table: it waits in the loop itself. */
const BLOCKING = {
  ...COMMON,
  hp_fast_serve: { parameters: SERVE_ARGS, result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;
/** The main thread's: the same loop on a thread of Deno's pool (the main thread must never block). */
const ON_POOL = {
  ...COMMON,
  hp_fast_serve: { parameters: SERVE_ARGS, result: "i32", nonblocking: true },
} as const satisfies Deno.ForeignLibraryInterface;

/**
 * Where the fast path may perform a write itself (open, mkdir, unlink, rename, chmod...: helper/fastpath/fastpath.c
 * perform_ok), as the mediator would: below a directory the sandbox made at the project's top during the
 * session (`node_modules/`), in a carved directory (lib/sandbox/plan.ts carveFloor), below a tree a rule
 * allows that is not in the Landlock floor (`~/.npm/**`). A path is in the region when it lies at or below
 * one of `roots` and none of the exceptions touches it:
 *   - `tree`: the path is at or below one;
 *   - `exact`: the path is one;
 *   - `children`: the path's directory is one (a deny glob's);
 *   - `newNames`: the path's directory is one, and the call makes no new name there (mkdir of what exists);
 *   - and, for a rename, the path is no directory above any exception (it would carry one along).
 * There the decision (lib/supervisor/decide.ts writeVerdict) is "allow" and never "floor", so the mediator
 * would perform the call too, and performing it changes nothing the mediator keeps (its floor, its notices).
 * Unlike the other lists, the exceptions are complete or the region is empty: a missing one could let the
 * fast path perform what must ask.
 */
export interface PerformRegion {
  roots: string[];
  tree: string[];
  exact: string[];
  children: string[];
  newNames: string[];
  /** The project: a rename into it from outside is never performed by the fast path (lib/supervisor/moved_in.ts). */
  project?: string;
}

/** What the fast path may decide by itself; lib/supervisor/fast_roots.ts computes each list. */
export interface FastRoots {
  /** Floor trees without a deny rule: writes there are continued (or, the metadata calls, performed). */
  write: string[];
  /** Trees whose programs run without asking the mediator. */
  exec: string[];
  /** The floor's single files (/dev/null...): opens of them for writing are continued. */
  files: string[];
  /** Connects are not mediated: IP connects and addressed sends are performed by the fast path. */
  netDirect?: boolean;
  /** Where writes outside the floor are performed by the fast path (fast_roots.ts fastPerformRegion). */
  perform?: PerformRegion;
}

/**
 * What serve() returned. CONNECTING: a blocking connect the fast path started and could not finish at once is in
 * `notif`; its socket (takeConnecting()) is to be waited on, and the call answered when it completes.
 */
/** hp_fast_ctl's operations (helper/fastpath/fastpath.c HP_CTL_*). */
const CTL = { SET: 0, NET: 1, STATS: 2, TAKE_CONNECTING: 3, FREE: 4, WATCH: 5 } as const;
const NO_BUFFER = new Uint8Array(8);

export const SERVE = { WAKE: 0, NOTIFICATION: 1, HANGUP: 2, TIMEOUT: 3, CONNECTING: 4 } as const;

export class FastPath {
  readonly #lib: Deno.DynamicLibrary<typeof BLOCKING> | Deno.DynamicLibrary<typeof ON_POOL>;
  readonly #h: Deno.PointerObject;
  readonly #stats = new BigUint64Array(16);
  #roots = "";
  #watched: Uint8Array | null = null;
  #active = false;
  readonly #waits: boolean;
  readonly #onPool: boolean;

  private constructor(
    lib: Deno.DynamicLibrary<typeof BLOCKING> | Deno.DynamicLibrary<typeof ON_POOL>,
    h: Deno.PointerObject,
    waits: boolean,
    onPool: boolean,
  ) {
    this.#lib = lib;
    this.#h = h;
    this.#waits = waits;
    this.#onPool = onPool;
  }

  /**
   * Loads the library at `path`; null when it cannot be loaded (everything then goes to the mediator).
   * `waits`: the caller takes over blocking connects (SERVE.CONNECTING); without it they go to the mediator.
   * `onPool`: for {@link serveAsync} (the main thread); otherwise {@link serve}.
   */
  static open(path: string, waits = false, onPool = false): FastPath | null {
    try {
      const lib = onPool ? Deno.dlopen(path, ON_POOL) : Deno.dlopen(path, BLOCKING);
      const h = lib.symbols.hp_fast_new();
      if (h === null) {
        lib.close();
        return null;
      }
      return new FastPath(lib, h, waits, onPool);
    } catch {
      return null;
    }
  }

  /**
   * What it may decide by itself (lib/supervisor/fast_roots.ts); empty lists hand those decisions to the
   * mediator.
   */
  setRoots(roots: FastRoots): void {
    const p = roots.perform;
    // LIST_WRITE, LIST_EXEC, LIST_FILES, LIST_PERFORM, LIST_EXCEPT (each exception prefixed by its kind),
    // LIST_PROJECT.
    const lists = [roots.write, roots.exec, roots.files, p?.roots ?? [], [
      ...(p?.tree ?? []).map((x) => "T" + x),
      ...(p?.exact ?? []).map((x) => "E" + x),
      ...(p?.children ?? []).map((x) => "C" + x),
      ...(p?.newNames ?? []).map((x) => "N" + x),
    ], p?.project ? [p.project] : []];
    // One call: the six lists in order, each path NUL-terminated and each list ended by one more NUL; the C
    // sets the exceptions before the perform roots (a region is never without its exceptions), and on an error
    // empties every list. An empty path or one holding a NUL would shift the lists: nothing is set then.
    const bad = lists.some((l) => l.some((r) => r === "" || r.includes("\0")));
    const packed = bad ? "\0" : lists.map((l) => l.map((r) => r + "\0").join("") + "\0").join("");
    const key = packed + (roots.netDirect ? "net" : "");
    if (key === this.#roots) return;
    const bytes = new TextEncoder().encode(packed);
    const ok = this.#lib.symbols.hp_fast_ctl(this.#h, CTL.SET, bytes, bytes.length) === 0;
    this.#lib.symbols.hp_fast_ctl(
      this.#h,
      CTL.NET,
      NO_BUFFER,
      ok && roots.netDirect ? (this.#waits ? 2 : 1) : 0,
    );
    this.#active = ok && [roots.write, roots.exec, roots.files, p?.roots ?? []].some((l) => l.length > 0);
    this.#roots = ok ? key : "";
  }

  /** Whether it decides anything (else every notification would only pass through it). */
  get active(): boolean {
    return this.#active;
  }

  /**
   * Waits on the listener and the wake pipe (see SERVE); a notification for the mediator is left in `notif`
   * (a zeroed struct seccomp_notif of `size` bytes, at least 128 bytes long). Negative: -errno.
   */
  serve(
    listenerFd: number,
    wakeFd: number,
    notif: Uint8Array<ArrayBuffer>,
    size: number,
    timeoutMs: number,
  ): number {
    const r = this.#lib.symbols.hp_fast_serve(this.#h, listenerFd, wakeFd, notif, size, timeoutMs);
    if (typeof r !== "number") throw new Error("FastPath: opened for serveAsync (onPool)");
    return r;
  }

  /** {@link serve} on another thread, for the main thread: needs a wake pipe to be stopped. */
  serveAsync(
    listenerFd: number,
    wakeFd: number,
    notif: Uint8Array<ArrayBuffer>,
    size: number,
  ): Promise<number> {
    if (!this.#onPool) throw new Error("FastPath: not opened for serveAsync (onPool)");
    return this.#lib.symbols.hp_fast_serve(this.#h, listenerFd, wakeFd, notif, size, -1) as Promise<number>;
  }

  /** The socket of the connect serve() returned SERVE.CONNECTING for (ours to close), or -1. */
  takeConnecting(): number {
    return this.#lib.symbols.hp_fast_ctl(this.#h, CTL.TAKE_CONNECTING, NO_BUFFER, 0);
  }

  /**
   * How many calls it continued, handed to the mediator, performed itself, and refused with the kernel's
   * errno (execs of what is not there or cannot run).
   */
  stats(): { continued: number; handed: number; emulated: number; refused: number } {
    this.#lib.symbols.hp_fast_ctl(this.#h, CTL.STATS, this.#stats, 0);
    return {
      continued: Number(this.#stats[0]),
      handed: Number(this.#stats[1]),
      emulated: Number(this.#stats[2]),
      refused: Number(this.#stats[3]),
    };
  }

  /**
   * Marks each notification the fast path handles in the Worker's `state` (a SharedArrayBuffer's first 24
   * bytes: lib/supervisor/worker.ts), as the mediator's are, so the watchdog (lib/supervisor/host.ts) sees one
   * that holds the thread.
   */
  watch(state: SharedArrayBuffer): void {
    if (state.byteLength < 24) return;
    this.#watched = new Uint8Array(state, 0, 24); // kept: the library holds its address
    this.#lib.symbols.hp_fast_ctl(this.#h, CTL.WATCH, this.#watched, 24);
  }

  close(): void {
    this.#lib.symbols.hp_fast_ctl(this.#h, CTL.WATCH, NO_BUFFER, 0);
    this.#lib.symbols.hp_fast_ctl(this.#h, CTL.FREE, NO_BUFFER, 0);
    this.#lib.close();
  }
}
