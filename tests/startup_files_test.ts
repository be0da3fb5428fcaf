import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { globName, shellSourcedPaths, sshIncludePaths } from "../lib/policy/startup_files.ts";
import { findProtectedPaths, holesOf, type ProtectFs } from "../lib/policy/protected_paths.ts";

const H = "/h";

Deno.test("shell startup files: the files sourced by literal path", () => {
  const table: [string, string[]][] = [
    ["source ~/dot/aliases", ["/h/dot/aliases"]],
    [". ~/dot/aliases", ["/h/dot/aliases"]],
    ['. "$HOME/dot/bash/prompt.sh"', ["/h/dot/bash/prompt.sh"]],
    ["source ${HOME}/dot/x", ["/h/dot/x"]],
    ['source "${HOME}/dot/x y"', ["/h/dot/x y"]],
    ["source '/etc/dot/x'", ["/etc/dot/x"]],
    ["  source /abs/x   # a comment", ["/abs/x"]],
    ["[ -f ~/a ] && . ~/a", ["/h/a"]],
    ["test -r ~/a || true; source ~/b", ["/h/b"]],
    ["if [ -f ~/a ]; then . ~/a; fi", ["/h/a"]],
    ["if [ -f ~/a ]; then\n  . ~/a\nfi", ["/h/a"]],
    ["builtin source ~/a", ["/h/a"]],
    ["source ~/a arg1 arg2", ["/h/a"]],
    ["src=~/a; . \\~/b", []],
    ["# source ~/a", []],
    ["echo source ~/a", []],
    ["source $DOT/a", []],
    ['source "$XDG_CONFIG_HOME/a"', []],
    ["source ~/dot/*.sh", []],
    ["source $(dirname $0)/a", []],
    ["source `pwd`/a", []],
    ["source relative/a", []],
    ["source '$HOME/a'", []],
    ["source $HOMEX/a", []],
    ["source ~other/a", []],
    ['source "unterminated', []],
    [". ~/a\nsource ~/a\n. /b", ["/h/a", "/b"]],
  ];
  for (const [line, want] of table) assertEquals(shellSourcedPaths(line, H), want, JSON.stringify(line));
});

Deno.test("ssh config: the files Include pulls in", () => {
  const table: [string, string[]][] = [
    ["Include ~/dot/ssh/*.conf", ["/h/dot/ssh/*.conf"]],
    ["include config.d/*", ["/h/.ssh/config.d/*"]],
    ["  INCLUDE = /etc/ssh/x", ["/etc/ssh/x"]],
    ['Include "~/dot/a b" ~/c # comment', ["/h/dot/a b", "/h/c"]],
    ["Host x\n  Include ~/dot/host.conf", ["/h/dot/host.conf"]],
    ["Include %d/x", []],
    ["Include ${DOT}/x", []],
    ["Include ~other/x", []],
    ["# Include ~/a", []],
    ["IncludeX ~/a", []],
  ];
  for (const [line, want] of table) assertEquals(sshIncludePaths(line, H), want, JSON.stringify(line));
});

Deno.test("glob names as ssh matches them", () => {
  const table: [string, string, boolean][] = [
    ["*.conf", "a.conf", true],
    ["*.conf", ".a.conf", false],
    ["*.conf", "a.conf.bak", false],
    ["h?st", "host", true],
    ["[ab]*", "b1", true],
    ["[!ab]*", "b1", false],
    [".x*", ".xy", true],
    ["a.b", "axb", false],
  ];
  for (const [p, name, want] of table) assertEquals(globName(p).test(name), want, `${p} ${name}`);
});

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
    list: (p) =>
      [
        ...new Set(
          Object.keys(entries).filter((k) => k.startsWith(p + "/")).map((k) =>
            k.slice(p.length + 1).split("/")[0]
          ),
        ),
      ].filter(Boolean),
    real: (p) => entries[p]?.startsWith("->") ? entries[p].slice(2) : p,
  };
}

Deno.test("protected paths: what the startup files source and Include, by real path, one level", () => {
  const fs = fakeFs({
    "/p/": "",
    "/h/.bashrc": 'source ~/dot/aliases\n. "$HOME/dot/link"\n',
    "/h/dot/aliases": ". ~/dot/second-level\n",
    "/h/dot/link": "->/h/dot/real",
    "/h/.ssh/": "",
    "/h/.ssh/config": "Include ~/dot/ssh/*.conf\nInclude conf.d/[ab]*\n",
    "/h/dot/ssh/one.conf": "ProxyCommand x",
    "/h/dot/ssh/two.txt": "",
    "/h/.ssh/conf.d/a1": "",
    "/h/z/.zshrc": "source ~/dot/zaliases\n",
  });
  const got = findProtectedPaths({ project: "/p", home: H, zdotdir: "/h/z", gnupgHome: "/g" }, fs).map((p) =>
    `${p.scope.kind}:${p.scope.path}`
  );
  for (
    const want of [
      "exact:/h/dot/aliases",
      "exact:/h/dot/real",
      "exact:/h/dot/ssh/one.conf",
      "glob:/h/dot/ssh/*.conf",
      "exact:/h/.ssh/conf.d/a1",
      "tree:/h/.ssh/conf.d",
      "exact:/h/z/.zshrc",
      "exact:/h/z/.zshenv",
      "exact:/h/dot/zaliases",
      "exact:/g/gpg-agent.conf",
      "exact:/g/gpg.conf",
    ]
  ) assert(got.includes(want), `${want} missing: ${got.join(" ")}`);
  for (const not of ["exact:/h/dot/second-level", "exact:/h/dot/ssh/two.txt", "exact:/h/dot/link"]) {
    assert(!got.includes(not), `${not} protected`);
  }
  // A glob scope is a hole in the floor by its directory.
  const holes = holesOf(findProtectedPaths({ project: "/p", home: H }, fs), () => false);
  assert(holes.includes("/h/dot/ssh") && !holes.some((h) => h.includes("*")), holes.join(" "));
});
