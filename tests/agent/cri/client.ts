/**
 * A small CRI client standing in for the kubelet: gRPC (`@grpc/grpc-js`) over the runtime's unix socket, with
 * the messages of `api.proto` beside this file (a subset of the CRI's `runtime.v1`, field numbers exact).
 * Messages are plain objects with the proto's own snake_case field names; enums are their names as strings;
 * int64 fields are numbers; bytes fields are Uint8Arrays.
 */
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import * as grpc from "npm:@grpc/grpc-js@1.14.7";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import * as protoLoader from "npm:@grpc/proto-loader@0.8.1";

const PROTO = new URL("./api.proto", import.meta.url).pathname;

export type NamespaceMode = "POD" | "CONTAINER" | "NODE" | "TARGET";

export interface SecurityProfile {
  profile_type: "RuntimeDefault" | "Unconfined" | "Localhost";
  /** For seccomp: the absolute path of the profile on the node. */
  localhost_ref?: string;
}

export interface NamespaceOption {
  network?: NamespaceMode;
  pid?: NamespaceMode;
  ipc?: NamespaceMode;
}

export interface PodSandboxConfig {
  metadata: { name: string; uid: string; namespace: string; attempt?: number };
  hostname?: string;
  log_directory?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  linux?: {
    cgroup_parent?: string;
    security_context?: {
      namespace_options?: NamespaceOption;
      privileged?: boolean;
      seccomp?: SecurityProfile;
    };
  };
}

export interface ContainerConfig {
  metadata: { name: string; attempt?: number };
  image: { image: string };
  command?: string[];
  args?: string[];
  working_dir?: string;
  envs?: { key: string; value: string }[];
  /** Volumes: a host path bind-mounted at container_path. */
  mounts?: { container_path: string; host_path: string; readonly?: boolean }[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Relative to the pod's log_directory. */
  log_path?: string;
  linux?: {
    security_context?: {
      namespace_options?: NamespaceOption;
      privileged?: boolean;
      no_new_privs?: boolean;
      readonly_rootfs?: boolean;
      run_as_user?: { value: number };
      run_as_group?: { value: number };
      capabilities?: { add_capabilities?: string[]; drop_capabilities?: string[] };
      seccomp?: SecurityProfile;
    };
  };
}

export type ContainerState =
  | "CONTAINER_CREATED"
  | "CONTAINER_RUNNING"
  | "CONTAINER_EXITED"
  | "CONTAINER_UNKNOWN";

export interface ContainerStatus {
  id: string;
  metadata: { name: string; attempt: number };
  state: ContainerState;
  created_at: number;
  started_at: number;
  finished_at: number;
  exit_code: number;
  reason: string;
  message: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  log_path: string;
}

export interface Container {
  id: string;
  pod_sandbox_id: string;
  metadata: { name: string; attempt: number };
  state: ContainerState;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface PodSandbox {
  id: string;
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  state: "SANDBOX_READY" | "SANDBOX_NOTREADY";
  annotations: Record<string, string>;
}

export interface ExecSyncResult {
  stdout: string;
  stderr: string;
  exit_code: number;
}

/** A CRI call that failed: the gRPC status code and the runtime's message. */
export class CriError extends Error {
  constructor(readonly method: string, readonly code: number, detail: string) {
    super(`CRI ${method}: ${detail}`);
  }
}

type Callback = (err: grpc.ServiceError | null, res: unknown) => void;
type Stub =
  & grpc.Client
  & Record<string, (req: unknown, md: grpc.Metadata, o: grpc.CallOptions, cb: Callback) => void>;

let definition: protoLoader.PackageDefinition | null = null;

export class CriClient {
  readonly #runtime: Stub;
  readonly #image: Stub;
  readonly #timeoutMs: number;

  /** A client for the CRI socket at `socketPath` (a path on this machine). */
  constructor(socketPath: string, timeoutMs = 30_000) {
    definition ??= protoLoader.loadSync(PROTO, {
      keepCase: true,
      longs: Number,
      enums: String,
      defaults: true,
      arrays: true,
      objects: true,
    });
    // deno-lint-ignore no-explicit-any
    const pkg = grpc.loadPackageDefinition(definition) as any;
    const v1 = pkg.runtime.v1;
    const target = `unix://${socketPath}`;
    this.#runtime = new v1.RuntimeService(target, grpc.credentials.createInsecure()) as Stub;
    this.#image = new v1.ImageService(target, grpc.credentials.createInsecure()) as Stub;
    this.#timeoutMs = timeoutMs;
  }

  close(): void {
    this.#runtime.close();
    this.#image.close();
  }

  #call<T>(stub: Stub, method: string, req: unknown, timeoutMs = this.#timeoutMs): Promise<T> {
    return new Promise((resolve, reject) => {
      const deadline = new Date(Date.now() + timeoutMs);
      stub[method](req, new grpc.Metadata(), { deadline }, (err, res) => {
        if (err) reject(new CriError(method, err.code, err.details || err.message));
        else resolve(res as T);
      });
    });
  }

  version(): Promise<
    { version: string; runtime_name: string; runtime_version: string; runtime_api_version: string }
  > {
    return this.#call(this.#runtime, "Version", { version: "v1" });
  }

  /** The runtime's conditions (RuntimeReady, NetworkReady). */
  async status(): Promise<{ type: string; status: boolean; reason: string; message: string }[]> {
    const r = await this.#call<
      { status: { conditions: { type: string; status: boolean; reason: string; message: string }[] } }
    >(
      this.#runtime,
      "Status",
      { verbose: false },
    );
    return r.status?.conditions ?? [];
  }

  /** The image's id, or null when the runtime does not have it. */
  async imageId(ref: string): Promise<string | null> {
    const r = await this.#call<{ image: { id: string } | null }>(this.#image, "ImageStatus", {
      image: { image: ref },
    });
    return r.image?.id || null;
  }

  async runPodSandbox(config: PodSandboxConfig): Promise<string> {
    const r = await this.#call<{ pod_sandbox_id: string }>(
      this.#runtime,
      "RunPodSandbox",
      { config },
      60_000,
    );
    return r.pod_sandbox_id;
  }

  /** The sandbox's status and, verbose, containerd's `info` JSON (its OCI spec, pid, …). */
  async podSandboxStatus(id: string): Promise<{ status: PodSandbox; info: Record<string, unknown> }> {
    const r = await this.#call<{ status: PodSandbox; info: Record<string, string> }>(
      this.#runtime,
      "PodSandboxStatus",
      { pod_sandbox_id: id, verbose: true },
    );
    return { status: r.status, info: parseInfo(r.info) };
  }

  async listPodSandbox(): Promise<PodSandbox[]> {
    const r = await this.#call<{ items: PodSandbox[] }>(this.#runtime, "ListPodSandbox", {});
    return r.items;
  }

  async stopPodSandbox(id: string): Promise<void> {
    await this.#call(this.#runtime, "StopPodSandbox", { pod_sandbox_id: id }, 60_000);
  }

  async removePodSandbox(id: string): Promise<void> {
    await this.#call(this.#runtime, "RemovePodSandbox", { pod_sandbox_id: id }, 60_000);
  }

  async createContainer(
    podId: string,
    config: ContainerConfig,
    sandboxConfig: PodSandboxConfig,
  ): Promise<string> {
    const r = await this.#call<{ container_id: string }>(this.#runtime, "CreateContainer", {
      pod_sandbox_id: podId,
      config,
      sandbox_config: sandboxConfig,
    });
    return r.container_id;
  }

  async startContainer(id: string): Promise<void> {
    await this.#call(this.#runtime, "StartContainer", { container_id: id }, 60_000);
  }

  async stopContainer(id: string, timeoutSeconds = 0): Promise<void> {
    await this.#call(this.#runtime, "StopContainer", { container_id: id, timeout: timeoutSeconds }, 60_000);
  }

  async removeContainer(id: string): Promise<void> {
    await this.#call(this.#runtime, "RemoveContainer", { container_id: id });
  }

  async listContainers(podId?: string): Promise<Container[]> {
    const r = await this.#call<{ containers: Container[] }>(this.#runtime, "ListContainers", {
      filter: podId ? { pod_sandbox_id: podId } : {},
    });
    return r.containers;
  }

  /** The container's status and, verbose, containerd's `info` JSON (its pid, OCI spec, …). */
  async containerStatus(id: string): Promise<{ status: ContainerStatus; info: Record<string, unknown> }> {
    const r = await this.#call<{ status: ContainerStatus; info: Record<string, string> }>(
      this.#runtime,
      "ContainerStatus",
      { container_id: id, verbose: true },
    );
    return { status: r.status, info: parseInfo(r.info) };
  }

  /** Runs `cmd` in the container to its end (the kubelet's exec probes and `kubectl exec` without a tty). */
  async execSync(id: string, cmd: string[], timeoutSeconds = 20): Promise<ExecSyncResult> {
    const r = await this.#call<{ stdout: Uint8Array; stderr: Uint8Array; exit_code: number }>(
      this.#runtime,
      "ExecSync",
      { container_id: id, cmd, timeout: timeoutSeconds },
      (timeoutSeconds + 10) * 1000,
    );
    const dec = new TextDecoder();
    return { stdout: dec.decode(r.stdout), stderr: dec.decode(r.stderr), exit_code: r.exit_code };
  }
}

/** containerd puts its verbose details under the key "info", as a JSON string. */
function parseInfo(info: Record<string, string> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info ?? {})) {
    try {
      out[k] = JSON.parse(v);
    } catch {
      out[k] = v;
    }
  }
  return out;
}
