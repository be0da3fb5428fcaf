/**
 * A read-protected file cannot be carried to a readable name by a performed rename or link, whatever the person
 * (here an ask program answering `once`) says: only `--allow-read` lifts a protection (docs/threat-model.md,
 * "Secrets"). In the kernel, Landlock's REFER rule refuses such a link or rename itself; these are the ones the
 * supervisor would perform after an answer. Judged by what the sandbox could read, and by the key staying where
 * it was.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, bare, hallpass, scratch } from "./harness.ts";

const KEY = "FAKEKEY-0123456789";

async function home() {
  const s = await scratch();
  // Below the real $HOME (hallpass does not carve directories everyone creates files in, such as /tmp).
  const base = await Deno.makeTempDir({ dir: Deno.env.get("HOME") ?? "/tmp", prefix: "hallpass-carry-" });
  const h = `${base}/home`;
  await Deno.mkdir(`${h}/.ssh`, { recursive: true });
  await Deno.mkdir(`${h}/proj`);
  await Deno.writeTextFile(`${h}/.ssh/id_ed25519`, KEY + "\n");
  return {
    h,
    dir: s.outside,
    cleanup: async () => {
      await s.cleanup();
      await Deno.remove(base, { recursive: true });
    },
  };
}

const ATTACKS: [string, string][] = [
  ["a hard link of the key into the project", "ln ~/.ssh/id_ed25519 k; cat k"],
  ["a rename of the key into the project", "mv ~/.ssh/id_ed25519 k; cat k"],
  ["a rename of ~/.ssh into the project", "mv ~/.ssh ssh2; cat ssh2/id_ed25519"],
  ["a rename of ~/.ssh next to it", "mv ~/.ssh ~/ssh3; cat ~/ssh3/id_ed25519"],
];

for (const [name, script] of ATTACKS) {
  Deno.test(`read protection: ${name} is refused even when answered once`, async () => {
    const t = await home();
    try {
      const env = { HOME: t.h };
      // Control: without hallpass the script reads the key.
      const c = await bare(["sh", "-c", script], { cwd: `${t.h}/proj`, env });
      assert(c.stdout.includes(KEY), `control: ${c.stdout}${c.stderr}`);
      // Put it back for the real run.
      await Deno.remove(`${t.h}/.ssh`, { recursive: true }).catch(() => {});
      for (const p of ["proj/k", "proj/ssh2", "ssh3"]) {
        await Deno.remove(`${t.h}/${p}`, { recursive: true }).catch(() => {});
      }
      await Deno.mkdir(`${t.h}/.ssh`);
      await Deno.writeTextFile(`${t.h}/.ssh/id_ed25519`, KEY + "\n");
      const ask = await askProgram(t.dir, "once");
      const r = await hallpass(["--ask-program", ask, "-q", "--", "sh", "-c", script], {
        cwd: `${t.h}/proj`,
        env,
      });
      assert(!r.stdout.includes(KEY), `the key was read: ${r.stdout}`);
      assertEquals(
        await Deno.readTextFile(`${t.h}/.ssh/id_ed25519`),
        KEY + "\n",
        "the key stays where it was",
      );
    } finally {
      await t.cleanup();
    }
  });
}
