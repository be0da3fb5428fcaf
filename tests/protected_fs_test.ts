/**
 * lib/policy/protected_paths.ts realProtectFs tells a missing path apart without Deno's exception (start-up
 * asks about a dozen that are not there). Its answers must be those of the plain Deno calls it replaced (kept
 * here as the reference): the protected paths, and so the plan, stay the same. A made-up tree of directories,
 * files, symlinks (to a file, to a directory, dangling, a loop, a chain), a FIFO, an unreadable directory and
 * paths below a file, below a missing directory and below a dangling link.
 */
import assert from "node:assert/strict";
import { findProtectedPaths, type ProtectFs, realProtectFs } from "../lib/policy/protected_paths.ts";

/** realProtectFs as it was: every missing path an exception. */
const reference: ProtectFs = {
  kind(path) {
    try {
      const st = Deno.lstatSync(path);
      return st.isSymlink ? "symlink" : st.isDirectory ? "dir" : st.isFile ? "file" : "other";
    } catch {
      return undefined;
    }
  },
  read(path) {
    try {
      const st = Deno.statSync(path);
      if (!st.isFile || st.size > 1 << 20) return undefined;
      return Deno.readTextFileSync(path);
    } catch {
      return undefined;
    }
  },
  list(path) {
    try {
      return [...Deno.readDirSync(path)].map((e) => e.name).slice(0, 4096);
    } catch {
      return [];
    }
  },
  real(path) {
    let head = path;
    let tail = "";
    for (let i = 0; i < 4096; i++) {
      try {
        const r = Deno.realPathSync(head);
        return tail ? (r === "/" ? tail : r + tail) : r;
      } catch {
        if (head === "/" || head === "") return path;
        const k = head.lastIndexOf("/");
        tail = head.slice(k) + tail;
        head = head.slice(0, k) || "/";
      }
    }
    return path;
  },
};

function tree(): string {
  const d = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "hp-protfs-" }));
  Deno.mkdirSync(`${d}/p/.git/hooks`, { recursive: true });
  Deno.mkdirSync(`${d}/p/.git/worktrees/w1`, { recursive: true });
  Deno.mkdirSync(`${d}/p/.git/modules/sub/inner`, { recursive: true });
  Deno.writeTextFileSync(`${d}/p/.git/modules/sub/inner/HEAD`, "ref: refs/heads/main\n");
  Deno.writeTextFileSync(
    `${d}/p/.git/config`,
    '[core]\n\thooksPath = ../hooks-elsewhere\n[include]\n\tpath = ../shared.cfg\n[includeIf "gitdir:x"]\n\tpath = missing.cfg\n',
  );
  Deno.writeTextFileSync(`${d}/p/shared.cfg`, "[core]\n\thooksPath = /nowhere/hooks\n");
  Deno.writeTextFileSync(`${d}/p/.git/worktrees/w1/commondir`, "../..\n");
  Deno.mkdirSync(`${d}/p/.hallpass`);
  Deno.writeTextFileSync(`${d}/p/.hallpass/rules`, "deny write ~/x\n");
  Deno.mkdirSync(`${d}/home/.config`, { recursive: true });
  Deno.writeTextFileSync(`${d}/home/.gitconfig`, "[include]\n\tpath = ~/dotfiles/gitconfig\n");
  Deno.symlinkSync(`${d}/p/shared.cfg`, `${d}/p/filelink`);
  Deno.symlinkSync(`${d}/p/.git`, `${d}/p/dirlink`);
  Deno.symlinkSync(`${d}/p/nowhere`, `${d}/p/dangling`);
  Deno.symlinkSync(`${d}/p/loop`, `${d}/p/loop`);
  Deno.symlinkSync(`${d}/p/dirlink`, `${d}/p/chain`);
  Deno.symlinkSync("../p", `${d}/home/rel`);
  Deno.mkdirSync(`${d}/locked/inner`, { recursive: true });
  Deno.writeTextFileSync(`${d}/locked/inner/f`, "x");
  Deno.chmodSync(`${d}/locked`, 0o000);
  new Deno.Command("mkfifo", { args: [`${d}/p/fifo`] }).outputSync();
  return d;
}

Deno.test("realProtectFs answers as the exception-based calls it replaced, for every kind of path", () => {
  const d = tree();
  try {
    const names = [
      "",
      "/p",
      "/p/.git",
      "/p/.git/config",
      "/p/.git/config.worktree",
      "/p/.git/hooks",
      "/p/.git/worktrees",
      "/p/.git/modules",
      "/p/.git/modules/sub",
      "/p/.git/commondir",
      "/p/.hallpass",
      "/p/.hallpass/rules",
      "/p/shared.cfg",
      "/p/shared.cfg/below",
      "/p/filelink",
      "/p/dirlink",
      "/p/dirlink/config",
      "/p/dirlink/missing/deeper",
      "/p/dangling",
      "/p/dangling/below",
      "/p/loop",
      "/p/loop/below",
      "/p/chain",
      "/p/chain/hooks",
      "/p/fifo",
      "/p/missing",
      "/p/missing/a/b/c",
      "/home/.gitconfig",
      "/home/.config/git/config",
      "/home/rel/.git",
      "/locked",
      "/locked/inner",
      "/locked/inner/f",
      "/locked/inner/missing",
    ];
    for (const n of names) {
      const p = d + n;
      assert.equal(realProtectFs.kind(p), reference.kind(p), `kind ${n}`);
      assert.equal(realProtectFs.read(p), reference.read(p), `read ${n}`);
      assert.deepEqual(realProtectFs.list(p), reference.list(p), `list ${n}`);
      assert.equal(realProtectFs.real(p), reference.real(p), `real ${n}`);
    }
    for (const p of ["/", "/nonexistent-hp/x", "/proc/self/cwd", "/proc/self/exe", "/etc/../etc/hostname"]) {
      assert.equal(realProtectFs.kind(p), reference.kind(p), `kind ${p}`);
      assert.equal(realProtectFs.real(p), reference.real(p), `real ${p}`);
    }
    // The whole discovery: the same protected paths, in the same order.
    const opts = {
      project: `${d}/p`,
      home: `${d}/home`,
      rulesFiles: [`${d}/p/dangling`, `${d}/missing/rules`],
      logFile: `${d}/p/chain/log`,
      askProgramFiles: [`${d}/p/filelink`, `${d}/p/missing-ask`],
      ownTree: `${d}/home/rel`,
      denoDir: `${d}/home/.cache/deno`,
      ownBinary: `${d}/p/fifo`,
      pathDirs: [`${d}/home/rel`, `${d}/p/missing`, "relative/bin", `${d}/p/dangling`, "/"],
    };
    assert.deepEqual(findProtectedPaths(opts, realProtectFs), findProtectedPaths(opts, reference));
  } finally {
    Deno.chmodSync(`${d}/locked`, 0o700);
    Deno.removeSync(d, { recursive: true });
  }
});
