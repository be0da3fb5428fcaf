/**
 * The supervisor's fast path (helper/fastpath/fastpath.c): a loop in C that answers CONTINUE to the writes
 * that plainly fall inside the Landlock floor, performs the metadata calls (chmod, chown, utimensat) on files
 * plainly inside it, and hands every other notification back. Its file comment says
 * why that is safe. One handle per listener, used only from the supervisor Worker's thread.
 */
const SYMBOLS = {
  hp_fast_new: { parameters: [], result: "pointer" },
  hp_fast_free: { parameters: ["pointer"], result: "void" },
  hp_fast_set_roots: { parameters: ["pointer", "buffer", "i32"], result: "i32" },
  hp_fast_stats: { parameters: ["pointer", "buffer"], result: "void" },
  hp_fast_serve: { parameters: ["pointer", "i32", "i32", "buffer", "i32", "i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

export const SERVE = { WAKE: 0, NOTIFICATION: 1, HANGUP: 2, TIMEOUT: 3 } as const;

export class FastPath {
  readonly #lib: Deno.DynamicLibrary<typeof SYMBOLS>;
  readonly #h: Deno.PointerObject;
  readonly #stats = new BigUint64Array(16);
  #roots = "";

  private constructor(lib: Deno.DynamicLibrary<typeof SYMBOLS>, h: Deno.PointerObject) {
    this.#lib = lib;
    this.#h = h;
  }

  /** Loads the library at `path`; null when it cannot be loaded (everything then goes to the mediator). */
  static open(path: string): FastPath | null {
    try {
      const lib = Deno.dlopen(path, SYMBOLS);
      const h = lib.symbols.hp_fast_new();
      if (h === null) {
        lib.close();
        return null;
      }
      return new FastPath(lib, h);
    } catch {
      return null;
    }
  }

  /** The floor roots whose writes may be continued here; [] hands everything to the mediator. */
  setRoots(roots: string[]): void {
    const key = roots.join("\0");
    if (key === this.#roots) return;
    const bytes = new TextEncoder().encode(roots.map((r) => r + "\0").join(""));
    const buf = new Uint8Array(Math.max(128, bytes.length));
    buf.set(bytes);
    if (this.#lib.symbols.hp_fast_set_roots(this.#h, buf, bytes.length) !== 0) {
      this.#lib.symbols.hp_fast_set_roots(this.#h, buf, 0);
      this.#roots = "";
      return;
    }
    this.#roots = key;
  }

  get active(): boolean {
    return this.#roots !== "";
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
    return this.#lib.symbols.hp_fast_serve(this.#h, listenerFd, wakeFd, notif, size, timeoutMs);
  }

  /** How many calls it continued, how many it handed to the mediator, and how many it performed itself. */
  stats(): { continued: number; handed: number; emulated: number } {
    this.#lib.symbols.hp_fast_stats(this.#h, this.#stats);
    return {
      continued: Number(this.#stats[0]),
      handed: Number(this.#stats[1]),
      emulated: Number(this.#stats[2]),
    };
  }

  close(): void {
    this.#lib.symbols.hp_fast_free(this.#h);
    this.#lib.close();
  }
}
