/**
 * What the main thread hands the supervisor Worker: plain data (structured-clonable), built once per run.
 */
import type { Answer, ContainerIdentity, Question, Rule } from "../types.ts";
import type { ProtectedPath } from "../policy/protected_paths.ts";

export interface SessionConfig {
  listenerFd: number;
  /** Read end of a pipe the main thread writes to after posting a message (wakes the blocking poll). */
  wakeFd: number;
  /**
   * Int32[2]: [0] how many messages the Worker has posted, [1] 1 while it handles a notification: the main
   * thread stops it only when it is idle and every message it posted has arrived.
   */
  posted: SharedArrayBuffer;
  /** Process id of the command hallpass started (its first exec is allowed). */
  commandPid: number;
  /** The launcher (parent of the command). */
  launcherPid: number;
  project: string;
  home: string;
  cwd: string;
  /** Paths the Landlock floor lets the sandbox write (trees and exact files): allowed calls there CONTINUE. */
  floor: { kind: "exact" | "tree"; path: string }[];
  /**
   * Floor directories granted entry by entry (lib/sandbox/plan.ts carveFloor): every change of an entry there is
   * performed by the supervisor, which then drops that entry from the floor (a new file there is in no rule).
   */
  carved?: string[];
  /** Paths that ask even inside the floor (lib/policy/protected_paths.ts). */
  protected?: ProtectedPath[];
  rules: Rule[];
  /** The program groups the rules name (lib/policy/exec_groups.ts groupRecord); absent: the builtins only. */
  groups?: Record<string, string[]>;
  mediate: { exec: boolean; connect: boolean };
  /** `--allow-keyring`: the kernel keyring calls go through (lib/supervisor/sys_calls.ts). */
  allowKeyring?: boolean;
  /** `--allow-privileged-files`: setuid/setgid, file capabilities, device nodes are decided as writes. */
  allowPrivilegedFiles?: boolean;
  /** Nobody is asked: what would ask is denied at once (--no-ask, or no terminal). */
  noAsk: boolean;
  /** Environment PATH at start, for program names in rules. */
  pathEnv: string;
  logPath: string | null;
  /** The command's umask (the supervisor runs with umask 0 and applies the command's itself). */
  umask: number;
  /**
   * Directories on the way to a protected location (lib/floor/read_floor.ts), with the inode number each name had
   * at start: a file made there during the run cannot be read back, and the person is told when the
   * supervisor makes one.
   */
  readCarved?: Map<string, Map<string, number | undefined>>;
  /**
   * Read protections in force (lib/policy/secrets.ts): `protect` unreadable, `readable` made readable inside one. A
   * performed rename or link must not carry a protected file to where it can be read.
   */
  readProtected?: { protect: string[]; readable: string[] };
  /** An agent's files kept in place: a rename over one is refused with EXDEV (lib/sandbox/agent_start_files.ts). */
  inPlace?: string[];
  /** The fast path library (lib/sandbox/run.ts fastPathLibrary), or null: the mediator answers everything. */
  fastPath?: string | null;
  /**
   * A notification the main thread's fast path received and could not answer (a struct seccomp_notif): the
   * first the Worker handles.
   */
  first?: Uint8Array<ArrayBuffer>;
  /** `first` is a blocking connect the main thread's fast path started on this socket: wait for it, answer. */
  firstConnecting?: number;
  /**
   * `hallpass agent`: the sandbox is a container the runtime set up. Paths are looked up inside its root (that
   * of `rootPid`), there is no floor (every allowed write is emulated), and until the first execve on this
   * listener every call is the runtime's own setup (runc's exec fifo, …) and passes; `commandPid` 0 means the
   * runtime did not say which process that is (crun for exec'd processes).
   */
  container?: {
    rootPid: number;
    identity: ContainerIdentity;
    /** Taken over from another agent: the runtime's setup is long over. */
    setupDone?: boolean;
  };
}

export type ToMain =
  | { t: "ready" }
  | { t: "ask"; q: Question; key: string }
  | { t: "withdraw"; qid: number }
  | {
    t: "decided";
    effect: "deny" | "allow";
    op: string;
    target: string;
    pid: number;
    name: string;
    syscall: string;
    by: string;
    suggest?: string;
    /** The deny rule that decided, with its source (for the summary: an --allow-path would not override it). */
    rule?: string;
  }
  | { t: "stopped"; stats: { notifications: number; continued: number; emulated: number; denied: number } }
  | { t: "fatal"; message: string }
  | { t: "notice"; line: string };

export type ToWorker =
  | { t: "init"; config: SessionConfig }
  | { t: "answer"; qid: number; answer: Answer }
  | { t: "stop" };
