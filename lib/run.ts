/**
 * Apply and run: builds the kernel objects from a plan (Landlock ruleset, seccomp BPF), starts the launcher,
 * receives the seccomp listener, starts the supervisor Worker and the ask backend, waits for the command and
 * returns its exit status. Failures before the command runs throw HallpassError (exit 125).
 */
import { fileURLToPath } from "node:url";
import { close, pipe, pollFds, readAsync, recvWithFds, sendWithFds, seqpacketPair, setCloexec, setUmask, writeAll } from "../ffi/libc.ts";
import { createRuleset, landlockAbi } from "../ffi/landlock.ts";
import { ACT, CMP, compileFilter, type CompiledRule } from "../ffi/seccomp.ts";
import { userNotifAvailable } from "../ffi/notify.ts";
import type { CliOptions } from "./cli.ts";
import { filterPlan } from "./filter_plan.ts";
import { landlockPlan, type Plan } from "./plan.ts";
import type { Answer, AskBackend, Question } from "./types.ts";
import type { SessionConfig, ToMain, ToWorker } from "./supervisor/session_config.ts";
import { NoAsk } from "./ask/no_ask.ts";
import { AskProgram } from "./ask/ask_program.ts";
import { Summary } from "./summary.ts";

export class HallpassError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
  }
}

const MAGIC = 0x31504c48;
const CFG = { RULESET: 1, PTY: 2, WAIT_KILLABLE: 4, SIGINT_IGN: 8, SIGQUIT_IGN: 16 };

/** Where the launcher binary is: beside the sources, or unpacked from the compiled binary to a cache. */
export function launcherPath(): string {
  const p = fileURLToPath(new URL("../build/hallpass-launcher", import.meta.url));
  if (!import.meta.url.includes("/deno-compile-")) return p;
  const bytes = Deno.readFileSync(p);
  const home = Deno.env.get("HOME") ?? "/tmp";
  const cache = `${Deno.env.get("XDG_CACHE_HOME") || home + "/.cache"}/hallpass`;
  const sum = Array.from(bytes.slice(bytes.length - 64)).reduce((a, b) => (a * 31 + b) >>> 0, bytes.length);
  const target = `${cache}/launcher-${sum.toString(16)}`;
  try {
    if (Deno.statSync(target).size === bytes.length) return target;
  } catch {
    // first run
  }
  Deno.mkdirSync(cache, { recursive: true, mode: 0o700 });
  const tmp = `${target}.${Deno.pid}`;
  Deno.writeFileSync(tmp, bytes, { mode: 0o755 });
  Deno.renameSync(tmp, target);
  return target;
}

function compile(opts: CliOptions): number {
  const rules: CompiledRule[] = filterPlan({ mediateConnect: opts.mediate.connect }).map((e) => ({
    syscall: e.syscall,
    action: e.action.kind === "notify" ? ACT.NOTIFY : ACT.errno(e.action.errno),
    args: e.args?.map((a) => ({
      arg: a.arg,
      op: a.op === "eq" ? CMP.EQ : CMP.MASKED_EQ,
      a: a.op === "eq" ? a.value : a.mask!,
      b: a.op === "eq" ? 0n : a.value,
    })),
  }));
  // Foreign architectures (32-bit int 0x80, x32) get ENOSYS: none of them is mediated.
  return compileFilter(rules, ACT.errno(38)).memfd;
}

export interface RunResult {
  status: number;
}

export async function runSandbox(opts: CliOptions, plan: Plan, interactive: boolean): Promise<number> {
  const abi = landlockAbi();
  if (abi < 1) {
    throw new HallpassError(
      "Landlock is not available on this kernel",
      "hallpass needs Landlock (Linux ≥ 5.13 with lsm=landlock); run `hallpass doctor`",
    );
  }
  if (!userNotifAvailable()) {
    throw new HallpassError("seccomp user notification is not available", "Linux ≥ 5.19 is needed; run `hallpass doctor`");
  }
  const userUmask = setUmask(0);
  const warn = (line: string) => {
    // Through the screen gate in pty mode, so a line never lands in the middle of the bar.
    if (pty) pty.gate.output(new TextEncoder().encode(line + "\r\n"));
    else console.error(line);
  };

  // --- backend
  let pty: import("./ui/terminal.ts").PtySession | null = null;
  let backend: AskBackend;
  if (opts.askProgram) {
    backend = new AskProgram(opts.askProgram, { timeoutMs: opts.askTimeoutMs, warn: (l) => warn(l) });
  } else if (interactive && !opts.noAsk) {
    const { PtySession, TerminalAsk } = await import("./ui/terminal.ts");
    pty = PtySession.open({
      onSignal: (sig) => forward(sig),
    });
    backend = new TerminalAsk(pty, { forMs: opts.forMs, askTimeoutMs: opts.askTimeoutMs });
  } else {
    backend = new NoAsk();
  }

  // --- kernel objects
  const ruleset = createRuleset(landlockPlan(plan, abi, opts.mediate.connect), abi);
  const bpf = compile(opts);
  const [mySock, childSock] = seqpacketPair();
  setCloexec(childSock, false);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(launcherPath(), {
      args: [String(childSock), plan.program, ...plan.argv],
      stdin: "inherit",
      stdout: "inherit",
      stderr: "inherit",
    }).spawn();
  } catch (e) {
    throw new HallpassError(`cannot start the launcher: ${(e as Error).message}`, "rebuild with `make`");
  } finally {
    close(childSock);
  }
  const forward = (sig: "SIGHUP" | "SIGINT" | "SIGTERM") => {
    try {
      child.kill(sig);
    } catch {
      // gone
    }
  };

  let flags = CFG.RULESET | CFG.WAIT_KILLABLE;
  if (pty) flags |= CFG.PTY;
  const cfgMsg = new Uint8Array(16);
  const dv = new DataView(cfgMsg.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint32(4, 1, true);
  dv.setUint32(8, flags, true);
  dv.setUint32(12, userUmask, true);
  const fds = [bpf, ruleset.fd, ...(pty ? [pty.slaveFd] : [])];
  sendWithFds(mySock, cfgMsg, fds);
  close(bpf);
  close(ruleset.fd);
  pty?.closeSlave();

  // --- the listener
  const ready = pollFds([mySock], 10_000);
  if (!ready) {
    child.kill("SIGKILL");
    throw new HallpassError("the launcher did not start within 10 s");
  }
  const { data, fds: got } = recvWithFds(mySock);
  if (data.length < 16 || got.length !== 1) {
    got.forEach(close);
    const st = await child.status;
    throw new HallpassError(`the launcher failed (exit ${st.code})`, "see the line above; `hallpass doctor` checks the kernel");
  }
  const rv = new DataView(data.buffer, data.byteOffset);
  const commandPid = rv.getInt32(8, true);
  const listenerFd = got[0];

  // --- the supervisor worker
  const [wakeR, wakeW] = pipe();
  const worker = new Worker(new URL("./supervisor/worker.ts", import.meta.url), { type: "module" });
  const config: SessionConfig = {
    listenerFd,
    wakeFd: wakeR,
    commandPid,
    launcherPid: child.pid,
    project: plan.project,
    home: plan.home,
    cwd: plan.cwd,
    floor: plan.floor,
    rules: plan.rules,
    mediate: { exec: opts.mediate.exec, connect: opts.mediate.connect },
    pathEnv: plan.pathEnv,
    logPath: opts.logPath ?? null,
    umask: userUmask,
  };
  const wakeByte = new Uint8Array(128);
  const toWorker = (m: ToWorker) => {
    worker.postMessage(m);
    try {
      writeAll(wakeW, wakeByte.subarray(0, 1));
    } catch {
      // worker gone
    }
  };
  const summary = new Summary();
  const pendingByKey = new Map<string, { qids: number[] }>();
  const aborts = new Map<number, AbortController>();
  let stoppedResolve: (s: unknown) => void = () => {};
  const stopped = new Promise((r) => (stoppedResolve = r));
  let workerReady: () => void = () => {};
  const readyP = new Promise<void>((r) => (workerReady = r));
  const noAsk = backend instanceof NoAsk;

  worker.onmessage = (e: MessageEvent<ToMain>) => {
    const m = e.data;
    switch (m.t) {
      case "ready":
        workerReady();
        break;
      case "ask": {
        const entry = pendingByKey.get(m.key);
        if (entry) {
          entry.qids.push(m.q.id);
          break;
        }
        const group = { qids: [m.q.id] };
        pendingByKey.set(m.key, group);
        const ac = new AbortController();
        aborts.set(m.q.id, ac);
        ask(backend, m.q, ac.signal).then((a) => {
          pendingByKey.delete(m.key);
          aborts.delete(m.q.id);
          summary.answered(m.q, a);
          for (const qid of group.qids) toWorker({ t: "answer", qid, answer: a });
        });
        break;
      }
      case "withdraw":
        aborts.get(m.qid)?.abort();
        break;
      case "decided":
        if (m.effect === "deny") {
          summary.denied(m);
          if (noAsk || m.by !== "no-ask") warn(summary.denialLine(m));
        }
        break;
      case "stopped":
        stoppedResolve(m.stats);
        break;
      case "fatal":
        warn(`hallpass: supervisor failed: ${m.message}`);
        child.kill("SIGKILL");
        break;
    }
  };
  worker.onerror = (e) => {
    e.preventDefault();
    warn(`hallpass: supervisor failed: ${e.message}`);
    child.kill("SIGKILL");
  };
  toWorker({ t: "init", config });
  await readyP;

  // --- signals: the terminal already sends Ctrl-C/Ctrl-\ to the command's process group
  const handlers: [Deno.Signal, () => void][] = [];
  if (!pty) {
    for (const sig of ["SIGINT", "SIGQUIT"] as const) handlers.push([sig, () => {}]);
    for (const sig of ["SIGTERM", "SIGHUP"] as const) handlers.push([sig, () => forward(sig)]);
    for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  }
  pty?.start();

  // --- launcher messages (exec failure)
  const readLauncher = async () => {
    for (;;) {
      const r = await readAsync(mySock, 16);
      if (typeof r === "number" || r.length < 16) return;
      const v = new DataView(r.buffer);
      if (v.getUint32(4, true) === "E".charCodeAt(0)) {
        const err = v.getInt32(8, true);
        warn(`hallpass: ${plan.argv[0]}: ${err === 2 ? "command not found" : err === 13 ? "Permission denied" : `cannot run (errno ${err})`}`);
      }
    }
  };
  readLauncher();

  const status = await child.status;
  toWorker({ t: "stop" });
  await Promise.race([stopped, new Promise((r) => setTimeout(r, 2000))]);
  worker.terminate();
  for (const ac of aborts.values()) ac.abort();
  await backend.close();
  if (pty) await pty.finish();
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  close(wakeW);
  close(wakeR);
  if (!opts.quiet) summary.print((l) => console.error(l));
  if (status.signal) return 128 + signalNumber(status.signal);
  return status.code;
}

async function ask(backend: AskBackend, q: Question, signal: AbortSignal): Promise<Answer> {
  const timeout = q.requestTimeoutMs ?? undefined;
  try {
    if (timeout === undefined) return await backend.ask(q, signal);
    const ac = new AbortController();
    signal.addEventListener("abort", () => ac.abort());
    let timer: ReturnType<typeof setTimeout> | undefined;
    const t = new Promise<Answer>((r) => {
      timer = setTimeout(() => {
        ac.abort();
        r({ kind: "deny", by: "timeout" });
      }, timeout);
    });
    const a = await Promise.race([backend.ask(q, ac.signal), t]);
    clearTimeout(timer);
    return a;
  } catch {
    return { kind: "deny", by: `${backend.name} failed` };
  }
}

const SIGNUMS: Record<string, number> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGILL: 4,
  SIGTRAP: 5,
  SIGABRT: 6,
  SIGBUS: 7,
  SIGFPE: 8,
  SIGKILL: 9,
  SIGUSR1: 10,
  SIGSEGV: 11,
  SIGUSR2: 12,
  SIGPIPE: 13,
  SIGALRM: 14,
  SIGTERM: 15,
  SIGSYS: 31,
  SIGXCPU: 24,
  SIGXFSZ: 25,
};
function signalNumber(name: string): number {
  return SIGNUMS[name] ?? 0;
}
