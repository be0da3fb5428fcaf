/**
 * The ./hallpass `make` leaves where `deno compile` cannot get its runtime (helper/bundle/hallpass_stub.c, or
 * the sh script) runs the bundle (helper/bundle/bundle.ts, build/js/): its start-up path, the supervisor Worker
 * (worker.js), what it loads lazily (lazy-NAME.js: the ask program, the terminal with xterm.js) and paths next
 * to the sources (the launcher) behave as from the sources. Judged from outside: the files written or not, the
 * exit codes, and the process's command line (it is the bundle that runs, not the sources).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { askProgram, exists, ROOT, scratch } from "./harness.ts";
import { probe, test, tool } from "../helpers/skip.ts";

const SCRIPT = `${ROOT}/hallpass`;
const BUNDLE = `${ROOT}/build/js/main.js`;

/**
 * ./hallpass is the program (helper/bundle/hallpass_stub.c) or script that runs the bundle, and the bundle is
 * newer than every source.
 */
const bundled = probe("bundled ./hallpass", () => {
  let text: string;
  try {
    // The compiled binary (deno compile) is ~100 MB: not read.
    text = Deno.statSync(SCRIPT).size < 1 << 20 ? Deno.readTextFileSync(SCRIPT) : "";
  } catch {
    return "no ./hallpass (make)";
  }
  if (!text.includes("build/js/main.js")) {
    return "./hallpass is the compiled binary (deno compile), not the bundle's script";
  }
  let built: number;
  try {
    built = Deno.statSync(BUNDLE).mtime!.getTime();
  } catch {
    return "no bundle (make)";
  }
  const newer: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(`${ROOT}/${dir}`)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) walk(p);
      else if (p.endsWith(".ts") && Deno.statSync(`${ROOT}/${p}`).mtime!.getTime() > built) newer.push(p);
    }
  };
  walk("lib");
  walk("ffi");
  return newer.length ? `sources changed since make (${newer[0]}): ./hallpass runs them` : undefined;
});

async function run(args: string[], cwd: string): Promise<{ code: number; out: string; err: string }> {
  const o = await new Deno.Command(SCRIPT, { args, cwd, stdin: "null", stdout: "piped", stderr: "piped" })
    .output();
  const d = new TextDecoder();
  return { code: o.code, out: d.decode(o.stdout), err: d.decode(o.stderr) };
}

test({ name: "bundle: ./hallpass runs build/js/main.js, not the sources", ignore: bundled }, async () => {
  const s = await scratch();
  try {
    const child = new Deno.Command(SCRIPT, {
      args: ["--no-ask", "-q", "--", "sh", "-c", "cat >/dev/null"],
      cwd: s.project,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let cmdline = "";
    // Until the launcher has exec'd deno: up to 60 s (at load a start takes seconds; 5 s was the budget).
    for (const end = Date.now() + 60_000; Date.now() < end && !cmdline.includes("deno");) {
      cmdline = (await Deno.readTextFile(`/proc/${child.pid}/cmdline`).catch(() => "")).replaceAll("\0", " ");
      if (!cmdline.includes("deno")) await new Promise((r) => setTimeout(r, 25));
    }
    await child.stdin.close();
    assertEquals((await child.status).code, 0);
    assert(cmdline.includes(BUNDLE) && !cmdline.includes("main.ts"), cmdline);
  } finally {
    await s.cleanup();
  }
});

test({
  name: "bundle: writes inside, a denial by the Worker outside, the command's exit code",
  ignore: bundled,
}, async () => {
  const s = await scratch();
  try {
    const r = await run(
      ["--no-ask", "--", "sh", "-c", `echo in > in.txt; echo out > '${s.outside}/f' ; exit 7`],
      s.project,
    );
    assertEquals(r.code, 7, r.err);
    assertEquals(await Deno.readTextFile(`${s.project}/in.txt`), "in\n");
    assert(!(await exists(`${s.outside}/f`)), "the write outside happened");
    assert(r.err.includes(`denied write ${s.outside}/f`), r.err);
  } finally {
    await s.cleanup();
  }
});

test({ name: "bundle: an ask program (a lazy module) allows a write outside", ignore: bundled }, async () => {
  const s = await scratch();
  try {
    const ask = await askProgram(`${s.outside}/..`, "once", `${s.outside}/../q.jsonl`);
    const r = await run(["--ask-program", ask, "--", "sh", "-c", `echo y > '${s.outside}/f'`], s.project);
    assertEquals(r.code, 0, r.err);
    assertEquals(await Deno.readTextFile(`${s.outside}/f`), "y\n");
  } finally {
    await s.cleanup();
  }
});

test({
  name: "bundle: in a terminal (a lazy module, xterm.js bundled) the command runs and its code comes back",
  ignore: [bundled, tool("script")],
}, async () => {
  const s = await scratch();
  try {
    const o = await new Deno.Command("script", {
      args: ["-qec", `'${SCRIPT}' -- sh -c 'echo hi-pty; exit 3'`, "/dev/null"],
      cwd: s.project,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(o.code, 3, new TextDecoder().decode(o.stderr));
    assert(new TextDecoder().decode(o.stdout).includes("hi-pty"));
  } finally {
    await s.cleanup();
  }
});

/** The files a bundle file imports statically (`from "./x.js"`), and theirs. */
function loads(file: string, seen = new Set<string>()): Set<string> {
  if (seen.has(file)) return seen;
  seen.add(file);
  const text = Deno.readTextFileSync(`${ROOT}/build/js/${file}`);
  for (const m of text.matchAll(/^(?:import|export)\b[^;"]*?from\s*"\.\/([^"]+\.js)"/gm)) loads(m[1], seen);
  for (const m of text.matchAll(/^import\s*"\.\/([^"]+\.js)"/gm)) loads(m[1], seen);
  return seen;
}

test({
  name: "bundle: the start-up path is main.js and one chunk; a lazy import loads its own files only",
  ignore: bundled,
}, () => {
  const start = loads("main.js");
  assertEquals(start.size, 2, `main.js loads ${[...start].join(", ")}`);
  const chunk = [...start].find((f) => f !== "main.js")!;
  // The terminal's module takes xterm.js with it; the ask program's and doctor's do not.
  const xterm = (f: string) => Deno.readTextFileSync(`${ROOT}/build/js/${f}`).includes("@xterm/headless");
  assert(![...start].some(xterm), "xterm.js is in the start-up path");
  const terminal = [...loads("lazy-lib_ui_pty_session.js")];
  assert(terminal.some(xterm), "the terminal's files have no xterm.js");
  // xterm.js's look at the global `process` (which loads Deno's Node layer) is answered in the bundle.
  for (const f of terminal) {
    assert(
      !/\btypeof process\b/.test(Deno.readTextFileSync(`${ROOT}/build/js/${f}`)),
      `${f} looks at process`,
    );
  }
  // xterm.js's first parse after a write is a microtask, not a timer (the first timer loads Deno's node:timers).
  const terminalText = terminal.map((f) => Deno.readTextFileSync(`${ROOT}/build/js/${f}`)).join("\n");
  assert(
    terminalText.includes("queueMicrotask(() => this._innerWrite())"),
    "xterm.js's first parse is a timer",
  );
  // The fast path's side (lib/supervisor/host.ts's import()) is loaded at the first trapped call, and the
  // decision's code (lib/policy/policy.ts) by whatever decides.
  const startText = Deno.readTextFileSync(`${ROOT}/build/js/${chunk}`);
  for (const m of ["ffi/fastpath.ts", "lib/supervisor/fast_roots.ts", "lib/policy/policy.ts"]) {
    assert(!startText.includes(`// build/bundle-src/${m}\n`), `${m} is in the start chunk`);
  }
  // The Worker's bundle is one file: it loads no module of the main thread's (a second copy of its state).
  assert(
    !/\bimport\(|from "\.\//.test(Deno.readTextFileSync(`${ROOT}/build/js/worker.js`)),
    "worker.js imports",
  );
  for (const lazy of ["lazy-lib_ask_ask_program.js", "lazy-lib_cli_doctor.js", "lazy-ffi_fastpath.js"]) {
    const files = loads(lazy);
    assert(files.has(chunk), `${lazy} does not share the start chunk`);
    assert(![...files].some(xterm), `${lazy} loads xterm.js`);
  }
});
