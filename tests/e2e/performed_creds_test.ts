/**
 * A performed write lends nothing (docs/threat-model.md, "Writes"): what the supervisor does for a sandboxed
 * process (an answered write outside the floor, a metadata call in the project, by the mediator or the fast
 * path) is done with that process's file system ids, groups and effective capabilities. Root only: the
 * sandboxed root drops its capabilities (capset, tests/helpers/nocaps_write.c) or becomes another user, and the kernel
 * refuses it what the files' owner and mode refuse; hallpass, root with every capability, must not do it in
 * its stead. Each case has a bare control; judged from outside (the files' contents, owner, mode, time).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, bare, compileHelper, isRoot, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

const ignore = [
  isRoot() ? undefined : { reason: "needs root (to drop capabilities, to become another user)" },
  tool("setpriv"),
];

/**
 * The sandboxed command for a directory: root without capabilities (tests/helpers/nocaps_write.c drops them
 * with capset and does the writes itself: an exec would give root its capabilities back, and dropping the
 * bounding set needs CAP_SETPCAP, which the sandbox's root no longer has), or uid 4243 (setpriv, then sh).
 */
const DROPS: [string, (dir: string) => Promise<string[]>][] = [
  ["root without capabilities", async (dir) => [await compileHelper("nocaps_write"), dir]],
  [
    "another user",
    (dir) =>
      Promise.resolve([
        "/usr/bin/setpriv",
        "--reuid=4243",
        "--regid=4243",
        "--clear-groups",
        "--",
        "sh",
        "-c",
        SCRIPT(dir),
      ]),
  ],
];

const SCRIPT = (d: string) =>
  `echo x > ${d}/victim; echo "write=$?"; chmod 666 ${d}/owned; echo "chmod=$?"; ` +
  `chown 0 ${d}/owned; echo "chown=$?"; echo y > ${d}/priv/new; echo "create=$?"; ` +
  `touch -d 2001-01-01 ${d}/owned; echo "utime=$?"`;

async function plant(d: string): Promise<void> {
  await Deno.chmod(d, 0o755);
  await Deno.writeTextFile(`${d}/victim`, "orig");
  await Deno.chmod(`${d}/victim`, 0o600);
  await Deno.chown(`${d}/victim`, 4242, 4242);
  await Deno.writeTextFile(`${d}/owned`, "o");
  await Deno.chmod(`${d}/owned`, 0o644);
  await Deno.chown(`${d}/owned`, 4242, 4242);
  await Deno.utime(`${d}/owned`, 1_500_000_000, 1_500_000_000);
  await Deno.mkdir(`${d}/priv`, { mode: 0o700 });
  await Deno.chown(`${d}/priv`, 4242, 4242);
}

async function state(d: string) {
  const v = await Deno.stat(`${d}/owned`);
  let created = true;
  try {
    await Deno.lstat(`${d}/priv/new`);
  } catch {
    created = false;
  }
  return {
    victim: await Deno.readTextFile(`${d}/victim`),
    owned: [v.uid, v.mode! & 0o7777, v.mtime!.getTime()],
    created,
  };
}

const UNCHANGED = { victim: "orig", owned: [4242, 0o644, 1_500_000_000_000], created: false };
const WORDS = ["write", "chmod", "chown", "create", "utime"];

for (const [engine, fast] of ENGINES) {
  const hp = engineRunner(fast, "performed as the caller");
  for (const [who, drop] of DROPS) {
    test({
      name: `performed as the caller (${engine}, ${who}): outside answered once, and in the project`,
      ignore,
      fn: async () => {
        const c = await scratch();
        try {
          await plant(c.outside);
          const r = await bare(await drop(c.outside));
          for (const w of WORDS) assert(new RegExp(`${w}=[1-9]`).test(r.stdout), `control ${w}: ${r.stdout}`);
          assertEquals(await state(c.outside), UNCHANGED);
        } finally {
          await c.cleanup();
        }
        const s = await scratch();
        try {
          // Outside: every write asks and is answered once (performed by the supervisor).
          await plant(s.outside);
          await Deno.chmod(`${s.outside}/..`, 0o755);
          const ask = await askProgram(`${s.outside}/..`, "once");
          const cmd = await drop(s.outside);
          const r = await hp(
            ["--ask-program", ask, "-q", "--allow-exec", cmd[0], "--", ...cmd],
            { cwd: s.project },
          );
          for (const w of WORDS) {
            assert(new RegExp(`${w}=[1-9]`).test(r.stdout), `${w}: ${r.stdout}${r.stderr}`);
          }
          assertEquals(await state(s.outside), UNCHANGED, "outside");
          // In the project: metadata calls are performed (fast path or mediator), writes continued.
          await plant(s.project);
          const cmd2 = await drop(s.project);
          const r2 = await hp(["--no-ask", "-q", "--allow-exec", cmd2[0], "--", ...cmd2], {
            cwd: s.project,
          });
          for (const w of WORDS) {
            assert(new RegExp(`${w}=[1-9]`).test(r2.stdout), `${w}: ${r2.stdout}${r2.stderr}`);
          }
          assertEquals(await state(s.project), UNCHANGED, "project");
        } finally {
          await s.cleanup();
        }
      },
    });
  }
}
