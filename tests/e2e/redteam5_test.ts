/**
 * Red team, fifth round: a promise audit (docs/threat-model.md), each attack judged from outside the sandbox
 * with a bare control.
 *
 * - hallpass's own saved rules (`$XDG_CONFIG_HOME/hallpass/rules`) reached through a symlink into a dotfiles
 *   project (`~/.config/hallpass -> ~/dot/hallpass`, `~/.config -> ~/dot/config`, the file itself a link): the
 *   deny rule named the path as written, the write was decided on where it leads, so a session in the dotfiles
 *   project added `allow write` lines that the next session, in any other project, obeyed.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, compileHelper, exists, hallpass, scratch } from "./harness.ts";
import { probeAsync, test, tool } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

// --- hallpass's saved rules through a symlink into the project ------------------------------------------------

type Layout = "rules directory" | "config directory" | "rules file";

/**
 * A home whose saved rules lie in the dotfiles project `~/dot` through a symlink of the given layout, another
 * project `~/work`, and a directory outside everything, `~/outside`. Returns the real rules file.
 */
async function dotfilesRules(base: string, layout: Layout): Promise<{ home: string; real: string }> {
  const home = `${base}/home`;
  for (const d of ["dot/hallpass", "dot/config/hallpass", "work", "outside", ".config"]) {
    await Deno.mkdir(`${home}/${d}`, { recursive: true });
  }
  let real: string;
  if (layout === "rules directory") {
    await Deno.symlink("../dot/hallpass", `${home}/.config/hallpass`);
    real = `${home}/dot/hallpass/rules`;
  } else if (layout === "config directory") {
    await Deno.remove(`${home}/.config`);
    await Deno.symlink("dot/config", `${home}/.config`);
    real = `${home}/dot/config/hallpass/rules`;
  } else {
    await Deno.mkdir(`${home}/.config/hallpass`);
    await Deno.symlink("../../dot/hallpass-rules", `${home}/.config/hallpass/rules`);
    real = `${home}/dot/hallpass-rules`;
  }
  await Deno.writeTextFile(real, "# saved answers\n");
  return { home, real };
}

const WIDEN = (home: string) => `echo 'allow write ${home}/outside/**' >> "$1"; echo "write=$?"`;

for (const layout of ["rules directory", "config directory", "rules file"] as const) {
  for (const [name, fast] of ENGINES) {
    const hp = engineRunner(fast, `saved rules (${layout})`);
    test({
      name:
        `the saved rules reached through a symlink (${layout}) into the project are not writable (${name})`,
      fn: async () => {
        const s = await scratch();
        try {
          // Control: the line written bare is obeyed by the next session in another project.
          const c = await dotfilesRules(`${s.outside}/c`, layout);
          const cenv = { HOME: c.home, XDG_CONFIG_HOME: `${c.home}/.config` };
          await bare(["sh", "-c", WIDEN(c.home), "sh", c.real], { cwd: `${c.home}/dot`, env: cenv });
          const c2 = await hp(["--no-ask", "-q", "--", "sh", "-c", `echo x > ${c.home}/outside/f`], {
            cwd: `${c.home}/work`,
            env: cenv,
          });
          assertEquals(await exists(`${c.home}/outside/f`), true, `control: not obeyed: ${c2.stderr}`);

          const h = await dotfilesRules(s.outside, layout);
          const env = { HOME: h.home, XDG_CONFIG_HOME: `${h.home}/.config` };
          const r = await hp(["--no-ask", "-q", "--", "sh", "-c", WIDEN(h.home), "sh", h.real], {
            cwd: `${h.home}/dot`,
            env,
          });
          assertEquals(
            r.stdout.trim() === "write=0",
            false,
            `the rules were written: ${r.stdout}${r.stderr}`,
          );
          assertEquals(await Deno.readTextFile(h.real), "# saved answers\n");
          await hp(["--no-ask", "-q", "--", "sh", "-c", `echo x > ${h.home}/outside/f`], {
            cwd: `${h.home}/work`,
            env,
          });
          assertEquals(
            await exists(`${h.home}/outside/f`),
            false,
            "the next session obeyed the sandbox's rule",
          );
        } finally {
          await s.cleanup();
        }
      },
    });
  }
}

// --- shell startup files: project = $HOME, or a dotfiles project they link into ------------------------------

/**
 * A home (the project in "home" layout) whose startup files are plain files; in "dotfiles" layout they are
 * links into the project `~/dot` (GNU stow's layout). `bash -i`/`bash -l` and an ssh login run them.
 */
async function shellHome(
  base: string,
  layout: "home" | "dotfiles",
): Promise<{ home: string; project: string }> {
  const home = `${base}/home`;
  await Deno.mkdir(`${home}/dot`, { recursive: true });
  await Deno.mkdir(`${home}/.ssh`, { recursive: true });
  for (const f of [".bashrc", ".profile"]) {
    if (layout === "home") await Deno.writeTextFile(`${home}/${f}`, "# mine\n");
    else {
      await Deno.writeTextFile(`${home}/dot/${f.slice(1)}`, "# mine\n");
      await Deno.symlink(`dot/${f.slice(1)}`, `${home}/${f}`);
    }
  }
  return { home, project: layout === "home" ? home : `${home}/dot` };
}

/** Appends a line leaving a mark to ~/.bashrc, makes ~/.bash_profile (bash -l reads it before .profile). */
const STARTUP = (mark: string) =>
  `echo 'touch ${mark}.rc' >> "$HOME/.bashrc"; echo "rc=$?"; ` +
  `echo 'touch ${mark}.login' > "$HOME/.bash_profile"; echo "login=$?"; ` +
  `echo 'command="touch ${mark}.ssh" ssh-ed25519 AAAA' >> "$HOME/.ssh/authorized_keys"; echo "keys=$?"`;

/** What runs outside afterwards: an interactive shell and a login shell, as the person's next terminal. */
async function shellsOutside(home: string): Promise<void> {
  const env = { HOME: home, ENV: "", BASH_ENV: "" };
  await bare(["bash", "-i", "-c", "true"], { env, cwd: home });
  await bare(["bash", "-l", "-c", "true"], { env, cwd: home });
}

for (const layout of ["home", "dotfiles"] as const) {
  test({
    name: `shell startup files the sandbox could reach (${layout}) ask, and run nothing of its outside`,
    ignore: tool("bash"),
    fn: async () => {
      const s = await scratch();
      try {
        const c = await shellHome(`${s.outside}/c`, layout);
        const mark0 = `${s.outside}/c/ran`;
        await bare(["sh", "-c", STARTUP(mark0)], { cwd: c.project, env: { HOME: c.home } });
        await shellsOutside(c.home);
        assertEquals(
          [await exists(`${mark0}.rc`), await exists(`${mark0}.login`)],
          [true, true],
          "control: the shells did not run the lines",
        );

        const h = await shellHome(s.outside, layout);
        const mark = `${s.outside}/ran`;
        const r = await hallpass(
          ["--no-ask", "-q", "--project", h.project, "--", "sh", "-c", STARTUP(mark)],
          {
            cwd: h.project,
            env: { HOME: h.home, XDG_CONFIG_HOME: `${h.home}/.config` },
          },
        );
        assertEquals(r.stdout.includes("rc=0"), false, `~/.bashrc was written: ${r.stdout}${r.stderr}`);
        assertEquals(r.stdout.includes("login=0"), false, `~/.bash_profile was made: ${r.stdout}${r.stderr}`);
        assertEquals(
          r.stdout.includes("keys=0"),
          false,
          `authorized_keys was written: ${r.stdout}${r.stderr}`,
        );
        await shellsOutside(h.home);
        assertEquals([await exists(`${mark}.rc`), await exists(`${mark}.login`)], [false, false]);
      } finally {
        await s.cleanup();
      }
    },
  });
}

// --- less's key files: `#env LESSOPEN=|cmd` runs cmd at the next `less` (git log, man) -------------------------

/** Writes both lesskey source files of `$HOME` (the project) with a LESSOPEN leaving a mark. */
const LESSKEY = (mark: string) =>
  `mkdir -p .config; printf '#env\\nLESSOPEN=|touch ${mark}; cat %%s\\n' > .lesskey; echo "home=$?"; ` +
  `printf '#env\\nLESSOPEN=|touch ${mark}; cat %%s\\n' > .config/lesskey; echo "config=$?"`;

test({
  name:
    "less's key files in a project that is $HOME ask, and the next less outside runs nothing of the sandbox's",
  ignore: tool("less"),
  fn: async () => {
    const s = await scratch();
    try {
      const pager = async (home: string) => {
        await Deno.writeTextFile(`${home}/page.txt`, "text\n");
        await bare(["less", "-F", "page.txt"], {
          cwd: home,
          env: { HOME: home, XDG_CONFIG_HOME: `${home}/.config`, LESSOPEN: "", LESSKEY: "", LESSKEYIN: "" },
        });
      };
      const c = `${s.outside}/c`;
      await Deno.mkdir(c);
      await bare(["sh", "-c", LESSKEY(`${c}.ran`)], { cwd: c });
      await pager(c);
      assertEquals(await exists(`${c}.ran`), true, "control: less did not run the lesskey's LESSOPEN");

      const h = `${s.outside}/h`;
      await Deno.mkdir(h);
      const r = await hallpass(["--no-ask", "-q", "--project", h, "--", "sh", "-c", LESSKEY(`${h}.ran`)], {
        cwd: h,
        env: { HOME: h, XDG_CONFIG_HOME: `${h}/.config` },
      });
      assertEquals(r.stdout.includes("=0"), false, `a lesskey file was written: ${r.stdout}${r.stderr}`);
      await pager(h);
      assertEquals(await exists(`${h}.ran`), false, "less outside ran the sandbox's LESSOPEN");
    } finally {
      await s.cleanup();
    }
  },
});

// --- a userfaultfd from /dev/userfaultfd holding the supervisor's read of a path --------------------------------

const uffdNeed = probeAsync("/dev/userfaultfd", async () => {
  if (!(await exists("/dev/userfaultfd"))) return "no /dev/userfaultfd on this kernel";
  const r = await bare([await compileHelper("uffd_stall")]);
  return r.stdout.trim() === "uffd=OK"
    ? undefined
    : `no userfaultfd through /dev/userfaultfd here: ${r.stdout.trim()}`;
});

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "userfaultfd stall");
  test({
    name: `a userfaultfd holding the path the supervisor reads fails that call, not the session (${name})`,
    ignore: await uffdNeed,
    fn: async () => {
      const s = await scratch();
      try {
        const u = await compileHelper("uffd_stall");
        const script = `'${u}' stall > s.log & until grep -q stalling s.log; do sleep 0.05; done; ` +
          `touch newtop; echo "touch=$?"; wait; cat s.log`;
        const t0 = performance.now();
        const r = await hp(["--no-ask", "-q", "--allow-exec", u, "--", "sh", "-c", script], {
          cwd: s.project,
          timeoutMs: 120_000,
        });
        const secs = (performance.now() - t0) / 1000;
        // The stalled mkdir is failed by the watchdog (5 s) and the session goes on; without it the mkdir
        // would wait for its alarm (50 s) and print nothing.
        assertEquals(r.stdout.includes("touch=0"), true, `${r.stdout}${r.stderr}`);
        assertEquals(/mkdir=-1 errno=13/.test(r.stdout), true, `${r.stdout}${r.stderr}`);
        assertEquals(await exists(`${s.project}/newtop`), true);
        assertEquals(secs < 45, true, `took ${secs} s`);
      } finally {
        await s.cleanup();
      }
    },
  });
}

// --- git's global config moved by GIT_CONFIG_GLOBAL into a dotfiles project ------------------------------------

/** A home whose git config is `~/dot/gitconfig` through GIT_CONFIG_GLOBAL, the project `~/dot`, a repo `~/repo`. */
async function gitGlobalHome(base: string): Promise<{ home: string; env: Record<string, string> }> {
  const home = `${base}/home`;
  await Deno.mkdir(`${home}/dot`, { recursive: true });
  await Deno.mkdir(`${home}/repo`);
  await Deno.writeTextFile(`${home}/dot/gitconfig`, "[user]\n\tname = t\n\temail = t@example.com\n");
  const env = {
    HOME: home,
    XDG_CONFIG_HOME: `${home}/.config`,
    GIT_CONFIG_GLOBAL: `${home}/dot/gitconfig`,
    GIT_CONFIG_NOSYSTEM: "1",
  };
  const init = await bare(["git", "-C", `${home}/repo`, "init", "-q"], { env });
  assertEquals(init.code, 0, init.stderr);
  return { home, env };
}

const FSMONITOR = (mark: string) =>
  `printf '[core]\\n\\tfsmonitor = "touch ${mark}; false"\\n' >> gitconfig; echo "write=$?"`;

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "GIT_CONFIG_GLOBAL");
  test({
    name:
      `the git config GIT_CONFIG_GLOBAL names, in the project, is protected (git outside runs nothing) (${name})`,
    ignore: tool("git"),
    fn: async () => {
      const s = await scratch();
      try {
        const c = await gitGlobalHome(`${s.outside}/c`);
        await bare(["sh", "-c", FSMONITOR(`${s.outside}/c/ran`)], { cwd: `${c.home}/dot`, env: c.env });
        await bare(["git", "-C", `${c.home}/repo`, "status"], { env: c.env });
        assertEquals(await exists(`${s.outside}/c/ran`), true, "control: git did not run the fsmonitor");

        const h = await gitGlobalHome(s.outside);
        const r = await hp(["--no-ask", "-q", "--", "sh", "-c", FSMONITOR(`${s.outside}/ran`)], {
          cwd: `${h.home}/dot`,
          env: h.env,
        });
        assertEquals(r.stdout.trim() === "write=0", false, `the config was written: ${r.stdout}${r.stderr}`);
        await bare(["git", "-C", `${h.home}/repo`, "status"], { env: h.env });
        assertEquals(await exists(`${s.outside}/ran`), false, "git outside ran what the sandbox wrote");
      } finally {
        await s.cleanup();
      }
    },
  });
}

// --- editor and package-manager configuration in a project that is $HOME ------------------------------------

/** ~/.vimrc running a command at vim's start; ~/.npmrc's script-shell running for `npm run`. */
const TOOLRC = (mark: string) =>
  `echo "call system('touch ${mark}.vim')" >> .vimrc; echo "vim=$?"; ` +
  `printf '#!/bin/sh\\ntouch ${mark}.npm\\n' > evil.sh; chmod 755 evil.sh; ` +
  `echo "script-shell=$PWD/evil.sh" >> .npmrc; echo "npm=$?"`;

test({
  name: "vim's and npm's configuration in a project that is $HOME ask; vim and npm outside run nothing of it",
  ignore: [tool("vim"), tool("npm")].find((n) => n !== undefined),
  fn: async () => {
    const s = await scratch();
    try {
      const tools = async (home: string) => {
        const env = { HOME: home, XDG_CONFIG_HOME: `${home}/.config` };
        await bare(["vim", "-X", "-c", "qa!"], { cwd: home, env }); // not a terminal: waits 2 s, then runs
        await Deno.mkdir(`${home}/pkg`, { recursive: true });
        await Deno.writeTextFile(
          `${home}/pkg/package.json`,
          '{"name":"p","version":"1.0.0","scripts":{"x":"true"}}',
        );
        await bare(["npm", "run", "--silent", "x"], { cwd: `${home}/pkg`, env });
      };
      const c = `${s.outside}/c`;
      await Deno.mkdir(c);
      await bare(["sh", "-c", TOOLRC(`${c}.ran`)], { cwd: c });
      await tools(c);
      assertEquals(
        [await exists(`${c}.ran.vim`), await exists(`${c}.ran.npm`)],
        [true, true],
        "control: vim or npm did not run the configuration's command",
      );

      const h = `${s.outside}/h`;
      await Deno.mkdir(h);
      const r = await hallpass(["--no-ask", "-q", "--project", h, "--", "sh", "-c", TOOLRC(`${h}.ran`)], {
        cwd: h,
        env: { HOME: h, XDG_CONFIG_HOME: `${h}/.config` },
      });
      assertEquals(
        /vim=0|npm=0/.test(r.stdout),
        false,
        `a configuration was written: ${r.stdout}${r.stderr}`,
      );
      await tools(h);
      assertEquals([await exists(`${h}.ran.vim`), await exists(`${h}.ran.npm`)], [false, false]);
    } finally {
      await s.cleanup();
    }
  },
});

// --- gpg's configuration: the agent runs `pinentry-program` when a key is used --------------------------------

const GPGCONF = (evil: string) => `echo "pinentry-program ${evil}" >> .gnupg/gpg-agent.conf; echo "agent=$?"`;

test({
  name:
    "gpg-agent's configuration in a project that is $HOME asks; the agent outside runs nothing of the sandbox's",
  ignore: [tool("gpg-connect-agent"), tool("gpgconf")].find((n) => n !== undefined),
  fn: async () => {
    const s = await scratch();
    const homes: string[] = [];
    try {
      const home = async (name: string) => {
        const h = `${s.outside}/${name}`;
        await Deno.mkdir(`${h}/.gnupg`, { recursive: true, mode: 0o700 });
        await Deno.chmod(`${h}/.gnupg`, 0o700);
        await Deno.writeTextFile(
          `${h}/evil.sh`,
          `#!/bin/sh\ntouch ${h}.ran\necho OK\nwhile read l; do echo OK; done\n`,
        );
        await Deno.chmod(`${h}/evil.sh`, 0o755);
        homes.push(h);
        return h;
      };
      const env = (h: string) => ({ HOME: h, GNUPGHOME: `${h}/.gnupg` });
      // What signing a commit does: the agent asks its pinentry for the passphrase.
      const sign = (h: string) =>
        bare(["gpg-connect-agent", "GET_PASSPHRASE --data k1 X P D", "/bye"], { env: env(h), cwd: h });

      const c = await home("c");
      await bare(["sh", "-c", GPGCONF(`${c}/evil.sh`)], { cwd: c });
      // (the agent may be slow to come up at load: ask again until it has)
      for (let i = 0; i < 5 && !(await exists(`${c}.ran`)); i++) await sign(c);
      assertEquals(await exists(`${c}.ran`), true, "control: gpg-agent did not run the pinentry-program");

      const h = await home("h");
      const r = await hallpass(
        ["--no-ask", "-q", "--project", h, "--", "sh", "-c", GPGCONF(`${h}/evil.sh`)],
        {
          cwd: h,
          env: { HOME: h, XDG_CONFIG_HOME: `${h}/.config` },
        },
      );
      assertEquals(r.stdout.includes("agent=0"), false, `gpg-agent.conf was written: ${r.stdout}${r.stderr}`);
      let asked = await sign(h);
      for (let i = 0; i < 4 && !/OK|ERR/.test(asked.stdout); i++) asked = await sign(h);
      assertEquals(
        asked.stdout.includes("OK") || asked.stdout.includes("ERR"),
        true,
        `the agent: ${asked.stdout}${asked.stderr}`,
      );
      assertEquals(await exists(`${h}.ran`), false, "gpg-agent outside ran the sandbox's pinentry-program");
    } finally {
      for (const h of homes) {
        await bare(["gpgconf", "--kill", "gpg-agent"], { env: { HOME: h, GNUPGHOME: `${h}/.gnupg` } });
      }
      await s.cleanup();
    }
  },
});
