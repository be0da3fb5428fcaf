/**
 * A performed write lends nothing (docs/threat-model.md, "Writes"): `hallpass agent` performs allowed writes
 * for container processes, and must do so with the caller's ids AND effective capabilities. `runc spec`'s
 * default process keeps only AUDIT_WRITE, KILL and NET_BIND_SERVICE: as that root, under `allow write /tmp/**`,
 * overwriting a uid-1000 0600 file, chmod/chown of a file it does not own, and creating a file in another
 * uid's 0700 directory must all fail as the kernel makes them fail for the same container without seccomp
 * (the control). Judged from outside: the files in the container's root.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  AgentProcess,
  agentTest,
  containerId,
  makeBundle,
  needRoot,
  needTools,
  runContainer,
  scratch,
} from "./harness.ts";

const RULES = "allow write /tmp/**\nallow exec /bin/busybox\n";
const SCRIPT = 'echo x > /tmp/victim; echo "write=$?"; chmod 666 /tmp/owned; echo "chmod=$?"; ' +
  'chown 0 /tmp/owned; echo "chown=$?"; echo y > /tmp/priv/new; echo "create=$?"; ' +
  'touch -d 2001-01-01 /tmp/owned; echo "utime=$?"; echo ok > /tmp/fine; echo "fine=$?"';

async function plant(rootfs: string): Promise<void> {
  await Deno.writeTextFile(`${rootfs}/tmp/victim`, "orig");
  await Deno.chmod(`${rootfs}/tmp/victim`, 0o600);
  await Deno.chown(`${rootfs}/tmp/victim`, 1000, 1000);
  await Deno.writeTextFile(`${rootfs}/tmp/owned`, "o");
  await Deno.chmod(`${rootfs}/tmp/owned`, 0o644);
  await Deno.chown(`${rootfs}/tmp/owned`, 1000, 1000);
  await Deno.utime(`${rootfs}/tmp/owned`, 1_500_000_000, 1_500_000_000);
  await Deno.mkdir(`${rootfs}/tmp/priv`, { mode: 0o700 });
  await Deno.chown(`${rootfs}/tmp/priv`, 1000, 1000);
}

async function state(rootfs: string) {
  const v = await Deno.stat(`${rootfs}/tmp/owned`);
  let created = true;
  try {
    await Deno.lstat(`${rootfs}/tmp/priv/new`);
  } catch {
    created = false;
  }
  return {
    victim: await Deno.readTextFile(`${rootfs}/tmp/victim`),
    owned: [v.uid, v.mode! & 0o7777, v.mtime!.getTime()],
    created,
  };
}

const UNCHANGED = { victim: "orig", owned: [1000, 0o644, 1_500_000_000_000], created: false };

agentTest(
  "agent: a container root with runc's default capabilities borrows none of the agent's",
  async () => {
    needRoot();
    needTools("runc", "busybox");
    const dir = await scratch();
    await Deno.writeTextFile(`${dir}/rules/default.rules`, RULES);
    const socket = `${dir}/agent.sock`;
    // Control: the same container without hallpass's profile: the kernel refuses all five.
    const ctl = await makeBundle(`${dir}/c`, { socket, script: SCRIPT, noSeccomp: true });
    await plant(ctl);
    const c = await runContainer("runc", `${dir}/c`, containerId("credsctl"));
    for (const w of ["write", "chmod", "chown", "create", "utime"]) {
      assert(new RegExp(`${w}=[1-9]`).test(c.stdout), `control: ${w} succeeded:\n${c.stdout}${c.stderr}`);
    }
    assertEquals(await state(ctl), UNCHANGED);

    const agent = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`]);
    try {
      const rootfs = await makeBundle(`${dir}/b`, { socket, script: SCRIPT });
      await plant(rootfs);
      const r = await runContainer("runc", `${dir}/b`, containerId("creds"));
      for (const w of ["write", "chmod", "chown", "create", "utime"]) {
        assert(new RegExp(`${w}=[1-9]`).test(r.stdout), `${w} went through:\n${r.stdout}${r.stderr}`);
      }
      assertEquals(await state(rootfs), UNCHANGED);
      // What the container may do, it does (the writes were mediated, not refused wholesale).
      assert(r.stdout.includes("fine=0"), r.stdout + r.stderr);
      assertEquals(await Deno.readTextFile(`${rootfs}/tmp/fine`), "ok\n");
    } catch (e) {
      throw new Error(`${(e as Error).message}\n--- agent output ---\n${agent.output}`);
    } finally {
      await agent.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
