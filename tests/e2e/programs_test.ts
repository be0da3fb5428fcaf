/**
 * Real programs in a scratch project under hallpass (--no-ask: nothing may need an answer), compared with the
 * same script run bare in another directory: same exit status, same output, same files on the host (type,
 * mode, content, link targets). Absolute paths are normalised to $P.
 *
 * HOME points into the project for git and npm: both write their config, logs and cache below HOME, and a
 * real user would allow those with --allow-path ~/.gitconfig / --agent; here the test must not depend on
 * the account it runs under (root or hallpass-test), so everything stays in the project.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, hallpass, type Result, scratch, snapshot } from "./harness.ts";
import { step, tool } from "../helpers/skip.ts";
import { GIT_ENV } from "../helpers/git.ts";

interface Scenario {
  name: string;
  /** Programs needed on the host (each; `a|b`: either), else the scenario is reported skipped. */
  needs: string[];
  /** Prepares the directory (bare, outside hallpass). */
  setup?: (dir: string) => Promise<void>;
  script: string;
  /** Extra hallpass options for the project directory. */
  args?: (project: string) => string[];
  /** Entries not compared (they hold inode numbers or timestamps of the run). */
  ignore?: RegExp;
}

const ENV_BASE = GIT_ENV;

const SCENARIOS: Scenario[] = [
  {
    name: "sh: mkdir, redirections, ln, chmod, mv, rm, touch -d",
    needs: ["/bin/sh"],
    script: `set -e; umask 022; mkdir -p a/b/c; echo hi > a/b/f; printf more >> a/b/f; ln -s f a/b/l
      ln a/b/f a/b/hard; chmod 600 a/b/f; mv a/b/hard a/moved; mkfifo a/fifo; rm a/b/l; rmdir a/b/c
      touch -d @1000 a/moved; : > a/empty; echo ok`,
  },
  {
    name: "python3: write files, os.makedirs, shutil.copytree, os.replace, tempfile",
    needs: ["/usr/bin/python3"],
    script: `/usr/bin/python3 - <<'EOF'
import os, shutil, tempfile
os.umask(0o027)
os.makedirs("src/deep/er", exist_ok=True)
with open("src/deep/a.txt", "w") as f: f.write("alpha\\n")
with open("src/b.bin", "wb") as f: f.write(bytes(range(65, 91)))
os.chmod("src/b.bin", 0o640)
os.utime("src/b.bin", (500, 500))
os.symlink("deep/a.txt", "src/link")
shutil.copytree("src", "copy", symlinks=True)
with tempfile.NamedTemporaryFile("w", dir=".", delete=False) as t: t.write("tmp")
os.replace(t.name, "replaced.txt")
with open("replaced.txt", "a") as f: f.write("+")
print(sorted(os.listdir("copy")))
EOF`,
  },
  {
    name: "git: init, add, commit, log",
    needs: ["/usr/bin/git"],
    script: `set -e; export HOME="$PWD/home"; mkdir -p home; git config --global init.defaultBranch main
      git init -q repo; cd repo; echo one > one.txt; mkdir sub; echo two > sub/two.txt
      git add .; git commit -q -m first; echo three >> one.txt; git commit -q -am second
      git log --format='%H %s'; git status --porcelain; git fsck --no-progress 2>&1`,
    ignore: /(^|\/)\.git\/index$/,
  },
  {
    name: "tar: create and extract (mtimes, modes, symlinks)",
    needs: ["/usr/bin/tar|/bin/tar"],
    script:
      `set -e; umask 022; mkdir -p t/d; echo x > t/d/x; chmod 751 t/d/x; ln -s d/x t/l; touch -d @2000 t/d/x
      tar -cf t.tar t; mkdir out; tar -xpf t.tar -C out; tar -tvf t.tar | awk '{print $1, $6}'`,
    ignore: /^t\.tar$/, // holds the directories' mtimes of the run; its listing is compared instead
  },
  {
    name: "cp -a",
    needs: ["/bin/cp"],
    script:
      `set -e; umask 022; mkdir -p s/d; echo x > s/d/x; chmod 700 s/d; ln -s d/x s/l; touch -d @3000 s/d/x
      cp -a s c; ls -la c | wc -l`,
  },
  {
    name: "gcc + make (TMPDIR in the project)",
    needs: ["/usr/bin/gcc", "/usr/bin/make"],
    setup: async (d) => {
      await Deno.writeTextFile(
        `${d}/hello.c`,
        '#include <stdio.h>\nint main(void){puts("hello from make");return 0;}\n',
      );
      await Deno.writeTextFile(
        `${d}/Makefile`,
        "hello: hello.o\n\tgcc -o $@ $^\nhello.o: hello.c\n\tgcc -c -o $@ $<\n",
      );
    },
    script: `set -e; export TMPDIR="$PWD/tmp"; mkdir -p tmp; make -s; ./hello; make -s; ls tmp | wc -l`,
    // Running what the sandbox just built asks (exec mediation): allowed up front, as a user would.
    args: (p) => ["--allow-exec", `${p}/hello`],
  },
  {
    name: "npm install of a local tarball dependency, --offline, cache in the project",
    needs: ["/usr/bin/npm", "/usr/bin/node"],
    setup: async (d) => {
      // The dependency is packed bare, before the run: the run only installs it.
      await Deno.mkdir(`${d}/dep`);
      await Deno.writeTextFile(
        `${d}/dep/package.json`,
        JSON.stringify({ name: "dep", version: "1.0.0", main: "index.js" }),
      );
      await Deno.writeTextFile(`${d}/dep/index.js`, "module.exports = () => 'dep works';\n");
      const r = await new Deno.Command("npm", {
        args: ["pack", "--silent", "--pack-destination", d],
        cwd: `${d}/dep`,
        env: { ...ENV_BASE, HOME: `${d}/packhome`, npm_config_cache: `${d}/packhome/cache` },
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (r.code !== 0) throw new Error(new TextDecoder().decode(r.stderr));
      await Deno.remove(`${d}/packhome`, { recursive: true });
      await Deno.mkdir(`${d}/app`);
      await Deno.writeTextFile(
        `${d}/app/package.json`,
        JSON.stringify({ name: "app", version: "1.0.0", dependencies: { dep: "file:../dep-1.0.0.tgz" } }),
      );
    },
    script: `set -e; export HOME="$PWD/home"; mkdir -p home; cd app
      npm install --offline --no-audit --no-fund --cache "$HOME/.npm-cache" --loglevel=error >/dev/null
      node -e 'console.log(require("dep")())'`,
    ignore: /(^|\/)(home\/\.npm-cache|home\/\.npm)(\/|$)|node_modules\/\.package-lock\.json$/,
  },
];

function norm(x: unknown, dir: string): string {
  return JSON.stringify(x).replaceAll(dir, "$P");
}

function filtered(snap: Record<string, unknown>, ignore?: RegExp): Record<string, unknown> {
  if (!ignore) return snap;
  return Object.fromEntries(Object.entries(snap).filter(([k]) => !ignore.test(k)));
}

Deno.test("real programs give the same results under hallpass as bare", async (t) => {
  for (const sc of SCENARIOS) {
    const needs = sc.needs.map((n) => {
      const alts = n.split("|").map((a) => tool(a));
      return alts.some((a) => a === undefined) ? undefined : alts[0];
    });
    await step(t, { name: sc.name, ignore: needs }, async () => {
      const a = await scratch();
      const b = await scratch();
      try {
        const ref = `${a.outside}/w`; // the bare run's directory: not special, any directory
        const proj = b.project;
        await Deno.mkdir(ref);
        await sc.setup?.(ref);
        await sc.setup?.(proj);
        const r0: Result = await bare(["sh", "-c", sc.script], { cwd: ref, env: { ...ENV_BASE } });
        const r1 = await hallpass(["--no-ask", ...(sc.args?.(proj) ?? []), "--", "sh", "-c", sc.script], {
          cwd: proj,
          env: { ...ENV_BASE },
        });
        assertEquals(r0.code, 0, `the bare run failed: ${r0.stderr}`);
        assertEquals(r1.code, r0.code, r1.stderr);
        assert(!r1.stderr.includes("hallpass: denied"), r1.stderr);
        assertEquals(r1.stdout.replaceAll(proj, "$P"), r0.stdout.replaceAll(ref, "$P"));
        const s0 = norm(filtered(await snapshot(ref), sc.ignore), ref);
        const s1 = norm(filtered(await snapshot(proj), sc.ignore), proj);
        assertEquals(JSON.parse(s1), JSON.parse(s0));
        // Nothing was written beside the project.
        assertEquals([...Deno.readDirSync(b.outside)], []);
      } finally {
        await a.cleanup();
        await b.cleanup();
      }
    });
  }
});
