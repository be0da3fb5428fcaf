/**
 * The dynamic loader run as a program (`/lib64/ld-linux-x86-64.so.2 ./prog`) runs `./prog` without an exec of
 * it, so no exec decision about `./prog` is ever made. lib/policy/policy.ts therefore never lets `@system` or a tree
 * rule allow the loader: only a rule naming the loader's own path does (docs/exec.md). Pure: by the canonical
 * path's last name; the fast path (helper/fastpath/fastpath.c, loader_name) applies the same test.
 *
 * Names: glibc's ld-linux*.so*, ld-<version>.so, ld.so*, ld64.so.*; musl's ld-musl-*.so.* and the file it links
 * to (libc.musl-*.so.* on Alpine, libc.so in a directory whose path has "musl" in it on Debian's musl).
 */
// One anchored expression on the whole path (no substring, no match object: decide allocates nothing).
const LOADER =
  /\/(?:ld-linux[^/]*\.so(?:\.[0-9]+)*|ld-[0-9][^/]*\.so|ld\.so(?:\.[0-9]+)*|ld64\.so(?:\.[0-9]+)*|ld-musl-[^/]*\.so(?:\.[0-9]+)*|libc\.musl-[^/]*\.so(?:\.[0-9]+)*)$/;

/** Whether `path` (canonical, absolute) is a dynamic loader. */
export function isDynamicLoader(path: string): boolean {
  if (!path.includes(".so")) return false;
  if (path.endsWith("/libc.so")) return path.includes("musl");
  return LOADER.test(path);
}
