import { deepEqual as assertEquals } from "node:assert/strict";
import { checkCopilotRuntime, copilotSearchHolders } from "../lib/sandbox/copilot_runtime.ts";
import { agentEnv, COPILOT_SANDBOX_PKG } from "../lib/policy/agent_recipes.ts";

const H = "/home/u";

Deno.test("copilot runtime: the search list copilot outside reads, in its loader's order, with the person's env", () => {
  assertEquals(copilotSearchHolders(H, () => undefined), [`${H}/.cache/copilot`, `${H}/.copilot`]);
  const env: Record<string, string> = {
    COPILOT_PKG_CACHE_HOME: "/p//",
    COPILOT_CACHE_HOME: "/c",
    XDG_CACHE_HOME: "/x",
    COPILOT_HOME: "/h",
  };
  assertEquals(copilotSearchHolders(H, (k) => env[k]), [
    "/p",
    "/c",
    "/x/copilot",
    `${H}/.cache/copilot`,
    "/h",
    `${H}/.copilot`,
  ]);
});

Deno.test("copilot runtime: relative or dotted values are left out; duplicates once", () => {
  const env: Record<string, string> = {
    COPILOT_PKG_CACHE_HOME: "rel",
    COPILOT_CACHE_HOME: "/a/../b",
    XDG_CACHE_HOME: "",
    COPILOT_HOME: `${H}/.copilot/`,
  };
  assertEquals(copilotSearchHolders(H, (k) => env[k]), [`${H}/.cache/copilot`, `${H}/.copilot`]);
});

Deno.test("copilot recipe: sessions unpack copilot's runtime in their own directory", () => {
  assertEquals(agentEnv("copilot", H), [{
    name: "COPILOT_PKG_CACHE_HOME",
    dir: `${H}/${COPILOT_SANDBOX_PKG}`,
  }]);
  assertEquals(agentEnv("claude", H), []);
});

/** A made-up tree: `dirs` maps a directory to its entries (all directories), `fresh` the paths made in the session. */
function fakeFs(dirs: Record<string, string[]>, fresh: Set<string>, moves: string[]) {
  return {
    lstat: (p: string) => {
      const at = p.lastIndexOf("/");
      return p in dirs || dirs[p.slice(0, at)]?.includes(p.slice(at + 1))
        ? { kind: "dir" as const, ctimeMs: fresh.has(p) ? 10_000_000 : 0 }
        : undefined;
    },
    list: (p: string) =>
      dirs[p]?.map((name) => ({ name, kind: "dir" as const })) ?? (p in dirs ? [] : undefined),
    read: () => undefined,
    realPath: (p: string) => p,
    moveInto: (from: string, to: string, name: string) => (moves.push(`${from} -> ${to}/${name}`), true),
  };
}

Deno.test("copilot runtime: a crowd of version directories made in the session is moved whole, in one line", () => {
  const pkg = `${H}/.copilot/pkg`, plat = `${pkg}/linux-x64`;
  const many = Array.from({ length: 150 }, (_, i) => `9.9.${i}`);
  const moves: string[] = [];
  const fresh = new Set([plat, ...many.map((v) => `${plat}/${v}`)]);
  const fs = fakeFs({ [`${H}/.copilot`]: ["pkg"], [pkg]: ["linux-x64"], [plat]: many }, fresh, moves);
  const lines = checkCopilotRuntime(H, () => undefined, 10_000_000, fs as never);
  assertEquals(moves, [`${plat} -> ${pkg}.hallpass-quarantined/linux-x64`]);
  assertEquals(lines.length, 1);
  assertEquals(lines[0].includes("150 entries"), true);
  // A few: each one its own line (the control).
  const few = many.slice(0, 3);
  const moves2: string[] = [];
  const fs2 = fakeFs(
    { [`${H}/.copilot`]: ["pkg"], [pkg]: ["linux-x64"], [plat]: few },
    new Set([plat, ...few.map((v) => `${plat}/${v}`)]),
    moves2,
  );
  assertEquals(checkCopilotRuntime(H, () => undefined, 10_000_000, fs2 as never).length, 3);
  assertEquals(moves2.length, 3);
});
