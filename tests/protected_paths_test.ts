import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  findProtectedPaths,
  gitConfigValue,
  HALLPASS_REASON,
  holesOf,
  protectedHit,
  type ProtectFs,
} from "../lib/policy/protected_paths.ts";
import { privilegedRefusal, privilegedXattr } from "../lib/policy/privileged_bits.ts";
import { WRITE_CALLS } from "../lib/filter/syscall_table.ts";
import { carveFloor, denoDirOf } from "../lib/sandbox/plan.ts";
import type { CarveFs } from "../lib/floor/landlock_carve.ts";
import type { Rule } from "../lib/types.ts";

/** A file system of dirs ("/a/"), files ("/a/f" → text) and symlinks ("/a/l" → "->/target"). */
function fakeFs(entries: Record<string, string>): ProtectFs {
  const kind = (p: string) => {
    if (p + "/" in entries) return "dir" as const;
    const v = entries[p];
    if (v === undefined) return undefined;
    return v.startsWith("->") ? "symlink" as const : "file" as const;
  };
  return {
    kind,
    read: (p) => kind(p) === "file" ? entries[p] : undefined,
    list: (p) => {
      const out = new Set<string>();
      for (const k of Object.keys(entries)) {
        if (k.startsWith(p + "/")) out.add(k.slice(p.length + 1).split("/")[0]);
      }
      return [...out].filter(Boolean);
    },
    real: (p) => {
      const v = entries[p];
      return v?.startsWith("->") ? v.slice(2) : p;
    },
  };
}

const paths = (list: ReturnType<typeof findProtectedPaths>) =>
  list.map((p) => `${p.scope.kind === "tree" ? p.scope.path + "/**" : p.scope.path}`);

Deno.test("protected paths: a plain repository", () => {
  const fs = fakeFs({ "/p/": "", "/p/.git/": "", "/p/.git/config": "[core]\n", "/p/.git/hooks/": "" });
  const got = paths(findProtectedPaths({ project: "/p", home: "/h" }, fs));
  for (
    const want of [
      "/p/.git",
      "/p/.git/hooks/**",
      "/p/.git/config",
      "/p/.git/info/attributes",
      "/p/.git/config.worktree",
      "/p/.hallpass/**",
    ]
  ) assert(got.includes(want), `${want} missing: ${got}`);
});

Deno.test("protected paths: a linked worktree protects its .git file, its git dir and the common one", () => {
  const fs = fakeFs({
    "/p/": "",
    "/p/.git": "gitdir: /main/.git/worktrees/p\n",
    "/main/.git/worktrees/p/": "",
    "/main/.git/worktrees/p/commondir": "../..\n",
    "/main/.git/": "",
    "/main/.git/config": "",
  });
  const got = paths(findProtectedPaths({ project: "/p", home: "/h" }, fs));
  for (
    const want of [
      "/p/.git",
      "/main/.git/hooks/**",
      "/main/.git/config",
      "/main/.git/worktrees/p/config.worktree",
      "/main/.git/worktrees/p/commondir",
    ]
  ) assert(got.includes(want), `${want} missing: ${got}`);
});

Deno.test("protected paths: submodules under modules/ and their .git files; core.hooksPath", () => {
  const fs = fakeFs({
    "/p/": "",
    "/p/.git/": "",
    "/p/.git/config": "[core]\n\thooksPath = tools/hooks\n",
    "/p/.git/modules/": "",
    "/p/.git/modules/lib/": "",
    "/p/.git/modules/lib/a/": "",
    "/p/.git/modules/lib/a/HEAD": "ref: x",
    "/p/.git/modules/lib/a/config": '[core]\n\tworktree = ../../../../lib/a\n[remote "origin"]\n\turl = x\n',
  });
  const got = paths(findProtectedPaths({ project: "/p", home: "/h" }, fs));
  for (
    const want of [
      "/p/.git/modules/lib/a/hooks/**",
      "/p/.git/modules/lib/a/config",
      "/p/lib/a/.git",
      "/p/tools/hooks/**",
    ]
  ) assert(got.includes(want), `${want} missing: ${got}`);
});

Deno.test("protected paths: core.hooksPath of the person's config, relative to the project; ~ expanded", () => {
  const fs = fakeFs({ "/p/": "", "/h/.gitconfig": "[core] hooksPath = ~/hooks\n" });
  assert(paths(findProtectedPaths({ project: "/p", home: "/h" }, fs)).includes("/h/hooks/**"));
});

Deno.test("protected paths: files a repository's config includes are protected too", () => {
  const fs = fakeFs({
    "/p/": "",
    "/p/.git/": "",
    "/p/.git/config":
      '[include]\n\tpath = ../.gitconfig-shared\n[includeIf "onbranch:main"]\n  path = /p/tools/git.cfg\n',
  });
  const got = paths(findProtectedPaths({ project: "/p", home: "/h" }, fs));
  assert(got.includes("/p/.gitconfig-shared"), got.join(" "));
  assert(got.includes("/p/tools/git.cfg"), got.join(" "));
});

Deno.test("protected paths: files the person's own git config includes are protected too (one level)", () => {
  const fs = fakeFs({
    "/p/": "",
    "/h/.gitconfig":
      '[include]\n\tpath = /p/git/config\n\tpath = ~/dot.cfg\n[includeIf "gitdir:~/w/"]\n\tpath = work.cfg\n',
    "/x/git/config": "[include]\n\tpath = /p/deeper.cfg\n",
    "/p/git/config": "[core]\n\thooksPath = ~/p/hooks\n",
  });
  const got = paths(findProtectedPaths({ project: "/p", home: "/h", xdgConfig: "/x" }, fs));
  assert(got.includes("/p/git/config"), got.join(" "));
  assert(got.includes("/h/dot.cfg"), got.join(" ")); // ~ expanded
  assert(got.includes("/h/work.cfg"), got.join(" ")); // relative to the including file
  assert(got.includes("/p/deeper.cfg"), got.join(" ")); // $XDG_CONFIG_HOME/git/config's include
  assert(got.includes("/h/p/hooks/**"), got.join(" ")); // core.hooksPath set in an included file
});

Deno.test("git config reading: sections, quotes, comments, last one wins, subsections skipped", () => {
  const t = '[core]\n  hooksPath = "a b" # c\n[core "x"]\n hooksPath = no\n[Core]\nHOOKSPATH = last ; c\n';
  assertEquals(gitConfigValue(t, "core", "hooksPath"), "last");
  assertEquals(gitConfigValue('[core]\n\thooksPath = "a b" # c\n', "core", "hookspath"), "a b");
  assertEquals(gitConfigValue('[core "x"]\n hooksPath = no\n', "core", "hooksPath"), undefined);
});

const rule = (target: string, kind: "cli" | "builtin" = "cli"): Rule => ({
  effect: "allow",
  op: "write",
  target,
  source: kind === "cli" ? { kind: "cli", option: "--allow-path" } : { kind: "builtin", what: "x" },
});

Deno.test("protectedHit: inside, at, above (names only), and a rule naming it on purpose", () => {
  const list = [
    { scope: { kind: "tree" as const, path: "/p/.git/hooks" }, reason: "git" },
    { scope: { kind: "exact" as const, path: "/p/.git/config" }, reason: "git" },
    { scope: { kind: "tree" as const, path: "/p/.hallpass" }, reason: HALLPASS_REASON },
  ];
  const project = rule("/p/**");
  assert(protectedHit(list, "/p/.git/hooks/pre-commit", false, project));
  assert(protectedHit(list, "/p/.git/hooks", false, project));
  assert(protectedHit(list, "/p/.git/config", false, project));
  assert(!protectedHit(list, "/p/.git/config.lock", false, project));
  assert(!protectedHit(list, "/p/.git", false, project), "a mkdir of .git is not a write of its hooks");
  assert(protectedHit(list, "/p/.git", true, project), "a rename of .git moves its hooks");
  assert(protectedHit(list, "/p", true, project));
  assert(!protectedHit(list, "/p/.gitx", true, project));
  assert(protectedHit(list, "/p/.hallpass", false, project));
  assert(!protectedHit(list, "/p/.git/hooks/x", false, rule("/p/.git/hooks/**")), "allowed on purpose");
  assert(!protectedHit(list, "/p/.git/hooks/x", false, rule("/p/.git/hooks/x")), "allowed on purpose");
  assert(protectedHit(list, "/p/.git/hooks/x", false, rule("/p/.git/**")), "a wider rule is not on purpose");
  assert(protectedHit(list, "/p/.git/hooks/x", false, rule("/p/.git/hooks/**", "builtin")));
});

Deno.test("holes: trees and files, not an existing directory named exactly (.git)", () => {
  const list = [
    { scope: { kind: "exact" as const, path: "/p/.git" }, reason: "" },
    { scope: { kind: "tree" as const, path: "/p/.git/hooks" }, reason: "" },
    { scope: { kind: "exact" as const, path: "/p/.git/config" }, reason: "" },
  ];
  assertEquals(holesOf(list, (p) => p === "/p/.git"), ["/p/.git/hooks", "/p/.git/config"]);
});

Deno.test("carveFloor: the project is granted entry by entry around the holes; other floor entries stay", () => {
  const tree: Record<string, string[]> = {
    "/": ["p/", "other/", "dev/"],
    "/p": ["src/", "README", ".git/", "link@"],
    "/p/.git": ["objects/", "config", "hooks/", "HEAD"],
  };
  const fs: CarveFs = {
    list: (d) =>
      tree[d]?.map((e) => ({
        name: e.replace(/[\/@]$/, ""),
        kind: e.endsWith("/") ? "dir" : e.endsWith("@") ? "symlink" : "file",
      })),
  };
  const r = carveFloor(
    [
      { kind: "tree", path: "/p" },
      { kind: "exact", path: "/dev/null" },
      { kind: "tree", path: "/other" },
    ],
    ["/p/.git/hooks", "/p/.git/config", "/p/.hallpass"],
    fs,
  );
  const got = r.floor.map((f) => `${f.kind}:${f.path}`).sort();
  assertEquals(got, [
    "exact:/dev/null",
    "tree:/other",
    "tree:/p/.git/objects",
    "tree:/p/src",
  ]);
  assertEquals(r.carved.sort(), ["/p", "/p/.git"]);
});

const call = (name: string) => WRITE_CALLS.find((c) => c.name === name)!;
const args = (...a: number[]) => [...a, 0, 0, 0, 0, 0, 0].slice(0, 6).map(BigInt);

Deno.test("privileged bits: setuid/setgid in chmod and create modes, devices; not otherwise", () => {
  assertEquals(privilegedRefusal(call("chmod"), args(0, 0o4755)), "setuid/setgid bits");
  assertEquals(privilegedRefusal(call("fchmod"), args(3, 0o2755)), "setuid/setgid bits");
  assertEquals(privilegedRefusal(call("fchmodat"), args(-100, 0, 0o6755)), "setuid/setgid bits");
  assertEquals(privilegedRefusal(call("chmod"), args(0, 0o1777)), null);
  assertEquals(privilegedRefusal(call("chmod"), args(0, 0o755)), null);
  assertEquals(privilegedRefusal(call("openat"), args(-100, 0, 0o101, 0o4755)), "setuid/setgid bits");
  assertEquals(
    privilegedRefusal(call("openat"), args(-100, 0, 0o1, 0o4755)),
    null,
    "no O_CREAT: mode unused",
  );
  assertEquals(privilegedRefusal(call("creat"), args(0, 0o2755)), "setuid/setgid bits");
  assertEquals(privilegedRefusal(call("mknod"), args(0, 0o020666)), "a device node");
  assertEquals(privilegedRefusal(call("mknodat"), args(-100, 0, 0o060666)), "a device node");
  assertEquals(privilegedRefusal(call("mknod"), args(0, 0o010644)), null, "a FIFO");
  assertEquals(privilegedRefusal(call("mkdir"), args(0, 0o2755)), null, "mkdir drops the bits itself");
  // The high bits of a register are not part of the mode.
  assertEquals(privilegedRefusal(call("chmod"), [0n, 0x1_0000_01edn, 0n, 0n, 0n, 0n]), null);
});

Deno.test("privileged xattrs: security.* and trusted.*, as text or bytes", () => {
  assert(privilegedXattr("security.capability"));
  assert(privilegedXattr(new TextEncoder().encode("trusted.overlay.opaque")));
  assert(!privilegedXattr("user.x"));
  assert(!privilegedXattr(new TextEncoder().encode("securit")));
});

Deno.test("protected paths: run from source, the checkout and Deno's cache are hallpass's own program", () => {
  const fs = fakeFs({ "/p/": "", "/src/hallpass/": "", "/h/.cache/deno/": "" });
  const got = findProtectedPaths(
    { project: "/p", home: "/h", ownTree: "/src/hallpass", denoDir: "/h/.cache/deno" },
    fs,
  );
  const own = got.filter((x) => x.reason.includes("hallpass's own program")).map((x) => x.scope.path);
  assertEquals(own, ["/src/hallpass", "/h/.cache/deno"]);
  // A wider rule (an answer's ~/.cache/**) does not cover it: only a rule naming it does.
  const wide: Rule = {
    effect: "allow",
    op: "write",
    target: "/h/.cache/**",
    source: { kind: "cli", option: "x" },
  };
  assert(protectedHit(got, "/h/.cache/deno/gen/file/x.js", false, wide) !== null);
  assertEquals(denoDirOf((k) => ({ DENO_DIR: "/d" } as Record<string, string>)[k], "/h"), "/d");
  assertEquals(denoDirOf((k) => ({ XDG_CACHE_HOME: "/x" } as Record<string, string>)[k], "/h"), "/x/deno");
  assertEquals(denoDirOf(() => undefined, "/h"), "/h/.cache/deno");
  // Compiled: the binary itself.
  const fs2 = fakeFs({ "/p/": "", "/h/.local/bin/hallpass": "ELF" });
  const bin = findProtectedPaths({ project: "/p", home: "/h", ownBinary: "/h/.local/bin/hallpass" }, fs2);
  assert(bin.some((x) => x.scope.path === "/h/.local/bin/hallpass" && x.reason.includes("own program")));
});
