/**
 * `hallpass agent [OPTIONS]`: the command line of the node agent (docs/kubernetes.md).
 */
import { parseRules } from "../policy/rules_file.ts";
import { parseDuration } from "../policy/duration.ts";
import { UsageError } from "../types.ts";
import type { AgentOptions } from "./agent.ts";
import { DEFAULT_LISTENER_PATH, seccompProfile } from "./profile.ts";
import { errorLine } from "../cli/error_line.ts";
import { checkLogFile } from "../cli/log_file.ts";

export const AGENT_HELP = `usage: hallpass agent [OPTIONS]
       hallpass agent --print-profile [--connect] [--protect] [--socket PATH]

The node agent for Kubernetes: container runtimes hand it each container's seccomp notifications (the pod's
Localhost seccomp profile names its socket as listenerPath); it applies the pod's rules and asks people
through a web page and \`hallpass answer\`.

options:
  --socket PATH         the socket runtimes connect to (default ${DEFAULT_LISTENER_PATH})
  --rules DIR           rules files: default.rules, NAMESPACE.rules, NAMESPACE.POD.rules
  --listen HOST:PORT    serve questions (web page and API) there; without it nobody is asked: denied
  --token-file PATH     tokens of those who may answer (lines "NAME TOKEN"); needed with --listen
  --ask-timeout DURATION  an unanswered question is denied after DURATION (default 60s)
  --log FILE            one JSON line for every decision
  --print-profile       print the seccomp profile for pods (Kubernetes Localhost profile) and exit
  --connect             with --print-profile: trap connects too
  --protect             with --print-profile: trap read opens too (pods whose rules protect paths)
A new agent started on the socket of a running one takes its containers over, and its --listen address; the
old one then stays idle until it is stopped (a DaemonSet would restart an agent that exits).
--log - writes the JSON lines to stdout (for a cluster's log collector).`;

export type AgentInvocation =
  | { kind: "help" }
  | { kind: "profile"; json: string }
  | { kind: "run"; opts: AgentOptions };

export function parseAgentArgs(argv: string[]): AgentInvocation {
  const o: AgentOptions = {
    socket: DEFAULT_LISTENER_PATH,
    rulesDir: null,
    listen: null,
    tokenFile: null,
    askTimeoutMs: 60_000,
    logPath: null,
    mediate: { exec: true, connect: true },
  };
  let profile = false, connect = false, reads = false;
  const seen = new Set<string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "-h" || arg === "--help") return { kind: "help" };
    if (arg === "--print-profile") {
      profile = true;
      continue;
    }
    if (arg === "--connect") {
      connect = true;
      continue;
    }
    if (arg === "--protect") {
      reads = true;
      continue;
    }
    const m = /^(--socket|--rules|--listen|--token-file|--ask-timeout|--log)(?:=(.*))?$/s.exec(arg);
    if (!m) throw new UsageError(`agent: unknown argument ${JSON.stringify(arg.slice(0, 60))}`);
    const name = m[1];
    if (seen.has(name)) throw new UsageError(`agent: ${name} given twice`);
    seen.add(name);
    let value = m[2];
    if (value === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`agent: ${name} needs a value`);
      value = argv[++i];
    }
    if (value === "" || value.includes("\0")) throw new UsageError(`agent: ${name} needs a value`);
    switch (name) {
      case "--socket":
        if (!value.startsWith("/")) throw new UsageError("agent: --socket needs an absolute path");
        if (new TextEncoder().encode(value + ".handover").length > 107) {
          throw new UsageError("agent: --socket: the path is too long for a unix socket");
        }
        o.socket = value;
        break;
      case "--rules":
        o.rulesDir = value;
        break;
      case "--listen":
        if (
          !/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(value) ||
          Number(value.split(":").pop()) > 65535
        ) {
          throw new UsageError(`agent: --listen ${JSON.stringify(value)}: expected HOST:PORT`);
        }
        o.listen = value;
        break;
      case "--token-file":
        o.tokenFile = value;
        break;
      case "--ask-timeout":
        try {
          o.askTimeoutMs = parseDuration(value);
        } catch (e) {
          throw new UsageError(`agent: --ask-timeout: ${(e as Error).message}`);
        }
        break;
      case "--log":
        o.logPath = value === "-" ? "/dev/stdout" : value;
        break;
    }
  }
  if (profile) {
    const p = seccompProfile({ listenerPath: o.socket, connect, reads });
    return { kind: "profile", json: JSON.stringify(p, null, 2) + "\n" };
  }
  if (connect) throw new UsageError("agent: --connect goes with --print-profile");
  if (reads) throw new UsageError("agent: --protect goes with --print-profile");
  if (o.listen && !o.tokenFile) throw new UsageError("agent: --listen needs --token-file (who may answer)");
  if (o.tokenFile && !o.listen) throw new UsageError("agent: --token-file goes with --listen");
  if (o.logPath !== null && o.logPath !== "/dev/stdout") checkLogFile("agent: --log", o.logPath);
  if (o.rulesDir !== null) {
    try {
      if (!Deno.statSync(o.rulesDir).isDirectory) throw new Error("not a directory");
    } catch (e) {
      throw new UsageError(`agent: --rules ${o.rulesDir}: ${(e as Error).message}`);
    }
    checkRulesDir(o.rulesDir);
  }
  return { kind: "run", opts: o };
}

/** Runs `hallpass agent`; resolves with the exit status. */
export async function agentCommand(argv: string[]): Promise<number> {
  const inv = parseAgentArgs(argv);
  if (inv.kind === "help") {
    console.log(AGENT_HELP);
    return 0;
  }
  if (inv.kind === "profile") {
    await Deno.stdout.write(new TextEncoder().encode(inv.json));
    return 0;
  }
  const { Agent } = await import("./agent.ts");
  const warn = (l: string) => console.error(errorLine(l)); // names from pods and paths: never raw escapes
  const agent = new Agent(inv.opts, warn);
  const onSignal = () => {
    warn("hallpass agent: stopping; the containers' mediated calls now fail (ENOSYS) until an agent is back");
    agent.stop(0);
  };
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    await agent.start();
  } catch (e) {
    // Errors of the agent's own start are the agent's: `hallpass agent --help` is the hint.
    if (e instanceof UsageError && !e.message.startsWith("agent: ")) {
      throw new UsageError(`agent: ${e.message}`);
    }
    throw e;
  }
  const code = await agent.finished;
  Deno.removeSignalListener("SIGTERM", onSignal);
  Deno.removeSignalListener("SIGINT", onSignal);
  return code;
}

/**
 * Every rules file of the directory parses as a pod's would (lib/agent/agent.ts): a bad line stops the agent at start with the file and line, instead of
 * failing each pod that uses the file later. A file changed while the agent runs is checked when a pod uses it.
 */
export function checkRulesDir(dir: string): void {
  let names: string[];
  try {
    // A ConfigMap's files are symlinks into its `..data` directory.
    names = [...Deno.readDirSync(dir)].filter((e) => !e.isDirectory && e.name.endsWith(".rules"))
      .map((e) => e.name);
  } catch (e) {
    throw new UsageError(`agent: --rules ${dir}: ${(e as Error).message}`);
  }
  for (const name of names.sort()) {
    const file = `${dir}/${name}`;
    let text: string;
    try {
      text = Deno.readTextFileSync(file);
    } catch (e) {
      throw new UsageError(`agent: ${file}: ${(e as Error).message}`);
    }
    try {
      parseRules(text, { file, project: false, cwd: "/", home: "/root", lookup: () => null, reads: [] });
    } catch (e) {
      throw new UsageError(`agent: ${(e as Error).message}`);
    }
  }
}
