// hallpass told to end (SIGTERM, SIGHUP) passes the signal on; a command that ignores it is ended with the
// whole sandbox after a grace period, so nothing outlives the session.
import { ok } from "node:assert/strict";
import { HALLPASS_ARGV, scratch } from "./harness.ts";
import { until } from "./tmux.ts";

/** Pids of processes whose whole command line is `cmdline`. */
async function running(cmdline: string): Promise<string[]> {
  const r = await new Deno.Command("pgrep", { args: ["-x", "-f", cmdline], stdout: "piped" }).output();
  return new TextDecoder().decode(r.stdout).split("\n").filter(Boolean);
}

for (const sig of ["SIGTERM", "SIGHUP"] as const) {
  Deno.test(`${sig} to hallpass: a command that ignores it is ended with the sandbox`, async () => {
    const s = await scratch();
    const marker = `sleep 3${sig === "SIGTERM" ? 7 : 8}.${Deno.pid}`; // no other process has this command line
    try {
      const child = new Deno.Command(HALLPASS_ARGV[0], {
        args: [...HALLPASS_ARGV.slice(1), "--no-ask", "--", "sh", "-c", `trap "" TERM HUP; ${marker}`],
        cwd: s.project,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      // The command runs (its `sleep`, started after the trap) before the signal is sent.
      await until(async () => (await running(marker)).length > 0, `${marker} to start`);
      const started = Date.now();
      child.kill(sig);
      const st = await child.status;
      const took = Date.now() - started;
      ok(st.code === 128 + (sig === "SIGTERM" ? 15 : 1), `exit ${st.code}`);
      ok(took < 20_000, `took ${took} ms`); // a 3 s grace period, then the sandbox is stopped: never hangs
      // Killed with the sandbox: gone once the kernel has delivered the SIGKILL (a bound, not a guess).
      await until(async () => (await running(marker)).length === 0, "the sandboxed command to be gone")
        .catch(() => {
          throw new Error("the sandboxed command outlived hallpass");
        });
    } finally {
      await s.cleanup();
    }
  });
}

// The command starts as it would without hallpass: no signal blocked or ignored (Deno ignores SIGPIPE, and
// hallpass starts its launcher with posix_spawn, which would pass that on), the exit status and a killing
// signal passed back.
Deno.test("the command starts with default signal dispositions and an empty mask; its status comes back", async () => {
  const s = await scratch();
  try {
    const run = async (script: string) => {
      const out = await new Deno.Command(HALLPASS_ARGV[0], {
        args: [...HALLPASS_ARGV.slice(1), "--no-ask", "-q", "--", "sh", "-c", script],
        cwd: s.project,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
    };
    const r = await run("grep -E '^Sig(Blk|Ign)' /proc/self/status; yes | head -1");
    ok(r.stdout === "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\ny\n", JSON.stringify(r));
    ok((await run("exit 7")).code === 7);
    ok((await run("kill -USR1 $$")).code === 128 + 10);
  } finally {
    await s.cleanup();
  }
});
