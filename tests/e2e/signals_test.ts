// hallpass told to end (SIGTERM, SIGHUP) passes the signal on; a command that ignores it is ended with the
// whole sandbox after a grace period, so nothing outlives the session.
import { ok } from "node:assert/strict";
import { DENO, ROOT, scratch } from "./harness.ts";

for (const sig of ["SIGTERM", "SIGHUP"] as const) {
  Deno.test(`${sig} to hallpass: a command that ignores it is ended with the sandbox`, async () => {
    const s = await scratch();
    const marker = `sleep 3${sig === "SIGTERM" ? 7 : 8}.5`;
    try {
      const child = new Deno.Command(DENO, {
        args: ["run", "-A", `${ROOT}/main.ts`, "--no-ask", "--", "sh", "-c", `trap "" TERM HUP; ${marker}`],
        cwd: s.project,
        stdin: "null",
        stdout: "null",
        stderr: "piped",
      }).spawn();
      await new Promise((r) => setTimeout(r, 1500));
      const started = Date.now();
      child.kill(sig);
      const st = await child.status;
      const took = Date.now() - started;
      ok(st.code === 128 + (sig === "SIGTERM" ? 15 : 1), `exit ${st.code}`);
      ok(took < 8000, `took ${took} ms`);
      await new Promise((r) => setTimeout(r, 300));
      const left = await new Deno.Command("pgrep", { args: ["-f", marker], stdout: "piped" }).output();
      ok(new TextDecoder().decode(left.stdout).trim() === "", "the sandboxed command outlived hallpass");
    } finally {
      await s.cleanup();
    }
  });
}
