/**
 * The pty relay (helper/relay/relay.c) through Deno FFI: the loop that copies the command's output from the pty
 * master to the person's terminal on a thread of Deno's pool while nothing needs to look at it in JavaScript.
 * No pointer leaves this file: the caller passes its buffer and gets numbers back.
 *
 * @example
 * ```ts
 * const relay = Relay.open("/path/to/libhallpass-relay.so", 1); // null: no library, or stdout no terminal
 * const buf = new Uint8Array(1 << 20);
 * const r = await relay!.run(master, buf); // meanwhile: relay.wake() makes it return soon
 * // buf[0, r.used): copied (r.written of them reached the terminal); r.state: why it returned
 * ```
 */

const SYMBOLS = {
  /** int hallpass_relay(int master, int out, int wake, uint8_t *buf, size_t cap, int64_t *st); */
  hallpass_relay: {
    parameters: ["i32", "i32", "i32", "buffer", "usize", "buffer"],
    result: "i32",
    nonblocking: true,
  },
  /** int hallpass_relay_plain(const uint8_t *buf, size_t n); */
  hallpass_relay_plain: { parameters: ["buffer", "usize"], result: "i32" },
  /** size_t hallpass_relay_clean_from(const uint8_t *buf, size_t n); */
  hallpass_relay_clean_from: { parameters: ["buffer", "usize"], result: "usize" },
  /** int hallpass_relay_open_out(int fd); */
  hallpass_relay_open_out: { parameters: ["i32"], result: "i32" },
  /** int hallpass_relay_wake_fd(void); */
  hallpass_relay_wake_fd: { parameters: [], result: "i32" },
  /** int hallpass_relay_wake(int wake); */
  hallpass_relay_wake: { parameters: ["i32"], result: "i32" },
  /** int hallpass_relay_close(int fd); */
  hallpass_relay_close: { parameters: ["i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

/** Why {@linkcode Relay.run} returned (relay.c RELAY_*). */
export type RelayState = "woken" | "handoff" | "full" | "eof" | "error";
const STATES: Record<number, RelayState> = { 1: "woken", 2: "handoff", 3: "full", 4: "eof", 5: "error" };

export interface RelayResult {
  state: RelayState;
  /** buf[0, used): read from the master and copied (or to be copied: see `written`). */
  used: number;
  /** The first `written` bytes of buf reached the terminal; buf[written, used) must be written by the caller. */
  written: number;
  /** state `handoff`: bytes the output filter must see, not written: buf[handoff[0], handoff[0] + handoff[1]). */
  handoff: [number, number];
  errno: number;
  /** buf[clean, used) holds no control but LF, CR, TAB, BS (the screen model's skip: lib/ui/mirror_skip.ts). */
  clean: number;
}

type Lib = Deno.DynamicLibrary<typeof SYMBOLS>;

export class Relay {
  readonly #lib: Lib;
  readonly #out: number;
  readonly #wakeFd: number;
  readonly #st = new BigInt64Array(6);
  #running = false;
  #closed = false;

  private constructor(lib: Lib, out: number, wakeFd: number) {
    this.#lib = lib;
    this.#out = out;
    this.#wakeFd = wakeFd;
  }

  /**
   * The relay for the terminal on fd `outFd` (written through a non-blocking file description of its own), or
   * null when the library cannot be loaded or `outFd` is not a terminal that can be opened again.
   */
  static open(libPath: string, outFd: number): Relay | null {
    let lib: Lib;
    try {
      lib = Deno.dlopen(libPath, SYMBOLS);
    } catch {
      return null;
    }
    const out = lib.symbols.hallpass_relay_open_out(outFd);
    const wake = out < 0 ? -1 : lib.symbols.hallpass_relay_wake_fd();
    if (out < 0 || wake < 0) {
      if (out >= 0) lib.symbols.hallpass_relay_close(out);
      lib.close();
      return null;
    }
    return new Relay(lib, out, wake);
  }

  /** True while a {@linkcode run} has not returned. */
  get running(): boolean {
    return this.#running;
  }

  /** Copies from `master` to the terminal into `buf` (from its start) until one of the {@linkcode RelayState}s. */
  async run(master: number, buf: Uint8Array<ArrayBuffer>): Promise<RelayResult> {
    if (this.#closed) throw new Error("relay closed");
    this.#running = true;
    const st = this.#st;
    st.fill(0n);
    try {
      const r = await this.#lib.symbols.hallpass_relay(
        master,
        this.#out,
        this.#wakeFd,
        buf,
        BigInt(buf.length),
        new Uint8Array(st.buffer),
      );
      return {
        state: STATES[r] ?? "error",
        used: Number(st[0]),
        written: Number(st[1]),
        handoff: [Number(st[2]), Number(st[3])],
        errno: Number(st[4]),
        clean: Number(st[5]),
      };
    } finally {
      this.#running = false;
    }
  }

  /** Makes a running {@linkcode run} return soon (after copying what the master holds now, bounded). */
  wake(): void {
    if (!this.#closed) this.#lib.symbols.hallpass_relay_wake(this.#wakeFd);
  }

  /** True when the output filter would pass `bytes` unchanged and stay in its ground state (relay.c). */
  plain(bytes: Uint8Array<ArrayBuffer>): boolean {
    return this.#lib.symbols.hallpass_relay_plain(bytes, BigInt(bytes.length)) === 1;
  }

  /** What {@linkcode RelayResult.clean} is for `bytes` read in one piece (for the tests). */
  cleanFrom(bytes: Uint8Array<ArrayBuffer>): number {
    return Number(this.#lib.symbols.hallpass_relay_clean_from(bytes, BigInt(bytes.length)));
  }

  /** Closes the fds and the library; call when no {@linkcode run} is pending. */
  close(): void {
    if (this.#closed || this.#running) return;
    this.#closed = true;
    this.#lib.symbols.hallpass_relay_close(this.#out);
    this.#lib.symbols.hallpass_relay_close(this.#wakeFd);
    this.#lib.close();
  }
}
