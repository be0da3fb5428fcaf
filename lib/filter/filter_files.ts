/**
 * Where `make` puts the prebuilt seccomp filters (lib/filter/filter_build.ts), in a module of its own: reading a
 * prebuilt filter at start-up must not load libseccomp's bindings and the filter plan.
 */

/** The prebuilt program's file name in build/. */
export function prebuiltFilterName(mediateConnect: boolean): string {
  return mediateConnect ? "filter-connect.bpf" : "filter.bpf";
}

/** The sources the program is made from: a prebuilt program older than any of them is stale. */
export const FILTER_SOURCES = [
  "lib/filter/filter_plan.ts",
  "lib/filter/filter_sys.ts",
  "lib/filter/syscall_table.ts",
  "lib/filter/filter_build.ts",
  "lib/filter/filter_files.ts",
  "ffi/seccomp.ts",
];
