/**
 * The signal the command died of, kept for main.ts: hallpass then dies of the same signal after restoring the
 * terminal (ffi/signal.ts), as `timeout`, `sudo` and `script` do, so that a calling shell sees what it would see
 * without hallpass (a `for` loop stops on Ctrl-C; the next prompt starts on a new line).
 */
let diedOf: number | null = null;

export function noteCommandSignal(sig: number): void {
  diedOf = sig;
}

/** The signal the command died of, if it did. */
export function commandSignal(): number | null {
  return diedOf;
}
