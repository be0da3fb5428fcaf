// hallpass inside hallpass: the kernel allows one seccomp supervisor per process, so the inner one must say
// so clearly (exit 125) instead of failing somewhere in its start-up.
import { ok } from "node:assert/strict";
import { DENO, hallpass, HALLPASS_ARGV, ROOT, scratch } from "./harness.ts";

Deno.test("a hallpass inside hallpass refuses with one clear line and a hint, exit 125", async () => {
  const s = await scratch();
  try {
    const denoDir = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`;
    const r = await hallpass([
      "--no-ask",
      "--allow-exec",
      HALLPASS_ARGV[0],
      "--allow-exec",
      DENO, // the deno that a HALLPASS_BIN script (the one `make` leaves without deno compile) runs
      "--allow-path",
      denoDir,
      "--allow-path",
      `${ROOT}/node_modules`,
      "--",
      ...HALLPASS_ARGV,
      "--no-ask",
      "--",
      "/bin/true",
    ], { cwd: s.project });
    ok(r.code === 125, `exit ${r.code}\n${r.stderr}`);
    ok(/^hallpass: already running under hallpass/m.test(r.stderr), r.stderr);
    ok(/^hint: /m.test(r.stderr), r.stderr);
  } finally {
    await s.cleanup();
  }
});
