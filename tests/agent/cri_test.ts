/**
 * `hallpass agent` with containers made through containerd's CRI, as a kubelet makes them: a containerd of the
 * test's own (tests/agent/cri/containerd.ts), a busybox image built here and imported without a registry
 * (cri/image.ts), and a small CRI client over gRPC (cri/client.ts, cri/api.proto) that runs pods and
 * containers whose seccomp profile is a Localhost profile: hallpass's, with the agent's socket as its
 * listenerPath. The pods use the node's network (NamespaceMode NODE), so no CNI is needed.
 *
 * Root only, and containerd must be installed (`make test` installs it): skipped with the reason without them,
 * a failure under CI=true (tests/helpers/skip.ts).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { seccompProfile } from "../../lib/agent/profile.ts";
import { AgentProcess, CONTAINERS, exists, needRoot, until, which } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import {
  type ContainerConfig,
  CriClient,
  type PodSandboxConfig,
  type SecurityProfile,
} from "./cri/client.ts";
import { Containerd } from "./cri/containerd.ts";
import { buildBusyboxImage } from "./cri/image.ts";

const IMAGE = "hallpass.test/busybox:1";
const RULES = "allow write /tmp/**\nallow exec /bin/busybox\n";
/** Only for pod team/builder: a write the default rules do not allow. */
const BUILDER_RULES = "allow write /opt/**\n";

function needContainerd(): void {
  const missing = ["containerd", "ctr", "runc", "busybox", "tar"].filter((p) => which(p) === null);
  if (missing.length) {
    throw new Error(
      `missing ${missing.join(", ")}: the CRI tests need Debian's containerd, runc and busybox-static ` +
        "(`make test` installs them: apt-get install containerd runc busybox-static)",
    );
  }
}

interface Env {
  dir: string;
  socket: string;
  profile: SecurityProfile;
  /** The pods' cgroups go under this one (as the kubelet's go under kubepods). */
  cgroupParent: string;
  cri: CriClient;
  agent: AgentProcess;
  containerd: Containerd;
}

type ContainerSecurity = NonNullable<NonNullable<ContainerConfig["linux"]>["security_context"]>;

interface RunningContainer {
  id: string;
  name: string;
  logFile: string;
}

interface Pod {
  id: string;
  config: PodSandboxConfig;
  containers: RunningContainer[];
}

/** Runs a pod (host network, the hallpass profile at pod level) with one busybox container per script. */
async function runPod(
  env: Env,
  namespace: string,
  name: string,
  containers: {
    name: string;
    script: string;
    security?: ContainerSecurity;
    mounts?: ContainerConfig["mounts"];
  }[],
): Promise<Pod> {
  const uid = crypto.randomUUID();
  const ns = { network: "NODE", pid: "CONTAINER", ipc: "POD" } as const;
  const config: PodSandboxConfig = {
    metadata: { name, namespace, uid, attempt: 0 },
    log_directory: `${env.dir}/logs/${namespace}_${name}_${uid}`,
    labels: { "hallpass.test/pod": name },
    linux: {
      cgroup_parent: `/${env.cgroupParent}/pod${uid}`,
      security_context: { namespace_options: ns, seccomp: env.profile },
    },
  };
  await Deno.mkdir(config.log_directory!, { recursive: true });
  const id = await env.cri.runPodSandbox(config);
  const pod: Pod = { id, config, containers: [] };
  for (const c of containers) {
    const cc: ContainerConfig = {
      metadata: { name: c.name, attempt: 0 },
      image: { image: IMAGE },
      command: ["/bin/sh", "-c", c.script],
      envs: [{ key: "HOME", value: "/root" }],
      log_path: `${c.name}/0.log`,
      mounts: c.mounts ?? [],
      // The kubelet gives each container the pod's profile unless the container names its own.
      linux: { security_context: { namespace_options: ns, seccomp: env.profile, ...c.security } },
    };
    const cid = await env.cri.createContainer(id, cc, config);
    await env.cri.startContainer(cid);
    pod.containers.push({ id: cid, name: c.name, logFile: `${config.log_directory}/${c.name}/0.log` });
  }
  return pod;
}

/** A container's output from its CRI log file (`TIME STREAM F|P TEXT` lines). */
async function readLog(file: string): Promise<{ stdout: string; stderr: string }> {
  let text = "";
  try {
    text = await Deno.readTextFile(file);
  } catch { /* not yet */ }
  const out = { stdout: "", stderr: "" };
  for (const line of text.split("\n")) {
    const m = /^\S+ (stdout|stderr) ([FP]) (.*)$/.exec(line);
    if (m) out[m[1] as "stdout" | "stderr"] += m[3] + (m[2] === "F" ? "\n" : "");
  }
  return out;
}

async function waitLog(c: RunningContainer, marker: string): Promise<{ stdout: string; stderr: string }> {
  let last = { stdout: "", stderr: "" };
  await until(
    async () => {
      last = await readLog(c.logFile);
      return last.stdout.includes(marker);
    },
    `${c.name} to print ${JSON.stringify(marker)} (its log so far: ${JSON.stringify(last)})`,
    30_000,
  );
  return last;
}

/** The container's root as the host sees it (through its init process), from containerd's verbose status. */
async function rootOf(env: Env, containerId: string): Promise<string> {
  const { status, info } = await env.cri.containerStatus(containerId);
  assertEquals(status.state, "CONTAINER_RUNNING", `container ${status.metadata?.name}: ${status.reason}`);
  const pid = (info.info as { pid?: number })?.pid;
  assert(typeof pid === "number" && pid > 0, `no pid in ContainerStatus info: ${JSON.stringify(info)}`);
  return `/proc/${pid}/root`;
}

/**
 * Ignored until the agent lets go of exited containers: SupervisorHost.halt() clears its Worker before it
 * posts the "stop" message (through `this.#worker?.postMessage`), so the message is lost, the Worker never
 * stops, halt() gives up after 5 s, and the Worker, its listener copy, its wake pipe and the container's root
 * fd stay for good (about 11 fds, a thread and 13 MB per container or exec'd process). Set to false with the
 * fix.
 */
const EXEC_LEAK_IGNORED = false;

/** How many seccomp listener fds the process `pid` holds. */
function listenerFds(pid: number): number {
  let n = 0;
  for (const e of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      if (Deno.readLinkSync(`/proc/${pid}/fd/${e.name}`) === "anon_inode:seccomp notify") n++;
    } catch { /* closed meanwhile */ }
  }
  return n;
}

interface OciSpec {
  annotations?: Record<string, string>;
  linux?: { seccomp?: { listenerPath?: string; listenerMetadata?: string; defaultAction?: string } };
}

test({
  name: "containerd CRI: pods whose Localhost seccomp profile is hallpass's are mediated by the agent",
  ignore: [...CONTAINERS, tool("containerd"), tool("ctr"), tool("tar")],
  // grpc-js keeps timers and sockets of its own between calls; everything is closed in the finally block.
  sanitizeOps: false,
  sanitizeResources: false,
  fn: async (t) => {
    needRoot();
    needContainerd();
    const started = Date.now();
    const dir = await Deno.makeTempDir({ prefix: "hallpass-cri-" });
    let agent: AgentProcess | null = null;
    let containerd: Containerd | null = null;
    let cri: CriClient | null = null;
    const failures: string[] = [];
    try {
      await Deno.mkdir(`${dir}/rules`);
      await Deno.writeTextFile(`${dir}/rules/default.rules`, RULES);
      await Deno.writeTextFile(`${dir}/rules/team.builder.rules`, BUILDER_RULES);
      await Deno.writeTextFile(`${dir}/rules/team.restricted.rules`, "allow write /etc/**\n");
      await Deno.writeTextFile(`${dir}/rules/team.guarded.rules`, "protect /etc/group\n");
      await Deno.writeTextFile(
        `${dir}/rules/team.volume.rules`,
        "allow write /data/**\nallow write /ro/**\n",
      );
      const socket = `${dir}/agent.sock`;
      agent = await AgentProcess.start([
        "--socket",
        socket,
        "--rules",
        `${dir}/rules`,
        "--log",
        `${dir}/decisions.jsonl`,
      ]);
      // The Localhost profile: with containerd 1.6 the CRI's localhost_ref is the profile's absolute path.
      const profilePath = `${dir}/hallpass.json`;
      await Deno.writeTextFile(
        profilePath,
        JSON.stringify(seccompProfile({ listenerPath: socket }), null, 2),
      );
      const image = await buildBusyboxImage(`${dir}/image`, which("busybox")!, IMAGE);
      await Deno.mkdir(`${dir}/containerd`);
      const cgroupParent = `hallpass-cri-${Deno.pid}`;
      containerd = await Containerd.start({ dir: `${dir}/containerd`, sandboxImage: IMAGE, cgroupParent });
      await containerd.importImage(image.archive);
      cri = new CriClient(containerd.socket);
      const version = await cri.version();
      assertEquals(version.runtime_api_version, "v1");
      assertEquals(await cri.imageId(IMAGE), image.id, "the CRI plugin does not see the imported image");
      const env: Env = {
        dir,
        socket,
        profile: { profile_type: "Localhost", localhost_ref: profilePath },
        cgroupParent,
        cri,
        agent,
        containerd,
      };

      /** A step whose failure carries what the agent and containerd said. */
      const step = (name: string, fn: () => Promise<void>, o: { ignore?: boolean } = {}) =>
        t.step({
          name,
          ignore: o.ignore ?? false,
          fn: async () => {
            try {
              await fn();
            } catch (e) {
              failures.push(name);
              throw new Error(
                `${(e as Error).stack}\n--- agent output ---\n${env.agent.output}` +
                  `\n--- containerd log (end) ---\n${await env.containerd.logTail(15)}`,
              );
            }
          },
        });

      const tag = `cri-${Deno.pid}`;
      const script = [
        `echo hi > /tmp/${tag}; echo "ok=$?"`,
        'echo no > /etc/x; echo "etc=$?"',
        '/opt/other echo ran-other; echo "other=$?"',
        '/bin/busybox echo ran-busybox; echo "busybox=$?"',
        'echo x > /opt/f; echo "opt=$?"',
        "echo done",
        "exec sleep 100000",
      ].join("; ");
      let builder: Pod | null = null;

      await step("a container's writes and execs follow default.rules; its output says so", async () => {
        builder = await runPod(env, "team", "builder", [{ name: "app", script }]);
        const app = builder.containers[0];
        const log = await waitLog(app, "done");
        for (const want of ["ok=0", "ran-busybox", "busybox=0"]) {
          assert(log.stdout.includes(want), `${want} in\n${log.stdout}`);
        }
        assert(/etc=[1-9]/.test(log.stdout), log.stdout);
        assert(!log.stdout.includes("ran-other") && /other=126/.test(log.stdout), log.stdout);
        assert(/can't create \/etc\/x: Permission denied/.test(log.stderr), log.stderr);
        // The allowed write landed in the container's own root, the denied one nowhere.
        const root = await rootOf(env, app.id);
        assertEquals(await Deno.readTextFile(`${root}/tmp/${tag}`), "hi\n");
        assert(!exists(`${root}/etc/x`), "the denied write landed");
        assert(!exists(`/tmp/${tag}`), "the write went to the node's /tmp");
        // The agent knew the pod and the container from containerd's annotations.
        await agent!.waitOutput(/team\/builder app: mediating pid \d+/);
        await agent!.waitOutput(/denied write \/etc\/x by sh/);
        await agent!.waitOutput(/denied exec \/opt\/other/);
        const decisions = await Deno.readTextFile(`${dir}/decisions.jsonl`);
        assert(/"target":"\/etc\/x".*"decision":"deny"/.test(decisions), decisions);
        assert(new RegExp(`"target":"/tmp/${tag}".*"decision":"allow"`).test(decisions), decisions);
      });

      await step("CRI ExecSync: an allowed write succeeds, a denied one fails with EACCES", async () => {
        assert(builder, "no pod from the first step");
        const app = builder.containers[0];
        const root = await rootOf(env, app.id);
        const ok = await cri!.execSync(app.id, ["/bin/sh", "-c", "echo e > /tmp/exec-ok"]);
        assertEquals(ok.exit_code, 0, ok.stderr);
        assertEquals(await Deno.readTextFile(`${root}/tmp/exec-ok`), "e\n");
        const no = await cri!.execSync(app.id, ["/bin/sh", "-c", "echo e > /etc/exec-no"]);
        assert(no.exit_code !== 0, `a denied write exited 0: ${JSON.stringify(no)}`);
        assert(/Permission denied/.test(no.stderr), no.stderr);
        assert(!exists(`${root}/etc/exec-no`), "the denied write landed");
        // An exec the rules do not allow, from the exec'd shell (the runtime's own exec of sh passes).
        const other = await cri!.execSync(app.id, ["/bin/sh", "-c", '/opt/other echo ran; echo "rc=$?"']);
        assert(!other.stdout.includes("ran\n") && other.stdout.includes("rc=126"), JSON.stringify(other));
        // Reads are not mediated: the exec'd process sees the first process's allowed write.
        const cat = await cri!.execSync(app.id, ["cat", `/tmp/${tag}`]);
        assertEquals(cat, { stdout: "hi\n", stderr: "", exit_code: 0 });
        await agent!.waitOutput(/denied write \/etc\/exec-no by sh/);
      });

      await step(
        "every ExecSync process's listener is let go once it exits (the kubelet's exec probes run all the time)",
        async () => {
          assert(builder, "no pod from the first step");
          const app = builder.containers[0];
          const before = listenerFds(agent!.child.pid);
          for (let i = 0; i < 5; i++) {
            const r = await cri!.execSync(app.id, ["/bin/sh", "-c", "echo p > /tmp/probe"]);
            assertEquals(r.exit_code, 0, `probe ${i}: ${JSON.stringify(r)}`);
          }
          await until(() => listenerFds(agent!.child.pid) <= before, "the listeners to be closed", 60_000)
            .catch(() => {
              const held = listenerFds(agent!.child.pid);
              throw new Error(
                `the agent holds ${held} seccomp listeners, ${before} before 5 exited ExecSyncs`,
              );
            });
        },
        { ignore: EXEC_LEAK_IGNORED },
      );

      await step("the sandbox (pause) container runs under the pod-level profile and passes", async () => {
        assert(builder, "no pod from the first step");
        const { status, info } = await cri!.podSandboxStatus(builder.id);
        assertEquals(status.state, "SANDBOX_READY");
        const sandbox = info.info as { pid?: number; runtimeSpec?: OciSpec };
        // containerd wrote the profile, listenerPath included, into the sandbox's OCI spec ...
        assertEquals(sandbox.runtimeSpec?.linux?.seccomp?.listenerPath, socket);
        assertEquals(sandbox.runtimeSpec?.annotations?.["io.kubernetes.cri.container-type"], "sandbox");
        // ... runc handed its listener to the agent, which let the runtime's exec of the pause command pass.
        const m = /team\/builder: mediating pid (\d+)/.exec(agent!.output);
        assert(m, "the agent never mediated the sandbox container");
        assertEquals(Number(m[1]), sandbox.pid, "the agent mediated another process than the sandbox's");
        // The container's spec carries the profile and the pod's names the agent read.
        const c = (await cri!.containerStatus(builder.containers[0].id)).info.info as {
          runtimeSpec?: OciSpec;
        };
        assertEquals(c.runtimeSpec?.linux?.seccomp?.listenerPath, socket);
        const a = c.runtimeSpec?.annotations ?? {};
        assertEquals(
          [
            a["io.kubernetes.cri.sandbox-namespace"],
            a["io.kubernetes.cri.sandbox-name"],
            a["io.kubernetes.cri.container-name"],
            a["io.kubernetes.cri.container-type"],
          ],
          ["team", "builder", "app", "container"],
        );
      });

      await step("per-pod rules: team.builder.rules applies to that pod only", async () => {
        assert(builder, "no pod from the first step");
        const b = builder.containers[0];
        const other = await runPod(env, "team", "other", [{ name: "app", script }]);
        const o = other.containers[0];
        const lb = await waitLog(b, "done");
        const lo = await waitLog(o, "done");
        assert(lb.stdout.includes("opt=0"), lb.stdout);
        assert(/opt=[1-9]/.test(lo.stdout), lo.stdout);
        // Both pods otherwise follow default.rules.
        assert(lo.stdout.includes("ok=0") && /etc=[1-9]/.test(lo.stdout), lo.stdout);
        assertEquals(await Deno.readTextFile(`${await rootOf(env, b.id)}/opt/f`), "x\n");
        assert(!exists(`${await rootOf(env, o.id)}/opt/f`), "team/other wrote /opt/f");
        await agent!.waitOutput(/team\/other app: mediating pid \d+/);
        await agent!.waitOutput(/denied write \/opt\/f by sh/);
      });

      await step(
        "a non-root container: an allowed write is made as its user, and only where it may write",
        async () => {
          const pod = await runPod(env, "team", "restricted", [{
            name: "app",
            script: [
              'echo "uid=$(id -u)"',
              'echo a > /tmp/mine; echo "tmp=$?"',
              // team.restricted.rules allows /etc/**, but the file system does not let uid 65534 write there.
              'echo b > /etc/nobody; echo "etc=$?"',
              "echo done",
              "exec sleep 100000",
            ].join("; "),
            security: {
              run_as_user: { value: 65534 },
              run_as_group: { value: 65534 },
              no_new_privs: true,
              capabilities: { drop_capabilities: ["ALL"] },
            },
          }]);
          const c = pod.containers[0];
          const log = await waitLog(c, "done");
          assert(log.stdout.includes("uid=65534") && log.stdout.includes("tmp=0"), JSON.stringify(log));
          assert(/etc=[1-9]/.test(log.stdout) && /Permission denied/.test(log.stderr), JSON.stringify(log));
          const root = await rootOf(env, c.id);
          const st = await Deno.lstat(`${root}/tmp/mine`);
          assertEquals(
            [st.uid, st.gid],
            [65534, 65534],
            "the agent's write is not owned by the container's user",
          );
          assert(!exists(`${root}/etc/nobody`), "the agent wrote where the container's user may not");
        },
      );

      await step("a read-only root file system stays read-only for allowed writes", async () => {
        const pod = await runPod(env, "team", "readonly", [{
          name: "app",
          script: 'echo a > /tmp/ro; echo "tmp=$?"; echo done; exec sleep 100000',
          security: { readonly_rootfs: true },
        }]);
        const c = pod.containers[0];
        const log = await waitLog(c, "done");
        assert(/tmp=[1-9]/.test(log.stdout), JSON.stringify(log));
        assert(/Read-only file system/.test(log.stderr), JSON.stringify(log));
        assert(
          !exists(`${await rootOf(env, c.id)}/tmp/ro`),
          "an allowed write went through a read-only root",
        );
      });

      await step(
        "volumes: an allowed write lands in the pod's volume; a read-only volume stays read-only",
        async () => {
          await Deno.mkdir(`${dir}/volume`);
          await Deno.mkdir(`${dir}/ro-volume`);
          const pod = await runPod(env, "team", "volume", [{
            name: "app",
            script:
              'echo v > /data/v; echo "data=$?"; echo r > /ro/r; echo "ro=$?"; echo done; exec sleep 100000',
            mounts: [
              { container_path: "/data", host_path: `${dir}/volume` },
              { container_path: "/ro", host_path: `${dir}/ro-volume`, readonly: true },
            ],
          }]);
          const log = await waitLog(pod.containers[0], "done");
          assert(log.stdout.includes("data=0"), JSON.stringify(log));
          assertEquals(await Deno.readTextFile(`${dir}/volume/v`), "v\n");
          assert(
            /ro=[1-9]/.test(log.stdout) && /Read-only file system/.test(log.stderr),
            JSON.stringify(log),
          );
          assert(!exists(`${dir}/ro-volume/r`), "an allowed write went through a read-only volume");
        },
      );

      await step(
        "a pod on the protect profile cannot read what its rules protect; reads elsewhere work",
        async () => {
          const protectPath = `${dir}/hallpass-protect.json`;
          await Deno.writeTextFile(
            protectPath,
            JSON.stringify(seccompProfile({ listenerPath: socket, reads: true }), null, 2),
          );
          const guardedEnv: Env = {
            ...env,
            profile: { profile_type: "Localhost", localhost_ref: protectPath },
          };
          const reads = 'cat /etc/group; echo "group=$?"; cat /etc/passwd; echo "passwd=$?"; echo done; ' +
            "exec sleep 100000";
          const guarded = await runPod(guardedEnv, "team", "guarded", [{ name: "app", script: reads }]);
          const log = await waitLog(guarded.containers[0], "done");
          assert(/group=[1-9]/.test(log.stdout) && !log.stdout.includes("nogroup"), log.stdout);
          assert(log.stdout.includes("passwd=0") && log.stdout.includes("root:"), log.stdout);
          // The exec'd process too (CRI ExecSync); a pod without protections on the same node is unaffected.
          const ex = await cri!.execSync(guarded.containers[0].id, ["cat", "/etc/group"]);
          assert(ex.exit_code !== 0 && !ex.stdout.includes("nogroup"), JSON.stringify(ex));
          const plain = await runPod(env, "team", "unguarded", [{ name: "app", script: reads }]);
          const lp = await waitLog(plain.containers[0], "done");
          assert(lp.stdout.includes("group=0") && lp.stdout.includes("nogroup"), lp.stdout);
          await agent!.waitOutput(/team\/guarded app: denied read \/etc\/group by cat/);
        },
      );

      await step("StopPodSandbox and RemovePodSandbox take the pods down; the agent serves on", async () => {
        for (const p of await cri!.listPodSandbox()) {
          await cri!.stopPodSandbox(p.id);
          await cri!.removePodSandbox(p.id);
        }
        assertEquals(await cri!.listPodSandbox(), []);
        assertEquals(await cri!.listContainers(), []);
        // A new pod still gets mediated: the agent let go of the old containers and goes on.
        const again = await runPod(env, "team", "again", [{ name: "app", script }]);
        const log = await waitLog(again.containers[0], "done");
        assert(log.stdout.includes("ok=0") && /etc=[1-9]/.test(log.stdout), log.stdout);
        await agent!.waitOutput(/team\/again app: mediating pid \d+/);
      });

      console.log(`containerd CRI test: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    } catch (e) {
      throw new Error(
        `${(e as Error).message}\n--- agent output ---\n${agent?.output ?? "(not started)"}` +
          `\n--- containerd log (end) ---\n${(await containerd?.logTail(30)) ?? "(not started)"}`,
      );
    } finally {
      cri?.close();
      const notes = (await containerd?.stop()) ?? [];
      // After a clean run nothing is left to clean up; after a failure, what was left says something too.
      if (notes.length) {
        console.error(`cleanup${failures.length ? " after a failure" : ""}: ${notes.join("; ")}`);
      }
      await agent?.stop();
      await Deno.remove(dir, { recursive: true }).catch((e) =>
        console.error(`removing ${dir}: ${e.message}`)
      );
    }
  },
});
