/**
 * What a container runtime sends to the OCI seccomp `listenerPath`: one message carrying the seccomp
 * notification fd (SCM_RIGHTS) and a JSON ContainerProcessState (runtime-spec config-linux.md, "The Container
 * Process State"):
 *
 * ```json
 * { "ociVersion": "1.0.2", "fds": ["seccompFd"], "pid": 4422, "metadata": "…listenerMetadata…",
 *   "state": { "ociVersion": "1.0.2", "id": "…", "status": "creating", "pid": 4422, "bundle": "/…",
 *              "annotations": { "io.kubernetes.cri.sandbox-namespace": "default", … } } }
 * ```
 *
 * Pure code: parsing and naming the pod. The JSON comes from the runtime (the peer is checked to be root
 * before it is read), never from the container; it is still parsed defensively.
 */
import type { ContainerIdentity } from "../types.ts";

export interface ProcessState {
  /** Index of the seccomp fd among the fds received. */
  seccompFdIndex: number;
  /** The process the fd is for, as the runtime sees it; 0 when the runtime did not say (crun exec). */
  pid: number;
  /** The container's init process (state.pid), 0 if unknown. */
  initPid: number;
  /** `listenerMetadata` from the seccomp profile. */
  metadata: string;
  identity: ContainerIdentity;
  /** A pod's sandbox (pause) container rather than one of its containers. */
  sandbox: boolean;
  annotations: Record<string, string>;
}

/** The largest state message accepted (annotations can be long, but not this long). */
export const MAX_STATE_BYTES = 1 << 20;

/** Annotation keys naming the pod, by runtime. */
const KEYS = {
  namespace: ["io.kubernetes.cri.sandbox-namespace", "io.kubernetes.pod.namespace"],
  pod: ["io.kubernetes.cri.sandbox-name", "io.kubernetes.pod.name"],
  container: ["io.kubernetes.cri.container-name", "io.kubernetes.container.name"],
  type: ["io.kubernetes.cri.container-type", "io.kubernetes.cri-o.ContainerType"],
};

function pick(a: Record<string, string>, keys: string[]): string {
  for (const k of keys) if (typeof a[k] === "string") return a[k];
  return "";
}

/** Parses the state text; throws an Error with a one-line reason when it is not a usable state. */
export function parseProcessState(text: string): ProcessState {
  let j: unknown;
  try {
    j = JSON.parse(text);
  } catch {
    throw new Error("the runtime's message is not JSON");
  }
  if (typeof j !== "object" || j === null || Array.isArray(j)) {
    throw new Error("the runtime's message is not an object");
  }
  const o = j as Record<string, unknown>;
  if (typeof o.ociVersion !== "string") throw new Error("the runtime's message has no ociVersion");
  if (!Array.isArray(o.fds)) throw new Error("the runtime's message has no fds list");
  const seccompFdIndex = o.fds.indexOf("seccompFd");
  if (seccompFdIndex < 0) throw new Error("the runtime's message names no seccompFd");
  const st = o.state;
  if (typeof st !== "object" || st === null) throw new Error("the runtime's message has no state");
  const s = st as Record<string, unknown>;
  if (typeof s.id !== "string" || s.id === "") throw new Error("the runtime's message has no container id");
  const annotations: Record<string, string> = {};
  if (typeof s.annotations === "object" && s.annotations !== null) {
    for (const [k, v] of Object.entries(s.annotations as Record<string, unknown>)) {
      if (typeof v === "string") annotations[k] = v;
    }
  }
  const num = (v: unknown) => (typeof v === "number" && Number.isSafeInteger(v) && v > 0 ? v : 0);
  const type = pick(annotations, KEYS.type);
  return {
    seccompFdIndex,
    pid: num(o.pid),
    initPid: num(s.pid),
    metadata: typeof o.metadata === "string" ? o.metadata : "",
    identity: {
      namespace: pick(annotations, KEYS.namespace),
      pod: pick(annotations, KEYS.pod),
      container: pick(annotations, KEYS.container),
      id: s.id,
    },
    sandbox: type === "sandbox",
    annotations,
  };
}

/** How a container is named in logs and questions: `namespace/pod container`, or the runtime id. */
export function describeContainer(c: ContainerIdentity): string {
  if (c.namespace || c.pod) return `${c.namespace}/${c.pod}${c.container ? " " + c.container : ""}`;
  return `container ${c.id}`;
}

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const SUBDOMAIN = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * The rules files that apply to a pod, most general first: `default.rules`, `NAMESPACE.rules`,
 * `NAMESPACE.POD.rules` (file names a ConfigMap can hold). Names that are not valid Kubernetes names are not
 * used to build paths. (For the namespace called `default`, `default.rules` is both: it applies to every pod.)
 */
export function podRuleFiles(c: ContainerIdentity): string[] {
  const files = ["default.rules"];
  if (LABEL.test(c.namespace) && c.namespace.length <= 63) {
    files.push(`${c.namespace}.rules`);
    if (SUBDOMAIN.test(c.pod) && c.pod.length <= 253) files.push(`${c.namespace}.${c.pod}.rules`);
  }
  // The namespace called "default" has no file of its own: default.rules is everyone's.
  return [...new Set(files)];
}
