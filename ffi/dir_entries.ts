/**
 * A directory's entries with their types, read with getdents64(2) in 64 KiB batches: about ten times faster
 * than Deno.readDirSync, for walking a whole project at exit (lib/sandbox/nested_repos.ts). Opened lazily:
 * nothing at start-up loads it.
 */
import { AT_FDCWD, cstr, O } from "./libc.ts";

const SYMBOLS = {
  openat: { parameters: ["i32", "buffer", "i32", "u32"], result: "i32" },
  getdents64: { parameters: ["i32", "buffer", "usize"], result: "isize" }, // glibc ≥ 2.30
  close: { parameters: ["i32"], result: "i32" },
} as const satisfies Deno.ForeignLibraryInterface;

let lib: Deno.DynamicLibrary<typeof SYMBOLS>["symbols"] | null = null;
const buf = new Uint8Array(64 * 1024);
const dec = new TextDecoder();

export type EntryKind = "dir" | "file" | "symlink" | "other";
/** d_type values (dirent.h); DT_UNKNOWN comes back as "other" (callers stat it when it matters). */
const KINDS: Record<number, EntryKind> = { 4: "dir", 8: "file", 10: "symlink" };

/**
 * The entries of `path` (not `.` and `..`), never following a symlink at `path` itself; undefined when it cannot
 * be opened.
 */
export function dirEntries(path: string): { name: string; kind: EntryKind; unknown: boolean }[] | undefined {
  lib ??= Deno.dlopen("libc.so.6", SYMBOLS).symbols;
  const fd = lib.openat(AT_FDCWD, cstr(path), O.RDONLY | O.DIRECTORY | O.NOFOLLOW | O.CLOEXEC, 0);
  if (fd < 0) return undefined;
  const out: { name: string; kind: EntryKind; unknown: boolean }[] = [];
  try {
    for (;;) {
      const n = Number(lib.getdents64(fd, buf, BigInt(buf.length)));
      if (n <= 0) break;
      // struct linux_dirent64 { u64 d_ino; s64 d_off; u16 d_reclen; u8 d_type; char d_name[]; }
      for (let off = 0; off < n;) {
        const reclen = buf[off + 16] | (buf[off + 17] << 8);
        const type = buf[off + 18];
        let end = off + 19;
        while (end < off + reclen && buf[end] !== 0) end++;
        const isDot = buf[off + 19] === 46 &&
          (end === off + 20 || (end === off + 21 && buf[off + 20] === 46));
        if (!isDot) {
          out.push({
            name: dec.decode(buf.subarray(off + 19, end)),
            kind: KINDS[type] ?? "other",
            unknown: type === 0,
          });
        }
        off += reclen;
      }
    }
  } finally {
    lib.close(fd);
  }
  return out;
}
