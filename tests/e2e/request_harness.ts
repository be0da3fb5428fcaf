/**
 * Shared by tests/e2e/request_*_test.ts: the hallpass-request binary, and one hallpass session running a shell
 * script whose `name=rc` lines are collected. Works as root and as the unprivileged test user.
 */
import { hallpass, type Result, ROOT, scratch } from "./harness.ts";

const dec = new TextDecoder();
const SOURCE = `${ROOT}/helper/hallpass-request/hallpass-request.c`;
let built: Promise<string> | undefined;

/** ./hallpass-request when it is up to date, else a fresh build (musl-gcc, as the Makefile) in a temp dir. */
export function requestBin(): Promise<string> {
  built ??= (async () => {
    const existing = `${ROOT}/hallpass-request`;
    try {
      const [bin, src] = await Promise.all([Deno.stat(existing), Deno.stat(SOURCE)]);
      if (bin.isFile && bin.mtime && src.mtime && bin.mtime >= src.mtime) return existing;
    } catch { /* missing: build it */ }
    const dir = await Deno.makeTempDir({ prefix: "hallpass-request-bin-" });
    await Deno.chmod(dir, 0o755);
    const out = `${dir}/hallpass-request`;
    const r = await new Deno.Command("musl-gcc", {
      args: [..."-static -Os -Wall -Wextra -D_GNU_SOURCE -fno-strict-aliasing".split(" "), "-o", out, SOURCE],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!r.success) throw new Error(`musl-gcc failed:\n${dec.decode(r.stderr)}`);
    return out;
  })();
  return built;
}

export interface Scratch {
  base: string;
  project: string;
  outside: string;
  home: string;
  xdg: string;
  cleanup: () => Promise<void>;
}

/** A scratch project, an outside directory, a HOME and an XDG_CONFIG_HOME (so no saved rules leak in). */
export async function requestScratch(): Promise<Scratch> {
  const s = await scratch();
  const base = s.project.replace(/\/project$/, "");
  const home = `${base}/home`;
  const xdg = `${base}/xdg`;
  await Deno.mkdir(home);
  await Deno.mkdir(xdg);
  return { base, project: s.project, outside: s.outside, home, xdg, cleanup: s.cleanup };
}

export interface SessionResult extends Result {
  /** `name=value` lines the script printed, in order (a name printed twice keeps the last value). */
  rc: Record<string, string>;
}

/**
 * The shell prelude of a session script: `$R` is hallpass-request; `req NAME ARGS...` runs it and prints
 * `NAME=<exit>`; `wr NAME FILE` writes FILE and prints `NAME=ok` or `NAME=fail`.
 */
export const PRELUDE = [
  `req() { n=$1; shift; "$R" "$@"; echo "$n=$?"; }`,
  `wr() { if ( echo x > "$2" ) 2>/dev/null; then echo "$1=ok"; else echo "$1=fail"; fi; }`,
].join("\n");

/**
 * Runs `hallpass --allow-exec BIN HALLPASS_ARGS -- sh -c PRELUDE+SCRIPT` from the scratch project with a plain
 * PATH, `R`=the helper, and HOME/XDG_CONFIG_HOME in the scratch directory.
 */
export async function session(
  s: Scratch,
  hallpassArgs: string[],
  script: string,
  o: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<SessionResult> {
  const bin = await requestBin();
  const r = await hallpass(
    ["--allow-exec", bin, ...hallpassArgs, "--", "sh", "-c", `${PRELUDE}\n${script}`],
    {
      cwd: s.project,
      env: {
        PATH: "/usr/local/bin:/usr/bin:/bin",
        HOME: s.home,
        XDG_CONFIG_HOME: s.xdg,
        R: bin,
        ...o.env,
      },
      timeoutMs: o.timeoutMs ?? 90_000,
    },
  );
  const rc: Record<string, string> = {};
  for (const l of r.stdout.split("\n")) {
    const m = /^([A-Za-z0-9_.-]+)=(.*)$/.exec(l);
    if (m) rc[m[1]] = m[2];
  }
  return { ...r, rc };
}

/** A message for a failed assertion: the whole session output. */
export function show(r: Result): string {
  return `exit ${r.code}\n--- stdout ---\n${r.stdout}\n--- stderr ---\n${r.stderr}`;
}

/** Single-quotes `s` for sh. */
export function q(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}
