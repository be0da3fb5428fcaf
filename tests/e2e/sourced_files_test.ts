/**
 * Files the protected startup files pull in by literal path, in a dotfiles project: `~/.bashrc` says
 * `source ~/dot/aliases` / `. "$HOME/dot/bash/prompt.sh"`, `~/.ssh/config` says `Include ~/dot/ssh/*.conf`.
 * A session in `~/dot` that appends to those files (or makes a new `*.conf`) would have the person's next
 * shell, or ssh, outside run its lines. Judged from outside: `bash -i -c true` and `ssh -G host` (the
 * resolved config, no network), each with a bare control.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, exists, hallpass, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

/** A home whose ~/.bashrc sources two files of the dotfiles project ~/dot, and whose ssh config includes its *.conf. */
async function dotHome(base: string): Promise<string> {
  const home = `${base}/home`;
  for (const d of ["dot/bash", "dot/ssh", ".ssh"]) await Deno.mkdir(`${home}/${d}`, { recursive: true });
  await Deno.writeTextFile(
    `${home}/.bashrc`,
    `# mine\n[ -f ~/dot/aliases ] && source ~/dot/aliases\n. "$HOME/dot/bash/prompt.sh"\n`,
  );
  await Deno.writeTextFile(`${home}/dot/aliases`, "alias ll='ls -l'\n");
  await Deno.writeTextFile(`${home}/dot/bash/prompt.sh`, "PS1='$ '\n");
  // ssh expands `~` from the password database, not $HOME: the test's Include names the home absolutely.
  await Deno.writeTextFile(`${home}/.ssh/config`, `Include ${home}/dot/ssh/*.conf\n`);
  await Deno.writeTextFile(`${home}/dot/ssh/base.conf`, "Host placeholder\n  User me\n");
  return home;
}

const SHELL = (mark: string) =>
  `echo 'touch ${mark}.a' >> aliases; echo "aliases=$?"; ` +
  `echo 'touch ${mark}.p' >> bash/prompt.sh; echo "prompt=$?"`;

const SSH = (mark: string) =>
  `printf 'Host target\\n  ProxyCommand touch ${mark}.base\\n' >> ssh/base.conf; echo "base=$?"; ` +
  `printf 'Host other\\n  ProxyCommand touch ${mark}.new\\n' > ssh/new.conf; echo "new=$?"`;

/** The ProxyCommand lines `ssh -G` resolves for the two hosts. */
async function proxyCommands(home: string): Promise<string> {
  const out: string[] = [];
  for (const host of ["target", "other"]) {
    const r = await bare(["ssh", "-G", "-F", `${home}/.ssh/config`, host], { env: { HOME: home } });
    out.push(...r.stdout.split("\n").filter((l) => l.startsWith("proxycommand ")));
  }
  return out.join("\n");
}

for (const [name, fast] of ENGINES) {
  const hp = engineRunner(fast, "sourced files");

  test({
    name:
      `files ~/.bashrc sources from a dotfiles project ask, and bash -i outside runs nothing of it (${name})`,
    ignore: tool("bash"),
    fn: async () => {
      const s = await scratch();
      try {
        const c = await dotHome(`${s.outside}/c`);
        const mark0 = `${s.outside}/c/ran`;
        await bare(["sh", "-c", SHELL(mark0)], { cwd: `${c}/dot`, env: { HOME: c } });
        await bare(["bash", "-i", "-c", "true"], { env: { HOME: c, ENV: "", BASH_ENV: "" }, cwd: c });
        assertEquals(
          [await exists(`${mark0}.a`), await exists(`${mark0}.p`)],
          [true, true],
          "control: bash -i did not run the lines",
        );

        const h = await dotHome(s.outside);
        const mark = `${s.outside}/ran`;
        const r = await hp(["--no-ask", "-q", "--", "sh", "-c", SHELL(mark)], {
          cwd: `${h}/dot`,
          env: { HOME: h, XDG_CONFIG_HOME: `${h}/.config` },
        });
        assertEquals(r.stdout.includes("aliases=0"), false, `aliases was written: ${r.stdout}${r.stderr}`);
        assertEquals(r.stdout.includes("prompt=0"), false, `prompt.sh was written: ${r.stdout}${r.stderr}`);
        await bare(["bash", "-i", "-c", "true"], { env: { HOME: h, ENV: "", BASH_ENV: "" }, cwd: h });
        assertEquals([await exists(`${mark}.a`), await exists(`${mark}.p`)], [false, false]);
      } finally {
        await s.cleanup();
      }
    },
  });

  test({
    name:
      `files ~/.ssh/config Includes from a dotfiles project ask, also new ones its glob matches (${name})`,
    ignore: tool("ssh"),
    fn: async () => {
      const s = await scratch();
      try {
        const c = await dotHome(`${s.outside}/c`);
        await bare(["sh", "-c", SSH(`${s.outside}/c/ran`)], { cwd: `${c}/dot`, env: { HOME: c } });
        const control = await proxyCommands(c);
        assertEquals(
          [control.includes("ran.base"), control.includes("ran.new")],
          [true, true],
          `control: ssh -G did not resolve the ProxyCommands: ${control}`,
        );

        const h = await dotHome(s.outside);
        const r = await hp(["--no-ask", "-q", "--", "sh", "-c", SSH(`${s.outside}/ran`)], {
          cwd: `${h}/dot`,
          env: { HOME: h, XDG_CONFIG_HOME: `${h}/.config` },
        });
        assertEquals(r.stdout.includes("base=0"), false, `base.conf was written: ${r.stdout}${r.stderr}`);
        assertEquals(r.stdout.includes("new=0"), false, `new.conf was made: ${r.stdout}${r.stderr}`);
        assertEquals(await proxyCommands(h), "");
      } finally {
        await s.cleanup();
      }
    },
  });
}

/** zsh's files in `$ZDOTDIR` and gpg's in `$GNUPGHOME`, both in the dotfiles project. */
async function envHome(base: string): Promise<string> {
  const home = `${base}/home`;
  for (const d of ["dot/zsh", "dot/gnupg"]) await Deno.mkdir(`${home}/${d}`, { recursive: true });
  await Deno.writeTextFile(`${home}/dot/zsh/.zshrc`, "# mine\n");
  return home;
}

const ENV_FILES = (mark: string) =>
  `echo 'touch ${mark}' >> zsh/.zshrc; echo "zshrc=$?"; echo 'touch ${mark}' > zsh/.zshenv; echo "zshenv=$?"; ` +
  `echo 'pinentry-program ${mark}' > gnupg/gpg-agent.conf; echo "agent=$?"`;

test({
  name: "zsh's files in $ZDOTDIR and gpg-agent.conf in $GNUPGHOME, in a dotfiles project, ask",
  fn: async () => {
    const s = await scratch();
    try {
      // Control: written bare, they hold the lines zsh and gpg-agent would run (neither is run here: the
      // files' contents judge, as zsh may not be installed).
      const c = await envHome(`${s.outside}/c`);
      const cr = await bare(["sh", "-c", ENV_FILES("MARK")], { cwd: `${c}/dot` });
      assertEquals(cr.stdout.trim().split("\n"), ["zshrc=0", "zshenv=0", "agent=0"]);

      const h = await envHome(s.outside);
      const r = await hallpass(["--no-ask", "-q", "--", "sh", "-c", ENV_FILES("MARK")], {
        cwd: `${h}/dot`,
        env: {
          HOME: h,
          XDG_CONFIG_HOME: `${h}/.config`,
          ZDOTDIR: `${h}/dot/zsh`,
          GNUPGHOME: `${h}/dot/gnupg/`,
        },
      });
      for (const w of ["zshrc=0", "zshenv=0", "agent=0"]) {
        assertEquals(r.stdout.includes(w), false, `${w}: ${r.stdout}${r.stderr}`);
      }
      assertEquals(await Deno.readTextFile(`${h}/dot/zsh/.zshrc`), "# mine\n");
      assertEquals(
        [await exists(`${h}/dot/zsh/.zshenv`), await exists(`${h}/dot/gnupg/gpg-agent.conf`)],
        [false, false],
      );
    } finally {
      await s.cleanup();
    }
  },
});
