/**
 * A containerd of the test's own: its root, state, runc state and sockets under one scratch directory, a
 * generated config.toml (the CRI plugin with a local sandbox image, the runc v2 shim, no CNI: the pods use the
 * node's network), its log in a file. `stop()` takes everything down again even after a failure: the pods
 * (through the CRI), containerd, any container runc still knows, the shims, the mounts under the directory.
 */
import { CriClient } from "./client.ts";
import { lexists as exists } from "../../../lib/util/exists.ts";

const dec = new TextDecoder();

export interface ContainerdOptions {
  /** An empty directory for everything containerd keeps (removed by stop()). */
  dir: string;
  /** The sandbox ("pause") image: it must be imported before the first pod is run. */
  sandboxImage: string;
  /**
   * The cgroup (a name under each hierarchy's root, e.g. `hallpass-cri-123`) under which the test's pods put
   * theirs (PodSandboxConfig.linux.cgroup_parent, as the kubelet's `kubepods`): stop() removes it.
   */
  cgroupParent?: string;
}

/** The config: every path under `dir`, so nothing is shared with a containerd of the machine's. */
export function containerdConfig(dir: string, sandboxImage: string): string {
  const q = (s: string) => JSON.stringify(s); // TOML basic strings take JSON's escapes
  return `version = 2
root = ${q(`${dir}/root`)}
state = ${q(`${dir}/state`)}
# Snapshotters and plugins the tests do not use (their probes only slow the start down).
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]

[grpc]
  address = ${q(`${dir}/containerd.sock`)}

[ttrpc]
  address = ${q(`${dir}/containerd.sock.ttrpc`)}

[debug]
  level = "info"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ${q(sandboxImage)}
  enable_selinux = false
  # No AppArmor profile of containerd's own: the tests must not depend on apparmor_parser.
  disable_apparmor = true
  # The sandbox's oom_score_adj (-998) no lower than containerd's own: lowering it needs CAP_SYS_RESOURCE,
  # which a test machine that is itself a container may not have (runc then fails in nsexec with EACCES).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        # runc's state (ROOT/k8s.io) here too, so cleanup can ask runc for what is left.
        Root = ${q(`${dir}/runc`)}
  # No CNI configuration: the pods run with NamespaceMode NODE for their network (host network).
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ${q(`${dir}/cni/bin`)}
    conf_dir = ${q(`${dir}/cni/net.d`)}
`;
}

async function run(cmd: string, args: string[], timeoutS = 60): Promise<{ ok: boolean; out: string }> {
  const r = await new Deno.Command("timeout", {
    args: ["-k", "2", String(timeoutS), cmd, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { ok: r.success, out: dec.decode(r.stdout) + dec.decode(r.stderr) };
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

/** Mount points at or under `dir`, deepest first (mountinfo's octal escapes decoded). */
export function mountsUnder(dir: string): string[] {
  let text: string;
  try {
    text = Deno.readTextFileSync("/proc/self/mountinfo");
  } catch {
    return [];
  }
  const unescape = (s: string) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  return text.split("\n").map((l) => unescape(l.split(" ")[4] ?? ""))
    .filter((p) => p === dir || p.startsWith(dir + "/"))
    .sort((a, b) => b.length - a.length);
}

export class Containerd {
  readonly dir: string;
  readonly socket: string;
  readonly logFile: string;
  readonly #child: Deno.ChildProcess;
  readonly #o: ContainerdOptions;
  /** Directories of containerd's fixed place for shim sockets that were not there before. */
  readonly #made: string[];
  #stopped = false;

  private constructor(o: ContainerdOptions, child: Deno.ChildProcess, made: string[]) {
    const dir = o.dir;
    this.#o = o;
    this.#made = made;
    this.dir = dir;
    this.socket = `${dir}/containerd.sock`;
    this.logFile = `${dir}/containerd.log`;
    this.#child = child;
  }

  /**
   * Starts containerd and waits until its CRI plugin answers. Throws (with the end of its log) when the
   * binaries are missing, it exits, or it does not answer within `timeoutMs`.
   */
  static async start(o: ContainerdOptions, timeoutMs = 30_000): Promise<Containerd> {
    for (const d of ["cni/bin", "cni/net.d", "runc"]) await Deno.mkdir(`${o.dir}/${d}`, { recursive: true });
    // The shims' sockets go to /run/containerd/s whatever the config says: remove what this run creates.
    const made = ["/run/containerd/s", "/run/containerd"].filter((d) => !exists(d));
    const config = `${o.dir}/config.toml`;
    await Deno.writeTextFile(config, containerdConfig(o.dir, o.sandboxImage));
    // The log goes to a file: containerd (and the shims it starts) must not block on a pipe nobody reads.
    const child = new Deno.Command("sh", {
      args: ["-c", 'exec containerd --config "$1" >"$2" 2>&1', "sh", config, `${o.dir}/containerd.log`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const c = new Containerd(o, child, made);
    let exited: Deno.CommandStatus | null = null;
    child.status.then((s) => (exited = s));
    const client = new CriClient(c.socket, 2000);
    const end = Date.now() + timeoutMs;
    let last = "";
    try {
      for (;;) {
        if (exited) {
          throw new Error(`containerd exited (code ${(exited as Deno.CommandStatus).code}) while starting`);
        }
        if (Date.now() > end) throw new Error(`containerd did not answer on ${c.socket} (${last})`);
        try {
          Deno.statSync(c.socket);
          const v = await client.version();
          if (v.runtime_name === "containerd") break;
          last = `unexpected runtime ${v.runtime_name}`;
        } catch (e) {
          last = (e as Error).message;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch (e) {
      const log = await c.logTail();
      await c.stop();
      throw new Error(`${(e as Error).message}\n--- containerd log (end) ---\n${log}`);
    } finally {
      client.close();
    }
    return c;
  }

  get pid(): number {
    return this.#child.pid;
  }

  async logTail(lines = 40): Promise<string> {
    try {
      return (await Deno.readTextFile(this.logFile)).split("\n").slice(-lines).join("\n");
    } catch {
      return "(no log)";
    }
  }

  /** `ctr images import` into the CRI plugin's namespace (k8s.io). */
  async importImage(archive: string): Promise<void> {
    const r = await run("ctr", ["-a", this.socket, "-n", "k8s.io", "images", "import", archive]);
    if (!r.ok) throw new Error(`ctr images import ${archive}: ${r.out}`);
  }

  /**
   * Takes it all down; never throws. Pods first, as the kubelet would (their shims then exit by themselves),
   * then containerd, then whatever a failure left behind.
   */
  async stop(): Promise<string[]> {
    const notes: string[] = [];
    if (this.#stopped) return notes;
    this.#stopped = true;
    // 1. The pods, through the CRI, while containerd still runs.
    if (alive(this.#child.pid)) {
      const client = new CriClient(this.socket, 20_000);
      try {
        for (const p of await client.listPodSandbox()) {
          await client.stopPodSandbox(p.id).catch((e) => notes.push(`stop pod ${p.id}: ${e.message}`));
          await client.removePodSandbox(p.id).catch((e) => notes.push(`remove pod ${p.id}: ${e.message}`));
        }
      } catch (e) {
        notes.push(`listing pods: ${(e as Error).message}`);
      } finally {
        client.close();
      }
    }
    // The shims' sockets, to remove if a shim has to be killed (they live in containerd's fixed /run dir).
    const shimSockets: string[] = [];
    const tasks = `${this.dir}/state/io.containerd.runtime.v2.task/k8s.io`;
    try {
      for (const e of Deno.readDirSync(tasks)) {
        try {
          const a = Deno.readTextFileSync(`${tasks}/${e.name}/address`).trim();
          if (a.startsWith("unix://")) shimSockets.push(a.slice("unix://".length));
        } catch { /* no shim */ }
      }
    } catch { /* no tasks */ }
    // 2. containerd.
    try {
      this.#child.kill("SIGTERM");
    } catch { /* gone */ }
    const t = setTimeout(() => {
      try {
        this.#child.kill("SIGKILL");
      } catch { /* gone */ }
    }, 10_000);
    await this.#child.status;
    clearTimeout(t);
    // 3. Containers runc still has (a pod whose removal failed): killed and deleted.
    const runcRoot = `${this.dir}/runc/k8s.io`;
    const list = await run("runc", ["--root", runcRoot, "list", "-q"], 20);
    for (const id of list.ok ? list.out.split("\n").filter(Boolean) : []) {
      notes.push(`runc container ${id} was left: deleted`);
      await run("runc", ["--root", runcRoot, "delete", "-f", id], 20);
    }
    // 4. Shims started for this containerd (their command line names its socket).
    for (const pid of shimsOf(this.socket)) {
      notes.push(`shim ${pid} was left: killed`);
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
    for (const s of shimSockets) {
      try {
        Deno.removeSync(s);
      } catch { /* removed by its shim */ }
    }
    // 5. Mounts under the directory (rootfs overlays, the pods' /dev/shm).
    for (const m of mountsUnder(this.dir)) {
      const r = await run("umount", ["-l", m], 20);
      if (!r.ok) notes.push(`umount ${m}: ${r.out.trim()}`);
    }
    // 6. The pods' cgroups (runc removed each container's; their parents are left), and the empty run dirs.
    if (this.#o.cgroupParent) notes.push(...removeCgroups(this.#o.cgroupParent));
    for (const d of this.#made) {
      try {
        Deno.removeSync(d); // only when empty
      } catch { /* in use */ }
    }
    return notes;
  }
}

/** Removes the cgroup `name` (and what is under it) from every hierarchy; notes what could not be removed. */
export function removeCgroups(name: string): string[] {
  if (!/^[A-Za-z0-9._-]+$/.test(name)) return [`not a cgroup name: ${name}`];
  const notes: string[] = [];
  const tops: string[] = [];
  try {
    for (const e of Deno.readDirSync("/sys/fs/cgroup")) {
      if (e.name === name) tops.push(`/sys/fs/cgroup/${name}`); // cgroup v2 alone
      else if (e.isDirectory) tops.push(`/sys/fs/cgroup/${e.name}/${name}`); // v1 hierarchies, hybrid's v2
    }
  } catch {
    return notes;
  }
  const rm = (d: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(d)];
    } catch {
      return; // not in this hierarchy
    }
    for (const e of entries) if (e.isDirectory) rm(`${d}/${e.name}`);
    try {
      Deno.removeSync(d); // rmdir: a cgroup's files are not real files
    } catch (e) {
      notes.push(`cgroup ${d}: ${(e as Error).message}`);
    }
  };
  tops.forEach(rm);
  return notes;
}

/** Pids of containerd-shim processes whose `-address` is `socket`. */
function shimsOf(socket: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    let argv: string[];
    try {
      argv = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).split("\0");
    } catch {
      continue;
    }
    if (!/containerd-shim/.test(argv[0] ?? "")) continue;
    const i = argv.indexOf("-address");
    if (i >= 0 && argv[i + 1] === socket) pids.push(Number(e.name));
  }
  return pids;
}
