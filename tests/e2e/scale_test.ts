// Many writers at once (issue 6): 2, 8 and 32 threads, and 50 processes, creating files in the project. The
// supervisor keeps up: every create succeeds exactly once (O_EXCL: a notification answered twice, or lost,
// shows as EEXIST, ENOENT or a hang), and every file exists afterwards with its byte.
import { deepStrictEqual, ok } from "node:assert/strict";
import { compileHelper, hallpass, scratch } from "./harness.ts";

for (
  const [mode, count, each] of [["threads", 2, 500], ["threads", 8, 200], ["threads", 32, 60], [
    "procs",
    50,
    40,
  ]] as const
) {
  Deno.test(`scale: ${count} ${mode} × ${each} creates, none lost or doubled`, async () => {
    const prog = await compileHelper("scale", ["-pthread"]);
    const s = await scratch();
    try {
      await Deno.mkdir(`${s.project}/out`);
      const r = await hallpass([
        "--no-ask",
        "--allow-exec",
        prog,
        "--",
        prog,
        mode,
        String(count),
        String(each),
        "out",
      ], {
        cwd: s.project,
        timeoutMs: 120_000,
        env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
      });
      ok(r.code === 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
      ok(r.stdout.startsWith(`ok ${count * each} `), r.stdout);
      let files = 0;
      for await (const e of Deno.readDir(`${s.project}/out`)) {
        ok(e.isFile, e.name);
        files++;
      }
      deepStrictEqual(files, count * each);
    } finally {
      await s.cleanup();
    }
  });
}
