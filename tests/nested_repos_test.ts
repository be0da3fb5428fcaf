/** lib/sandbox/nested_repos.ts: which git configs could run something; the config everyday git writes is inert. */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { checkNestedRepos, realRepoFs, type RepoFs, unsafeConfig } from "../lib/sandbox/nested_repos.ts";
import { test, tool } from "./helpers/skip.ts";

Deno.test("configs that run something, or that this reading does not fully understand, are unsafe", () => {
  const unsafe = [
    '[core]\n\tfsmonitor = "echo x"\n',
    "[core]\n\thooksPath = /tmp/h\n",
    "[core]\n\tsshCommand = evil\n",
    "[core]\n\tpager = evil\n",
    "[alias]\n\tst = !evil\n",
    "[include]\n\tpath = ../x\n",
    '[includeIf "gitdir:/"]\n\tpath = ../x\n',
    "[core] fsmonitor = evil\n", // a key on the header's line
    "[core.x]\n\tbare = false\n", // the old dotted form
    "[core]\n\tbare = false \\\n\tfsmonitor = evil\n", // a continuation
    '[core]\n\tbare = "false\n\tfsmonitor = evil"\n', // a quote spanning lines
    "bare = false\n", // a key before any section
    "\ufeff[core]\n\tfsmonitor = evil\n",
    "[core]\r\n\tbare = false\r\n",
    '[remote "o"]\n\tuploadpack = evil\n',
    '[submodule "s"]\n\tupdate = !evil\n',
    '[filter "lfs"]\n\tprocess = git-lfs filter-process\n',
    "[credential]\n\thelper = evil\n",
  ];
  for (const t of unsafe) assert(unsafeConfig(t) !== null, JSON.stringify(t));
});

test({
  name: "what git init, clone, remote add and user config write is inert",
  ignore: tool("git"),
}, async () => {
  const d = await Deno.makeTempDir();
  try {
    const env = { HOME: d, GIT_CONFIG_NOSYSTEM: "1", PATH: "/usr/local/bin:/usr/bin:/bin" };
    const git = async (...args: string[]) => {
      const r = await new Deno.Command("git", { args, cwd: d, env, stdout: "null", stderr: "piped" })
        .output();
      assertEquals(r.code, 0, new TextDecoder().decode(r.stderr));
    };
    await git("init", "-q", "a");
    await git(
      "-C",
      "a",
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@e",
      "commit",
      "-q",
      "--allow-empty",
      "-m",
      "x",
    );
    await git("clone", "-q", "a", "b");
    await git("-C", "b", "remote", "add", "up", "https://example.invalid/r.git");
    await git("-C", "b", "config", "user.name", "Jane Doe");
    await git("-C", "b", "config", "user.email", "jane@example.invalid");
    await git("-C", "b", "config", "pull.rebase", "true");
    await git("init", "-q", "--bare", "c.git");
    for (const f of ["a/.git/config", "b/.git/config", "c.git/config"]) {
      const text = await Deno.readTextFile(`${d}/${f}`);
      assertEquals(unsafeConfig(text), null, `${f}:\n${text}`);
    }
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});

/** A file system of directories and files (path → kind, ctime), for checkNestedRepos. */
function fakeFs(
  entries: Record<string, { kind: "dir" | "file"; ctimeMs?: number; text?: string }>,
  unreadable = "",
) {
  const renamed: [string, string][] = [];
  const fs: RepoFs = {
    lstat: (p) => entries[p] ? { kind: entries[p].kind, ctimeMs: entries[p].ctimeMs ?? 0 } : undefined,
    list: (p) => {
      if (p === unreadable) return undefined;
      return Object.keys(entries).filter((k) => k.startsWith(p + "/") && !k.slice(p.length + 1).includes("/"))
        .map((k) => ({ name: k.slice(p.length + 1), kind: entries[k].kind }));
    },
    read: (p) => entries[p]?.text,
    real: (p) => p,
    rename: (a, b) => (renamed.push([a, b]), true),
  };
  return { fs, renamed };
}

Deno.test("nested repos: an unreadable directory and a tree deeper than the walk are said, never skipped silently", () => {
  const now = 1_800_000_000_000;
  const e: Record<string, { kind: "dir" | "file"; ctimeMs?: number }> = { "/p/locked": { kind: "dir" } };
  let d = "/p";
  for (let i = 0; i < 300; i++) e[d = `${d}/d`] = { kind: "dir" };
  const { fs } = fakeFs(e, "/p/locked");
  const r = checkNestedRepos({ project: "/p", startMs: now, protectedGitDirs: [] }, fs);
  assertEquals(r.incomplete, true);
  assert(r.lines.some((l) => l.includes("/p/locked") && l.includes("unreadable")), r.lines.join("\n"));
});

Deno.test("nested repos: a hook and an unsafe config changed during the session are moved aside, old ones kept", () => {
  const now = 1_800_000_000_000;
  const { fs, renamed } = fakeFs({
    "/p/s": { kind: "dir" },
    "/p/s/.git": { kind: "dir" },
    "/p/s/.git/HEAD": { kind: "file" },
    "/p/s/.git/objects": { kind: "dir" },
    "/p/s/.git/hooks": { kind: "dir" },
    "/p/s/.git/hooks/pre-commit": { kind: "file", ctimeMs: now + 5 },
    "/p/s/.git/hooks/post-merge": { kind: "file", ctimeMs: now - 60_000 },
    "/p/s/.git/hooks/pre-push.sample": { kind: "file", ctimeMs: now + 5 },
    "/p/s/.git/config": { kind: "file", ctimeMs: now + 5, text: '[core]\n\tfsmonitor = "x"\n' },
  });
  checkNestedRepos({ project: "/p", startMs: now, protectedGitDirs: [] }, fs);
  assertEquals(renamed.map(([a]) => a).sort(), ["/p/s/.git/config", "/p/s/.git/hooks/pre-commit"]);
});

test({
  name:
    "nested repos: the byte-comparing walk finds what the listing walk finds (git-made repos, pointers, bare)",
  ignore: tool("git"),
}, async () => {
  const d = await Deno.realPath(await Deno.makeTempDir());
  try {
    const env = { HOME: d, GIT_CONFIG_NOSYSTEM: "1", PATH: "/usr/local/bin:/usr/bin:/bin" };
    const git = async (...args: string[]) => {
      const r = await new Deno.Command("git", { args, cwd: d, env, stdout: "null", stderr: "piped" })
        .output();
      assertEquals(r.code, 0, new TextDecoder().decode(r.stderr));
    };
    await git("init", "-q", "a/b/sub");
    await git("init", "-q", "--bare", "c/bare");
    await git("init", "-q", "--separate-git-dir", `${d}/gd`, "e");
    await git(
      "-C",
      "a/b/sub",
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@e",
      "commit",
      "-q",
      "--allow-empty",
      "-m",
      "x",
    );
    await git("-C", "a/b/sub", "worktree", "add", "-q", "--detach", `${d}/wt`);
    await Deno.mkdir(`${d}/f/HEAD`, { recursive: true }); // a directory named HEAD is no marker
    await Deno.symlink(`${d}/a/b/sub/.git`, `${d}/link/.git`).catch(async () => {
      await Deno.mkdir(`${d}/link`);
      await Deno.symlink(`${d}/a/b/sub/.git`, `${d}/link/.git`);
    });
    for (const g of ["a/b/sub/.git", "c/bare", "gd", "a/b/sub/.git/worktrees/wt"]) {
      await Deno.mkdir(`${d}/${g}/hooks`, { recursive: true });
      await Deno.writeTextFile(`${d}/${g}/hooks/pre-commit`, "#!/bin/sh\n");
      await Deno.writeTextFile(`${d}/${g}/config`, "[core]\n\tfsmonitor = x\n");
    }
    const runs = [realRepoFs, { ...realRepoFs, scan: undefined }].map((real) => {
      const renamed: string[] = [];
      const fs: RepoFs = { ...real, rename: (a) => (renamed.push(a), true) };
      const r = checkNestedRepos({ project: d, startMs: Date.now() - 5_000, protectedGitDirs: [] }, fs);
      return { renamed: renamed.sort(), entries: r.entries, incomplete: r.incomplete };
    });
    assertEquals(runs[0], runs[1]);
    for (const g of ["a/b/sub/.git", "c/bare", "gd", "a/b/sub/.git/worktrees/wt"]) {
      assert(runs[0].renamed.includes(`${d}/${g}/hooks/pre-commit`), `${g}: ${runs[0].renamed.join(" ")}`);
    }
  } finally {
    await Deno.remove(d, { recursive: true });
  }
});
