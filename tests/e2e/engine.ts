/**
 * Which engine answered a run: the C fast path or the TypeScript mediator. With HALLPASS_FASTPATH_RECORD set,
 * the fast path records every answer it gives and, when its handle is freed, its counters: how many
 * notifications it saw (lib/supervisor/fast_replay.ts). Each run of a fast-path/mediator pair has a record of
 * its own: a run meant for the fast path must show that it ran (else a missing library would make both runs of
 * a pair the mediator, silently), a run with HALLPASS_FAST_PATH=0 must show nothing. Every recorded answer is
 * also replayed through the mediator's decision, and any disagreement fails.
 */
import { hallpass, type HallpassOptions, type Result } from "./harness.ts";
import { replay, type ReplayResult } from "../../lib/supervisor/fast_replay.ts";
import { resolveSyscall } from "../../ffi/seccomp.ts";
import { CREDENTIAL_CALLS, NEW_SYSCALL_NUMBERS, WRITE_CALLS } from "../../lib/filter/syscall_table.ts";

/** The native architecture's syscall names by number, for the calls the fast path answers. */
export function syscallNames(): Map<number, string> {
  const m = new Map<number, string>();
  const names = [...WRITE_CALLS.map((c) => c.name), "execve", "execveat", "bind", "chdir", "fchdir"];
  for (const n of [...names, "connect", "sendto", "sendmsg", "sendmmsg", ...CREDENTIAL_CALLS]) {
    const nr = NEW_SYSCALL_NUMBERS[n] ?? resolveSyscall(n);
    if (nr >= 0 && !m.has(nr)) m.set(nr, n);
  }
  return m;
}

/** The record at `file` replayed (nothing recorded: no answers). */
export async function replayFile(file: string): Promise<ReplayResult> {
  let text = "";
  try {
    text = await Deno.readTextFile(file);
  } catch { /* nothing recorded */ }
  return replay(text, syscallNames());
}

/** Throws when an answer of the fast path is not the mediator's. */
export function assertAgrees(r: ReplayResult, what: string): void {
  if (r.disagreements.length > 0) {
    throw new Error(
      `${what}: ${r.disagreements.length} of ${r.answers} fast-path answers disagree with the decision:\n` +
        r.disagreements.slice(0, 20).join("\n"),
    );
  }
}

export interface Engine {
  /** Environment for the run: HALLPASS_FAST_PATH and the run's own record. */
  env: Record<string, string>;
  /**
   * After the run: the engine asked for answered it (the fast path's counters show it saw the run's calls; with
   * HALLPASS_FAST_PATH=0 it recorded nothing at all), it gave each of `answered` at least once, and every
   * answer it gave agrees with the decision.
   */
  check(answered?: string[]): Promise<ReplayResult>;
}

/**
 * One run's engine, with a record of its own. `fast`: "1"/true for the fast path, "0"/false for the mediator
 * alone. When the test process itself has HALLPASS_FASTPATH_RECORD (tests/e2e/fast_replay_test.ts runs whole
 * files under it), check() appends the run's record there too.
 */
export async function engine(fast: string | boolean, what = ""): Promise<Engine> {
  const on = fast === true || fast === "1";
  const rec = await Deno.makeTempFile({ prefix: "hallpass-record-" });
  return {
    env: { HALLPASS_FAST_PATH: on ? "1" : "0", HALLPASS_FASTPATH_RECORD: rec },
    async check(answered = []) {
      const r = await replayFile(rec);
      const outer = Deno.env.get("HALLPASS_FASTPATH_RECORD");
      if (outer) await Deno.writeTextFile(outer, await Deno.readTextFile(rec), { append: true });
      await Deno.remove(rec).catch(() => {});
      const name = `${what}${what ? " " : ""}(${on ? "fast path" : "mediator"})`;
      // The fast path saw notifications (it answers some, hands the rest over: its counters say it ran).
      if (on && r.seen === 0) {
        throw new Error(`${name}: the fast path never ran (is build/libhallpass-fastpath.so built?)`);
      }
      if (!on && (r.seen > 0 || r.answers > 0)) {
        throw new Error(`${name}: HALLPASS_FAST_PATH=0, yet the fast path ran`);
      }
      for (const a of on ? answered : []) {
        if (!r.byAnswer[a]) {
          throw new Error(`${name}: the fast path never answered "${a}": ${JSON.stringify(r.byAnswer)}`);
        }
      }
      assertAgrees(r, name);
      return r;
    },
  };
}

/** The two engines a paired test runs with: [name, fast path on]. */
export const ENGINES = [["fast path", true], ["mediator", false]] as const;

/**
 * hallpass() (tests/e2e/harness.ts) run by one engine: each run has a record of its own and is checked when
 * it ends (engine().check(): the fast path ran in its runs and agrees with the decision; it never ran in the
 * mediator's). The replay of the run comes back with its result.
 */
export function engineRunner(
  fast: boolean,
  what: string,
): (args: string[], o?: HallpassOptions) => Promise<Result & { replay: ReplayResult }> {
  return async (args, o = {}) => {
    const e = await engine(fast, what);
    const r = await hallpass(args, { ...o, env: { ...o.env, ...e.env } });
    return { ...r, replay: await e.check() };
  };
}
