/**
 * Inherited file descriptors (docs/threat-model.md, "Inherited file descriptors"): fds 0–2 are the caller's
 * own grant (`hallpass -- cmd > file` opened `file` for the command); fds above 2 that hallpass was given are
 * closed for the command unless `--keep-fds`. Judged from outside: the outside file's contents; the bare
 * control shows the shell's `3>>file` reaching the command without hallpass.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, HALLPASS_ARGV, scratch } from "./harness.ts";

const HALLPASS = HALLPASS_ARGV.map((a) => `'${a}'`).join(" ");

Deno.test("inherited fds: 3>>outside reaches the command only with --keep-fds", async () => {
  const s = await scratch();
  try {
    const f = `${s.outside}/file`;
    await Deno.writeTextFile(f, "orig\n");
    // Control: without hallpass the command writes through fd 3.
    const c = await bare(["sh", "-c", `exec 3>>${f}; sh -c 'echo control >&3'`], { cwd: s.project });
    assertEquals(c.code, 0, c.stderr);
    assertEquals(await Deno.readTextFile(f), "orig\ncontrol\n");
    await Deno.writeTextFile(f, "orig\n");

    const r = await bare([
      "sh",
      "-c",
      `exec 3>>${f}; ${HALLPASS} --no-ask -q -- sh -c 'echo pwned >&3; echo rc=$?'`,
    ], {
      cwd: s.project,
    });
    assert(/rc=[1-9]/.test(r.stdout), r.stdout + r.stderr);
    assertEquals(await Deno.readTextFile(f), "orig\n");
    // Also through a descendant and a dup: the fd is not there to dup.
    const r2 = await bare([
      "sh",
      "-c",
      `exec 7>>${f}; ${HALLPASS} --no-ask -q -- sh -c 'sh -c "exec 4>&7; echo pwned >&4"; echo rc=$?'`,
    ], { cwd: s.project });
    assert(/rc=[1-9]/.test(r2.stdout), r2.stdout + r2.stderr);
    assertEquals(await Deno.readTextFile(f), "orig\n");

    // --keep-fds: the person passes the grant on, on purpose.
    const k = await bare([
      "sh",
      "-c",
      `exec 3>>${f}; ${HALLPASS} --no-ask -q --keep-fds -- sh -c 'echo kept >&3'`,
    ], {
      cwd: s.project,
    });
    assertEquals(k.code, 0, k.stderr);
    assertEquals(await Deno.readTextFile(f), "orig\nkept\n");
  } finally {
    await s.cleanup();
  }
});

Deno.test("inherited fds: 0–2 are the caller's grant (stdout redirected outside: written, ftruncate)", async () => {
  const s = await scratch();
  try {
    const f = `${s.outside}/out`;
    await Deno.writeTextFile(f, "a long old content\n");
    await Deno.writeTextFile(
      `${s.project}/t.py`,
      "import os\nos.write(1, b'new and more')\nos.ftruncate(1, 4)\n",
    );
    const r = await bare([
      "sh",
      "-c",
      `${HALLPASS} --no-ask -q --allow-exec /usr/bin/python3 -- sh -c ` +
      `'truncate -s 0 /dev/stdout; /usr/bin/python3 t.py' > ${f}`,
    ], { cwd: s.project });
    // The fd the person gave (fd 1) is the command's to use, ftruncate included; the same file reached by a path
    // (/dev/stdout → /proc/self/fd/1 → the outside file) is a write hallpass decides: denied.
    assertEquals(await Deno.readTextFile(f), "new ");
    assert(r.stderr.includes("denied write"), r.stderr);
  } finally {
    await s.cleanup();
  }
});
