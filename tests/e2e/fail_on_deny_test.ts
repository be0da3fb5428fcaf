/**
 * --fail-on-deny (docs/ci.md): a CI step whose command copes with a denial still fails the job; the command's
 * own failure keeps its status. And the documented way to sandbox a whole step (`sh -c 'A && B'`) runs B in
 * the sandbox too. Judged from outside: the file outside the project is never created.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { exists, hallpass, scratch } from "./harness.ts";
import { DENIED_STATUS, finalStatus } from "../../lib/cli/fail_on_deny.ts";

Deno.test("finalStatus: 123 only when the command exited 0 and something was denied", () => {
  assertEquals(finalStatus(0, true, true), DENIED_STATUS);
  assertEquals(finalStatus(0, false, true), 0);
  assertEquals(finalStatus(0, true, false), 0);
  assertEquals(finalStatus(7, true, true), 7);
  assertEquals(finalStatus(130, true, true), 130);
});

Deno.test("--no-ask --fail-on-deny: a command that survives a denial exits 123; nothing written outside", async () => {
  const s = await scratch();
  try {
    // The command ignores the failed write and exits 0, as a tool with a fallback would.
    const script = `echo x > ${s.outside}/f 2>/dev/null; echo done > ok; exit 0`;
    const plain = await hallpass(["--no-ask", "--", "sh", "-c", script], { cwd: s.project });
    assertEquals(plain.code, 0, plain.stderr);
    const r = await hallpass(["--no-ask", "--fail-on-deny", "--", "sh", "-c", script], { cwd: s.project });
    assertEquals(r.code, DENIED_STATUS, r.stderr);
    assert(r.stderr.includes(`denied write ${s.outside}/f`), r.stderr);
    assert(r.stderr.includes("--fail-on-deny"), r.stderr);
    assert(!(await exists(`${s.outside}/f`)), "the write outside happened");
    assertEquals(await Deno.readTextFile(`${s.project}/ok`), "done\n");
    // -q hides the summary, not the status.
    const q = await hallpass(["--no-ask", "-q", "--fail-on-deny", "--", "sh", "-c", script], {
      cwd: s.project,
    });
    assertEquals(q.code, DENIED_STATUS, q.stderr);
  } finally {
    await s.cleanup();
  }
});

Deno.test("--fail-on-deny: nothing denied → 0; the command's own failure keeps its status", async () => {
  const s = await scratch();
  try {
    const ok = await hallpass(["--no-ask", "--fail-on-deny", "--", "sh", "-c", "echo x > inside"], {
      cwd: s.project,
    });
    assertEquals(ok.code, 0, ok.stderr);
    const failed = await hallpass(
      ["--no-ask", "--fail-on-deny", "--", "sh", "-c", `echo x > ${s.outside}/f; exit 7`],
      { cwd: s.project },
    );
    assertEquals(failed.code, 7, failed.stderr);
    assert(!(await exists(`${s.outside}/f`)));
  } finally {
    await s.cleanup();
  }
});

Deno.test("docs/ci.md's form `-- sh -c 'A && B'`: B runs inside the sandbox too", async () => {
  const s = await scratch();
  try {
    const r = await hallpass(
      ["--no-ask", "--fail-on-deny", "--", "sh", "-c", `true && echo x > ${s.outside}/second`],
      { cwd: s.project },
    );
    assert(r.code !== 0, r.stderr);
    assert(r.stderr.includes(`denied write ${s.outside}/second`), r.stderr);
    assert(!(await exists(`${s.outside}/second`)), "the second command ran outside the sandbox");
  } finally {
    await s.cleanup();
  }
});

Deno.test("--fail-on-deny takes no value", async () => {
  const r = await hallpass(["--fail-on-deny=1", "--", "true"]);
  assertEquals(r.code, 125);
  assertEquals(r.stderr.split("\n")[0], "hallpass: --fail-on-deny takes no value");
});
