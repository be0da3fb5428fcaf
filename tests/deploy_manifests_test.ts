// deploy/: every Kubernetes manifest against the Kubernetes API's own schemas, the seccomp profiles against the
// OCI runtime-spec's seccomp schema, and the files against each other (socket, paths, names, ports, rules).
//
// Where the schemas come from:
// * Kubernetes: the npm package kubernetes-models (pinned here: test-only packages stay out of deno.json), whose validators are compiled from the
//   Kubernetes OpenAPI document and whose TypeScript interfaces are generated from the same document. The
//   validators check types, enums and required fields but let unknown fields through; the interfaces catch
//   those (a misspelled `hostPid` is "not a known property"), so the manifests are also type-checked, once,
//   with `deno check`, as the API server's strict field validation would reject them.
// * OCI: tests/schemas/oci-seccomp.schema.json, written from runtime-spec's config-linux.md (no npm package
//   ships it; the file says which text it follows), run with ajv.
import assert from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import { Ajv } from "npm:ajv@8.20.0";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import * as core from "npm:kubernetes-models@5.1.0/v1";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import * as apps from "npm:kubernetes-models@5.1.0/apps/v1";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import { parseAllDocuments } from "npm:yaml@2.9.1";
import { parseAgentArgs } from "../lib/agent/agent_cli.ts";
import { DEFAULT_LISTENER_PATH, seccompProfile } from "../lib/agent/profile.ts";
import { parseRules } from "../lib/policy/rules_file.ts";

const ROOT = new URL("../", import.meta.url);
const K8S_DIR = new URL("deploy/kubernetes/", ROOT);
const MANIFESTS = [
  "namespace.yaml",
  "daemonset.yaml",
  "policy-configmap.yaml",
  "answer-service.yaml",
  "token-secret.yaml",
  "example-pod.yaml",
];
/** The profiles shipped in deploy/kubernetes, and what makes each. */
const PROFILES: [file: string, connect: boolean, reads: boolean][] = [
  ["seccomp-profile.json", false, false],
  ["seccomp-profile-connect.json", true, false],
  ["seccomp-profile-protect.json", false, true],
];

// deno-lint-ignore no-explicit-any
type Obj = Record<string, any>;
interface Doc {
  file: string;
  /** 1-based position in its file. */
  n: number;
  obj: Obj;
}

/** Kinds we ship, each with its validator class and its TypeScript interface (module, name). */
const KINDS: Record<string, { model: { new (data: Obj): { validate(): void } }; type: [string, string] }> = {
  "v1/Namespace": { model: core.Namespace, type: ["npm:kubernetes-models@5.1.0/v1", "INamespace"] },
  "v1/ConfigMap": { model: core.ConfigMap, type: ["npm:kubernetes-models@5.1.0/v1", "IConfigMap"] },
  "v1/Secret": { model: core.Secret, type: ["npm:kubernetes-models@5.1.0/v1", "ISecret"] },
  "v1/Service": { model: core.Service, type: ["npm:kubernetes-models@5.1.0/v1", "IService"] },
  "v1/Pod": { model: core.Pod, type: ["npm:kubernetes-models@5.1.0/v1", "IPod"] },
  "apps/v1/DaemonSet": { model: apps.DaemonSet, type: ["npm:kubernetes-models@5.1.0/apps/v1", "IDaemonSet"] },
};

/**
 * The documents of a YAML stream. Any YAML error or warning throws, and so does a scalar that YAML 1.1 (what
 * kubectl's parser follows: `0400` is octal, `yes` is true) reads differently from YAML 1.2.
 */
function parseYaml(text: string, file: string): Doc[] {
  const read = (version: "1.1" | "1.2") =>
    parseAllDocuments(text, { version, uniqueKeys: true }).map((d, i) => {
      const problems = [...d.errors, ...d.warnings];
      if (problems.length > 0) {
        throw new Error(`${file} document ${i + 1}: ${problems.map((p) => p.message)}`);
      }
      return d.toJS() as unknown;
    });
  const v12 = read("1.2");
  assert.deepEqual(read("1.1"), v12, `${file}: YAML 1.1 and 1.2 read it differently (octal? yes/no?)`);
  return v12.flatMap((obj, i) => {
    if (obj === null) return []; // an empty document (a trailing ---)
    if (typeof obj !== "object" || Array.isArray(obj)) {
      throw new Error(`${file} document ${i + 1}: not a mapping`);
    }
    return [{ file, n: i + 1, obj: obj as Obj }];
  });
}

const kindOf = (o: Obj) => `${o.apiVersion}/${o.kind}`;

/** The schema errors of one object ([] when valid). */
function k8sErrors(obj: Obj): string[] {
  const k = KINDS[kindOf(obj)];
  if (k === undefined) return [`no schema here for ${kindOf(obj)} (known: ${Object.keys(KINDS).join(", ")})`];
  try {
    new k.model(obj).validate();
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
}

async function loadAll(): Promise<Doc[]> {
  const docs: Doc[] = [];
  for (const f of MANIFESTS) docs.push(...parseYaml(await Deno.readTextFile(new URL(f, K8S_DIR)), f));
  return docs;
}

function one(docs: Doc[], kind: string, name?: string): Obj {
  const found = docs.filter((d) =>
    kindOf(d.obj) === kind && (name === undefined || d.obj.metadata?.name === name)
  );
  assert.equal(found.length, 1, `${kind} ${name ?? ""}: ${found.length} found`);
  return found[0].obj;
}

const ociValidator = async () => {
  const schema = JSON.parse(await Deno.readTextFile(new URL("tests/schemas/oci-seccomp.schema.json", ROOT)));
  return new Ajv({ allErrors: true, strict: true }).compile(schema);
};

Deno.test("deploy/kubernetes holds exactly the manifests and profiles this test knows", () => {
  const files = [...Deno.readDirSync(K8S_DIR)].map((e) => e.name).sort();
  assert.deepEqual(files, [...MANIFESTS, ...PROFILES.map(([f]) => f)].sort());
});

Deno.test("every manifest is valid against the Kubernetes API schemas", async () => {
  const docs = await loadAll();
  for (const d of docs) {
    assert.deepEqual(k8sErrors(d.obj), [], `${d.file} document ${d.n} (${kindOf(d.obj)})`);
  }
  assert.deepEqual(
    docs.map((d) => `${d.file}: ${d.obj.kind}`),
    [
      "namespace.yaml: Namespace",
      "daemonset.yaml: DaemonSet",
      "policy-configmap.yaml: ConfigMap",
      "answer-service.yaml: Service",
      "token-secret.yaml: Secret",
      "example-pod.yaml: Namespace",
      "example-pod.yaml: Pod",
    ],
  );
});

Deno.test("a broken manifest is rejected: wrong types, a missing field, an unknown kind, bad YAML", async () => {
  const ds = one(await loadAll(), "apps/v1/DaemonSet");
  const broken: [string, (o: Obj) => void, RegExp][] = [
    ["hostPID as a string", (o) => o.spec.template.spec.hostPID = "yes", /hostPID must be boolean/],
    [
      "a port as a string",
      (o) => o.spec.template.spec.containers[0].ports[0].containerPort = "7474",
      /integer/,
    ],
    ["no selector", (o) => delete o.spec.selector, /selector/],
    ["an unknown update strategy", (o) => o.spec.updateStrategy.type = "Surge", /allowed values|enum/],
    ["args as one string", (o) => o.spec.template.spec.containers[0].args = "agent --socket x", /array/],
  ];
  for (const [what, change, why] of broken) {
    const o = structuredClone(ds);
    change(o);
    const errors = k8sErrors(o);
    assert.ok(errors.length > 0, `${what}: accepted`);
    assert.match(errors.join("\n"), why, what);
  }
  assert.match(k8sErrors({ apiVersion: "v1", kind: "Pdo", metadata: { name: "x" } })[0], /no schema/);
  assert.throws(() => parseYaml("a: 1\na: 2\n", "dup.yaml"), /dup\.yaml.*[Dd]uplicate|dup\.yaml.*unique/);
  assert.throws(() => parseYaml("a: [1\n", "bad.yaml"), /bad\.yaml/);
  // kubectl would read this mode as octal (256), YAML 1.2 as 400: refused as ambiguous.
  assert.throws(() => parseYaml("defaultMode: 0400\n", "mode.yaml"), /1\.1 and 1\.2/);
});

Deno.test("no manifest has a field the Kubernetes API does not know (and a misspelled one is caught)", async () => {
  const docs = await loadAll();
  const ds = structuredClone(one(docs, "apps/v1/DaemonSet"));
  ds.spec.template.spec.hostPid = true; // misspelled: hostPID
  const byModule = new Map<string, Set<string>>();
  for (const { type: [mod, name] } of Object.values(KINDS)) {
    byModule.set(mod, (byModule.get(mod) ?? new Set()).add(name));
  }
  const lines = [...byModule].map(([mod, names]) =>
    `import type { ${[...names].join(", ")} } from "${mod}";`
  );
  docs.forEach((d, i) => {
    lines.push(`// ${d.file}, document ${d.n}`);
    lines.push(`export const doc${i}: ${KINDS[kindOf(d.obj)].type[1]} = ${JSON.stringify(d.obj, null, 2)};`);
  });
  // The check must fail on this one: if it did not, "Unused '@ts-expect-error' directive" fails it.
  lines.push("// @ts-expect-error hostPid is not a field of PodSpec (hostPID is)");
  lines.push(`export const misspelled: IDaemonSet = ${JSON.stringify(ds)};`);
  const dir = await Deno.makeTempDir({ prefix: "hallpass-manifests-" });
  try {
    const file = `${dir}/manifests.ts`;
    await Deno.writeTextFile(file, lines.join("\n") + "\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--quiet", "--config", new URL("deno.json", ROOT).pathname, file],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assert.ok(out.success, `deno check of the manifests failed:\n${text}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the shipped seccomp profiles are exactly what lib/agent/profile.ts gives", async () => {
  for (const [file, connect, reads] of PROFILES) {
    const want =
      JSON.stringify(seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH, connect, reads }), null, 2) +
      "\n";
    assert.equal(
      await Deno.readTextFile(new URL(file, K8S_DIR)),
      want,
      `deploy/kubernetes/${file} is stale: write JSON.stringify(seccompProfile({ listenerPath: ` +
        `"${DEFAULT_LISTENER_PATH}", connect: ${connect}, reads: ${reads} }), null, 2) + "\\n" to it`,
    );
  }
});

Deno.test("the seccomp profiles are valid against the OCI runtime-spec seccomp schema", async () => {
  const validate = await ociValidator();
  for (const [file] of PROFILES) {
    const p: Obj = JSON.parse(await Deno.readTextFile(new URL(file, K8S_DIR)));
    const valid = validate(p);
    assert.ok(valid, `${file}: ${JSON.stringify(validate.errors, null, 2)}`);
    // What the schema cannot say: a notifying profile needs a listener, and runc refuses NOTIFY as default.
    assert.ok(p.listenerPath.startsWith("/"));
    assert.notEqual(p.defaultAction, "SCMP_ACT_NOTIFY");
  }
});

Deno.test("a broken seccomp profile is rejected by the OCI schema", async () => {
  const validate = await ociValidator();
  const good = seccompProfile({ listenerPath: DEFAULT_LISTENER_PATH });
  const broken: [string, (p: Obj) => void, RegExp][] = [
    ["an unknown action", (p) => p.syscalls[0].action = "SCMP_ACT_MAYBE", /allowed values/],
    ["an unknown default action", (p) => p.defaultAction = "ALLOW", /allowed values/],
    ["errnoRet on NOTIFY", (p) => p.syscalls[0].errnoRet = 1, /allowed values/],
    ["an unknown operator", (p) => p.syscalls[0].args[0].op = "SCMP_CMP_AND", /allowed values/],
    ["an argument index past 5", (p) => p.syscalls[0].args[0].index = 6, /<= 5/],
    ["a negative value", (p) => p.syscalls[0].args[0].value = -1, />= 0/],
    ["no names", (p) => p.syscalls[0].names = [], /fewer than 1/],
    ["a name as a string", (p) => p.syscalls[0].names = "open", /array/],
    ["an unknown architecture", (p) => p.architectures.push("SCMP_ARCH_Z80"), /allowed values/],
    ["metadata without a listener", (p) => delete p.listenerPath, /listenerPath/],
    ["a misspelled field", (p) => p.listenerpath = p.listenerPath, /additional properties/],
    ["no default action", (p) => delete p.defaultAction, /defaultAction/],
  ];
  for (const [what, change, why] of broken) {
    const p = structuredClone(good) as Obj;
    change(p);
    assert.equal(validate(p), false, `${what}: accepted`);
    assert.match(JSON.stringify(validate.errors), why, what);
  }
});

/** `--flag value` pairs of an argument list. */
function flags(args: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 1; i < args.length; i += 2) {
    assert.match(args[i], /^--[a-z-]+$/, `argument ${i} of ${args}`);
    m.set(args[i], args[i + 1]);
  }
  return m;
}

const dirname = (p: string) => p.slice(0, p.lastIndexOf("/"));

Deno.test("the manifests agree with each other, with the agent's command line and with the profiles", async () => {
  const docs = await loadAll();
  const ds = one(docs, "apps/v1/DaemonSet", "hallpass-agent");
  const ns = ds.metadata.namespace;
  one(docs, "v1/Namespace", ns);
  for (const d of docs.filter((d) => d.file !== "example-pod.yaml" && d.obj.kind !== "Namespace")) {
    assert.equal(d.obj.metadata.namespace, ns, `${d.file}: not in ${ns}`);
  }
  const pod = ds.spec.template.spec;
  const agent = pod.containers.find((c: Obj) => c.name === "agent");
  const volume = (name: string) => pod.volumes.find((v: Obj) => v.name === name);
  const mountOf = (c: Obj, path: string) =>
    c.volumeMounts.find((m: Obj) => path === m.mountPath || path.startsWith(m.mountPath + "/"));

  // Upgrades: the successor starts first, on the pod network (hostPort or hostNetwork would clash).
  assert.deepEqual(ds.spec.updateStrategy, {
    type: "RollingUpdate",
    rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
  });
  assert.equal(pod.hostPID, true);
  assert.ok(!pod.hostNetwork);
  assert.ok(pod.containers.every((c: Obj) => (c.ports ?? []).every((p: Obj) => p.hostPort === undefined)));
  assert.deepEqual(ds.spec.selector.matchLabels, ds.spec.template.metadata.labels);

  // The agent's arguments, as its own command line reads them (--rules must name a directory that exists).
  const f = flags(agent.args);
  assert.equal(agent.args[0], "agent");
  const rulesDir = await Deno.makeTempDir({ prefix: "hallpass-rules-" });
  try {
    const args = agent.args.slice(1).map((a: string) => (a === f.get("--rules") ? rulesDir : a));
    const inv = parseAgentArgs(args);
    assert.equal(inv.kind, "run");
    if (inv.kind === "run") {
      assert.equal(inv.opts.socket, f.get("--socket"));
      assert.equal(inv.opts.listen, f.get("--listen"));
      assert.equal(inv.opts.tokenFile, f.get("--token-file"));
    }
  } finally {
    await Deno.remove(rulesDir);
  }

  // The socket: the profile's listenerPath, bound by the agent on the same path of the node.
  const profile = JSON.parse(await Deno.readTextFile(new URL("seccomp-profile.json", K8S_DIR)));
  assert.equal(f.get("--socket"), profile.listenerPath);
  const sockMount = mountOf(agent, f.get("--socket")!);
  assert.equal(sockMount.mountPath, dirname(profile.listenerPath));
  assert.equal(volume(sockMount.name).hostPath.path, dirname(profile.listenerPath));

  // The rules: the ConfigMap, mounted where --rules points; every file parses as hallpass rules.
  const cm = one(docs, "v1/ConfigMap");
  const rulesMount = mountOf(agent, f.get("--rules")!);
  assert.equal(rulesMount.mountPath, f.get("--rules"));
  assert.equal(volume(rulesMount.name).configMap.name, cm.metadata.name);
  assert.ok("default.rules" in cm.data);
  for (const [key, text] of Object.entries(cm.data as Record<string, string>)) {
    assert.match(
      key,
      /^(default|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-.a-z0-9]*[a-z0-9])?)?)\.rules$/,
      key,
    );
    parseRules(text, { file: key, project: false, cwd: "/", lookup: () => null });
  }

  // The tokens: the Secret, mounted where --tokens points, in the agent's format.
  const secret = one(docs, "v1/Secret");
  const tokens = f.get("--token-file")!;
  const tokMount = mountOf(agent, tokens);
  assert.equal(volume(tokMount.name).secret.secretName, secret.metadata.name);
  const tokenText = secret.stringData[tokens.slice(tokMount.mountPath.length + 1)];
  assert.ok(tokenText, `no key for ${tokens} in the Secret`);
  for (const line of tokenText.trim().split("\n")) assert.match(line, /^[A-Za-z0-9._@-]+ [\x21-\x7e]{16,}$/);
  assert.match(tokenText, /EXAMPLE/, "the example token says it is one");

  // The answer service: --listen's port, the container port, the Service's target.
  const svc = one(docs, "v1/Service");
  const port = Number(f.get("--listen")!.split(":").at(-1));
  const cport = agent.ports.find((p: Obj) => p.containerPort === port);
  assert.ok(cport, `no container port ${port}`);
  assert.equal(port, 7474);
  assert.deepEqual(svc.spec.ports.map((p: Obj) => [p.port, p.targetPort]), [[7474, cport.name]]);
  for (const [k, v] of Object.entries(svc.spec.selector)) {
    assert.equal(ds.spec.template.metadata.labels[k], v);
  }

  // The profiles: the init container has the agent's own binary print them for the agent's socket, into the
  // kubelet's directory, under the names the pods use; what it prints is what deploy/kubernetes ships.
  const init = pod.initContainers.find((c: Obj) => c.name === "install-seccomp-profiles");
  assert.equal(init.image, agent.image);
  const kubeletMount = init.volumeMounts.find((m: Obj) => volume(m.name).hostPath !== undefined);
  assert.equal(volume(kubeletMount.name).hostPath.path, "/var/lib/kubelet/seccomp");
  assert.deepEqual(init.command.slice(0, 2), ["/bin/sh", "-c"]);
  const script: string = init.command[2];
  assert.match(script, new RegExp(`^d=${kubeletMount.mountPath}/profiles$`, "m"));
  const installed: string[] = [];
  for (const m of script.matchAll(/^hallpass (agent .*) >"\$d\/\.(\S+)\.tmp"$/gm)) {
    const inv = parseAgentArgs(m[1].split(" ").slice(1));
    assert.equal(inv.kind, "profile", m[1]);
    const connect = m[1].includes("--connect"), reads = m[1].includes("--protect");
    const shipped = PROFILES.find(([, c, r]) => c === connect && r === reads)![0];
    assert.equal(
      inv.kind === "profile" && inv.json,
      await Deno.readTextFile(new URL(shipped, K8S_DIR)),
      m[1],
    );
    assert.ok(script.includes(`mv "$d/.${m[2]}.tmp" "$d/${m[2]}"`), `${m[2]} is not renamed into place`);
    installed.push(`profiles/${m[2]}`);
  }
  assert.deepEqual(installed, [
    "profiles/hallpass.json",
    "profiles/hallpass-connect.json",
    "profiles/hallpass-protect.json",
  ]);

  // The example pod: a profile that is installed, hallpass-request on PATH and allowed to run, its own rules.
  const example = one(docs, "v1/Pod");
  const seccomp = example.spec.securityContext.seccompProfile;
  assert.equal(seccomp.type, "Localhost");
  assert.ok(installed.includes(seccomp.localhostProfile), seccomp.localhostProfile);
  const shell = example.spec.containers[0];
  const binMount = shell.volumeMounts.find((m: Obj) => m.name === "hallpass-request");
  assert.ok(example.spec.volumes.find((v: Obj) => v.name === "hallpass-request").image.reference);
  const path = shell.env.find((e: Obj) => e.name === "PATH").value.split(":");
  assert.equal(path[0], binMount.mountPath);
  const defaults = parseRules(cm.data["default.rules"], { file: "default.rules", project: false, cwd: "/" });
  assert.ok(
    defaults.some((r) =>
      r.effect === "allow" && r.op === "exec" && r.target === `${binMount.mountPath}/hallpass-request`
    ),
    "default.rules does not allow hallpass-request to run",
  );
  const exNs = example.metadata.namespace;
  one(docs, "v1/Namespace", exNs);
  assert.ok(`${exNs}.rules` in cm.data && `${exNs}.${example.metadata.name}.rules` in cm.data);
});
