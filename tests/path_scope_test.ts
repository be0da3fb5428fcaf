import assert from "node:assert/strict";
import {
  formatScope,
  globCovers,
  isGlobTarget,
  normalizePath,
  parsePathScope,
  scopeCovers,
  scopeSpecificity,
} from "../lib/policy/path_scope.ts";
import { type PathScope, UsageError } from "../lib/types.ts";

const HOME = "/home/me";

Deno.test("normalizePath", async (t) => {
  const cases: [string, string, string][] = [
    // [input, cwd, expected]
    ["/a/b", "/x", "/a/b"],
    ["b/c", "/a", "/a/b/c"],
    ["./b/./c/", "/a", "/a/b/c"],
    ["//a///b//", "/", "/a/b"],
    ["../b", "/a/x", "/a/b"],
    ["/a/b/../../..", "/", "/"],
    ["/../../etc/passwd", "/", "/etc/passwd"],
    ["../../../../etc", "/home/me/proj", "/etc"],
    ["/a/b/../c/./d/..", "/", "/a/c"],
    ["..", "/", "/"],
    [".", "/a/b", "/a/b"],
    ["/", "/x", "/"],
    ["~", "/x", HOME],
    ["~/", "/x", HOME],
    ["~/.npm/../.cache", "/x", HOME + "/.cache"],
    ["~user/x", "/w", "/w/~user/x"],
    ["a~/b", "/w", "/w/a~/b"],
    ["/a/...", "/", "/a/..."],
    ["/a/.b/..c", "/", "/a/.b/..c"],
  ];
  for (const [input, cwd, want] of cases) {
    await t.step(`${input} in ${cwd}`, () => assert.equal(normalizePath(input, cwd, HOME), want));
  }
  await t.step(
    "~ without home is an error",
    () => assert.throws(() => normalizePath("~/x", "/"), UsageError),
  );
});

Deno.test("parsePathScope", async (t) => {
  const dirs = new Set(["/proj/dir", "/home/me/.npm", "/"]);
  const opts = { cwd: "/proj", home: HOME, isDir: (p: string) => dirs.has(p) };
  const cases: [string, PathScope][] = [
    ["/a/b/**", { kind: "tree", path: "/a/b" }],
    ["/a/b", { kind: "exact", path: "/a/b" }],
    ["/a/b/", { kind: "tree", path: "/a/b" }],
    ["dir", { kind: "tree", path: "/proj/dir" }],
    ["dir/file", { kind: "exact", path: "/proj/dir/file" }],
    ["~/.npm", { kind: "tree", path: "/home/me/.npm" }],
    ["~/.npm/**", { kind: "tree", path: "/home/me/.npm" }],
    ["~/**", { kind: "tree", path: HOME }],
    ["/**", { kind: "tree", path: "/" }],
    ["./**", { kind: "tree", path: "/proj" }],
    ["../x/../../etc/shadow", { kind: "exact", path: "/etc/shadow" }],
    ["/a/b/../../../**", { kind: "tree", path: "/" }],
    ["/", { kind: "tree", path: "/" }],
    ["/a b/c#d", { kind: "exact", path: "/a b/c#d" }],
  ];
  for (const [text, want] of cases) {
    await t.step(`${text} → ${formatScope(want)}`, () => assert.deepEqual(parsePathScope(text, opts), want));
  }
  const errors: [string, RegExp][] = [
    ["", /^empty path$/],
    ["/a\0b", /NUL/],
    ["/a/**/b", /"\*" is not allowed/],
    ["/a/*/b", /"\*" is not allowed/],
    ["/a/b*c*", /"\*" is not allowed/],
    ["/a/b*/", /"\*" is not allowed/],
    ["/a/b*/**", /"\*" is not allowed/],
    ["/a/?", /"\?" is not allowed/],
    ["/a/[ab]", /"\[" is not allowed/],
    ["**", /bad path "\*\*"/],
    ["/a/***", /"\*" is not allowed/],
  ];
  for (const [text, re] of errors) {
    await t.step(`rejects ${JSON.stringify(text)}`, () => {
      assert.throws(
        () => parsePathScope(text, opts),
        (e: Error) => e instanceof UsageError && re.test(e.message),
      );
    });
  }
  await t.step("error messages are one line, even for hostile input", () => {
    try {
      parsePathScope("/x\n*".repeat(1000), opts);
      assert.fail("no error");
    } catch (e) {
      assert.ok((e as Error).message.length < 200);
      assert.ok(!(e as Error).message.includes("\n"));
    }
  });
  await t.step("without isDir an existing directory is exact", () => {
    assert.deepEqual(parsePathScope("/proj/dir", { cwd: "/" }), { kind: "exact", path: "/proj/dir" });
  });
});

Deno.test("scopeCovers", async (t) => {
  const tree = (path: string): PathScope => ({ kind: "tree", path });
  const exact = (path: string): PathScope => ({ kind: "exact", path });
  const cases: [PathScope, string, boolean][] = [
    [tree("/a"), "/a", true],
    [tree("/a"), "/a/b", true],
    [tree("/a"), "/a/b/c/d", true],
    [tree("/a"), "/ab", false],
    [tree("/a"), "/", false],
    [tree("/a/b"), "/a", false],
    [tree("/"), "/", true],
    [tree("/"), "/anything/at/all", true],
    [exact("/a"), "/a", true],
    [exact("/a"), "/a/b", false],
    [exact("/a/b"), "/a", false],
    [exact("/"), "/", true],
    [tree("/home/me/.npm"), "/home/me/.npmrc", false],
    [tree("/home/me/.npm"), "/home/me/.npm/_cacache/x", true],
  ];
  for (const [scope, path, want] of cases) {
    await t.step(`${formatScope(scope)} ${want ? "covers" : "does not cover"} ${path}`, () => {
      assert.equal(scopeCovers(scope, path), want);
    });
  }
});

Deno.test("formatScope and scopeSpecificity", async (t) => {
  const cases: [PathScope, string, number][] = [
    [{ kind: "tree", path: "/" }, "/**", 0],
    [{ kind: "exact", path: "/" }, "/", 1],
    [{ kind: "tree", path: "/a" }, "/a/**", 2],
    [{ kind: "exact", path: "/a" }, "/a", 3],
    [{ kind: "tree", path: "/a/b" }, "/a/b/**", 4],
    [{ kind: "exact", path: "/a/b" }, "/a/b", 5],
  ];
  for (const [scope, text, spec] of cases) {
    await t.step(text, () => {
      assert.equal(formatScope(scope), text);
      assert.equal(scopeSpecificity(scope), spec);
      assert.deepEqual(parsePathScope(text, { cwd: "/" }), scope);
    });
  }
});

Deno.test("huge paths stay linear", () => {
  const deep = "/" + Array.from({ length: 50_000 }, (_, i) => `d${i}`).join("/");
  const t0 = performance.now();
  const s = parsePathScope(deep + "/../x/**", { cwd: "/" });
  assert.equal(s.kind, "tree");
  assert.ok(scopeCovers(s, s.path + "/y"));
  // Linear: ~0.1 s here; quadratic would take minutes. The bound leaves room for a loaded machine.
  assert.ok(performance.now() - t0 < 5000, `${performance.now() - t0} ms`);
});

Deno.test("glob: one * in the last component, within that one directory", async (t) => {
  const opts = { cwd: "/proj", home: HOME, isDir: () => true };
  const parses: [string, string][] = [
    ["~/.claude.json*", "/home/me/.claude.json*"],
    ["/tmp/claude-*-cwd", "/tmp/claude-*-cwd"],
    ["/a/./b/../*.txt", "/a/*.txt"],
    ["x*", "/proj/x*"],
    ["/*", "/*"],
    ["/a/*", "/a/*"],
  ];
  for (const [text, want] of parses) {
    await t.step(`${text} → ${want} (isDir never makes it a tree)`, () => {
      const s = parsePathScope(text, opts);
      assert.deepEqual(s, { kind: "glob", path: want });
      assert.equal(formatScope(s), want);
      assert.deepEqual(parsePathScope(formatScope(s), { cwd: "/" }), s, "round trip");
    });
  }
  const covers: [string, string, boolean][] = [
    ["/home/me/.claude.json*", "/home/me/.claude.json", true], // * matches nothing too
    ["/home/me/.claude.json*", "/home/me/.claude.json.tmp.123.abc", true],
    ["/home/me/.claude.json*", "/home/me/.claude.json.lock", true],
    ["/home/me/.claude.json*", "/home/me/.claude.jso", false],
    ["/home/me/.claude.json*", "/home/me/.claude.json.d/x", false], // never across "/"
    ["/home/me/.claude.json*", "/home/me/.claude.json/x", false],
    ["/home/me/.claude.json*", "/home/me/sub/.claude.json", false],
    ["/home/me/.claude.json*", "/home/me", false],
    ["/home/me/.claude.json*", "/home/mex/.claude.json", false],
    ["/tmp/claude-*-cwd", "/tmp/claude-8c4b-cwd", true],
    ["/tmp/claude-*-cwd", "/tmp/claude--cwd", true],
    ["/tmp/claude-*-cwd", "/tmp/claude-cwd", false], // prefix and suffix may not overlap
    ["/tmp/claude-*-cwd", "/tmp/claude-8c4b-cwd.x", false],
    ["/tmp/claude-*-cwd", "/tmp/claude-a/b-cwd", false],
    ["/tmp/claude-*-cwd", "/tmp/x/claude-8c4b-cwd", false],
    ["/tmp/claude-*-cwd", "/var/tmp/claude-8c4b-cwd", false],
    ["/*", "/etc", true],
    ["/*", "/etc/passwd", false],
    ["/a/*", "/a", false],
    ["/a/*", "/a/b", true],
    ["/a/*", "/a/b/c", false],
  ];
  for (const [pattern, path, want] of covers) {
    await t.step(`${pattern} ${want ? "covers" : "does not cover"} ${path}`, () => {
      assert.equal(scopeCovers({ kind: "glob", path: pattern }, path), want);
      assert.equal(globCovers(pattern, path), want);
    });
  }
  await t.step("specificity: deeper than the directory tree, below an exact name", () => {
    const g = scopeSpecificity({ kind: "glob", path: "/a/b*" });
    assert.ok(g > scopeSpecificity({ kind: "tree", path: "/a" }));
    assert.ok(g < scopeSpecificity({ kind: "exact", path: "/a/bc" }));
  });
  await t.step("isGlobTarget: a * in the last component, not a trailing /**", () => {
    assert.equal(isGlobTarget("/a/b*"), true);
    assert.equal(isGlobTarget("/a/**"), false);
    assert.equal(isGlobTarget("/a*/b"), false);
    assert.equal(isGlobTarget("/a/b"), false);
  });
});
