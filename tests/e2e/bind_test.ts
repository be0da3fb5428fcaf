// bind(2) of a unix socket creates a file: mediated as a write (docs/threat-model.md), emulated outside the project.
import { ok } from "node:assert/strict";
import { askProgram, exists, hallpass, readQuestions, scratch } from "./harness.ts";

const PY = `import socket,sys,os
s=socket.socket(socket.AF_UNIX)
try:
    s.bind(sys.argv[1])
except OSError as e:
    print("bind", e.errno); sys.exit(0)
s.listen()
c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1])
print("bind ok", oct(os.stat(sys.argv[1]).st_mode & 0o777))`;
const env = { PATH: "/usr/local/bin:/usr/bin:/bin" };

Deno.test("bind of a unix socket: project goes through, outside asks, is denied under --no-ask, emulated with once", async () => {
  const s = await scratch();
  try {
    const inside = await hallpass(["--no-ask", "--", "python3", "-c", PY, "in.sock"], {
      cwd: s.project,
      env,
    });
    ok(inside.stdout.includes("bind ok"), inside.stdout + inside.stderr);

    const denied = await hallpass(["--no-ask", "--", "python3", "-c", PY, `${s.outside}/a.sock`], {
      cwd: s.project,
      env,
    });
    ok(denied.stdout.includes("bind 13"), denied.stdout + denied.stderr); // EACCES
    ok(!(await exists(`${s.outside}/a.sock`)), "the socket file was created under --no-ask");
    ok(denied.stderr.includes(`denied write ${s.outside}/a.sock`), denied.stderr);

    const ask = await askProgram(s.project, "once");
    const once = await hallpass(["--ask-program", ask, "--", "python3", "-c", PY, `${s.outside}/b.sock`], {
      cwd: s.project,
      env,
    });
    ok(once.stdout.includes("bind ok 0o755"), once.stdout + once.stderr); // umask 022 applied, as without hallpass
    const qs = await readQuestions(`${s.project}/questions.jsonl`);
    ok(
      qs.some((q) => q.op === "write" && q.syscall === "bind" && q.target === `${s.outside}/b.sock`),
      JSON.stringify(qs),
    );

    // An existing path: EADDRINUSE as the kernel says, without a question.
    const again = await hallpass(["--no-ask", "--", "python3", "-c", PY, `${s.outside}/b.sock`], {
      cwd: s.project,
      env,
    });
    ok(again.stdout.includes("bind 98"), again.stdout + again.stderr);
  } finally {
    await s.cleanup();
  }
});
