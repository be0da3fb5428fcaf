/**
 * Copilot's runtime under `--agent copilot` (lib/sandbox/copilot_runtime.ts, the recipe's `env`). The `copilot`
 * binary (1.0.102) unpacks its JavaScript runtime at its first start and, auto-updating, runs the highest
 * version above its own it finds in any directory of its search list (`$COPILOT_PKG_CACHE_HOME/pkg`,
 * `$COPILOT_CACHE_HOME/pkg`, `CACHE/copilot/pkg`, `$COPILOT_HOME/pkg`, `~/.copilot/pkg`; `universal/` or
 * `linux-x64/` below): a bare `VERSION/index.js` is enough.
 *
 * Day one: each session unpacked ~235 MB to `~/.cache/copilot/pkg` and the exit check moved it aside, again at
 * every session. Now sessions unpack to a directory only they use, once. The hole: the sandbox planted
 * `~/.copilot/pkg/linux-x64/9.9.9/index.js` (the recipe writes `~/.copilot/**`) and the person's next `copilot
 * --version` outside ran it. Judged by the real copilot (tests/setup_agents.sh) run outside afterwards, with a
 * bare control for each search directory.
 */
import { equal, ok as assert } from "node:assert/strict";
import { bare, hallpass, hallpassLines, scratchHome } from "./harness.ts";
import { setupAgents } from "../agents/session.ts";
import { type Need, test } from "../helpers/skip.ts";

const SETUP = setupAgents(["copilot"]);
const COPILOT = SETUP.get("copilot");
const NEEDS_COPILOT: Need = COPILOT?.ok
  ? undefined
  : { reason: `agent copilot unavailable: ${COPILOT?.why ?? "not set up"}` };
const SANDBOX_PKG = ".local/share/hallpass/copilot/pkg";
const WARNED = "copilot started without hallpass";
/** What copilot's own runtime prints for `--version` (the planted one prints nothing). */
const OWN = /GitHub Copilot CLI \d+\.\d+\.\d+/;

function q(s: string): string {
  return `'${s.replaceAll("'", "'\\''")}'`;
}

function copilotEnv(home: string, extra: Record<string, string> = {}): Record<string, string> {
  const bin = COPILOT!.bin!;
  return { HOME: home, PATH: `${bin.slice(0, bin.lastIndexOf("/"))}:/usr/local/bin:/usr/bin:/bin`, ...extra };
}

/** `copilot --version` outside, as the person would run it after the session: its output. */
async function copilotVersion(env: Record<string, string>): Promise<string> {
  const c = new Deno.Command("copilot", {
    args: ["--version"],
    env,
    clearEnv: true,
    cwd: env.HOME,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => c.kill("SIGKILL"), 120_000);
  try {
    const o = await c.output();
    return new TextDecoder().decode(o.stdout) + new TextDecoder().decode(o.stderr);
  } finally {
    clearTimeout(timer);
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** Every `*.hallpass-quarantined` below `dir` (relative). */
async function quarantined(dir: string, rel = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(`${dir}/${rel}`)) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.name.includes(".hallpass-quarantined")) out.push(r);
    else if (e.isDirectory && !e.isSymlink) out.push(...await quarantined(dir, r));
  }
  return out;
}

test({
  name:
    "copilot pkg: two sessions in a row unpack once, in the sessions' own directory, and quarantine nothing",
  ignore: NEEDS_COPILOT,
  async fn() {
    const s = await scratchHome("hallpass-copilotpkg-");
    try {
      const env = copilotEnv(s.home);
      const ino: number[] = [];
      for (let i = 0; i < 2; i++) {
        const r = await hallpass(["--no-ask", "--agent", "copilot", "--", "copilot", "--version"], {
          cwd: s.project,
          env,
        });
        equal(r.code, 0, r.stderr);
        assert(r.stdout.includes("1.0."), r.stdout);
        equal(hallpassLines(r).filter((l) => l.includes(WARNED)).length, 0, r.stderr);
        const vers = await Array.fromAsync(Deno.readDir(`${s.home}/${SANDBOX_PKG}/linux-x64`)).catch(
          () => [],
        );
        equal(vers.length, 1, `session ${i + 1}: ${vers.map((v) => v.name)}:\n${r.stderr}`);
        const st = await Deno.lstat(`${s.home}/${SANDBOX_PKG}/linux-x64/${vers[0].name}/index.js`);
        assert(st?.ino, `session ${i + 1}: not unpacked in ${SANDBOX_PKG}:\n${r.stderr}`);
        ino.push(st.ino);
      }
      equal(ino[1], ino[0], "the second session unpacked again");
      equal((await quarantined(s.home)).join(" "), "");
      assert(
        !(await exists(`${s.home}/.cache/copilot/pkg`)),
        "a session unpacked where copilot outside reads",
      );
      // copilot outside is unaffected: it unpacks and runs its own.
      assert(OWN.test(await copilotVersion(env)));
      assert(await exists(`${s.home}/.cache/copilot/pkg/linux-x64`));
    } finally {
      await s.cleanup();
    }
  },
});

/** Where the sandbox plants a newer version: a search directory (relative to $HOME) and the environment naming it. */
const PLANTS: {
  name: string;
  pkg: string;
  env?: Record<string, string>;
  grant?: string;
  platform?: string;
}[] = [
  { name: "~/.copilot/pkg", pkg: ".copilot/pkg" },
  { name: "~/.copilot/pkg (universal)", pkg: ".copilot/pkg", platform: "universal" },
  { name: "~/.cache/copilot/pkg", pkg: ".cache/copilot/pkg" },
  { name: "$XDG_CACHE_HOME/copilot/pkg", pkg: "xc/copilot/pkg", env: { XDG_CACHE_HOME: "xc" }, grant: "xc" },
  { name: "$COPILOT_HOME/pkg", pkg: "ch/pkg", env: { COPILOT_HOME: "ch" }, grant: "ch" },
  { name: "$COPILOT_CACHE_HOME/pkg", pkg: "cc/pkg", env: { COPILOT_CACHE_HOME: "cc" }, grant: "cc" },
  { name: "$COPILOT_PKG_CACHE_HOME/pkg", pkg: "pc/pkg", env: { COPILOT_PKG_CACHE_HOME: "pc" }, grant: "pc" },
];

for (const p of PLANTS) {
  test({
    name: `copilot pkg: a newer version the sandbox plants in ${p.name} does not run outside later`,
    ignore: NEEDS_COPILOT,
    async fn() {
      const s = await scratchHome("hallpass-copilotpkg-plant-");
      try {
        const ctl = `${s.outside}/ctl`;
        await Deno.mkdir(ctl);
        const mark = `${s.outside}/copilot-ran-sandbox-code`;
        const envOf = (home: string) =>
          copilotEnv(
            home,
            Object.fromEntries(Object.entries(p.env ?? {}).map(([k, v]) => [k, `${home}/${v}`])),
          );
        const ver = `${p.pkg}/${p.platform ?? "linux-x64"}/9.9.9`;
        const plant = `cd "$HOME" && mkdir -p ${ver} && printf '%s\\n' ${
          q(`import * as fs from "node:fs"; fs.writeFileSync(${JSON.stringify(mark)}, "ran");`)
        } > ${ver}/index.js`;

        // Control: without hallpass, the planted version runs at the next `copilot --version`.
        const b = await bare(["sh", "-c", plant], { env: envOf(ctl) });
        equal(b.code, 0, b.stderr);
        await copilotVersion(envOf(ctl));
        assert(await exists(mark), "control: copilot did not run the planted version");
        await Deno.remove(mark);

        const grant = p.grant ? ["--allow-path", `${s.home}/${p.grant}`] : [];
        if (p.grant) await Deno.mkdir(`${s.home}/${p.grant}`);
        const r = await hallpass(["--no-ask", "--agent", "copilot", ...grant, "--", "sh", "-c", plant], {
          cwd: s.project,
          env: envOf(s.home),
        });
        equal(r.code, 0, r.stderr);
        assert(hallpassLines(r).some((l) => l.includes(WARNED)), r.stderr);
        assert(!(await exists(`${s.home}/${ver}/index.js`)), `still there:\n${r.stderr}`);
        const out = await copilotVersion(envOf(s.home));
        assert(!(await exists(mark)), `copilot outside ran what the sandbox planted:\n${r.stderr}`);
        assert(OWN.test(out), out);
      } finally {
        await s.cleanup();
      }
    },
  });
}

test({
  name: "copilot pkg: an old tree the sandbox moves in as a newer version does not run outside later",
  ignore: NEEDS_COPILOT,
  async fn() {
    const s = await scratchHome("hallpass-copilotpkg-mv-");
    try {
      const mark = `${s.outside}/copilot-ran-sandbox-code`;
      const env = copilotEnv(s.home);
      // Made before the session (old ctimes inside): a tree copilot does not read, and the platform directory.
      await Deno.mkdir(`${s.home}/.copilot/stash`, { recursive: true });
      await Deno.mkdir(`${s.home}/.copilot/pkg/linux-x64`, { recursive: true });
      await Deno.writeTextFile(
        `${s.home}/.copilot/stash/index.js`,
        `import * as fs from "node:fs"; fs.writeFileSync(${JSON.stringify(mark)}, "ran");\n`,
      );
      // The session starts in a later second than anything made above.
      const made = (await Deno.lstat(`${s.home}/.copilot/stash/index.js`)).ctime!.getTime();
      while (Date.now() < made + 2_100) await new Promise((r) => setTimeout(r, 100));
      const r = await hallpass(
        [
          "--no-ask",
          "--agent",
          "copilot",
          "--",
          "sh",
          "-c",
          'mv "$HOME/.copilot/stash" "$HOME/.copilot/pkg/linux-x64/9.9.9"',
        ],
        { cwd: s.project, env },
      );
      equal(r.code, 0, r.stderr);
      assert(hallpassLines(r).some((l) => l.includes(WARNED)), r.stderr);
      const out = await copilotVersion(env);
      assert(!(await exists(mark)), `copilot outside ran what the sandbox moved in:\n${r.stderr}`);
      assert(OWN.test(out), out);
    } finally {
      await s.cleanup();
    }
  },
});
