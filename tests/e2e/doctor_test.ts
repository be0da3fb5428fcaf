// `hallpass doctor` probes the real kernel, libseccomp and the launcher, and says what to do about gaps.
import { ok } from "node:assert/strict";
import { hallpass } from "./harness.ts";

Deno.test("doctor: every essential check passes here, one line each, exit 0", async () => {
  const r = await hallpass(["doctor"]);
  ok(r.code === 0, r.stdout + r.stderr);
  for (const name of ["kernel", "Landlock", "seccomp user notification", "ADDFD", "libseccomp", "launcher"]) {
    ok(new RegExp(`^ok\\s+${name}`, "m").test(r.stdout), `no ok line for ${name}:\n${r.stdout}`);
  }
  ok(/hallpass can run here/.test(r.stdout));
});

Deno.test("doctor --json: machine-readable checks", async () => {
  const r = await hallpass(["doctor", "--json"]);
  ok(r.code === 0, r.stderr);
  const checks = JSON.parse(r.stdout) as { name: string; ok: boolean; value: string }[];
  ok(checks.length >= 6);
  ok(
    checks.every((c) =>
      typeof c.name === "string" && typeof c.ok === "boolean" && typeof c.value === "string"
    ),
  );
});

Deno.test("doctor: the values stand in one column (each check's name fits its 32 cells)", async () => {
  const r = await hallpass(["doctor", "--json"]);
  const checks = JSON.parse(r.stdout) as { name: string }[];
  for (const c of checks) ok(c.name.length <= 32, `${JSON.stringify(c.name)} is ${c.name.length} long`);
});
