import assert from "node:assert/strict";
import { suggestExecScopes, suggestScopes } from "../lib/policy/suggest_scope.ts";

const OPTS = { home: "/home/me", project: "/home/me/src/app" };

Deno.test("suggestScopes: the suggested scope", async (t) => {
  const cases: [string, string][] = [
    // [path, suggested]
    ["/home/me/.npm/_cacache/tmp/x", "/home/me/.npm/_cacache/**"],
    ["/home/me/.npm/_cacache/x", "/home/me/.npm/_cacache/**"],
    ["/home/me/.npm/x", "/home/me/.npm/**"],
    ["/home/me/.cache/pip/http/a/b/x", "/home/me/.cache/pip/**"],
    ["/home/me/.cache/pip/x", "/home/me/.cache/pip/**"],
    ["/home/me/.cache/x", "/home/me/.cache/x"],
    ["/home/me/.config/x/y", "/home/me/.config/x/**"],
    ["/home/me/.config/gh/hosts.yml", "/home/me/.config/gh/**"],
    ["/home/me/.local/share/x/y", "/home/me/.local/share/x/**"],
    ["/home/me/.local/state/x/y/z", "/home/me/.local/state/x/**"],
    ["/home/me/.local/lib/python3/x", "/home/me/.local/lib/**"],
    ["/home/me/.bashrc", "/home/me/.bashrc"],
    ["/home/me/notes.txt", "/home/me/notes.txt"],
    ["/home/me/src/other/x", "/home/me/src/other/**"],
    ["/home/me/src/x", "/home/me/src/x"], // parent holds the project
    ["/home/me/src/app2/f", "/home/me/src/app2/**"], // a sibling of the project
    ["/tmp/x", "/tmp/x"],
    ["/tmp/build-1/a/b", "/tmp/build-1/**"],
    ["/tmp/build-1/x", "/tmp/build-1/**"],
    ["/var/tmp/t/x", "/var/tmp/t/**"],
    ["/dev/shm/sem.x", "/dev/shm/sem.x"],
    ["/etc/hosts", "/etc/hosts"],
    ["/var/lib/x/y", "/var/lib/x/**"],
    ["/usr/local/lib/node_modules/x/package.json", "/usr/local/lib/node_modules/x/**"],
    ["/x", "/x"],
  ];
  for (const [path, want] of cases) {
    await t.step(`${path} → ${want}`, () => {
      const { scopes, suggested } = suggestScopes(path, OPTS);
      assert.equal(scopes[suggested], want);
    });
  }
});

Deno.test("suggestScopes: the arrows go from the file to depth 1", async (t) => {
  const cases: [string, string[]][] = [
    ["/home/me/.npm/_cacache/tmp/x", [
      "/home/me/.npm/_cacache/tmp/x",
      "/home/me/.npm/_cacache/tmp/**",
      "/home/me/.npm/_cacache/**",
      "/home/me/.npm/**",
      "/home/me/**",
      "/home/**",
    ]],
    ["/tmp/x", ["/tmp/x", "/tmp/**"]],
    ["/x", ["/x"]],
  ];
  for (const [path, want] of cases) {
    await t.step(path, () => assert.deepEqual(suggestScopes(path, OPTS).scopes, want));
  }
  await t.step("without home or project", () => {
    const r = suggestScopes("/home/me/.npm/a/b", {});
    assert.equal(r.scopes[r.suggested], "/home/me/.npm/a/**");
  });
  await t.step("home of / is ignored", () => {
    const r = suggestScopes("/etc/x/y", { home: "/" });
    assert.equal(r.scopes[r.suggested], "/etc/x/**");
  });
});

Deno.test("suggestExecScopes", () => {
  assert.deepEqual(suggestExecScopes("/home/me/.local/bin/tool"), {
    scopes: ["/home/me/.local/bin/tool", "/home/me/.local/bin/**"],
    suggested: 0,
  });
  assert.deepEqual(suggestExecScopes("/init"), { scopes: ["/init", "/**"], suggested: 0 });
});
