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
    // readline (every bash, python REPL): a macro bound to Enter types a command; gdb runs `shell` lines at
    // its start, psql `\!`, sqlite3 `.system`
    ".inputrc",
    ".gdbinit",
    ".psqlrc",
    ".sqliterc",
    // husky 9 sources these before every hook it runs, in every repository using it
    ".huskyrc",
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
    { kind: "exact", path: `${config}/gdb/gdbinit` },
    { kind: "exact", path: `${config}/husky/init.sh` },
    { kind: "tree", path: `${home}/.vim` },
    // oh-my-zsh: its whole tree is sourced at every zsh start (plugins, custom/*.zsh, the completion cache)
    { kind: "tree", path: `${home}/.oh-my-zsh` },
    // desktop menus: an entry named as a system one replaces it (its Exec= runs when you click it), and
    // mimeapps.list picks what `xdg-open` runs for a link or a file type
    { kind: "tree", path: `${home}/.local/share/applications` },
    { kind: "exact", path: `${config}/mimeapps.list` },
    // fish/functions: a NAME.fish there is run for the command NAME (`ls.fish` shadows ls)
    ...["fish/conf.d", "fish/functions", "autostart", "systemd/user", "environment.d", "nvim"].map((d) => ({
      kind: "tree" as const,
      path: `${config}/${d}`,
    })),
  ];
}

/**
 * The shell startup files whose `source FILE` / `. FILE` lines are followed (one level), as named from `home`
 * and `$ZDOTDIR`.
 */
export function sourcingShellFiles(home: string, zdotdir?: string): string[] {
  const names = [".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".kshrc", ".mkshrc"];
  const zsh = [".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout"];
  return [
    ...[...names, ...zsh, ".cshrc", ".tcshrc", ".login", ".logout"].map((f) => `${home}/${f}`),
    ...(zdotdir && zdotdir !== home ? zsh.map((f) => `${zdotdir}/${f}`) : []),
  ];
}

/** zsh's startup files in `$ZDOTDIR` and gpg's in `$GNUPGHOME` (when set, absolute and not the default). */
export function startupFilesOfEnv(home: string, zdotdir?: string, gnupgHome?: string): string[] {
  return [
    ...(zdotdir && zdotdir !== home ? [".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout"] : [])
      .map((f) => `${zdotdir}/${f}`),
    ...(gnupgHome && gnupgHome !== `${home}/.gnupg` ? ["gpg-agent.conf", "gpg.conf"] : [])
      .map((f) => `${gnupgHome}/${f}`),
  ];
}

const SOURCE_LINE = /(?:^|[\s;&|({])(?:source|\.)[ \t]/;
const KEYWORDS = new Set(["then", "else", "do", "{", "!", "if", "while", "until", "builtin", "command"]);

/**
 * The files a shell startup file reads by literal path: the argument of each `source FILE` / `. FILE` command
 * (at a line's start or after `;`, `&&`, `||`, `|`, `&`, `(`, `then`, `do`, `else`, `{`), with `~`, `$HOME` and
 * `${HOME}` expanded, quoted or not. An argument with any other expansion (another variable, a command
 * substitution, a glob) or a relative one (the shell looks it up in `$PATH` and the working directory) is
 * skipped. Paths are absolute and lexically as written (the caller makes them canonical).
 */
export function shellSourcedPaths(all: string, home: string): string[] {
  // Only the lines that can hold such a command are read (a command ends at a line's end; a quote spanning
  // lines is left unread, which only skips a path): a ~4 KB ~/.bashrc has a few.
  const text = all.split("\n").filter((l) => SOURCE_LINE.test(l)).join("\n");
  const out: string[] = [];
  let words: ({ text: string; ok: boolean } | null)[] = [];
  let word: { text: string; ok: boolean } | null = null;
  const endWord = () => {
    if (word) words.push(word);
    word = null;
  };
  const endCommand = () => {
    endWord();
    let i = 0;
    while (i < words.length && words[i]!.ok && KEYWORDS.has(words[i]!.text)) i++;
    const [cmd, arg] = [words[i], words[i + 1]];
    if (cmd?.ok && (cmd.text === "source" || cmd.text === ".") && arg?.ok && arg.text.startsWith("/")) {
      if (!out.includes(arg.text)) out.push(arg.text);
    }
    words = [];
  };
  const w = () => (word ??= { text: "", ok: true });
  /** `$HOME` or `${HOME}` at i (the `$`): its length, or 0 (another expansion). */
  const homeVar = (i: number) =>
    text.startsWith("${HOME}", i)
      ? 7
      : text.startsWith("$HOME", i) && !/[A-Za-z0-9_]/.test(text[i + 5] ?? "")
      ? 5
      : 0;
  for (let i = 0; i < text.length && out.length < 64; i++) {
    const c = text[i];
    if (c === "\n" || c === ";" || c === "&" || c === "|" || c === "(" || c === ")") endCommand();
    else if (c === " " || c === "\t" || c === "\r") endWord();
    else if (c === "#" && word === null) {
      while (i + 1 < text.length && text[i + 1] !== "\n") i++;
    } else if (c === "\\") {
      if (text[i + 1] !== "\n") w().text += text[i + 1] ?? "";
      i++;
    } else if (c === "'") {
      const end = text.indexOf("'", i + 1);
      const body = end < 0 ? text.slice(i + 1) : text.slice(i + 1, end);
      w().text += body;
      if (end < 0 || body.includes("\n")) w().ok = false;
      i = end < 0 ? text.length : end;
    } else if (c === '"') {
      const cur = w();
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        const d = text[j];
        if (d === "\\" && '$`"\\\n'.includes(text[j + 1] ?? "")) cur.text += text[++j];
        else if (d === "$" && homeVar(j) > 0) {
          cur.text += home;
          j += homeVar(j) - 1;
        } else if (d === "$" || d === "`" || d === "\n") {
          cur.ok = false;
          cur.text += d;
        } else cur.text += d;
      }
      if (j >= text.length) cur.ok = false;
      i = j;
    } else if (c === "$" && homeVar(i) > 0) {
      w().text += home;
      i += homeVar(i) - 1;
    } else if (c === "~" && word === null && (text[i + 1] === "/" || /[\s;&|)]/.test(text[i + 1] ?? " "))) {
      w().text += home;
    } else {
      const cur = w();
      if ("$`*?[<>".includes(c)) cur.ok = false;
      cur.text += c;
    }
  }
  endCommand();
  return out;
}

/**
 * The files an ssh client config pulls in: each `Include` argument (keyword case-insensitive, `=` allowed,
 * several per line, double-quoted or not), `~` expanded, a relative one against `~/.ssh`. Arguments with
 * `%` tokens or `$` variables are skipped. Globs are kept (the caller expands them against the directory).
 */
export function sshIncludePaths(text: string, home: string): string[] {
  const out: string[] = [];
  for (const raw of text.split("\n")) {
    const m = /^\s*include(?:\s*=\s*|\s+)(.*)$/i.exec(raw);
    if (!m) continue;
    for (const a of m[1].match(/"[^"]*"|[^\s"]+/g) ?? []) {
      if (a.startsWith("#")) break;
      const arg = a.startsWith('"') ? a.slice(1, -1) : a;
      if (!arg || arg.includes("%") || arg.includes("$")) continue;
      const p = arg === "~" || arg.startsWith("~/")
        ? home + arg.slice(1)
        : arg.startsWith("/")
        ? arg
        : arg.startsWith("~")
        ? ""
        : `${home}/.ssh/${arg}`;
      if (p && !out.includes(p)) out.push(p);
    }
    if (out.length >= 64) break;
  }
  return out;
}

/** Whether a path component holds glob characters. */
export const hasGlob = (s: string) => /[*?[]/.test(s);

/** A glob(7) name pattern (`*`, `?`, `[…]`) as a RegExp; a leading `.` is matched only literally. */
export function globName(pattern: string): RegExp {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "*") re += "[^/]*";
    else if (c === "?") re += "[^/]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) re += "\\[";
      else {
        const body = pattern.slice(i + 1, end);
        re += "[" + (body[0] === "!" ? "^" + body.slice(1) : body).replace(/\\/g, "\\\\") + "]";
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\\\]]/g, "\\$&");
  }
  return new RegExp(`^${pattern.startsWith(".") ? "" : "(?!\\.)"}${re}$`);
}
