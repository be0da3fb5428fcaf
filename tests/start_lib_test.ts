/**
 * The read side built by helper/start/start.c (lib/floor/read_floor_fast.ts) is readFloor's (lib/floor/read_floor.ts):
 * the same rules, carved directories and their names, hard-linked and dropped paths, on trees made for each
 * case (symlinked and dangling holes, hard links, a directory everyone writes in, holes inside the project,
 * readable paths inside a hole, odd names) and on this machine's own protections. Judged on the real file
 * system; a comparison that differs is made again (another test may add a file to a listed directory between
 * the two), and only a difference that stays fails.
 */
import assert from "node:assert/strict";
import { readFloor } from "../lib/floor/read_floor.ts";
import { type PackedReadFloor, readFloorFast } from "../lib/floor/read_floor_fast.ts";
import { existingResolver, realCarveFs } from "../lib/floor/carve_fs.ts";
import { carve, CarveLimitError, withAliases } from "../lib/floor/landlock_carve.ts";
import { StartLib, unpackRules } from "../ffi/start.ts";
import { FILE_RIGHTS, FS } from "../ffi/landlock.ts";
import type { ReadProtection } from "../lib/policy/secrets.ts";
import { makePlan } from "../lib/sandbox/plan.ts";
import { parseCommandLine } from "../lib/cli/options.ts";
import { withTerminalReads } from "../lib/supervisor/other_terminals.ts";
import type { CliOptions } from "../lib/cli/options.ts";
import { probe, test } from "./helpers/skip.ts";

const LIB = new URL("../build/libhallpass-start.so", import.meta.url).pathname;
const lib = StartLib.open(LIB);
const built = probe(
  "start-up library",
  () => lib ? undefined : "build/libhallpass-start.so is not built (make)",
);
const builtin = { kind: "builtin" as const, what: "test" };
const yours = { kind: "cli" as const, option: "--protect" };

type Floor = ReturnType<typeof readFloor>;
function normal(f: Floor | PackedReadFloor) {
  const rules = "packed" in f ? unpackRules(f.packed.rules) : f.rules;
  return {
    rules: rules.map((r) => `${r.path} ${r.access} ${r.dir}`).sort(),
    carved: f.carved.map((c) => `${c.path} ${c.missing}`),
    listed: f.listed,
    hardLinked: f.hardLinked,
    dropped: f.dropped,
    inProject: f.inProject,
    before: [...f.before].map(([d, names]) =>
      `${d}: ${[...names].map(([n, i]) => `${n}=${i}`).sort().join(" ")}`
    )
      .sort(),
  };
}

/** Both answers for the same input, compared (again, up to three times, when a listed directory changed). */
async function same(reads: ReadProtection, project: string): Promise<ReturnType<typeof normal>> {
  let last = "";
  for (let attempt = 0; attempt < 3; attempt++) {
    const ts = normal(readFloor(reads, project, realCarveFs, existingResolver()));
    const fast = await readFloorFast(reads, project, lib!);
    assert.ok(fast !== null, "the library answered");
    const c = normal(fast);
    // The canonical forms it hands the refused-reads watch (lib/floor/refused_reads.ts refusedInput).
    const resolve = existingResolver();
    const paths = [...reads.protect, ...reads.readable].map((p) => p.path);
    const real = paths.map((p) => `${p} ${fast.real(p) === resolve(p)}`);
    assert.deepEqual(real, paths.map((p) => `${p} true`));
    assert.equal(fast.real("/not/a/protected/path"), undefined);
    if (JSON.stringify(ts) === JSON.stringify(c)) return ts;
    last = `${JSON.stringify(ts)}\n!==\n${JSON.stringify(c)}`;
  }
  assert.fail(`readFloorFast differs from readFloor:\n${last}`);
}

/** A fixture below $HOME (not /tmp: a directory everyone writes in is never carved, its holes are dropped). */
function fixture(): string {
  const base = Deno.env.get("HOME") ?? "/root";
  return Deno.realPathSync(Deno.makeTempDirSync({ dir: base, prefix: ".hallpass-startlib-" }));
}

test({
  name:
    "start.c's read side = readFloor: symlinked, dangling and file holes, hard links, shared dirs, project",
  ignore: built,
  async fn() {
    const d = fixture();
    try {
      const h = `${d}/home`;
      for (
        const dir of [
          ".ssh",
          ".config/gh",
          ".config/other",
          "real/keys",
          "proj/src",
          "shared/x/.ssh",
          "dév ü",
        ]
      ) {
        Deno.mkdirSync(`${h}/${dir}`, { recursive: true });
      }
      Deno.writeTextFileSync(`${h}/.ssh/id_ed25519`, "k");
      Deno.writeTextFileSync(`${h}/.ssh/known_hosts`, "k");
      Deno.writeTextFileSync(`${h}/.netrc`, "n");
      Deno.writeTextFileSync(`${h}/notes.txt`, "n");
      Deno.writeTextFileSync(`${h}/.config/gh/hosts.yml`, "t");
      Deno.writeTextFileSync(`${h}/.config/settings.json`, "{}");
      Deno.writeTextFileSync(`${h}/dév ü/a file`, "x");
      Deno.writeTextFileSync(`${h}/proj/.env`, "e");
      Deno.writeTextFileSync(`${h}/proj/secret`, "s");
      Deno.writeTextFileSync(`${h}/real/keys/pubring.kbx`, "p");
      Deno.linkSync(`${h}/.ssh/id_ed25519`, `${h}/key-copy`); // a second name of a protected file
      Deno.symlinkSync(`${h}/.ssh`, `${h}/ssh-link`);
      Deno.symlinkSync(`${h}/real/keys`, `${h}/.gnupg`); // a hole reached through a symlink
      Deno.symlinkSync(`${h}/nowhere`, `${h}/.aws`); // dangling
      new Deno.Command("mkfifo", { args: [`${h}/fifo`] }).outputSync(); // neither file nor directory
      Deno.chmodSync(`${h}/shared`, 0o1777);
      const reads: ReadProtection = {
        protect: [
          { path: `${h}/.ssh`, source: builtin },
          { path: `${h}/.gnupg`, source: builtin },
          { path: `${h}/.aws`, source: builtin },
          { path: `${h}/.netrc`, source: builtin },
          { path: `${h}/.config/gh`, source: builtin },
          { path: `${h}/.local/share/keyrings`, source: builtin }, // missing below a missing directory
          { path: `${h}/shared/x/.ssh`, source: builtin }, // below a directory everyone writes in: dropped
          { path: `${h}/proj/.env`, source: builtin }, // builtin, in the project: not kept
          { path: `${h}/proj/secret`, source: yours }, // yours, in the project: kept
          { path: `${h}/dév ü`, source: yours },
          { path: `${h}/ssh-link/id_ed25519`, source: yours }, // through a symlink
        ],
        lifted: [],
        readable: [
          { path: `${h}/.ssh/known_hosts`, source: yours },
          { path: `${h}/.gnupg/pubring.kbx`, source: yours }, // through a symlink: granted where it is
        ],
        unused: [],
      };
      const r = await same(reads, `${h}/proj`);
      assert.ok(r.hardLinked.includes(`${h}/key-copy`), "the hard link is named");
      assert.ok(r.dropped.includes(`${h}/shared/x/.ssh`), "the hole below a shared directory is dropped");
      assert.deepEqual(r.inProject, [`${h}/proj/.env`]);
      assert.ok(
        r.rules.some((l) => l.startsWith(`${h}/.ssh/known_hosts `)),
        "the readable grant has its rule",
      );
      assert.ok(
        r.rules.some((l) => l.startsWith(`${h}/real/keys/pubring.kbx `)),
        "granted where it really is",
      );
      assert.ok(!r.rules.some((l) => l.startsWith(`${h}/.ssh `) || l.startsWith(`${h}/real/keys `)));
    } finally {
      Deno.removeSync(d, { recursive: true });
    }
  },
});

test({
  name: "start.c's read side = readFloor: this machine's own protections (every home, the consoles)",
  ignore: built,
  async fn() {
    const inv = parseCommandLine(["--no-ask", "--", "/bin/true"]);
    assert.equal(inv.kind, "run");
    const plan = makePlan((inv as { opts: CliOptions }).opts, (k) => Deno.env.get(k));
    const reads = withTerminalReads(plan.reads, []);
    const r = await same(reads, plan.project);
    assert.ok(r.rules.length > 0 && reads.protect.length > 0);
  },
});

test({
  name:
    "start.c refuses what it does not take (a path that is not plain, a NUL): the caller carves in TypeScript",
  ignore: built,
  async fn() {
    for (
      const path of [
        "/root//.ssh",
        "/root/./.ssh",
        "/root/../root/.ssh",
        "/root/.ssh/",
        "relative/.ssh",
        "/a\0/b",
      ]
    ) {
      const reads: ReadProtection = {
        protect: [{ path: "/root/.aws", source: builtin }, { path, source: yours }],
        lifted: [],
        readable: [],
        unused: [],
      };
      assert.equal(await readFloorFast(reads, "/work", lib!), null, JSON.stringify(path));
      const readable = {
        protect: [reads.protect[0]],
        lifted: [],
        readable: [{ path, source: yours }],
        unused: [],
      };
      assert.equal(await readFloorFast(readable, "/work", lib!), null, `readable ${JSON.stringify(path)}`);
    }
  },
});

test({
  name: "start.c stops past the rule limit where carve() does (CarveLimitError names the same directory)",
  ignore: built,
  async fn() {
    const d = fixture();
    try {
      for (let i = 0; i < 12; i++) Deno.writeTextFileSync(`${d}/f${i}`, "");
      Deno.mkdirSync(`${d}/.ssh`);
      const holes = withAliases([{ path: `${d}/.ssh`, withhold: FS.READ_FILE }], existingResolver());
      let ts = "";
      try {
        carve([{ path: "/", access: FS.READ_FILE }], holes, realCarveFs, {
          fileRights: FILE_RIGHTS,
          maxRules: 8,
        });
      } catch (e) {
        assert.ok(e instanceof CarveLimitError);
        ts = e.dir;
      }
      const r = await lib!.readFloor(
        {
          right: FS.READ_FILE,
          fileRights: FILE_RIGHTS,
          maxRules: 8,
          project: "/nonexistent-project",
          grants: ["/"],
          readable: [],
          ruleset: -1,
          handled: 0n,
        },
        [{ path: `${d}/.ssh`, builtin: true }],
      );
      assert.ok(ts !== "" && r !== null && "limit" in r);
      assert.equal(r.limit, ts);
    } finally {
      Deno.removeSync(d, { recursive: true });
    }
  },
});
