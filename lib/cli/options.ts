/**
 * The command line (README.md) turned into a flat, validated configuration. Pure: no file system access except
 * what the caller passes in. Bad input throws UsageError with one line.
 */
import { parseDuration } from "../policy/duration.ts";
import { UsageError } from "../types.ts";

export const VERSION = "0.1.0";

export interface CliOptions {
  project?: string;
  allowPaths: string[];
  allowExec: string[];
  allowConnect: string[];
  /** `--allow-read PATH`: lift a read protection (lib/policy/secrets.ts). */
  allowRead: string[];
  /** `--protect PATH`: make PATH unreadable too. */
  protect: string[];
  mediate: { write: true; exec: boolean; connect: boolean };
  noAsk: boolean;
  /** Exit 123 when the command exited 0 but something was denied (docs/ci.md). */
  failOnDeny?: boolean;
  askProgram?: string;
  agents: string[];
  askTimeoutMs?: number;
  forMs: number;
  logPath?: string;
  rulesFiles: string[];
  quiet: boolean;
  /** Pass the fds above 2 hallpass was given on to the command (docs/threat-model.md). */
  keepFds?: boolean;
  /** `--allow-keyring`: add_key, keyctl, request_key go through (refused by default: docs/threat-model.md). */
  allowKeyring?: boolean;
  /** `--allow-privileged-files`: setuid/setgid bits, file capabilities, device nodes (docs/threat-model.md). */
  allowPrivilegedFiles?: boolean;
  command: string[];
}

export type Invocation =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "agents" }
  | { kind: "doctor"; json: boolean }
  | { kind: "rules"; args: string[]; opts: CliOptions }
  | { kind: "agent"; args: string[] }
  | { kind: "answer"; args: string[] }
  | { kind: "run"; opts: CliOptions };

export const HELP =
  `hallpass — run a program so that writes outside the project, runs of programs and (when asked)
network connects wait for your answer.

usage: hallpass [OPTIONS] [--] [COMMAND [ARG...]]     (no COMMAND: $SHELL, else /bin/sh)
       hallpass doctor                               what this kernel and machine support
       hallpass rules [write|exec|connect|read TARGET]  the rules, and which one decides an operation
       hallpass agent [OPTIONS]                      Kubernetes node agent (hallpass agent --help)
       hallpass answer [--agent URL]                 answer an agent's questions (hallpass answer --help)

options:
  --project DIR          the project directory (default: the current directory); writes below it go through
  --allow-path PATH      writes to PATH go through (a directory or PATH/** covers everything below it)
  --allow-exec PROG      PROG runs without asking: a path, a name in $PATH, DIR/**, or @group
  --allow-connect DEST   connects to DEST go through: [tcp:|udp:]ADDR[/N][:PORT[-PORT]], *, [IPv6],
                         unix:/path, unix:/dir/**, unix:@name, unix:@prefix*
  --allow-read PATH      PATH may be read although it is a protected credential location (hallpass rules
                         lists them), or a file inside one
  --protect PATH         PATH (a file, or a directory and everything below) cannot be read either
  --mediate LIST         categories that ask: write (always), exec, connect (default write,exec)
  --no-ask               never show a prompt: what would ask is denied (default without a terminal)
  --fail-on-deny         exit 123 when the command succeeded but something was denied (CI; docs/ci.md)
  --allow-keyring        let the program use the kernel keyrings (add_key, keyctl; refused by default)
  --allow-privileged-files
                         let the program set setuid/setgid bits and file capabilities and make device
                         nodes where it may write (refused by default: they would act later with more rights)
  --ask-program PROG     questions go to PROG (JSON on stdin, one answer line back)
  --agent NAME           add the recipe for a known agent CLI (hallpass --agents lists them)
  --ask-timeout DURATION an unanswered question is denied after DURATION
  --for DURATION         the duration of the [t] answer (default 5m)
  --log FILE             one JSON line for every decision
  --rules FILE           extra rules (repeatable)
  -q, --quiet            no summary at exit
  --keep-fds             pass open fds above 2 on to the command (closed by default: 3>>FILE is a grant)
  --version, -h, --help
Durations: 90s, 10m, 2h, 1h30m.  Docs: README.md and docs/ in the hallpass repository.`;

const WITH_VALUE = new Set([
  "--project",
  "--allow-path",
  "--allow-exec",
  "--allow-connect",
  "--allow-read",
  "--protect",
  "--mediate",
  "--ask-program",
  "--agent",
  "--ask-timeout",
  "--for",
  "--log",
  "--rules",
]);
const FLAGS = new Set([
  "--no-ask",
  "--fail-on-deny",
  "--keep-fds",
  "-q",
  "--quiet",
  "--version",
  "-h",
  "--help",
  "--agents",
  "--allow-keyring",
  "--allow-privileged-files",
]);

export function parseCommandLine(argv: string[]): Invocation {
  const o: CliOptions = {
    allowPaths: [],
    allowExec: [],
    allowConnect: [],
    allowRead: [],
    protect: [],
    mediate: { write: true, exec: true, connect: false },
    noAsk: false,
    agents: [],
    forMs: 300_000,
    rulesFiles: [],
    quiet: false,
    command: [],
  };
  const seen = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      i++;
      break;
    }
    if (!arg.startsWith("-") || arg === "-") break;
    const eq = arg.indexOf("=");
    const name = arg.startsWith("--") && eq > 0 ? arg.slice(0, eq) : arg;
    if (FLAGS.has(name)) {
      if (eq > 0) throw new UsageError(`${name} takes no value`);
      if (name === "-h" || name === "--help") return { kind: "help" };
      if (name === "--version") return { kind: "version" };
      if (name === "--agents") return { kind: "agents" };
      if (name === "--no-ask") o.noAsk = true;
      if (name === "--fail-on-deny") o.failOnDeny = true;
      if (name === "--allow-keyring") o.allowKeyring = true;
      if (name === "--allow-privileged-files") o.allowPrivilegedFiles = true;
      if (name === "-q" || name === "--quiet") o.quiet = true;
      if (name === "--keep-fds") o.keepFds = true;
      continue;
    }
    if (!WITH_VALUE.has(name)) {
      throw new UsageError(`unknown option ${JSON.stringify(arg.slice(0, 60))} (see hallpass --help)`);
    }
    let value: string;
    if (eq > 0) value = arg.slice(eq + 1);
    else {
      if (i + 1 >= argv.length) throw new UsageError(`${name} needs a value`);
      value = argv[++i];
    }
    if (value.length === 0) throw new UsageError(`${name} needs a non-empty value`);
    if (value.length > 4096 || value.includes("\0")) {
      throw new UsageError(`${name}: value too long or not text`);
    }
    const single = ["--project", "--mediate", "--ask-program", "--ask-timeout", "--for", "--log"];
    if (single.includes(name)) {
      if (seen.has(name)) throw new UsageError(`${name} given twice`);
      seen.add(name);
    }
    switch (name) {
      case "--project":
        o.project = value;
        break;
      case "--allow-path":
        o.allowPaths.push(value);
        break;
      case "--allow-exec":
        o.allowExec.push(value);
        break;
      case "--allow-connect":
        o.allowConnect.push(value);
        break;
      case "--allow-read":
        o.allowRead.push(value);
        break;
      case "--protect":
        o.protect.push(value);
        break;
      case "--mediate":
        o.mediate = parseMediate(value);
        break;
      case "--ask-program":
        o.askProgram = value;
        break;
      case "--agent":
        o.agents.push(value);
        break;
      case "--ask-timeout":
        o.askTimeoutMs = duration(name, value);
        break;
      case "--for":
        o.forMs = duration(name, value);
        break;
      case "--log":
        o.logPath = value;
        break;
      case "--rules":
        o.rulesFiles.push(value);
        break;
    }
  }
  const rest = argv.slice(i);
  const explicit = i > 0 && argv[i - 1] === "--";
  if (!explicit && i === 0 && (rest[0] === "agent" || rest[0] === "answer")) {
    return { kind: rest[0], args: rest.slice(1) };
  }
  if (!explicit && rest[0] === "doctor") {
    if (i > 0) throw new UsageError("hallpass doctor takes no options");
    const extra = rest.slice(1);
    if (extra.length > 1 || (extra.length === 1 && extra[0] !== "--json")) {
      throw new UsageError("usage: hallpass doctor [--json]");
    }
    return { kind: "doctor", json: extra[0] === "--json" };
  }
  if (!explicit && rest[0] === "rules") {
    // Options may also follow the subcommand: `hallpass rules --rules F write /x`.
    const sub = parseCommandLine(rest.slice(1));
    if (sub.kind !== "run") {
      throw new UsageError("usage: hallpass rules [OPTIONS] [write|exec|connect TARGET]");
    }
    const so = sub.opts;
    o.project ??= so.project;
    o.allowPaths.push(...so.allowPaths);
    o.allowExec.push(...so.allowExec);
    o.allowConnect.push(...so.allowConnect);
    o.allowRead.push(...so.allowRead);
    o.protect.push(...so.protect);
    o.agents.push(...so.agents);
    o.rulesFiles.push(...so.rulesFiles);
    return { kind: "rules", args: so.command, opts: o };
  }
  if (o.askProgram && o.noAsk) throw new UsageError("--ask-program and --no-ask do not go together");
  o.command = rest;
  return { kind: "run", opts: o };
}

function duration(name: string, value: string): number {
  try {
    return parseDuration(value);
  } catch (e) {
    throw new UsageError(`${name}: ${(e as Error).message}`);
  }
}

export function parseMediate(value: string): CliOptions["mediate"] {
  const m = { write: true as const, exec: false, connect: false };
  for (const part of value.split(",")) {
    const p = part.trim();
    if (p === "write") continue;
    if (p === "exec") m.exec = true;
    else if (p === "connect") m.connect = true;
    else {throw new UsageError(
        `--mediate: unknown category ${JSON.stringify(p.slice(0, 40))} (write, exec, connect)`,
      );}
  }
  return m;
}
