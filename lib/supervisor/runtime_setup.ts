/**
 * `hallpass agent`: the container runtime's own setup, which runs in the container's first process before its
 * first execve, passes (lib/supervisor/mediator.ts continues its calls).
 *
 * @module
 */
export class RuntimeSetup {
  /** The process the runtime named (0: crun exec names none). */
  readonly #pid: number;
  /** The runtime executable (dev, ino), while its setup runs. */
  #setupExe: [number, number] | null = null;
  #done = false;

  constructor(pid: number) {
    this.#pid = pid;
  }

  /**
   * A container process before its first execve: the runtime's own code runs in it (runc opens its exec fifo
   * through /proc/self/fd, then execs the entrypoint), so its calls pass. "Before" is told by the process's
   * executable: still the file it was at the first notification on this fresh listener (the runtime's, since
   * nothing of the container's image can run before an exec is answered). A comparison rather than a flag,
   * because an exec notification can be interrupted and re-sent (runc is a Go program: its preemption
   * signals do that), and the re-sent one is the runtime's exec still.
   */
  passes(tid: number): boolean {
    if (this.#done) return false;
    const setupPid = this.#pid;
    if (setupPid !== 0 && tid !== setupPid) return false;
    let id: [number, number] | null = null;
    try {
      const st = Deno.statSync(`/proc/${tid}/exe`);
      if (st.ino !== null) id = [st.dev, st.ino];
    } catch { /* gone */ }
    if (this.#setupExe === null) this.#setupExe = id ?? [-1, -1];
    else if (id === null || id[0] !== this.#setupExe[0] || id[1] !== this.#setupExe[1]) {
      this.#done = true;
      return false;
    }
    return true;
  }
}
