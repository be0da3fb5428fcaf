/**
 * The read side the start-up library adds to the ruleset as it carves (helper/start/start.c, each rule opened
 * relative to the directory it was listed in, on another thread while the write side is added) refuses and
 * allows exactly the reads the TypeScript carve's rules do (HALLPASS_START_LIB=0: lib/floor/read_floor.ts,
 * the reference). Judged from outside by what a command could read: protected files, one reached through a
 * symlink, a hard link of a key, an `--allow-read` inside a protection, a `--protect`ed file, and the files
 * around them that stay readable. Control: without hallpass every file is readable.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, hallpass, scratchHome } from "./harness.ts";

const FILES = [
  ".ssh/id_ed25519",
  ".ssh/known_hosts",
  ".netrc",
  "notes.txt",
  ".config/gh/hosts.yml",
  ".config/settings.json",
  ".gnupg/k", // .gnupg is a symlink to real/keys: protected where it really is too
  "real/keys/k",
  "key-copy", // a second name of .ssh/id_ed25519
  "mine/secret",
  "mine/other",
  "dir/sub/file",
];

/** Each file as the sandbox's protections leave it for reading (R) or not (X). */
const EXPECTED = [
  "X .ssh/id_ed25519",
  "R .ssh/known_hosts",
  "X .netrc",
  "R notes.txt",
  "X .config/gh/hosts.yml",
  "R .config/settings.json",
  "X .gnupg/k",
  "X real/keys/k",
  "X key-copy",
  "X mine/secret",
  "R mine/other",
  "R dir/sub/file",
];

const PROBE =
  'for f in "$@"; do if cat "$HOME/$f" >/dev/null 2>&1; then echo "R $f"; else echo "X $f"; fi; done';

Deno.test("the read side start.c adds to the ruleset refuses and allows what the TypeScript carve's does", async () => {
  const t = await scratchHome("hallpass-startlib-");
  try {
    const h = t.home;
    for (const d of [".ssh", ".config/gh", "real/keys", "mine", "dir/sub"]) {
      await Deno.mkdir(`${h}/${d}`, { recursive: true });
    }
    for (const f of FILES.filter((f) => !f.startsWith(".gnupg/") && f !== "key-copy")) {
      await Deno.writeTextFile(`${h}/${f}`, "x\n");
    }
    await Deno.symlink(`${h}/real/keys`, `${h}/.gnupg`);
    await Deno.link(`${h}/.ssh/id_ed25519`, `${h}/key-copy`);
    const env = { HOME: h };
    const c = await bare(["sh", "-c", PROBE, "probe", ...FILES], { cwd: t.project, env });
    assertEquals(c.stdout.trim().split("\n"), FILES.map((f) => `R ${f}`), `control: ${c.stderr}`);
    const args = [
      "--no-ask",
      "-q",
      "--allow-read",
      `${h}/.ssh/known_hosts`,
      "--protect",
      `${h}/mine/secret`,
      "--",
      "sh",
      "-c",
      PROBE,
      "probe",
      ...FILES,
    ];
    for (const lib of ["1", "0"]) {
      const r = await hallpass(args, { cwd: t.project, env: { ...env, HALLPASS_START_LIB: lib } });
      assertEquals(
        { lib, code: r.code, lines: r.stdout.trim().split("\n") },
        { lib, code: 0, lines: EXPECTED },
        r.stderr,
      );
    }
  } finally {
    await t.cleanup();
  }
});
