/**
 * The listeners a full-screen program holds while it owns the terminal — signals, and the global events after
 * which it must give the terminal back (unload, an uncaught error, an unhandled rejection) — added in one
 * place and removed together. Used by the pty session (pty_session.ts) and `hallpass answer`.
 */
const FATAL_EVENTS = ["unload", "error", "unhandledrejection"] as const;

export class ProcessHooks {
  #signals: [Deno.Signal, () => void][] = [];
  #onFatal: (() => void) | null = null;

  /** Calls `fn` on unload, an uncaught error or an unhandled rejection (one function; a second replaces it). */
  onFatal(fn: () => void): void {
    this.#removeFatal();
    this.#onFatal = fn;
    for (const e of FATAL_EVENTS) globalThis.addEventListener(e, fn);
  }

  onSignal(sig: Deno.Signal, fn: () => void): void {
    Deno.addSignalListener(sig, fn);
    this.#signals.push([sig, fn]);
  }

  /** Removes every listener added here. */
  removeAll(): void {
    for (const [sig, fn] of this.#signals) {
      try {
        Deno.removeSignalListener(sig, fn);
      } catch { /* ignore */ }
    }
    this.#signals = [];
    this.#removeFatal();
  }

  #removeFatal(): void {
    const fn = this.#onFatal;
    if (!fn) return;
    for (const e of FATAL_EVENTS) globalThis.removeEventListener(e, fn);
    this.#onFatal = null;
  }
}
