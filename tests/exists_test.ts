/**
 * lib/util/exists.ts asks access(2) (faccessat2 without following a final symlink for lstatIfThere) instead of
 * catching Deno's exception for a missing path: the same answers as Deno.statSync (symlinks followed, a dangling
 * one missing) and Deno.lstatSync (a symlink itself, dangling or not), and a path holding a NUL names nothing
 * (the kernel would read the shorter path before it). ffi/libc.ts fdType (one statx of an O_PATH fd) answers as
 * Deno's stat of /proc/self/fd/N, which ffi/landlock.ts addRules used.
 */
import assert from "node:assert/strict";
import { exists, lexists, lstatIfThere, statIfThere } from "../lib/util/exists.ts";
import { AT_FDCWD, close, cstr, fdType, libc, O } from "../ffi/libc.ts";
import { realRepoFs } from "../lib/sandbox/nested_repos.ts";

function lstatKind(p: string): string | undefined {
  try {
    const st = Deno.lstatSync(p);
    return st.isSymlink ? "symlink" : st.isDirectory ? "dir" : st.isFile ? "file" : "other";
  } catch {
    return undefined;
  }
}

function statOk(p: string): boolean {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
}

Deno.test("exists(), statIfThere() and lstatIfThere() answer as Deno.statSync and Deno.lstatSync: files, directories, symlinks, missing paths", () => {
  const d = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.mkdirSync(`${d}/dir`);
    Deno.writeTextFileSync(`${d}/file`, "x");
    Deno.symlinkSync(`${d}/file`, `${d}/link`);
    Deno.symlinkSync(`${d}/nowhere`, `${d}/dangling`);
    Deno.symlinkSync(`${d}/dir`, `${d}/dirlink`);
    Deno.symlinkSync(`${d}/loop`, `${d}/loop`);
    const fifo = new Deno.Command("mkfifo", { args: [`${d}/fifo`] }).outputSync().success;
    const paths = [
      d,
      `${d}/dir`,
      `${d}/file`,
      `${d}/link`,
      `${d}/dangling`,
      `${d}/dirlink`,
      `${d}/dirlink/`,
      `${d}/missing`,
      `${d}/file/below`,
      `${d}/missing/below`,
      `${d}/dangling/below`,
      `${d}/loop`,
      `${d}/loop/below`,
      ...(fifo ? [`${d}/fifo`] : []),
      "/",
      "/proc/self/exe",
      "/proc/self/cwd",
    ];
    for (const p of paths) {
      assert.equal(exists(p), statOk(p), p);
      assert.equal(statIfThere(p)?.isDirectory, statOk(p) ? Deno.statSync(p).isDirectory : undefined, p);
      const l = lstatIfThere(p);
      assert.equal(
        l && (l.isSymlink ? "symlink" : l.isDirectory ? "dir" : l.isFile ? "file" : "other"),
        lstatKind(p),
        p,
      );
      assert.equal(lexists(p), lstatKind(p) !== undefined, p);
      // The exit checks' lstat (one statx, no exception): the kind and ctime Deno's lstat gives.
      let want: { kind: string; ctimeMs: number } | undefined;
      try {
        const st = Deno.lstatSync(p);
        want = { kind: lstatKind(p)!, ctimeMs: st.ctime!.getTime() };
      } catch {
        want = undefined;
      }
      assert.deepEqual(realRepoFs.lstat(p), want, p);
    }
  } finally {
    Deno.removeSync(d, { recursive: true });
  }
});

Deno.test("a path holding a NUL exists nowhere (not the shorter path before it)", () => {
  assert.equal(exists("/etc\0/missing"), false);
  assert.equal(statIfThere("/\0"), undefined);
  assert.equal(lstatIfThere("/etc\0/missing"), undefined);
  assert.equal(realRepoFs.lstat("/etc\0/missing"), undefined);
});

Deno.test("fdType (the ruleset's write side) answers as Deno's stat of /proc/self/fd/N: O_PATH fds of files, directories, devices, symlinks followed or not", () => {
  const d = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.mkdirSync(`${d}/dir`);
    Deno.writeTextFileSync(`${d}/file`, "x");
    Deno.symlinkSync(`${d}/file`, `${d}/link`);
    Deno.symlinkSync(`${d}/dir`, `${d}/dirlink`);
    const kind = (st: Deno.FileInfo) =>
      st.isDirectory ? 0o040000 : st.isFile ? 0o100000 : st.isSymlink ? 0o120000 : 0o010000;
    const cases = [d, `${d}/dir`, `${d}/file`, `${d}/link`, `${d}/dirlink`, "/dev/null", "/"];
    for (const p of cases) {
      for (const flags of [O.PATH | O.CLOEXEC, O.PATH | O.CLOEXEC | O.NOFOLLOW]) {
        const fd = libc().openat(AT_FDCWD, cstr(p), flags, 0);
        assert.ok(fd >= 0, p);
        try {
          const want = kind(Deno.statSync(`/proc/self/fd/${fd}`));
          const got = fdType(fd);
          // What is neither a file, a directory nor a symlink (a device) is compared as "other".
          const norm = got === 0o040000 || got === 0o100000 || got === 0o120000 ? got : 0o010000;
          assert.equal(norm, want, `${p}${flags & O.NOFOLLOW ? " (O_NOFOLLOW)" : ""}`);
        } finally {
          close(fd);
        }
      }
    }
  } finally {
    Deno.removeSync(d, { recursive: true });
  }
});
