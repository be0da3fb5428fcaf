/**
 * `hallpass agent --rules DIR` checks every rules file at start (lib/agent/agent_cli.ts checkRulesDir): a
 * `protect` or `allow read` line, which a pod cannot enforce (no Landlock floor: docs/kubernetes.md), stops
 * the agent with the file and line, instead of failing each pod that uses the file later.
 */
import assert from "node:assert/strict";
import { parseAgentArgs } from "../lib/agent/agent_cli.ts";
import { UsageError } from "../lib/types.ts";

Deno.test("agent --rules: a read-protection line stops the agent at start, naming the file and line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/default.rules`, "allow write /tmp/**\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
    await Deno.writeTextFile(`${dir}/team.rules`, "allow exec /usr/bin/**\nprotect /etc/app/key\n");
    assert.throws(
      () => parseAgentArgs(["--rules", dir]),
      (e: Error) =>
        e instanceof UsageError &&
        e.message ===
          `agent: ${dir}/team.rules:2: "protect PATH" is not available in a pod's rules: read protection needs the sandbox's Landlock floor, which a pod does not have (docs/kubernetes.md)`,
    );
    // As a ConfigMap mounts them: symlinks into ..data.
    await Deno.mkdir(`${dir}/..data`);
    await Deno.writeTextFile(`${dir}/..data/ns.pod.rules`, "\n\nprotect /etc/app\n");
    await Deno.symlink("..data/ns.pod.rules", `${dir}/ns.pod.rules`);
    assert.throws(
      () => parseAgentArgs(["--rules", dir]),
      /ns\.pod\.rules:3: "protect PATH" is not available/,
    );
    await Deno.remove(`${dir}/ns.pod.rules`);
    await Deno.writeTextFile(`${dir}/team.rules`, "allow read /etc/app\n");
    assert.throws(
      () => parseAgentArgs(["--rules", dir]),
      /team\.rules:1: "allow read PATH" is not available/,
    );
    // Other files in the directory (a ConfigMap's ..data links, notes) are not rules.
    await Deno.writeTextFile(`${dir}/team.rules`, "allow write /var/cache/app/**\n");
    await Deno.writeTextFile(`${dir}/README`, "protect nothing\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
