/**
 * `make` bundles hallpass for the ./hallpass script (docs/performance.md): `deno run` of ~50 modules costs
 * more start-up than of a few bundled ones, and V8's code cache then holds a few entries. In build/js/:
 *   main.js + one shared chunk   main.ts and everything it imports statically (the start-up path)
 *   lazy-NAME.js                 each module loaded through lib/util/lazy_import.ts (subcommands, the
 *                                terminal with @xterm/headless, the ask program), loaded only when used, with
 *                                the chunks of code it shares only with other lazy modules: a lazy import
 *                                loads what it needs, not every lazy module. All share the start chunk:
 *                                every module exists once (a class is one class for instanceof)
 *   worker.js                    the supervisor Worker (lib/supervisor/worker.ts), on its own
 *
 * The sources are copied to build/bundle-src/ (removed after), rewritten, and bundled with `deno bundle`:
 *   - `lazyImport<…>(new URL("./x.ts", import.meta.url))` → lazy-NAME.js (an entry point of the bundle);
 *   - a literal `import("./x.ts")` → the same, loaded with `import()` (lib/supervisor/host.ts's fast path
 *     side, ~10 KB, is loaded at the first trapped call, not at every start);
 *   - `new Worker(new URL("./worker.ts", …))` → worker.js;
 *   - `@xterm/headless` → its file in node_modules/ (bundled: no npm resolution at run time);
 *   - every other `import.meta.url` → the module's own source file, so paths next to the sources
 *     (build/hallpass-launcher, the filter's sources, the checkout protected from writes) stay the same.
 * A compiled hallpass (`deno compile`) is built from the sources, not from this.
 *
 *   deno run -A helper/bundle/bundle.ts
 *
 * @module
 */
const root = new URL("../../", import.meta.url);
const rootPath = decodeURIComponent(root.pathname);

/** The file node_modules/ holds for an npm package (its package.json "main"). */
function npmFile(name: string): string {
  const dir = `${rootPath}node_modules/${name}`;
  const pkg = JSON.parse(Deno.readTextFileSync(`${dir}/package.json`)) as { main?: string };
  return `${dir}/${pkg.main ?? "index.js"}`;
}

/** xterm.js's one look at the global `process` (is it running on Node?). */
const XTERM_IS_NODE = `"undefined"!=typeof process&&"title"in process`;

/**
 * xterm.js with its Node check answered: under Deno the global `process` exists and has a title, so the check
 * is always true, but touching `process` makes Deno load its Node compatibility layer (~20–60 ms of CPU at
 * every terminal session's start; a `deno run --cpu-prof` of the import: loadExtScript, node:process,
 * assert, util.inspect, events). Left as it is when the text is not found exactly once (another version):
 * tests/e2e/bundle_run_test.ts then fails.
 */
export function answerXtermNodeCheck(text: string): string {
  return text.split(XTERM_IS_NODE).length === 2 ? text.replace(XTERM_IS_NODE, "true") : text;
}

/** xterm.js's write buffer, at a write into an empty buffer: the parse is put off until later. */
const XTERM_FIRST_WRITE = `void this._innerWrite();setTimeout((()=>this._innerWrite()))`;

/**
 * xterm.js's first parse after a write into an empty buffer is put off with a microtask, not a timer: the first
 * `setTimeout` of a process makes Deno load node:timers and what it needs (~6 ms of CPU at every terminal
 * session's start). Still after the caller's synchronous code, as before (writes made together are parsed
 * together); a parse that takes longer than its 12 ms slice goes on with a timer, as before. Left as it is when
 * the text is not found exactly once (another version): tests/e2e/bundle_run_test.ts then fails.
 */
export function xtermFirstWriteMicrotask(text: string): string {
  return text.split(XTERM_FIRST_WRITE).length === 2
    ? text.replace(XTERM_FIRST_WRITE, "void this._innerWrite();queueMicrotask((()=>this._innerWrite()))")
    : text;
}

/** npmFile, with @xterm/headless copied to `src` with its Node check answered and its first parse a microtask. */
function npmFileIn(src: string): (name: string) => string {
  return (name) => {
    const file = npmFile(name);
    if (name !== "@xterm/headless") return file;
    const copy = `${src}/npm/@xterm/headless.js`;
    Deno.mkdirSync(`${src}/npm/@xterm`, { recursive: true });
    Deno.writeTextFileSync(copy, xtermFirstWriteMicrotask(answerXtermNodeCheck(Deno.readTextFileSync(file))));
    return copy;
  };
}

const LAZY = /lazyImport<(?:[^<>]|<[^<>]*>)*>\(\s*new URL\(("[^"]+"), import\.meta\.url\),?\s*\)/g;

/** A lazily imported module's path as a name (`lib/ui/terminal.ts` → `lib_ui_terminal`). */
export function lazyName(rel: string): string {
  return rel.replace(/\.ts$/, "").replace(/[^A-Za-z0-9]/g, "_");
}

/** The file in build/js/ of a lazily imported module (its own entry point of the bundle). */
export function lazyFile(rel: string): string {
  return `lazy-${lazyName(rel)}.js`;
}

/** Where `spec`, imported by the module `rel`, is, relative to the root. */
function resolveRel(rel: string, spec: string): string {
  return new URL(spec, `file:///${rel}`).pathname.slice(1);
}

/** A literal `import("./x.ts")`: a value, not a type's `import("./x.ts").T` (a `.then(` is a value's). */
const DYNAMIC = /(?<![\w.]|typeof )import\(("\.{1,2}\/[^"]+\.ts")\)(?!\.(?!then\()\w)/g;

export function rewrite(text: string, rel: string, npm: (name: string) => string, lazy: Set<string>): string {
  const KEEP = "\0bundle-url\0";
  return text.replace(LAZY, (_m, spec: string) => {
    const target = resolveRel(rel, JSON.parse(spec));
    lazy.add(target);
    return `lazyImport<any>(new URL("./${lazyFile(target)}", ${KEEP}))`;
  })
    // A literal dynamic import is loaded where it is, like a lazy import (the bundler would otherwise
    // split the start chunk by it: its own file and the start-up path's code stay one chunk).
    .replace(DYNAMIC, (_m, spec: string) => {
      const target = resolveRel(rel, JSON.parse(spec));
      lazy.add(target);
      return `import(new URL("./${lazyFile(target)}", ${KEEP}).href)`;
    })
    // lib/supervisor/host.ts's Worker: the worker bundle beside this one.
    .replace(
      /new Worker\(new URL\("\.\/worker\.ts", import\.meta\.url\)/g,
      `new Worker(new URL("./worker.js", ${KEEP})`,
    )
    .replace(/from "(@xterm\/headless)"/g, (_m, name: string) => `from ${JSON.stringify(npm(name))}`)
    // The bundle is build/js/NAME.js: "../../<rel>" from there is the module's source file.
    .replace(/import\.meta\.url/g, `new URL(${JSON.stringify(`../../${rel}`)}, import.meta.url).href`)
    .replaceAll(KEEP, "import.meta.url");
}

/**
 * start.ts: every binding the start-up path's modules import from each other, in one array (`__start`: an
 * array, not a namespace of ~300 getters, which took 62 KB of code cache where this takes 21). Each lazy entry
 * re-exports it, so that what the start-up path uses is reached from every entry point and the bundler puts it
 * in one shared chunk (one file to load at start; otherwise it splits that code by which lazy modules use it
 * too, ~10 files), and nothing the start-up path does not use is pulled into that chunk. Only where code lands
 * depends on it, never what runs: a name it misses leaves its code in a second chunk (tests/e2e/
 * bundle_run_test.ts checks that the start is one chunk).
 */
export function startReexports(read: (rel: string) => string): string {
  const names = new Map<string, Set<string> | "all">();
  const STATEMENT = /^(?:import|export)\s+(type\s+)?([^;"]*?)\s*from\s*"(\.{1,2}\/[^"]+)"/gm;
  const IDENT = /^[A-Za-z_$][\w$]*$/;
  const seen = new Set<string>();
  const walk = (m: string) => {
    if (seen.has(m)) return;
    seen.add(m);
    for (const [, type, written, spec] of read(m).matchAll(STATEMENT)) {
      if (type) continue;
      const clause = written.replace(/\/\/[^\n]*/g, "").replace(/\/\*[\s\S]*?\*\//g, "");
      const target = resolveRel(m, spec);
      let got = names.get(target) ?? new Set<string>();
      if (/^\*/.test(clause) || /,\s*\*/.test(clause)) got = "all";
      else if (got !== "all") {
        const braces = clause.match(/\{([^}]*)\}/)?.[1] ?? "";
        if (IDENT.test(clause.replace(/\{[^}]*\}/, "").replace(/,/g, "").trim())) got.add("default");
        for (const part of braces.split(",")) {
          const n = part.trim().split(/\s+as\s+/)[0];
          if (IDENT.test(n)) got.add(n); // not `type X`
        }
      }
      names.set(target, got);
      walk(target);
    }
  };
  walk("main.ts");
  const imports: string[] = [];
  const values: string[] = [];
  [...names].sort(([a], [b]) => a < b ? -1 : 1).forEach(([m, got], i) => {
    if (got === "all") {
      imports.push(`import * as __s${i} from "./${m}";\n`);
      values.push(`__s${i}`);
      return;
    }
    const local = [...got].sort().map((n) => [n, `__s${i}_${n}`]);
    imports.push(`import { ${local.map(([n, l]) => `${n} as ${l}`).join(", ")} } from "./${m}";\n`);
    values.push(...local.map(([, l]) => l));
  });
  return `${imports.join("")}export const __start = [${values.join(", ")}];\n`;
}

function copyTree(dir: string, src: string, lazy: Set<string>) {
  for (const e of Deno.readDirSync(`${rootPath}${dir}`)) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory) copyTree(rel, src, lazy);
    else if (e.name.endsWith(".ts")) copyFile(rel, src, lazy);
  }
}

function copyFile(rel: string, src: string, lazy: Set<string>) {
  const text = Deno.readTextFileSync(`${rootPath}${rel}`);
  const target = `${src}/${rel}`;
  Deno.mkdirSync(target.slice(0, target.lastIndexOf("/")), { recursive: true });
  Deno.writeTextFileSync(target, rewrite(text, rel, npmFileIn(src), lazy));
}

function bundle(args: string[]) {
  const { code, stderr } = new Deno.Command(Deno.execPath(), {
    args: ["bundle", "--quiet", "--no-config", "--no-lock", "--platform", "deno", ...args],
    stdout: "inherit",
    stderr: "piped",
  }).outputSync();
  if (code !== 0) {
    console.error(new TextDecoder().decode(stderr));
    Deno.exit(1);
  }
}

if (import.meta.main) {
  // Built beside build/js and moved there when complete; the rewritten copy is removed after.
  const out = `${rootPath}build/js`;
  const next = `${out}.new`;
  const src = `${rootPath}build/bundle-src`;
  const remove = (d: string) => {
    try {
      Deno.removeSync(d, { recursive: true });
    } catch {
      // not there
    }
  };
  remove(src);
  remove(next);
  const lazy = new Set<string>();
  copyFile("main.ts", src, lazy);
  copyTree("lib", src, lazy);
  copyTree("ffi", src, lazy);
  Deno.writeTextFileSync(`${src}/start.ts`, startReexports((m) => Deno.readTextFileSync(`${src}/${m}`)));
  // One entry point per lazily imported module, beside main.ts (so that its file is build/js/lazy-NAME.js).
  const entries = [...lazy].sort().map((m) => {
    const entry = `${src}/${lazyFile(m).replace(/\.js$/, ".ts")}`;
    Deno.writeTextFileSync(
      entry,
      `export { __start } from "./start.ts";\nexport * from "./${m}";\n`,
    );
    return entry;
  });
  bundle(["--code-splitting", "--outdir", next, `${src}/main.ts`, ...entries]);
  bundle(["-o", `${next}/worker.js`, `${src}/lib/supervisor/worker.ts`]);
  remove(out);
  Deno.renameSync(next, out);
  remove(src);
}
