/**
 * End-to-end harness: runs the real hallpass (deno run main.ts, or $HALLPASS_BIN) against the real kernel, in a
 * scratch project.
 * The same tests run as root and as an unprivileged user (tests/run_all.sh runs this folder again with
 * `runuser -u hallpass-test`). Nothing here mocks the kernel.
 */
import { gcc, sharedTempDir } from "../helpers/compile.ts";

export const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
export const DENO = Deno.execPath();
/**
 * How the tests start hallpass: from source (`deno run main.ts`, as the script `make` leaves does), or, when
 * HALLPASS_BIN names one, that binary (CI runs the suite against the compiled release binary).
 */
export const HALLPASS_BIN = Deno.env.get("HALLPASS_BIN") || undefined;
export const HALLPASS_ARGV: readonly string[] = HALLPASS_BIN ? [HALLPASS_BIN] : [
  DENO,
  "run",
  "--quiet",
  "--allow-all",
  "--no-prompt",
  "--v8-flags=--max-semi-space-size=1",
  `${ROOT}/main.ts`,
];
const dec = new TextDecoder();

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

export interface HallpassOptions {
  cwd?: string;
  env?: Record<string, string>;
  stdin?: string;
  timeoutMs?: number;
}

/** Runs `hallpass ARGS...` (from source, as `./hallpass` does) and collects its output. */
export async function hallpass(args: string[], o: HallpassOptions = {}): Promise<Result> {
  const cmd = new Deno.Command(HALLPASS_ARGV[0], {
    args: [...HALLPASS_ARGV.slice(1), ...args],
    cwd: o.cwd,
    env: o.env,
    stdin: o.stdin !== undefined ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  });
  const child = cmd.spawn();
  if (o.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(o.stdin));
    await w.close();
  }
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch { /* gone */ }
  }, o.timeoutMs ?? 60_000);
  const out = await child.output();
  clearTimeout(timer);
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs a command without hallpass, for comparison. */
export async function bare(args: string[], o: HallpassOptions = {}): Promise<Result> {
  const out = await new Deno.Command(args[0], {
    args: args.slice(1),
    cwd: o.cwd,
    env: o.env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A scratch project and a scratch "outside" directory, removed by the returned cleanup. */
export async function scratch(): Promise<{ project: string; outside: string; cleanup: () => Promise<void> }> {
  const base = await Deno.makeTempDir({ prefix: "hallpass-e2e-" });
  const project = `${base}/project`;
  const outside = `${base}/outside`;
  await Deno.mkdir(project);
  await Deno.mkdir(outside);
  return { project, outside, cleanup: () => Deno.remove(base, { recursive: true }) };
}

/**
 * A scratch project (in /tmp) and a scratch $HOME, `home` (empty), made below the real $HOME, not in /tmp:
 * hallpass never carves a directory everyone creates files in, so protections below /tmp are dropped.
 */
export async function scratchHome(prefix: string) {
  const s = await scratch();
  const base = await Deno.makeTempDir({ dir: Deno.env.get("HOME") ?? "/tmp", prefix });
  const home = `${base}/home`;
  await Deno.mkdir(home);
  return {
    ...s,
    home,
    cleanup: async () => {
      await s.cleanup();
      await Deno.remove(base, { recursive: true });
    },
  };
}

/** Writes an ask program that answers with `answer` and records each question as a JSON line in `log`. */
export async function askProgram(
  dir: string,
  answer: string,
  log = `${dir}/questions.jsonl`,
): Promise<string> {
  const p = `${dir}/ask.sh`;
  await Deno.writeTextFile(p, `#!/bin/sh\ncat >> '${log}'\necho '${answer}'\n`);
  await Deno.chmod(p, 0o755);
  return p;
}

/** An ask program beside a scratch project (tests/e2e/harness.ts scratch()) and the log of its questions. */
export async function scratchAsker(
  s: { outside: string },
  answer: string,
): Promise<{ ask: string; log: string }> {
  const log = `${s.outside}/../q.jsonl`;
  return { ask: await askProgram(`${s.outside}/..`, answer, log), log };
}

export async function readQuestions(log: string): Promise<Record<string, unknown>[]> {
  try {
    return (await Deno.readTextFile(log)).trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

export function isRoot(): boolean {
  return Deno.uid() === 0;
}

export async function exists(p: string): Promise<boolean> {
  try {
    await Deno.lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** Checks `cond` every 50 ms for up to `ms`: whether it held (checked once more at the end). */
export async function waitFor(cond: () => Promise<boolean> | boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return await cond();
}

const helperCache = new Map<string, Promise<string>>();

/**
 * Compiles tests/helpers/NAME.c (with gcc, extra `flags` appended) into a temp dir readable by everyone and
 * returns the binary's path. Compiled once per test process and flag set.
 */
export function compileHelper(name: string, flags: string[] = []): Promise<string> {
  const key = [name, ...flags].join(" ");
  let p = helperCache.get(key);
  if (!p) {
    p = (async () => {
      const out = `${await sharedTempDir("hallpass-helper-")}/${name}`;
      await gcc(`${ROOT}/tests/helpers/${name}.c`, out, flags);
      return out;
    })();
    helperCache.set(key, p);
  }
  return p;
}

export interface Entry {
  type: "file" | "dir" | "symlink" | "fifo" | "other";
  mode: number;
  content?: string;
  target?: string;
  /** Only times set explicitly by a test (before 2001) are recorded; "now" differs between runs. */
  mtime?: number;
  nlink?: number;
}

/** Everything below `dir` as the host sees it: type, permission bits, content, link targets, old mtimes. */
export async function snapshot(dir: string): Promise<Record<string, Entry>> {
  const out: Record<string, Entry> = {};
  async function walk(rel: string) {
    const abs = rel ? `${dir}/${rel}` : dir;
    for await (const e of Deno.readDir(abs)) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const st = await Deno.lstat(`${dir}/${r}`);
      const ent: Entry = {
        type: st.isFile
          ? "file"
          : st.isDirectory
          ? "dir"
          : st.isSymlink
          ? "symlink"
          : st.isFifo
          ? "fifo"
          : "other",
        mode: (st.mode ?? 0) & 0o7777,
      };
      if (st.isSymlink) delete (ent as Partial<Entry>).mode;
      if (st.isFile) {
        ent.content = await Deno.readTextFile(`${dir}/${r}`);
        ent.nlink = st.nlink ?? 0;
      }
      if (st.isSymlink) ent.target = await Deno.readLink(`${dir}/${r}`);
      const m = st.mtime?.getTime() ?? 0;
      if (!st.isSymlink && m < 978_307_200_000) ent.mtime = m;
      out[r] = ent;
      if (st.isDirectory) await walk(r);
    }
  }
  await walk("");
  return out;
}

/** Runs `hallpass ARGS...` and also returns the lines it printed that are its own (start with "hallpass:"). */
export function hallpassLines(r: Result): string[] {
  return r.stderr.split("\n").filter((l) => l.startsWith("hallpass:"));
}
