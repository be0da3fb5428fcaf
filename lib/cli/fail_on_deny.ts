/**
 * --fail-on-deny (docs/ci.md): a CI job whose command coped with a denial (a cache it could not write, a
 * fallback after EACCES) still exits 0; with this option hallpass turns "something was denied" into a failure.
 * The command's own failure (or the signal that killed it) comes first: its status is kept.
 */

/** The status hallpass exits with when the command exited 0 and something was denied. */
export const DENIED_STATUS = 123;

/** hallpass's exit status: the command's (0, its failure, 128+N), or DENIED_STATUS as described above. */
export function finalStatus(commandStatus: number, denied: boolean, failOnDeny: boolean): number {
  return commandStatus === 0 && denied && failOnDeny ? DENIED_STATUS : commandStatus;
}
