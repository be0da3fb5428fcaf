/**
 * `hallpass agent`: the node agent for Kubernetes (docs/kubernetes.md). Container runtimes (runc, crun, containerd, CRI-O)
 * connect to its socket — the seccomp profile's `listenerPath` — and hand over each container process's seccomp
 * notification fd with a JSON ContainerProcessState. The agent mediates every such container with the same
 * engine as a workstation (a supervisor Worker per container, lib/supervisor/), under the rules for its pod,
 * and sends what would ask to people outside (lib/agent/answer_service.ts): `hallpass answer` or a web page.
 *
 * Differences from a workstation, all deliberate:
 * - No Landlock floor: the runtime set the container up, so nothing is continued after a check; every allowed
 *   write and connect is emulated, inside the container's root (openat2 RESOLVE_IN_ROOT, lib/supervisor/view.ts).
 * - Until a container process's first execve, the runtime's own code runs in it: its calls pass.
 * - A restart hands the listeners over: a new agent started on the same socket asks the running one (through
 *   SOCKET.handover) for every listener fd and the listening socket itself, so runtimes and running pods never
 *   see the change. Only questions waiting for a person at that moment are denied (EACCES). The old agent then
 *   stays, idle, until it is stopped (a DaemonSet would restart an agent that exits, and it would take the
 *   containers back).
 */
import { close, dupCloexec, pollAsync, recvWithFds, sendWithFds } from "../../ffi/libc.ts";
import { acceptUnix, connectUnix, listenUnix } from "../../ffi/unix_socket.ts";
import { NoAsk } from "../ask/no_ask.ts";
import { parseRules } from "../policy/rules_file.ts";
import { groupRecord, type GroupTable, newGroupTable } from "../policy/exec_groups.ts";
import { SupervisorHost } from "../supervisor/host.ts";
import { Summary } from "../cli/summary.ts";
import type { ReadRule, Rule } from "../types.ts";
import { podReadProtection, protectionUnheld } from "./pod_reads.ts";
import type { AskBackend } from "../ask/backend.ts";
import { UsageError } from "../types.ts";
import {
  describeContainer,
  MAX_STATE_BYTES,
  parseProcessState,
  podRuleFiles,
  type ProcessState,
} from "./runtime_state.ts";
import { Errno, SysError } from "../../ffi/errors.ts";
import { concatBytes } from "../util/bytes.ts";

export interface AgentOptions {
  /** The socket runtimes connect to (the profile's listenerPath). */
  socket: string;
  /** Directory of rules files (`default.rules`, `NAMESPACE.rules`, `NAMESPACE.POD.rules`), or null: no rules. */
  rulesDir: string | null;
  /** HOST:PORT of the answer service (web page and `hallpass answer`), or null: nobody is asked (deny). */
  listen: string | null;
  tokenFile: string | null;
  askTimeoutMs: number;
  /** JSON lines, one per decision, or null. */
  logPath: string | null;
  mediate: { exec: boolean; connect: boolean };
  /** Called once the agent serves (its socket is there): tests and `--ready-file`. */
  onReady?: () => void;
}

/** A container's PATH when a rule names a program without a path (the usual image default). */
const CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
const STATE_TIMEOUT_MS = 5000;
const POLLIN = 1;

interface Container {
  state: ProcessState;
  /** The listener, and the copy the Worker uses (closed here once it has stopped). */
  listenerFd: number;
  workerFd: number;
  host: SupervisorHost;
  label: string;
}

/** What one agent hands to the next: a listener and what is known of its container. */
interface HandedOver {
  kind: "container";
  state: ProcessState;
}

export class Agent {
  readonly #o: AgentOptions;
  readonly #warn: (line: string) => void;
  readonly #containers = new Set<Container>();
  #backend: AskBackend = new NoAsk();
  #closeBackend: () => Promise<void> | void = () => {};
  #listenFd = -1;
  #handoverFd = -1;
  #stopping = false;
  #ended = false;
  #done: (code: number) => void = () => {};
  readonly finished: Promise<number>;

  constructor(o: AgentOptions, warn: (line: string) => void) {
    this.#o = o;
    this.#warn = warn;
    this.finished = new Promise((r) => (this.#done = r));
  }

  /** Number of containers being mediated. */
  get containers(): number {
    return this.#containers.size;
  }

  async start(): Promise<void> {
    let service: import("./answer_service.ts").AnswerService | null = null;
    if (this.#o.listen) {
      if (!this.#o.tokenFile) throw new UsageError("--listen needs --token-file (who may answer)");
      const { AnswerService, loadTokens } = await import("./answer_service.ts");
      const tokens = await loadTokens(this.#o.tokenFile);
      service = await AnswerService.create({
        listen: this.#o.listen,
        tokens,
        timeoutMs: this.#o.askTimeoutMs,
        logPath: this.#o.logPath, // the same file: answer events beside the supervisors' decision events
        warn: this.#warn,
      });
      this.#backend = service.backend();
      const svc = service;
      this.#closeBackend = () => svc.close();
    }
    this.#checkSocketPath(this.#o.socket);
    this.#checkSocketPath(this.#o.socket + ".handover");
    const inherited = await this.#takeOver();
    if (inherited < 0) {
      if (this.#removeStale(this.#o.socket)) {
        this.#warn(`hallpass agent: removed ${this.#o.socket}, left by an agent that is gone`);
      }
      this.#listenFd = listenOrSay(this.#o.socket);
    }
    const hp = this.#o.socket + ".handover";
    this.#removeStale(hp);
    this.#handoverFd = listenOrSay(hp, "seqpacket");
    if (service) {
      // Taken over: the old agent gave its address up at the end of the hand-over; the same address here.
      await service.listen(inherited >= 0 ? 10_000 : 0);
      const a = service.address;
      this.#warn(`hallpass agent: questions at http://${a.hostname}:${a.port}/`);
    }
    this.#acceptLoop();
    this.#handoverLoop();
    this.#warn(
      `hallpass agent: serving ${this.#o.socket}` +
        (inherited >= 0 ? ` (took over ${inherited} containers)` : ""),
    );
    this.#o.onReady?.();
  }

  /** A path the agent binds a socket at must be free or a socket: anything else is a usage error. */
  #checkSocketPath(path: string): void {
    let st: Deno.FileInfo;
    try {
      st = Deno.lstatSync(path);
    } catch {
      return; // not there
    }
    if (!st.isSocket) {
      const what = st.isDirectory ? "a directory" : st.isSymlink ? "a symbolic link" : "not a socket";
      throw new UsageError(`${path} exists and is ${what}: remove it, or give another --socket`);
    }
  }

  /** Removes a socket nobody listens on any more (an agent killed with SIGKILL); true when there was one. */
  #removeStale(path: string): boolean {
    try {
      if (!Deno.lstatSync(path).isSocket) return false;
      Deno.removeSync(path);
      return true;
    } catch {
      return false;
    }
  }

  /** Stops accepting and mediating (SIGTERM with no successor): pending questions are denied. */
  async stop(code = 0): Promise<void> {
    if (this.#ended) return;
    this.#ended = true;
    this.#stopping = true;
    if (this.#listenFd >= 0) close(this.#listenFd);
    if (this.#handoverFd >= 0) close(this.#handoverFd);
    this.#listenFd = this.#handoverFd = -1;
    for (const c of [...this.#containers]) await this.#drop(c);
    await this.#closeBackend();
    this.#done(code);
  }

  // ------------------------------------------------------------------ runtime connections

  /** The next connection on the listening socket `fd()` (polled each second), or null once the agent stops. */
  async #accept(fd: () => number): Promise<ReturnType<typeof acceptUnix>> {
    while (!this.#stopping) {
      const ev = await pollAsync(fd(), POLLIN, 1000);
      if (this.#stopping) return null;
      if (ev <= 0) continue;
      const conn = acceptUnix(fd());
      if (conn) return conn;
    }
    return null;
  }

  async #acceptLoop(): Promise<void> {
    let conn;
    while ((conn = await this.#accept(() => this.#listenFd)) !== null) {
      this.#runtimeConnection(conn).catch((e) => this.#warn(`hallpass agent: ${(e as Error).message}`));
    }
  }

  async #runtimeConnection(conn: { fd: number; pid: number; uid: number }): Promise<void> {
    let fds: number[] = [];
    try {
      // Only the runtime (root, or the agent's own user) may hand over containers: the socket is 0600 too.
      if (conn.uid !== 0 && conn.uid !== Deno.uid()) {
        this.#warn(`hallpass agent: refused a connection from uid ${conn.uid} (pid ${conn.pid})`);
        return;
      }
      // runc keeps the connection open after sending: the message ends where the JSON does.
      const msg = await readMessage(conn.fd, MAX_STATE_BYTES, STATE_TIMEOUT_MS, false, isCompleteJson);
      fds = msg.fds;
      const text = new TextDecoder().decode(msg.data);
      let state: ProcessState;
      try {
        state = parseProcessState(text);
      } catch (e) {
        throw new Error(
          `${(e as Error).message} (${msg.data.length} bytes: ${JSON.stringify(text.slice(0, 60))}…)`,
        );
      }
      const fd = fds[state.seccompFdIndex];
      if (fd === undefined) throw new Error("the runtime's message carried no seccomp fd");
      fds = fds.filter((f) => f !== fd);
      this.#mediate(state, fd, false);
    } catch (e) {
      this.#warn(`hallpass agent: runtime connection from pid ${conn.pid}: ${(e as Error).message}`);
    } finally {
      fds.forEach(close);
      close(conn.fd);
    }
  }

  /** The container's rules, and the program groups they define (the builtins and the files' `group` lines). */
  #rulesFor(state: ProcessState): { rules: Rule[]; groups: GroupTable; reads: ReadRule[] } {
    const dir = this.#o.rulesDir;
    const rules: Rule[] = [];
    const reads: ReadRule[] = [];
    const groups = newGroupTable();
    if (!dir) return { rules, groups, reads };
    for (const name of podRuleFiles(state.identity)) {
      const file = `${dir}/${name}`;
      let text: string;
      try {
        text = Deno.readTextFileSync(file);
      } catch {
        continue; // not every level has a file
      }
      rules.push(
        ...parseRules(text, {
          file,
          project: false,
          cwd: "/",
          home: "/root",
          lookup: () => null,
          groups,
          reads,
        }),
      );
    }
    return { rules, groups, reads };
  }

  /** Starts mediating one container process's listener. */
  #mediate(state: ProcessState, listenerFd: number, running: boolean): void {
    const label = describeContainer(state.identity);
    const rootPid = state.pid || state.initPid;
    let rules: Rule[];
    let groups: GroupTable;
    let readProtected: { protect: string[]; readable: string[] };
    try {
      let reads: ReadRule[];
      ({ rules, groups, reads } = this.#rulesFor(state));
      readProtected = podReadProtection(reads);
      // Protections a profile cannot hold (reads not trapped) are an error, not a promise (docs/kubernetes.md).
      const unheld = protectionUnheld(state.metadata, readProtected.protect);
      if (unheld !== null) throw new Error(unheld);
    } catch (e) {
      // Fail closed: with its rules unreadable the container is not mediated, and its trapped calls fail.
      this.#warn(`hallpass agent: ${label}: ${(e as Error).message}; its mediated calls will fail`);
      close(listenerFd);
      return;
    }
    const workerFd = dupCloexec(listenerFd);
    if (workerFd < 0) {
      close(listenerFd);
      this.#warn(`hallpass agent: ${label}: cannot copy its listener (errno ${-workerFd})`);
      return;
    }
    const summary = new Summary();
    let c: Container | null = null;
    const host = new SupervisorHost({
      listenerFd: workerFd,
      // The process the runtime set up: its first execve is the runtime's. crun says 0 for exec'd processes.
      commandPid: running ? -1 : state.pid,
      launcherPid: 0,
      project: "/.hallpass-no-project",
      home: "/root",
      cwd: "/",
      floor: [],
      rules,
      groups: groupRecord(groups),
      mediate: this.#o.mediate,
      noAsk: this.#backend instanceof NoAsk,
      pathEnv: CONTAINER_PATH,
      logPath: this.#o.logPath,
      umask: 0o022,
      container: { rootPid, identity: state.identity, setupDone: running },
      readProtected: readProtected.protect.length > 0 ? readProtected : undefined,
    }, {
      backend: this.#backend,
      summary,
      // Lines name the pod: `hallpass agent: team/builder app: denied write /etc/x by sh (pid 4242)`.
      warn: (l) => this.#warn(l.replace(/^hallpass: /, `hallpass agent: ${label}: `)),
      rulesFile: null,
      printDenials: true,
      onFatal: (message) => {
        // Fail closed: without a supervisor the container's trapped calls fail (ENOSYS).
        this.#warn(`hallpass agent: ${label}: supervisor failed (${message}); its mediated calls will fail`);
        if (c) this.#drop(c);
      },
    });
    c = { state, listenerFd, workerFd, host, label };
    this.#containers.add(c);
    host.startWhenNeeded();
    if (!running) this.#warn(`hallpass agent: ${label}: mediating pid ${rootPid || "(exec)"}`);
    const mine = c;
    // No events: only the hang-up (every process of the filter gone) wakes it.
    pollAsync(listenerFd, 0, -1).then(async () => {
      if (!this.#containers.has(mine)) return;
      this.#containers.delete(mine);
      if (await host.halt()) close(workerFd);
      close(listenerFd);
    });
  }

  /** Fail closed: with every copy of its listener closed, the container's trapped calls fail (ENOSYS). */
  async #drop(c: Container): Promise<void> {
    if (!this.#containers.delete(c)) return;
    if (await c.host.halt()) close(c.workerFd);
    close(c.listenerFd);
  }

  // ------------------------------------------------------------------ hand-over between agents

  /** Asks a running agent for its containers; the number taken over, or -1 when there is no agent. */
  async #takeOver(): Promise<number> {
    const fd = connectUnix(this.#o.socket + ".handover", "seqpacket");
    if (fd < 0) return -1;
    let n = 0;
    try {
      for (;;) {
        const msg = await readMessage(fd, 65536, 30_000, true);
        if (msg.data.length === 0) throw new Error("the running agent hung up during the hand-over");
        const m = JSON.parse(new TextDecoder().decode(msg.data)) as HandedOver | { kind: "listen" | "done" };
        if (m.kind === "done") break;
        if (m.kind === "listen") {
          this.#listenFd = msg.fds[0];
          continue;
        }
        if (msg.fds.length !== 1 || m.kind !== "container") {
          throw new Error("a hand-over message without its listener");
        }
        this.#mediate(m.state, msg.fds[0], true);
        n++;
      }
    } catch (e) {
      this.#warn(`hallpass agent: the hand-over failed: ${(e as Error).message}`);
      if (this.#listenFd < 0) return -1;
    } finally {
      close(fd);
    }
    if (this.#listenFd < 0) return -1;
    // The listening socket came from the old agent: make it non-blocking here too (it is the same file).
    return n;
  }

  async #handoverLoop(): Promise<void> {
    let conn;
    while ((conn = await this.#accept(() => this.#handoverFd)) !== null) {
      if (conn.uid !== 0 && conn.uid !== Deno.uid()) {
        close(conn.fd);
        continue;
      }
      await this.#handOver(conn.fd);
      return;
    }
  }

  /** Gives every listener and the listening socket to the agent connected on `fd`, then ends this one. */
  async #handOver(fd: number): Promise<void> {
    this.#stopping = true;
    this.#warn(`hallpass agent: handing ${this.#containers.size} containers over to a new agent`);
    const enc = new TextEncoder();
    try {
      for (const c of [...this.#containers]) {
        this.#containers.delete(c);
        if (await c.host.halt()) close(c.workerFd);
        const m: HandedOver = { kind: "container", state: c.state };
        sendBlocking(fd, enc.encode(JSON.stringify(m)), [c.listenerFd]);
        close(c.listenerFd);
      }
      sendBlocking(fd, enc.encode(JSON.stringify({ kind: "listen" })), [this.#listenFd]);
      // The question service's address goes to the new agent too: questions waiting here are denied (their
      // calls were handed over and come back there as new notifications) and the port is released.
      await this.#closeBackend();
      this.#closeBackend = () => {};
      sendBlocking(fd, enc.encode(JSON.stringify({ kind: "done" })), []);
    } catch (e) {
      this.#warn(`hallpass agent: the hand-over failed: ${(e as Error).message}`);
    }
    close(fd);
    close(this.#listenFd);
    close(this.#handoverFd);
    this.#listenFd = this.#handoverFd = -1;
    // Stay, idle, until told to stop: a DaemonSet restarts a container that exits, and a restarted old agent
    // would take the containers back from its successor.
    this.#warn("hallpass agent: handed over; idle until stopped");
  }
}

function sendBlocking(fd: number, data: Uint8Array, fds: number[]): void {
  const b = new Uint8Array(data.length);
  b.set(data);
  sendWithFds(fd, b, fds);
}

/**
 * One message from a stream socket: the bytes up to EOF (or, with `oneRead`, one read) and any fds that came
 * with them. A runtime may split its JSON over several reads; everything must arrive within `timeoutMs`.
 */
async function readMessage(
  fd: number,
  max: number,
  timeoutMs: number,
  oneRead = false,
  complete: (data: Uint8Array) => boolean = () => false,
): Promise<{ data: Uint8Array; fds: number[] }> {
  const deadline = Date.now() + timeoutMs;
  const parts: Uint8Array[] = [];
  const fds: number[] = [];
  let total = 0;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) {
      fds.forEach(close);
      throw new Error("the peer sent nothing complete in time");
    }
    const ev = await pollAsync(fd, POLLIN, Math.min(left, 1000));
    if (ev === 0) continue;
    let r: { data: Uint8Array; fds: number[] };
    try {
      r = recvWithFds(fd, 65536);
    } catch (e) {
      if ((e as { errno?: number }).errno === Errno.EAGAIN) continue;
      fds.forEach(close);
      throw e;
    }
    fds.push(...r.fds);
    if (r.data.length === 0) break;
    parts.push(r.data);
    total += r.data.length;
    if (total > max) {
      fds.forEach(close);
      throw new Error(`the peer's message is larger than ${max} bytes`);
    }
    if (oneRead || complete(concatBytes(parts, total))) break;
  }
  return { data: concatBytes(parts, total), fds };
}

/** Whether the bytes are one whole JSON object (a runtime's state may come in several reads). */
function isCompleteJson(data: Uint8Array): boolean {
  if (data[data.length - 1] !== 0x7d /* } */ && data[data.length - 1] !== 0x0a) return false;
  try {
    JSON.parse(new TextDecoder().decode(data));
    return true;
  } catch {
    return false;
  }
}

/**
 * listenUnix, its failure said in one line with what to do (`hallpass agent` by hand on a node without the
 * DaemonSet's /var/run/hallpass, or as an ordinary user): a usage error, not an internal one.
 */
function listenOrSay(path: string, type?: "stream" | "seqpacket"): number {
  try {
    return listenUnix(path, type);
  } catch (e) {
    if (!(e instanceof SysError)) throw e;
    const dir = path.slice(0, path.lastIndexOf("/")) || "/";
    const why = e.code === "ENOENT"
      ? `${dir} does not exist (mkdir -p ${dir}, or give --socket PATH)`
      : e.code === "EACCES" || e.code === "EPERM"
      ? `permission denied (the node agent runs as root; as yourself, give --socket PATH in a directory of yours)`
      : e.code;
    throw new UsageError(`cannot listen on ${path}: ${why}`);
  }
}
