/**
 * `hallpass agent --rules DIR` checks every rules file at start (lib/agent/agent_cli.ts checkRulesDir): a bad
 * line stops the agent with the file and line, instead of failing each pod that uses the file later.
 * `protect PATH` / `allow read PATH` are accepted (pods on the protect profile enforce them: docs/kubernetes.md).
 */
import assert from "node:assert/strict";
import { parseAgentArgs } from "../lib/agent/agent_cli.ts";
import { UsageError } from "../lib/types.ts";
import { podReadProtection, protectionUnheld } from "../lib/agent/pod_reads.ts";
import { profileMetadata } from "../lib/agent/profile.ts";

Deno.test("agent --rules: a bad line stops the agent at start, naming the file and line", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/default.rules`, "allow write /tmp/**\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
    await Deno.writeTextFile(`${dir}/team.rules`, "allow exec /usr/bin/**\nprotect /etc/app/key\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
    await Deno.writeTextFile(`${dir}/team.rules`, "allow exec /usr/bin/**\nprotect /etc/app/key for 5m\n");
    assert.throws(
      () => parseAgentArgs(["--rules", dir]),
      (e: Error) =>
        e instanceof UsageError &&
        e.message.startsWith(`agent: ${dir}/team.rules:2: "protect PATH" cannot expire`),
    );
    await Deno.writeTextFile(`${dir}/team.rules`, "allow read /etc/app\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
    // As a ConfigMap mounts them: symlinks into ..data.
    await Deno.mkdir(`${dir}/..data`);
    await Deno.writeTextFile(`${dir}/..data/ns.pod.rules`, "\n\nfrobnicate /etc/app\n");
    await Deno.symlink("..data/ns.pod.rules", `${dir}/ns.pod.rules`);
    assert.throws(() => parseAgentArgs(["--rules", dir]), /ns\.pod\.rules:3: expected "allow"/);
    await Deno.remove(`${dir}/ns.pod.rules`);
    // Other files in the directory (a ConfigMap's ..data links, notes) are not rules.
    await Deno.writeTextFile(`${dir}/README`, "frobnicate nothing\n");
    assert.equal(parseAgentArgs(["--rules", dir]).kind, "run");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a pod's protections: allow read lifts or carves; a profile that does not trap reads cannot hold them", () => {
  const src = { kind: "file" as const, file: "f", line: 1, project: false };
  const rp = podReadProtection([
    { effect: "protect", path: "/secret", source: src },
    { effect: "allow", path: "/secret/public", source: src },
    { effect: "protect", path: "/etc/app/key", source: src },
    { effect: "allow", path: "/etc/app", source: src },
  ]);
  assert.deepEqual(rp, { protect: ["/secret"], readable: ["/secret/public"] });
  assert.equal(protectionUnheld(profileMetadata({ reads: true }), rp.protect), null);
  assert.equal(protectionUnheld(profileMetadata({ reads: true, connect: true }), rp.protect), null);
  assert.equal(protectionUnheld(profileMetadata(), []), null);
  assert.match(protectionUnheld(profileMetadata(), rp.protect)!, /protect \/secret .*hallpass-protect\.json/);
  assert.match(protectionUnheld("", rp.protect)!, /does not trap reads/);
});
