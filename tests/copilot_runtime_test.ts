import { deepEqual as assertEquals } from "node:assert/strict";
import { copilotSearchHolders } from "../lib/sandbox/copilot_runtime.ts";
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
