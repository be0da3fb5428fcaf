/**
 * No single notification stalls the supervisor (docs/threat-model.md, "Files that block"): a path on a file
 * system that never answers a lookup (tests/helpers/stall_fuse.c, raw FUSE) holds the supervisor's own path
 * resolution; the watchdog fails that call (EACCES) after HALLPASS_WATCHDOG_MS and interrupts the wait, and
 * the session goes on (the next write works, the command ends). Control: the same lookup without hallpass
 * waits until killed. Root only (mounting FUSE), and /dev/fuse must exist.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, compileHelper, hallpass, isRoot, scratch } from "./harness.ts";
import { test } from "../helpers/skip.ts";

const why = !isRoot() ? "needs root to mount FUSE" : (() => {
  try {
    Deno.statSync("/dev/fuse");
    return null;
  } catch {
    return "no /dev/fuse on this machine";
  }
})();

test({
  name: "watchdog: a file system that never answers fails the call, not the session",
  ignore: why === null ? undefined : { reason: why },
  fn: async () => {
    const helper = await compileHelper("stall_fuse");
    const s = await scratch();
    const mnt = `${s.outside}/mnt`;
    await Deno.mkdir(mnt);
    const server = new Deno.Command(helper, { args: [mnt], stdout: "piped", stderr: "piped" }).spawn();
    try {
      const reader = server.stdout.getReader();
      const { value } = await reader.read();
      assertEquals(new TextDecoder().decode(value), "ready\n");
      // Control: a lookup there waits until it is killed.
      const c = await bare(["timeout", "2", "stat", `${mnt}/x`]);
      assertEquals(c.code, 124, "control: the lookup should hang");
      const t0 = Date.now();
      const r = await hallpass(
        ["--no-ask", "-q", "--", "sh", "-c", `echo x > ${mnt}/x; echo rc=$?; echo ok > after; cat after`],
        { cwd: s.project, env: { HALLPASS_WATCHDOG_MS: "1500" }, timeoutMs: 120_000 },
      );
      // Generous at load (the session's start alone takes seconds): the lookup itself would wait for ever.
      assert(Date.now() - t0 < 60_000, "the session waited for the file system");
      assertEquals(r.code, 0, r.stderr);
      assert(/^rc=[1-9]/m.test(r.stdout) && r.stdout.includes("ok\n"), r.stdout + r.stderr);
      assert(r.stderr.includes("held the supervisor"), r.stderr);
    } finally {
      try {
        server.kill("SIGKILL");
      } catch { /* gone */ }
      await server.status;
      await bare(["umount", "-l", mnt]).catch(() => null);
      await s.cleanup();
    }
  },
});
