/**
 * Real container runtimes for the `hallpass agent` tests: busybox bundles run with runc and crun, the agent as
 * a child process (`deno run main.ts agent`), its output collected. Root only (runc and crun need it here,
 * and the agent in a cluster runs privileged); the tests say so and fail when not root.
 */
import { seccompProfile } from "../../lib/agent/profile.ts";
import { type Need, probe, test, tool } from "../helpers/skip.ts";

const ROOT = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const DENO = Deno.execPath();
const dec = new TextDecoder();

/** What every container test needs: root, runc, crun and busybox (`make test` installs the three). */
export const CONTAINERS: Need[] = [
  probe("root", () => Deno.uid() === 0 ? undefined : "needs root (runc and crun run containers)"),
  tool("runc"),
  tool("crun"),
  tool("busybox"),
];

/** Deno.test for a container test: reported skipped, with the reason, where CONTAINERS are missing. */
export function agentTest(name: string, fn: () => Promise<void>): void {
  test({ name, ignore: CONTAINERS }, fn);
}

export function needRoot(): void {
  if (Deno.uid() !== 0) {
    throw new Error("the container runtime tests need root (runc and crun run containers)");
  }
}

export function which(prog: string): string | null {
  for (const d of ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]) {
    try {
      Deno.statSync(`${d}/${prog}`);
      return `${d}/${prog}`;
    } catch { /* next */ }
  }
  return null;
}

export function needTools(...progs: string[]): void {
  const missing = progs.filter((p) => which(p) === null);
  if (missing.length) {
    throw new Error(`missing ${missing.join(", ")}: \`make deps\` installs runc, crun and busybox-static`);
  }
  fixHybridCgroups();
}

/**
 * crun 1.8.1 refuses to run on a hybrid cgroup layout (v1 controllers plus a v2 hierarchy) while any controller
 * is left on the v2 side ("cgroups in hybrid mode not supported, drop all controllers from cgroupv2"). Our VMs
 * leave hugetlb there; mounting its v1 hierarchy moves it over (it has no v2 users), as a distribution with
 * every controller on v1 would have it.
 */
function fixHybridCgroups(): void {
  let controllers: string;
  try {
    controllers = Deno.readTextFileSync("/sys/fs/cgroup/unified/cgroup.controllers").trim();
  } catch {
    return; // not hybrid
  }
  for (const c of controllers.split(/\s+/).filter(Boolean)) {
    if (!/^[a-z_]+$/.test(c)) continue;
    const dir = `/sys/fs/cgroup/${c}`;
    try {
      Deno.mkdirSync(dir, { recursive: true });
    } catch { /* there */ }
    new Deno.Command("mount", { args: ["-t", "cgroup", "-o", c, "cgroup", dir], stderr: "null" })
      .outputSync();
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function until(fn: () => boolean | Promise<boolean>, what: string, timeoutMs = 60_000) {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export { lexists as exists } from "../../lib/util/exists.ts";

/** A running `hallpass agent`. */
export class AgentProcess {
  readonly child: Deno.ChildProcess;
  #out = "";
  readonly #reading: Promise<void>;

  private constructor(child: Deno.ChildProcess) {
    this.child = child;
    this.#reading = (async () => {
      for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) this.#out += chunk;
    })();
  }

  static async start(args: string[], waitFor = /serving /): Promise<AgentProcess> {
    const child = new Deno.Command(DENO, {
      args: ["run", "--quiet", "--allow-all", "--no-prompt", `${ROOT}/main.ts`, "agent", ...args],
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    const a = new AgentProcess(child);
    await a.waitOutput(waitFor, 60_000);
    return a;
  }

  get output(): string {
    return this.#out;
  }

  async waitOutput(re: RegExp, timeoutMs = 60_000): Promise<string> {
    await until(() => re.test(this.#out), `the agent to print ${re} (it printed:\n${this.#out})`, timeoutMs);
    return this.#out;
  }

  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    try {
      this.child.kill(signal);
    } catch { /* gone */ }
    const st = await this.child.status;
    await this.#reading;
    return st;
  }
}

export interface BundleOptions {
  /** The command in the container (sh -c SCRIPT). */
  script: string;
  socket: string;
  connect?: boolean;
  /** The protect profile (`--print-profile --protect`): read opens trapped too. */
  reads?: boolean;
  /** Pod identity in the annotations the CRI plugins use. */
  namespace?: string;
  pod?: string;
  container?: string;
  /** Share the host's network namespace (connect tests use a host listener). */
  hostNetwork?: boolean;
  /** Run the process as this uid/gid (default root). */
  user?: { uid: number; gid: number };
  /** Without hallpass's seccomp profile: the control of what the kernel itself allows the container. */
  noSeccomp?: boolean;
}

/** A bundle directory with a busybox rootfs and a config.json using hallpass's seccomp profile. */
export async function makeBundle(dir: string, o: BundleOptions): Promise<string> {
  const rootfs = `${dir}/rootfs`;
  for (const d of ["bin", "tmp", "etc", "proc", "dev", "sys", "opt", "root"]) {
    await Deno.mkdir(`${rootfs}/${d}`, { recursive: true });
  }
  await Deno.chmod(`${rootfs}/tmp`, 0o1777);
  await Deno.copyFile(which("busybox")!, `${rootfs}/bin/busybox`);
  await Deno.chmod(`${rootfs}/bin/busybox`, 0o755);
  // A second program the rules do not allow (a copy, so it is a different file).
  await Deno.copyFile(which("busybox")!, `${rootfs}/opt/other`);
  await Deno.chmod(`${rootfs}/opt/other`, 0o755);
  for (
    const a of [
      "sh",
      "echo",
      "cat",
      "ls",
      "mkdir",
      "ln",
      "rm",
      "sleep",
      "true",
      "wget",
      "nc",
      "touch",
      "mv",
      "test",
    ]
  ) {
    await Deno.symlink("busybox", `${rootfs}/bin/${a}`);
  }
  await Deno.writeTextFile(`${rootfs}/etc/passwd`, "root:x:0:0:root:/root:/bin/sh\n");
  const spec = await new Deno.Command("runc", { args: ["spec"], cwd: dir }).output();
  if (!spec.success) throw new Error(`runc spec: ${dec.decode(spec.stderr)}`);
  const config = JSON.parse(await Deno.readTextFile(`${dir}/config.json`));
  config.process.terminal = false;
  config.process.args = ["/bin/sh", "-c", o.script];
  config.process.env = ["PATH=/bin", "HOME=/root"];
  if (o.user) config.process.user = { uid: o.user.uid, gid: o.user.gid, additionalGids: [o.user.gid] };
  config.root.readonly = false;
  if (!o.noSeccomp) {
    config.linux.seccomp = seccompProfile({
      listenerPath: o.socket,
      connect: o.connect ?? false,
      reads: o.reads ?? false,
    });
  }
  config.annotations = {
    "io.kubernetes.cri.sandbox-namespace": o.namespace ?? "default",
    "io.kubernetes.cri.sandbox-name": o.pod ?? "web",
    "io.kubernetes.cri.container-name": o.container ?? "app",
    "io.kubernetes.cri.container-type": "container",
  };
  if (o.hostNetwork) {
    config.linux.namespaces = config.linux.namespaces.filter((n: { type: string }) => n.type !== "network");
  }
  await Deno.writeTextFile(`${dir}/config.json`, JSON.stringify(config, null, 1));
  return rootfs;
}

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `RUNTIME run ID` in the bundle, to the end (killed after `timeoutMs`). */
export async function runContainer(
  runtime: "runc" | "crun",
  bundle: string,
  id: string,
  timeoutMs = 30_000,
): Promise<Run> {
  const r = await new Deno.Command("timeout", {
    args: ["-k", "2", String(Math.ceil(timeoutMs / 1000)), runtime, "run", "--bundle", bundle, id],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  await forceDelete(runtime, id);
  return { code: r.code, stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr) };
}

/** Starts `RUNTIME run -d ID` (detached); the container runs until deleted. */
export async function startDetached(runtime: "runc" | "crun", bundle: string, id: string): Promise<void> {
  // The container inherits the runtime's stdio: a file, not a pipe whose reader would wait for it to end.
  const err = `${bundle}/run-d.err`;
  const r = await new Deno.Command("sh", {
    args: [
      "-c",
      `exec "$0" run -d --bundle "$1" "$2" </dev/null >/dev/null 2>"$3"`,
      runtime,
      bundle,
      id,
      err,
    ],
  }).output();
  if (!r.success) throw new Error(`${runtime} run -d: ${await Deno.readTextFile(err).catch(() => "")}`);
}

export async function execIn(runtime: "runc" | "crun", id: string, script: string): Promise<Run> {
  const r = await new Deno.Command("timeout", {
    args: ["-k", "2", "30", runtime, "exec", id, "/bin/sh", "-c", script],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: r.code, stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr) };
}

export async function forceDelete(runtime: "runc" | "crun", id: string): Promise<void> {
  await new Deno.Command(runtime, { args: ["delete", "-f", id], stdout: "null", stderr: "null" }).output();
}

/** A scratch directory with `rules/` (0700: root only). */
export async function scratch(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "hallpass-agent-" });
  await Deno.mkdir(`${dir}/rules`);
  return dir;
}

/**
 * Runs `fn` with an agent on a scratch directory (root, runc, crun and busybox needed): `rules` are the files of
 * its rules directory (name: text), `args` its further arguments (given the directory). The agent is stopped and
 * the directory removed after; a failure carries the agent's output.
 */
export async function withAgent(
  rules: Record<string, string>,
  fn: (dir: string, socket: string, agent: AgentProcess) => Promise<void>,
  args: (dir: string) => string[] = () => [],
): Promise<void> {
  needRoot();
  needTools("runc", "crun", "busybox");
  const dir = await scratch();
  for (const [name, text] of Object.entries(rules)) await Deno.writeTextFile(`${dir}/rules/${name}`, text);
  const socket = `${dir}/agent.sock`;
  const agent = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`, ...args(dir)]);
  try {
    await fn(dir, socket, agent);
  } catch (e) {
    throw new Error(`${(e as Error).message}\n--- agent output ---\n${agent.output}`);
  } finally {
    await agent.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

let serial = 0;
export function containerId(tag: string): string {
  return `hp-${tag}-${Deno.pid}-${++serial}`;
}
