/**
 * ffi/spawn.ts: posix_spawn runs on one of Deno's blocking threads (the start-up's main thread goes on
 * meanwhile). The program gets its arguments and the caller's environment (read when the spawn starts); the
 * status is the program's; a program that cannot be started rejects.
 */
import assert from "node:assert/strict";
import { spawn } from "../ffi/spawn.ts";
import { SysError } from "../ffi/errors.ts";

Deno.test("spawn: arguments, environment, exit status", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "hallpass-spawn-" });
  try {
    Deno.env.set("HALLPASS_SPAWN_TEST", "seen");
    const out = `${dir}/out`;
    const script = 'printf "%s|%s|%s" "$0" "$1" "$HALLPASS_SPAWN_TEST" > "$2"; exit 7';
    const c = await spawn("/bin/sh", ["sh", "-c", script, "zero", "a b", out]);
    assert.ok(c.pid > 0);
    assert.deepEqual(await c.status, { code: 7, signal: 0 });
    assert.equal(Deno.readTextFileSync(out), "zero|a b|seen");
  } finally {
    Deno.env.delete("HALLPASS_SPAWN_TEST");
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("spawn: a signal ends it, reported as that signal", async () => {
  const c = await spawn("/bin/sleep", ["sleep", "30"]);
  c.kill(15);
  assert.deepEqual(await c.status, { code: 0, signal: 15 });
});

Deno.test("spawn: a program that is not there rejects with SysError (ENOENT)", async () => {
  await assert.rejects(spawn("/nonexistent/hallpass-launcher", ["x"]), (e) => {
    assert.ok(e instanceof SysError);
    assert.equal(e.code, "ENOENT");
    return true;
  });
});
