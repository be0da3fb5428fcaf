/**
 * An agent's first-start files (lib/sandbox/agent_start_files.ts): only where the directory is carved, made
 * without following or replacing anything, and which paths are kept in place; the agent owning a path.
 */
import assert from "node:assert/strict";
import { agentOwning, makeStartFiles, startFilesInCarved } from "../lib/sandbox/agent_start_files.ts";
import { agentRules, agentStartFiles } from "../lib/policy/agent_recipes.ts";

Deno.test("start files: claude's ~/.claude.json as {}, none for the other recipes", () => {
  assert.deepEqual(agentStartFiles("claude", "/home/me"), [{
    path: "/home/me/.claude.json",
    content: "{}\n",
  }]);
  // CLAUDE_CONFIG_DIR set: claude keeps its file there, and nothing is made in $HOME
  assert.deepEqual(
    agentStartFiles("claude", "/home/me", (k) => k === "CLAUDE_CONFIG_DIR" ? "/x" : undefined),
    [],
  );
  for (const a of ["codex", "gemini", "copilot", "nosuch"]) {
    assert.deepEqual(agentStartFiles(a, "/home/me"), []);
  }
});

Deno.test("start files: only in a carved directory (a protection strictly below, not shared)", () => {
  const f = [{ path: "/home/me/.claude.json", content: "{}\n" }];
  assert.deepEqual(startFilesInCarved(f, ["/home/me/.ssh"], () => false), f);
  assert.deepEqual(startFilesInCarved(f, ["/home/other/.ssh"], () => false), []);
  assert.deepEqual(startFilesInCarved(f, ["/home/me"], () => false), []); // the home itself protected: no
  assert.deepEqual(startFilesInCarved(f, ["/home/me/.ssh"], (d) => d === "/home/me"), []);
});

Deno.test("start files: made 0600 when missing; a file there is kept; a symlink or a directory is neither", () => {
  const d = Deno.makeTempDirSync();
  try {
    Deno.writeTextFileSync(`${d}/there`, "mine");
    Deno.symlinkSync(`${d}/target`, `${d}/link`);
    Deno.mkdirSync(`${d}/dir`);
    const kept = makeStartFiles(
      ["new", "there", "link", "dir"].map((n) => ({ path: `${d}/${n}`, content: "{}\n" })),
    );
    assert.deepEqual(kept, [`${d}/new`, `${d}/there`]);
    assert.equal(Deno.readTextFileSync(`${d}/new`), "{}\n");
    assert.equal(Deno.statSync(`${d}/new`).mode! & 0o077, 0);
    assert.equal(Deno.readTextFileSync(`${d}/there`), "mine");
    assert.throws(() => Deno.lstatSync(`${d}/target`)); // nothing made through the link
  } finally {
    Deno.removeSync(d, { recursive: true });
  }
});

Deno.test("agentOwning: a path a recipe's write rule covers names its agent", () => {
  const rules = [
    ...agentRules("claude", { home: "/home/me", cwd: "/p" }),
    ...agentRules("codex", { home: "/home/me", cwd: "/p" }),
  ];
  assert.equal(agentOwning(rules, "/home/me/.claude.json"), "claude");
  assert.equal(agentOwning(rules, "/home/me/.codex/x"), "codex");
  assert.equal(agentOwning(rules, "/home/me/.bashrc"), undefined);
});
