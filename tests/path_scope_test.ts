import assert from "node:assert/strict";
import {
  formatScope,
  normalizePath,
  parsePathScope,
  scopeCovers,
  scopeSpecificity,
} from "../lib/path_scope.ts";
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
    ["/a/*.txt", /"\*" is not allowed/],
    ["/a/**/b", /"\*" is not allowed/],
    ["/a/?", /"\?" is not allowed/],
    ["/a/[ab]", /"\[" is not allowed/],
    ["/a/*", /"\*" is not allowed/],
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
  assert.ok(performance.now() - t0 < 500);
});
