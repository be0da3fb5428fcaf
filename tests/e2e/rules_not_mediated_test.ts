/**
 * `hallpass rules connect|exec TARGET` tells when the operation is not mediated in that configuration (it goes
 * through whatever the rules say), instead of "asks".
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { hallpass, scratch } from "./harness.ts";

Deno.test("hallpass rules: connect and exec say 'not mediated' when --mediate leaves them out", async () => {
  const s = await scratch();
  try {
    const env = { HOME: s.outside, PATH: "/usr/bin:/bin" };
    const def = await hallpass(["rules", "connect", "tcp:192.0.2.1:443"], { cwd: s.project, env });
    assertEquals(def.code, 0, def.stderr);
    assert(def.stdout.startsWith("connect tcp:192.0.2.1:443: not mediated"), def.stdout);
    const med = await hallpass(["--mediate", "write,exec,connect", "rules", "connect", "tcp:192.0.2.1:443"], {
      cwd: s.project,
      env,
    });
    assert(med.stdout.startsWith("connect tcp:192.0.2.1:443: asks"), med.stdout);
    const ex = await hallpass(["--mediate", "write", "rules", "exec", `${s.project}/tool`], {
      cwd: s.project,
      env,
    });
    assert(ex.stdout.startsWith(`exec ${s.project}/tool: not mediated`), ex.stdout);
    const ex2 = await hallpass(["rules", "exec", `${s.project}/tool`], { cwd: s.project, env });
    assert(ex2.stdout.startsWith(`exec ${s.project}/tool: asks`), ex2.stdout);
  } finally {
    await s.cleanup();
  }
});
