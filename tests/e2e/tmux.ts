/**
 * Driving a real terminal for the end-to-end tests: a private tmux server (its own `-L` socket, no user config)
 * with one window of a fixed size, running a shell script in a scratch directory. The screen is read the way a
 * person sees it (`capture-pane`, with `-e` for attributes), and every wait polls the screen against a deadline.
 *
 * Works as root and as an unprivileged user (tmux keeps its socket in /tmp/tmux-UID).
 *
 * @example
 * ```ts
 * const t = await Tmux.start({ script: `hp -- sh -c 'echo x > /tmp/f'` });
 * await t.waitFor((s) => s.includes("wants to write"), "the bar");
 * await t.keys("o");
 * await t.close();
 * ```
 */
import { HALLPASS_ARGV } from "./harness.ts";

const dec = new TextDecoder();
let serial = 0;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The bar ignores keys this long after showing a question (lib/ask/terminal_ask.ts armDelayMs). */
export const ARM_DELAY_MS = 300;

/** Single-quotes `s` for sh. */
export function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The command line that runs hallpass from source (as ./hallpass does), for use in a pane script. */
export const HALLPASS = HALLPASS_ARGV.map(q).join(" ");

/** True when tmux is installed. */
export function haveTmux(): boolean {
  try {
    return new Deno.Command("tmux", { args: ["-V"], stdout: "null", stderr: "null" }).outputSync().success;
  } catch {
    return false;
  }
}

/** True when `prog` is found in $PATH. */
export function have(prog: string): boolean {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":").some((d) => {
    try {
      return Deno.statSync(`${d}/${prog}`).isFile;
    } catch {
      return false;
    }
  });
}

export interface StartOptions {
  /** Body of the script the pane runs (sh). `$DIR` is the scratch directory, `hp` runs hallpass. */
  script: string;
  cols?: number;
  rows?: number;
  /** An existing scratch directory to use (else a new one, removed by close()). */
  dir?: string;
}

/** One tmux server with one pane. */
export class Tmux {
  readonly socket: string;
  readonly dir: string;
  readonly #ownDir: boolean;

  private constructor(socket: string, dir: string, ownDir: boolean) {
    this.socket = socket;
    this.dir = dir;
    this.#ownDir = ownDir;
  }

  /**
   * Starts the server and the pane. The script runs with `DIR`, the function `hp` (hallpass), `XDG_CONFIG_HOME=$DIR/xdg`
   * and `HOME=$DIR/home`, from `$DIR/project`, and records its own exit in `$DIR/pane.rc` (then sleeps, so the
   * screen can still be read).
   */
  static async start(o: StartOptions): Promise<Tmux> {
    const ownDir = !o.dir;
    const dir = o.dir ?? await makeScratch();
    const socket = `hp-e2e-${Deno.pid}-${++serial}`;
    await Deno.writeTextFile(
      `${dir}/tmux.conf`,
      "set -g status off\nset -g remain-on-exit on\nset -g escape-time 0\nset -g history-limit 5000\n",
    );
    const script = [
      "#!/bin/sh",
      `DIR=${q(dir)}; export DIR`,
      `hp() { ${HALLPASS} "$@"; }`,
      // hallpass with its pid in $DIR/hp.pid (a subshell that records its own pid, then becomes hallpass).
      `hpp() { ( sh -c 'echo $PPID' > "$DIR/hp.pid"; exec ${HALLPASS} "$@" ); }`,
      `XDG_CONFIG_HOME="$DIR/xdg"; export XDG_CONFIG_HOME`,
      `HOME="$DIR/home"; export HOME`,
      `SHELL=/bin/sh; export SHELL`,
      // A pane is a person at a terminal, even when the tests run in CI (CI=true makes some agent CLIs refuse
      // their interactive screen).
      "unset CI CONTINUOUS_INTEGRATION GITHUB_ACTIONS BUILD_NUMBER RUN_ID",
      `cd "$DIR/project" || exit 99`,
      o.script,
      `echo $? > "$DIR/pane.rc"`,
      // Keep the pane alive (a dead pane's screen is redrawn by tmux); close() kills it.
      "exec sleep 600",
      "",
    ].join("\n");
    await Deno.writeTextFile(`${dir}/pane.sh`, script);
    const t = new Tmux(socket, dir, ownDir);
    await t.tmux(
      "-f",
      `${dir}/tmux.conf`,
      "new-session",
      "-d",
      "-s",
      "hp",
      "-x",
      String(o.cols ?? 100),
      "-y",
      String(o.rows ?? 30),
      `sh ${q(dir + "/pane.sh")}`,
      ";",
      "pipe-pane",
      "-t",
      "hp",
      `cat > ${q(dir + "/raw.out")}`,
    );
    return t;
  }

  /** Runs `tmux -L SOCKET ARGS...`; throws on failure; returns stdout. */
  async tmux(...args: string[]): Promise<string> {
    const r = await new Deno.Command("tmux", {
      args: ["-L", this.socket, ...args],
      stdout: "piped",
      stderr: "piped",
      env: { TMUX: "" },
    }).output();
    if (!r.success) throw new Error(`tmux ${args.join(" ")}: ${dec.decode(r.stderr)}`);
    return dec.decode(r.stdout);
  }

  /** The screen as text, one line per row, trailing blanks removed. */
  async screen(): Promise<string> {
    return (await this.tmux("capture-pane", "-p", "-t", "hp")).replace(/\n+$/, "");
  }

  /** The screen with attribute escape sequences. */
  async screenEsc(): Promise<string> {
    return (await this.tmux("capture-pane", "-p", "-e", "-t", "hp")).replace(/\n+$/, "");
  }

  /** Scrollback plus screen, as text. */
  async history(): Promise<string> {
    return (await this.tmux("capture-pane", "-p", "-S", "-", "-t", "hp")).replace(/\n+$/, "");
  }

  /** A tmux format for the pane, e.g. `#{cursor_x},#{cursor_y}`. */
  async display(format: string): Promise<string> {
    return (await this.tmux("display-message", "-p", "-t", "hp", format)).trim();
  }

  async cursor(): Promise<string> {
    return await this.display("#{cursor_x},#{cursor_y}");
  }

  /** Keys by tmux name (`o`, `Left`, `C-c`, `Enter`). */
  async keys(...keys: string[]): Promise<void> {
    await this.tmux("send-keys", "-t", "hp", ...keys);
  }

  /** Literal text. */
  async type(text: string): Promise<void> {
    await this.tmux("send-keys", "-t", "hp", "-l", text);
  }

  /** Polls the screen until `pred` holds; throws with the last screen after `timeoutMs`. */
  async waitFor(pred: (screen: string) => boolean, what: string, timeoutMs = 20_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    let s = "";
    for (;;) {
      s = await this.screen();
      if (pred(s)) return s;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}; the screen:\n${s}`);
      await sleep(50);
    }
  }

  /** Waits until the screen has not changed for `quietMs` (a program's redraw is over). */
  async waitStable(quietMs = 250, timeoutMs = 20_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    let last = await this.screen();
    let since = Date.now();
    for (;;) {
      await sleep(50);
      const s = await this.screen();
      if (s !== last) [last, since] = [s, Date.now()];
      else if (Date.now() - since >= quietMs) return s;
      if (Date.now() > end) throw new Error(`the screen kept changing; the screen:\n${s}`);
    }
  }

  /** Waits for `text` on the screen. */
  waitText(text: string | RegExp, timeoutMs?: number): Promise<string> {
    return this.waitFor(
      (s) => typeof text === "string" ? s.includes(text) : text.test(s),
      JSON.stringify(String(text)),
      timeoutMs,
    );
  }

  /** Waits until the bar is up (the keys line), then past the bar's arm delay, so that a key answers it. */
  async waitBar(timeoutMs?: number): Promise<string> {
    const s = await this.waitText("[o] allow ", timeoutMs);
    await Tmux.pastArmDelay();
    return s;
  }

  /**
   * Call once a new question is seen on the screen: returns when the bar takes keys. hallpass notes the time a
   * question is shown before it draws it (lib/ask/terminal_ask.ts, armDelayMs 300), so ARM_DELAY_MS after it was
   * seen the delay has passed, however loaded the machine: a bound, not a guess.
   */
  static async pastArmDelay(): Promise<void> {
    await sleep(ARM_DELAY_MS + 50);
  }

  /** Waits until the bar is gone. */
  waitNoBar(timeoutMs?: number): Promise<string> {
    return this.waitFor((s) => !s.includes("[o] allow "), "the bar to close", timeoutMs);
  }

  /** The bar's lines as shown (the bottom rows from `hallpass: … wants to`). */
  static bar(screen: string): string[] {
    const rows = screen.split("\n");
    // The question's first line, also when cut at the terminal's width ("… wants…").
    const i = rows.findLastIndex((l) => /^hallpass: (?!\[D\]|denied by).*( wants to |…$)/.test(l.trimEnd()));
    return i < 0 ? [] : rows.slice(i).map((l) => l.trimEnd());
  }

  /** The scope line's scope. */
  static scope(screen: string): string | undefined {
    return /(?:\[t\] and \[a\] allow|\[t\] \[a\] \[n\] apply to): (.*)$/m.exec(screen)?.[1].trimEnd();
  }

  /** Waits for the script to end; returns its exit status (of its last command before `echo $?`). */
  async waitExit(timeoutMs = 30_000): Promise<number> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        const t = (await Deno.readTextFile(`${this.dir}/pane.rc`)).trim();
        if (t) return Number(t);
      } catch { /* not yet */ }
      if (Date.now() > end) {
        throw new Error(`the pane script did not end; the screen:\n${await this.screen()}`);
      }
      await sleep(50);
    }
  }

  /** Polls a file until it exists; returns its content. */
  async waitFile(path: string, timeoutMs = 20_000): Promise<string> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await Deno.readTextFile(path);
      } catch { /* not yet */ }
      if (Date.now() > end) throw new Error(`${path} did not appear; the screen:\n${await this.screen()}`);
      await sleep(50);
    }
  }

  /** Everything the pane's program wrote to the terminal so far (recorded with pipe-pane). */
  async raw(): Promise<string> {
    return await Deno.readTextFile(`${this.dir}/raw.out`).catch(() => "");
  }

  /** Pid of the pane's process (the script's shell). */
  async panePid(): Promise<number> {
    return Number(await this.display("#{pane_pid}"));
  }

  /** Kills the server (and with it the pane); removes the scratch directory when start() made it. */
  async close(): Promise<void> {
    try {
      await this.tmux("kill-server");
    } catch { /* already gone */ }
    // tmux leaves its socket file behind.
    const base = Deno.env.get("TMUX_TMPDIR") || "/tmp";
    await Deno.remove(`${base}/tmux-${Deno.uid()}/${this.socket}`).catch(() => {});
    if (this.#ownDir) await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}

/** A scratch directory with `project/`, `outside/`, `home/`, `xdg/`; writable by the current user only. */
/** Runs `fn` with a fresh pane; on failure the error carries the screen; the pane is always closed. */
export async function withPane(o: StartOptions, fn: (t: Tmux) => Promise<void>): Promise<void> {
  const t = await Tmux.start(o);
  try {
    await fn(t);
  } catch (e) {
    // The message last: CI shows the end of the output.
    const screen = await t.screen().catch(() => "");
    throw new Error(`--- screen ---\n${screen}\n--- ${(e as Error).message}`);
  } finally {
    await t.close();
  }
}

export async function makeScratch(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "hallpass-tty-" });
  for (const d of ["project", "outside", "home", "xdg"]) await Deno.mkdir(`${dir}/${d}`);
  return dir;
}

/** Pids of processes whose command line contains `marker`. */
export async function pgrep(marker: string): Promise<number[]> {
  const r = await new Deno.Command("pgrep", { args: ["-f", marker], stdout: "piped", stderr: "null" })
    .output();
  return dec.decode(r.stdout).split("\n").filter(Boolean).map(Number).filter((p) => p !== Deno.pid);
}

/** Pids of processes whose whole command line is `cmdline` (pgrep -x -f). */
export async function pgrepExact(cmdline: string): Promise<number[]> {
  const r = await new Deno.Command("pgrep", { args: ["-x", "-f", cmdline], stdout: "piped", stderr: "null" })
    .output();
  return dec.decode(r.stdout).split("\n").filter(Boolean).map(Number);
}

/** The state letter of /proc/PID/stat (R running, S sleeping, T stopped, Z zombie), or "" when gone. */
export function procState(pid: number): string {
  try {
    return /^\d+ \(.*\) (\S)/.exec(Deno.readTextFileSync(`/proc/${pid}/stat`))?.[1] ?? "";
  } catch {
    return "";
  }
}

/** Polls `fn` until it is true; throws `what` after the deadline. */
export async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000) {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * What a person sees in a `capture-pane -e` screen: per row, the text and each cell's attributes (colours,
 * bold, reverse, …), parsed with a screen model so that equivalent escape sequences compare equal.
 */
export async function visibleCells(esc: string, cols: number): Promise<string[]> {
  const { default: xterm } = await import("@xterm/headless");
  const rows = esc.split("\n");
  const term = new xterm.Terminal({ cols, rows: rows.length + 1, allowProposedApi: true });
  await new Promise<void>((r) => term.write(rows.map((l) => l + "\x1b[0m").join("\r\n"), r));
  const out: string[] = [];
  const buf = term.buffer.active;
  for (let y = 0; y < rows.length; y++) {
    const line = buf.getLine(y);
    let s = "";
    for (let x = 0; x < cols; x++) {
      const c = line?.getCell(x);
      if (!c) continue;
      const ch = c.getChars() || " ";
      const attrs = [
        c.isBold(),
        c.isDim(),
        c.isItalic(),
        c.isUnderline(),
        c.isBlink(),
        c.isInverse(),
        c.isInvisible(),
        c.isStrikethrough(),
        c.getFgColorMode(),
        c.getFgColor(),
        c.getBgColorMode(),
        c.getBgColor(),
      ].join(",");
      s += `${ch}[${attrs}]`;
    }
    out.push(s);
  }
  term.dispose();
  return out;
}
