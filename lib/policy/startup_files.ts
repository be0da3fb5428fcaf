/**
 * Files that run outside the sandbox without the person asking for them: a shell's startup files, what a
 * desktop or `systemd --user` starts at login, what an ssh login runs, less's key files (a pager runs their
 * LESSOPEN), and the configuration editors, tmux and package managers run commands from at every start
 * (docs/threat-model.md, "What is left behind to run outside"). Protected paths
 * (lib/policy/protected_paths.ts): they matter where the sandbox may write them — a project that is `$HOME`, a
 * dotfiles project they link into, a wide allow rule.
 */

export const STARTUP_REASON =
  "runs commands outside the sandbox the next time you log in or start the program that reads it";

/** The files and trees, as named from `home` (and `$XDG_CONFIG_HOME`, `config`); made canonical by the caller. */
export function startupFiles(home: string, config: string): { kind: "exact" | "tree"; path: string }[] {
  const exact = [
    // bash, sh, zsh, ksh, csh/tcsh: login, interactive and logout files (a new .bash_profile shadows .profile)
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshenv",
    ".zprofile",
    ".zshrc",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    // X sessions
    ".xprofile",
    ".xinitrc",
    ".xsession",
    ".xsessionrc",
    ".pam_environment",
    // less's key files: `#env LESSOPEN=|cmd %s` runs cmd at every less (git log, man)
    ".lesskey",
    ".less",
    // editors, tmux and package managers read these at every start, in every project: vim's `:!`/`system()`,
    // tmux's `run-shell`, npm's `script-shell`, yarn's `yarnPath`, cargo's `build.rustc-wrapper`
    ".vimrc",
    ".exrc",
    ".tmux.conf",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".cargo/config",
    ".cargo/config.toml",
    // gpg: the agent runs `pinentry-program` when a key is used (a signed commit); gpg runs `agent-program`
    ".gnupg/gpg-agent.conf",
    ".gnupg/gpg.conf",
    // ssh: who may log in and what runs at a login; the client's config names commands (ProxyCommand)
    ".ssh/authorized_keys",
    ".ssh/authorized_keys2",
    ".ssh/rc",
    ".ssh/environment",
    ".ssh/config",
  ].map((f) => ({ kind: "exact" as const, path: `${home}/${f}` }));
  return [
    ...exact,
    { kind: "exact", path: `${config}/fish/config.fish` },
    { kind: "exact", path: `${config}/lesskey` },
    // fish's snippets, desktop autostart entries, systemd user units and their environment
    { kind: "exact", path: `${config}/tmux/tmux.conf` },
    { kind: "tree", path: `${home}/.vim` },
    ...["fish/conf.d", "autostart", "systemd/user", "environment.d", "nvim"].map((d) => ({
      kind: "tree" as const,
      path: `${config}/${d}`,
    })),
  ];
}
