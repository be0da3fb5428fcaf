/**
 * A dynamic import that Deno does not walk at start-up.
 *
 * `deno run` loads (reads, and looks up in its caches) every module a literal `import("...")` names, and
 * theirs, before the first line runs, even when the import never happens: the terminal's modules (with the
 * npm package @xterm/headless), `hallpass agent`'s and `doctor`'s cost every `hallpass -- CMD` start-up
 * tens of milliseconds (docs/performance.md). Through this function they are loaded only when used.
 *
 * The type comes from a `typeof import("...")` (type-checked by `deno check`, never loaded). A compiled
 * hallpass (`deno compile`) embeds only what it can see: every module loaded through here is named with
 * `--include` in the Makefile (LAZY_MODULES).
 *
 * @module
 */

/** `import(url)`; `url` is `new URL("../x.ts", import.meta.url)` in the importing module. */
export function lazyImport<T>(url: URL): Promise<T> {
  return import(url.href);
}
