/**
 * Shared vocabulary of hallpass: operations, targets, questions, answers, rules.
 * Pure types and tiny helpers only; nothing here touches the kernel.
 */

/** The three mediated categories (docs/threat-model.md). */
export type Op = "write" | "exec" | "connect";
export const OPS: readonly Op[] = ["write", "exec", "connect"];

/**
 * A path scope: `exact` covers one path, `tree` covers a directory and everything below it
 * (written `DIR/**`), `glob` the names in one directory that match a last component with one `*`
 * (`DIR/NAME*`, `DIR/pre-*-post`; `path` holds the pattern). Paths are absolute and normalised (no `.`/`..`,
 * no trailing slash).
 */
export interface PathScope {
  kind: "exact" | "tree" | "glob";
  path: string;
}

/** How a question was answered (README.md `--ask-program`, docs/terminal.md keys). */
export type AnswerKind = "once" | "for" | "always" | "deny" | "never";

export interface Answer {
  kind: AnswerKind;
  /** For `for`: how long the grant lasts, in milliseconds. */
  durationMs?: number;
  /** The scope `[t]`/`[a]`/`[n]` cover, as written in rules (`/dir/**`, `/file`, a connect DEST). */
  scope?: string;
  /** Who answered: `no-ask`, `ask-program`, `terminal`, `timeout`, `rule`, … */
  by: string;
}

/** One question put to a person or an ask program. Everything in it that came from the sandbox is hostile. */
export interface Question {
  /** Unique within the session. */
  id: number;
  op: Op;
  /** Thread-group id of the process that asked. */
  pid: number;
  /** The process name (`comm`): the program's words (it sets it, PR_SET_NAME). */
  name: string;
  /**
   * The executable the kernel runs for that process (/proc/PID/exe): what the kernel vouches for. Shown first;
   * `name`, `argv` and `chain` are the program's words.
   */
  exe?: string;
  /** The whole target: a path, a program and its arguments, a destination; `A → B` for a rename or link. */
  target: string;
  /** For an operation with two paths (rename, link): both ends, canonical, as the target shows them. */
  paths?: string[];
  /** For exec: the argument vector, when it could be read. */
  argv?: string[];
  /** The system call that was trapped (`openat`, `mkdir`, …) or `request` for hallpass-request. */
  syscall: string;
  /** Command lines from the asking process up to the command hallpass started (the programs' words). */
  chain: string[];
  /** Scope that `[t]`/`[a]` cover unless changed; one of `scopes`. */
  suggestedScope: string;
  /** Scopes the person can move between, narrowest first. */
  scopes: string[];
  /** hallpass-request `--reason`: the program's own words. */
  reason?: string;
  /** A warning to show (e.g. the sandbox can write the program it wants to run). */
  warning?: string;
  /** For hallpass-request: the requested grant duration (ms), if any. */
  requestedForMs?: number;
  /** For hallpass-request `--timeout`: deny (ETIMEDOUT) when nobody answers within this (ms). */
  requestTimeoutMs?: number;
  /**
   * In Kubernetes (`hallpass agent`): the container the asking process runs in, as the container runtime named
   * it (never what the container itself wrote).
   */
  container?: ContainerIdentity;
}

/** A container as its runtime described it to `hallpass agent` (annotations of the OCI state). */
export interface ContainerIdentity {
  /** Pod namespace and name, container name; "" when the runtime gave none (a bare `runc run`). */
  namespace: string;
  pod: string;
  container: string;
  /** The runtime's container id. */
  id: string;
}

/** Where a rule came from, for `hallpass rules` and error messages. */
export type RuleSource =
  | { kind: "cli"; option: string }
  | { kind: "file"; file: string; line: number; project: boolean }
  | { kind: "answer"; by: string }
  | { kind: "request"; requestId: number }
  | { kind: "builtin"; what: string };

export interface Rule {
  effect: "allow" | "deny";
  op: Op;
  /** The target as written (normalised), e.g. `/home/me/.npm/**`, `@system`, `tcp:127.0.0.1:80`. */
  target: string;
  /** Absolute expiry time (ms since epoch), if any. */
  expiresAt?: number;
  source: RuleSource;
}

/**
 * Reads are never asked about; a list of credential locations is unreadable (lib/policy/secrets.ts). `protect PATH`
 * adds one, `allow read PATH` lifts one (or makes PATH readable inside one). Enforced by the kernel at start
 * (Landlock), so never for a duration and never from an answer.
 */
export interface ReadRule {
  effect: "allow" | "protect";
  /** Absolute and normalised; a directory covers everything below it. */
  path: string;
  source: RuleSource;
}

export class UsageError extends Error {
  override name = "UsageError";
}
