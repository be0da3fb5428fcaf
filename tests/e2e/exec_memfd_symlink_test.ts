// An attacker names a memfd "x/../../usr/bin/true" and runs it through a symlink to /proc/self/fd/N: /proc
// shows "/memfd:x/../../usr/bin/true (deleted)", which must not be read as the system program /usr/bin/true.
import { ok } from "node:assert/strict";
import { compileHelper, hallpass, scratch } from "./harness.ts";

Deno.test("exec of a memfd through a symlink into /proc/self/fd is anonymous: denied under --no-ask", async () => {
  const prog = await compileHelper("memfd_symlink_exec");
  const s = await scratch();
  try {
    const r = await hallpass(["--no-ask", "--allow-exec", prog, "--", prog], {
      cwd: s.project,
      env: { PATH: "/usr/local/bin:/usr/bin:/bin" },
    });
    ok(r.stdout.includes("exec ./p: Permission denied"), `the memfd ran:\n${r.stdout}\n${r.stderr}`);
    ok(r.stderr.includes("denied exec anon:/memfd:"), r.stderr);
  } finally {
    await s.cleanup();
  }
});
