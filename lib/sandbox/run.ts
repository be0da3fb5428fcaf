/**
 * Apply and run: builds the kernel objects from a plan (Landlock ruleset, seccomp BPF), starts the launcher,
 * receives the seccomp listener, answers the command's own exec, hands the rest to the supervisor, waits for
 * the command and returns its exit status. Failures before the command runs throw HallpassError (exit 125).
 */
import { closeInheritedOnExec } from "../../ffi/inherited_fds.ts";
import {
  AT_FDCWD,
  close,
  cstr,
  executableOnDisk,
  existsOnDisk,
  fdKind,
  libc,
  O,
  pollFds,
  readAsync,
  recvWithFds,
  sendWithFds,
  seqpacketPair,
  setCloexec,
  setUmask,
} from "../../ffi/libc.ts";
import { landlockAbi } from "../../ffi/landlock.ts";
import { spawn, type Spawned } from "../../ffi/spawn.ts";
import { FILTER_SOURCES, prebuiltFilterName } from "../filter/filter_files.ts";
import { getRemoteFd, NotifyFd, userNotifAvailable } from "../../ffi/notify.ts";
import { SYS } from "../../ffi/syscall_numbers.ts";
import type { CliOptions } from "../cli/options.ts";
import { addTerminal, landlockPlan, type Plan } from "./plan.ts";
import { execFloor, type ExecFloorEntry } from "../floor/exec_floor.ts";
import { ownTerminals, withTerminalReads } from "../supervisor/other_terminals.ts";
import { withRawDiskReads } from "../floor/raw_disks.ts";
import { CarveLimitError } from "../floor/landlock_carve.ts";
import { existingResolver, realCarveFs } from "../floor/carve_fs.ts";
import type { PackedReadFloor } from "../floor/read_floor_fast.ts";
import { type SessionRuleset, sessionRuleset } from "../floor/start_ruleset.ts";
import { StartLib } from "../../ffi/start.ts";
import { newInCarved, readExitLines, readStartLines, treesToMake } from "../floor/read_floor.ts";
import { agentOwning, makeStartFiles, startFilesInCarved } from "./agent_start_files.ts";
import { refusedInput, RefusedReadsWatch, reportingStatus } from "../floor/refused_reads.ts";
import type { AskBackend } from "../ask/backend.ts";
import { NoAsk } from "../ask/no_ask.ts";
import { groupRecord } from "../policy/exec_groups.ts";
import { Summary } from "../cli/summary.ts";
import { checkNestedRepos, realRepoFs } from "./nested_repos.ts";
import { checkProjectAgentConfig } from "./project_agent_config.ts";
import { checkGeminiExtensions } from "./gemini_extensions.ts";
import { checkCopilotRuntime } from "./copilot_runtime.ts";
import { applyAgentEnv, outsideEnv } from "./agent_env.ts";
import { checkPythonStartup } from "./python_startup.ts";
import { checkPathShadows } from "./path_shadows.ts";
import { checkAgentConfig, snapshotAgentConfig } from "./agent_config_check.ts";
import { sandboxWroteNothing } from "./wrote_nothing.ts";
import { agentConfigFiles } from "../policy/agent_config.ts";
import { GIT_REASON } from "../policy/protected_paths.ts";
import { DENIED_STATUS, finalStatus } from "../cli/fail_on_deny.ts";
import { SupervisorHost } from "../supervisor/host.ts";
import type { PtySession } from "../ui/pty_session.ts";
import type { TtyGuard } from "./tty_guard.ts";
import { lazyImport } from "../util/lazy_import.ts";
import { Errno } from "../../ffi/errors.ts";
import { lexists } from "../util/exists.ts";

export class HallpassError extends Error {
  constructor(message: string, readonly hint?: string) {
    super(message);
  }
}

/** Launcher protocol (helper/launcher/launcher.c). */
const MAGIC = 0x31504c48;
const CFG = { RULESET: 1, PTY: 2, WAIT_KILLABLE: 4, SIGINT_IGN: 8, SIGQUIT_IGN: 16, LOG_DENIALS: 32 };
const { EACCES } = Errno;
/** How long a command told to end (SIGTERM, SIGHUP) may take before hallpass ends the whole sandbox. */
const END_GRACE_MS = 3000;

/** Where the launcher binary is: beside the sources, or unpacked from the compiled binary to a cache. */
export function launcherPath(): string {
  return bundledFile("hallpass-launcher", 0o755);
}

/** The supervisor's fast path library, or null when it was not built (the mediator then does everything). */
export function fastPathLibrary(): string | null {
  try {
    return bundledFile("libhallpass-fastpath.so", 0o644);
  } catch {
    return null;
  }
}

/** The pty relay library (lib/ui/pty_session.ts), or null when it was not built (the output pump is JavaScript). */
export function relayLibrary(): string | null {
  try {
    return bundledFile("libhallpass-relay.so", 0o644);
  } catch {
    return null;
  }
}

/** The start-up's batch calls (helper/start/start.c), or null when not built (then one call at a time). */
export function startLibrary(): string | null {
  try {
    return bundledFile("libhallpass-start.so", 0o644);
  } catch {
    return null;
  }
}

/**
 * A file from build/ as a path the kernel can use. Asked of the real file system (FFI, not Deno's API): in a
 * compiled binary the path exists only in the embedded one, and the kernel can neither execute nor map it from
 * there, so it is copied once into ~/.cache/hallpass, named by its contents.
 */
function bundledFile(name: string, mode: number): string {
  const p = decodeURIComponent(new URL(`../../build/${name}`, import.meta.url).pathname);
  if ((mode & 0o111) !== 0 ? executableOnDisk(p) : existsOnDisk(p)) return p;
  const bytes = Deno.readFileSync(p);
  const home = Deno.env.get("HOME") ?? "/tmp";
  const cache = `${Deno.env.get("XDG_CACHE_HOME") || home + "/.cache"}/hallpass`;
  let sum = bytes.length;
  for (const b of bytes) sum = (Math.imul(sum, 31) + b) >>> 0;
  const base = name.replace(/^hallpass-/, "").replace(/\.so$/, "");
  const target = `${cache}/${base}-${sum.toString(16)}${name.endsWith(".so") ? ".so" : ""}`;
  try {
    if (Deno.statSync(target).size === bytes.length) return target;
  } catch {
    // first run
  }
  Deno.mkdirSync(cache, { recursive: true, mode: 0o700 });
  const tmp = `${target}.${Deno.pid}`;
  Deno.writeFileSync(tmp, bytes, { mode });
  Deno.renameSync(tmp, target);
  return target;
}

/**
 * The BPF program for the launcher, as an fd it reads: the one `make` prebuilt for exactly this plan
 * (lib/filter/filter_build.ts), else compiled now with libseccomp into a memfd.
 */
async function filterFd(opts: CliOptions): Promise<number> {
  const name = prebuiltFilterName(opts.mediate.connect);
  // Paths, not URLs: Deno's first file operation on a URL costs ~0.4 ms more at start-up.
  const path = (rel: string) => decodeURIComponent(new URL(`../../${rel}`, import.meta.url).pathname);
  try {
    const built = Deno.statSync(path(`build/${name}`)).mtime;
    // From the sources, the plan may have changed since `make` (a compiled binary carries what make built).
    const stale = built === null ||
      FILTER_SOURCES.some((f) => (Deno.statSync(path(f)).mtime ?? built) > built);
    if (!stale) {
      const fd = libc().openat(AT_FDCWD, cstr(bundledFile(name, 0o644)), O.RDONLY | O.CLOEXEC, 0);
      if (fd >= 0) return fd;
    }
  } catch {
    // not prebuilt: compile it
  }
  const [{ compileFilter }, { BAD_ARCH_ACTION, compiledRules }] = await Promise.all([
    lazyImport<typeof import("../../ffi/seccomp.ts")>(new URL("../../ffi/seccomp.ts", import.meta.url)),
    lazyImport<typeof import("../filter/filter_build.ts")>(
      new URL("../filter/filter_build.ts", import.meta.url),
    ),
  ]);
  return compileFilter(compiledRules(opts.mediate.connect), BAD_ARCH_ACTION).memfd;
}

/**
 * Whether this process already runs under hallpass: inside a seccomp filter, the magic request path answers
 * with something other than "no such file". Checked only when a filter is installed at all (`status`:
 * /proc/self/status, or why it could not be read).
 */
function insideHallpass(status: string | Error): boolean {
  try {
    if (status instanceof Error) throw status;
    if (!/^Seccomp:\s*2$/m.test(status)) return false;
    new Deno.Command("/.hallpass/v1/check/write/%2F", { stdin: "null", stdout: "null", stderr: "null" })
      .outputSync();
    return true;
  } catch (e) {
    return !(e instanceof Deno.errors.NotFound);
  }
}

/** The Landlock ABI, and /proc/self/status (read once: the refused-reads watch asks it too). */
function preflight(): { abi: number; status: string | undefined } {
  let status: string | Error;
  try {
    status = Deno.readTextFileSync("/proc/self/status");
  } catch (e) {
    status = e as Error;
  }
  if (insideHallpass(status)) {
    throw new HallpassError(
      "already running under hallpass: sandboxes cannot be nested (the kernel allows one seccomp supervisor per process)",
      "run the command directly: the hallpass around this one already mediates it",
    );
  }
  const abi = landlockAbi();
  if (abi < 1) {
    throw new HallpassError(
      "Landlock is not available on this kernel: refusing to run unprotected",
      "the write floor and the credential files' protection rest on Landlock (Linux ≥ 5.13, booted with lsm=...,landlock); `hallpass doctor` says more",
    );
  }
  if (!userNotifAvailable()) {
    throw new HallpassError(
      "seccomp user notification is not available: refusing to run unprotected",
      "Linux ≥ 5.19 is needed; `hallpass doctor` says more",
    );
  }
  return { abi, status: typeof status === "string" ? status : undefined };
}

/**
 * How the run ended: the exit code (README.md's table), and the signal the command died of, if it did: main.ts
 * then dies of the same signal after restoring the terminal (ffi/signal.ts), as `timeout`, `sudo` and `script`
 * do, so that a calling shell sees what it would see without hallpass (a `for` loop stops on Ctrl-C; the next
 * prompt starts on a new line).
 */
export interface RunOutcome {
  code: number;
  signal: number | null;
}

export async function runSandbox(opts: CliOptions, plan: Plan, interactive: boolean): Promise<RunOutcome> {
  const { abi, status: procStatus } = preflight();
  const userUmask = setUmask(0); // the supervisor applies the command's umask itself
  // fds above 2 hallpass was given reach the command only with --keep-fds (docs/threat-model.md).
  if (!opts.keepFds) closeInheritedOnExec();

  let pty: PtySession | null = null;
  /** Without the pty, a terminal among fds 0-2 the command must not write raw (lib/sandbox/tty_guard.ts). */
  let guard: TtyGuard | null = null;
  const warn = (line: string) => {
    // Through the screen gate in pty mode, so a line never lands in the middle of the bar.
    if (pty) pty.gate.output(new TextEncoder().encode(line + "\r\n"));
    else console.error(line);
  };
  let child: Spawned | null = null;
  const forward = (sig: Deno.Signal) => child?.kill(signalNumber(sig));
  /**
   * hallpass itself was told to end (SIGTERM, SIGHUP: its terminal is gone). The signal goes to the command, as
   * it would without hallpass; if the command is still there after a grace period (it ignores the signal),
   * hallpass exits, and the launcher then kills everything in the sandbox: nothing outlives the session.
   */
  let ending = false;
  /** Set once the launcher runs: stops the sandbox and runs the exit checks that need it gone. */
  let stopSandbox: (() => Promise<void>) | null = null;
  const end = (sig: "SIGTERM" | "SIGHUP" | "SIGINT") => {
    forward(sig);
    if (ending) return;
    ending = true;
    setTimeout(async () => {
      pty?.restore();
      guard?.restore();
      // A command that ignores the signal must not keep the exit checks from running (nested repositories):
      // the launcher kills the sandbox when its socket closes; then they run, then hallpass exits.
      await stopSandbox?.().catch(() => {});
      Deno.exit(128 + signalNumber(sig));
    }, END_GRACE_MS);
  };

  // The launcher starts first, on another thread (ffi/spawn.ts): it waits for its configuration (the ruleset, the
  // filter) before it starts anything, and is ready by the time they are. If hallpass fails before it sends
  // them, the launcher sees its socket close and exits (125) without a word.
  const [mySock, childSock] = seqpacketPair();
  setCloexec(childSock, false);
  // The command can tell it runs under hallpass (e.g. for a PS1 marker: README). Set before the spawn, and not
  // changed while it is in flight: the environment is read on the other thread.
  Deno.env.set("HALLPASS", "1");
  if (plan.agentEnv?.length) applyAgentEnv(plan.agentEnv, plan.home);
  const startMs = Date.now();
  let spawning: Promise<Spawned>;
  try {
    const path = launcherPath();
    spawning = spawn(path, [path, String(childSock), plan.program, ...plan.argv]);
  } catch (e) {
    close(childSock);
    throw new HallpassError(`cannot start the launcher: ${(e as Error).message}`, "rebuild with `make`");
  }
  // childSock is the launcher's once it runs (closed here then; no other process is started before that: it would
  // inherit it); a failure is reported where the spawn is awaited, before the configuration is sent.
  spawning = spawning.finally(() => close(childSock));
  spawning.then((c) => (child = c), () => {});

  let backend: AskBackend;
  // On a terminal the command always runs on hallpass's pty, behind the output filter, whoever answers: with
  // --no-ask or an ask program it would otherwise write to the person's terminal itself (OSC 52 to the
  // clipboard, kitty's remote control, DECUDK keys: docs/threat-model.md "The terminal").
  if (interactive) {
    const { PtySession } = await lazyImport<typeof import("../ui/pty_session.ts")>(
      new URL("../ui/pty_session.ts", import.meta.url),
    );
    pty = PtySession.open({
      onSignal: (sig) => end(sig),
      title: `hallpass: ${plan.argv.join(" ")}`,
      relayLibrary: relayLibrary(),
    });
  } else if (Deno.stdin.isTerminal() || Deno.stdout.isTerminal() || Deno.stderr.isTerminal()) {
    const { TtyGuard } = await lazyImport<typeof import("./tty_guard.ts")>(
      new URL("./tty_guard.ts", import.meta.url),
    );
    try {
      guard = TtyGuard.open();
    } catch (e) {
      // Fail closed: the command must not get the terminal's own read-write fds.
      throw new HallpassError(
        `cannot keep the command off your terminal: ${(e as Error).message}`,
        "give it a terminal on both stdin and stdout, or none (a file or pipe) on fds 0-2",
      );
    }
  }
  if (opts.askProgram) {
    const { AskProgram } = await lazyImport<typeof import("../ask/ask_program.ts")>(
      new URL("../ask/ask_program.ts", import.meta.url),
    );
    backend = new AskProgram(opts.askProgram, { timeoutMs: opts.askTimeoutMs, warn });
  } else if (pty && !opts.noAsk) {
    const { TerminalAsk } = await lazyImport<typeof import("../ask/terminal_ask.ts")>(
      new URL("../ask/terminal_ask.ts", import.meta.url),
    );
    backend = new TerminalAsk(pty, { forMs: opts.forMs, askTimeoutMs: opts.askTimeoutMs });
  } else {
    backend = new NoAsk();
  }

  // The sandbox's own terminal: the pty it runs on, or without one the guard's output pty (the person's terminal
  // only readable: lib/sandbox/tty_guard.ts). No other terminal of the person's is writable without asking
  // (lib/supervisor/other_terminals.ts).
  const terminals = pty ? [pty.slavePath] : guard ? guard.applyTo(plan) : ownTerminals();
  for (const t of guard ? guard.writable : terminals) addTerminal(plan, t);

  // --- kernel objects, and the launcher
  for (
    const d of treesToMake(
      plan.rules,
      plan.reads.protect.map((p) => p.path),
      lexists,
      (p) => realCarveFs.shared?.(p) ?? false,
    )
  ) {
    try {
      Deno.mkdirSync(d, { recursive: true, mode: 0o700 });
    } catch {
      // not made: written during the run, it is named then (a carved directory's notice)
    }
  }
  // An agent's state file in $HOME, made at its first start (lib/sandbox/agent_start_files.ts).
  const inPlace = plan.agentFiles?.length
    ? makeStartFiles(
      startFilesInCarved(
        plan.agentFiles,
        plan.reads.protect.map((p) => p.path),
        (p) => realCarveFs.shared?.(p) ?? false,
      ),
    )
    : [];
  const start = Deno.env.get("HALLPASS_START_LIB") === "0" ? null : StartLib.open(startLibrary());
  const resolve = existingResolver();
  // The execute floor: only without a person, and only when execs are decided at all (lib/floor/exec_floor.ts).
  const noPerson = backend instanceof NoAsk && opts.mediate.exec;
  let exec: ExecFloorEntry[] | undefined;
  const rulesFor = (read: { rules: { path: string; access: bigint; dir: boolean }[] }) =>
    landlockPlan(plan, abi, opts.mediate.connect, noPerson ? (exec ??= execFloor(plan)) : undefined, read);
  // The ruleset: its read side is carved on another thread (lib/floor/start_ruleset.ts) while this one adds the
  // write side and the execute floor (made meanwhile: here only what the ruleset handles), asks for the audit
  // status and reads the filter; awaited below.
  const building = sessionRuleset(
    rulesFor,
    landlockPlan(plan, abi, opts.mediate.connect, noPerson ? [] : undefined, { rules: [] }),
    abi,
    withRawDiskReads(withTerminalReads(plan.reads, terminals)),
    plan.project,
    start,
    resolve,
  );
  building.catch(() => {}); // awaited below, after the filter (a failure there first must not go unhandled)
  // Refused reads are told to hallpass where the kernel lets it read them (lib/floor/refused_reads.ts).
  const reporting = plan.reads.protect.length ? reportingStatus(abi, procStatus) : null;
  const bpf = await filterFd(opts);
  let ruleset: SessionRuleset;
  try {
    ruleset = await building;
  } catch (e) {
    if (!(e instanceof CarveLimitError)) throw e;
    throw new HallpassError(
      `cannot protect the credential locations: ${e.message}`,
      "--allow-read the protected locations below that directory (`hallpass rules` lists them)",
    );
  }
  let launcher: Spawned;
  try {
    launcher = await spawning;
  } catch (e) {
    throw new HallpassError(`cannot start the launcher: ${(e as Error).message}`, "rebuild with `make`");
  }
  const cfgMsg = new Uint8Array(16);
  const dv = new DataView(cfgMsg.buffer);
  dv.setUint32(0, MAGIC, true);
  dv.setUint32(4, 1, true);
  dv.setUint32(
    8,
    CFG.RULESET | CFG.WAIT_KILLABLE | (pty ? CFG.PTY : 0) | (reporting?.ok ? CFG.LOG_DENIALS : 0) |
      (guard?.sent().flags ?? 0),
    true,
  );
  dv.setUint32(12, userUmask, true);
  sendWithFds(mySock, cfgMsg, [bpf, ruleset.fd, ...(pty ? [pty.slaveFd] : []), ...(guard?.sent().fds ?? [])]);
  close(bpf);
  close(ruleset.fd);
  pty?.closeSlave();
  guard?.closeSent();

  // While the launcher applies them (all before the command can start: it starts when its first exec is
  // answered, below): agents' own configuration, checked at exit (lib/sandbox/agent_config_check.ts); what the
  // carve found, and the lines said before the command starts (over a terminal the program owns, at exit
  // instead).
  const cfg = agentConfigFiles(plan.home, plan.project, (k) => Deno.env.get(k));
  const agentConfig = snapshotAgentConfig(cfg.files, cfg.dirs, plan);
  stopSandbox = async () => {
    // SIGKILL to the command through the launcher (message K): it then kills every other descendant and exits.
    const msg = new Uint8Array(16);
    const mv = new DataView(msg.buffer);
    mv.setUint32(0, MAGIC, true);
    mv.setUint32(4, "K".charCodeAt(0), true);
    mv.setInt32(8, 9, true);
    try {
      sendWithFds(mySock, msg, []);
    } catch { /* the launcher is gone already */ }
    const gone = await Promise.race([
      launcher.status.then(() => true),
      new Promise<false>((r) => setTimeout(() => r(false), 2000)),
    ]);
    if (gone) {
      nestedRepoLines(plan, startMs).forEach((l) => console.error(l));
      checkAgentConfig(agentConfig, plan.home, startMs).forEach((l) => console.error(l));
    }
  };
  const reads = ruleset.reads();
  const readLines = opts.quiet ? [] : readStartLines(reads, plan.reads, plan.project, plan.home);
  if (plan.uncarved && !opts.quiet) {
    readLines.unshift(
      `hallpass: ${plan.uncarved}: every write there is decided and performed by hallpass this session (slower)`,
    );
  }
  if (!pty) readLines.forEach((l) => warn(l));
  const launcherReal = reporting?.ok ? Deno.realPathSync(launcherPath()) : undefined;
  const watch = reporting?.ok
    ? new RefusedReadsWatch(
      reporting.reader,
      reporting.audit,
      // Made when the first record comes (audit is on): from what the carve found at start (`real`; the
      // resolver remembers each answer, and the carve asked every path this asks).
      () =>
        refusedInput(
          plan.reads,
          reads.before.keys(),
          "real" in reads ? (p) => (reads as PackedReadFloor).real(p) ?? resolve(p) : resolve,
          plan.home,
          launcherReal,
        ),
    )
    : null;

  // --- the listener, handed over by the command's process right after it installed the filter
  // On failure hallpass exits (125): its end of the socket closes and the launcher kills what it started.
  // (SIGKILL of the launcher would orphan a command's process stuck before the hand-over.)
  if (!pollFds([mySock], 10_000)) {
    throw new HallpassError("the launcher did not start within 10 s");
  }
  const { data, fds: stray } = recvWithFds(mySock);
  stray.forEach(close);
  const rv = new DataView(data.buffer, data.byteOffset);
  if (data.length < 16 || rv.getUint32(4, true) !== "R".charCodeAt(0)) {
    const st = await launcher.status;
    throw new HallpassError(
      `the launcher failed (exit ${st.code})`,
      "see the line above; `hallpass doctor` checks the kernel",
    );
  }
  const commandPid = rv.getInt32(8, true);
  const listenerFd = getRemoteFd(commandPid, rv.getInt32(12, true));
  if (listenerFd < 0) {
    throw new HallpassError(
      `cannot take the seccomp listener from the sandbox (pidfd_getfd: errno ${-listenerFd})`,
      "Yama ptrace_scope 2 or 3 forbids it; `hallpass doctor` says more",
    );
  }
  const onlyFirstExec = answerFirstExec(listenerFd, commandPid);

  // --- the supervisor
  const summary = new Summary();
  // One line per denial (docs/ci.md) without a person; not over a program that owns the terminal while an ask
  // program answers (the summary at exit still lists them).
  // Live denial lines without a bar (through the pty's gate when there is one); with the bar, the summary.
  const printDenials = backend instanceof NoAsk || (!pty && !Deno.stderr.isTerminal());
  watch?.start(commandPid, printDenials ? warn : null);
  const host = new SupervisorHost({
    listenerFd,
    commandPid,
    launcherPid: launcher.pid,
    project: plan.project,
    home: plan.home,
    cwd: plan.cwd,
    // Only what Landlock really holds is the floor: a path that does not exist yet cannot be in a rule, and
    // writes there are emulated instead of continued.
    floor: plan.floor.filter((f) => !ruleset.skipped.includes(f.path)).map((f) => ({
      kind: f.kind,
      path: f.path,
    })),
    carved: plan.carved ?? [],
    protected: plan.protected ?? [],
    rules: plan.rules,
    groups: groupRecord(plan.groups),
    mediate: { exec: opts.mediate.exec, connect: opts.mediate.connect },
    noAsk: backend instanceof NoAsk,
    allowKeyring: opts.allowKeyring === true,
    allowPrivilegedFiles: opts.allowPrivilegedFiles === true,
    pathEnv: plan.pathEnv,
    logPath: opts.logPath ?? null,
    umask: userUmask,
    // Made when the supervisor starts (its first notification; a command that makes none never needs it).
    get readCarved() {
      return reads.before;
    },
    inPlace,
    readProtected: {
      protect: plan.reads.protect.map((p) => p.path),
      readable: plan.reads.readable.map((p) => p.path),
    },
    fastPath: fastPathLibrary(),
  }, {
    backend,
    summary,
    warn,
    rulesFile: plan.userRulesFile,
    printDenials,
    onFatal: (message) => {
      // Fail closed: hallpass exits, its end of the launcher's socket closes, and the launcher kills every
      // sandboxed process (SIGKILL of the launcher alone would leave them running, re-parented to init).
      pty?.restore();
      guard?.restore();
      console.error(`hallpass: supervisor failed: ${message}; the sandbox was stopped`);
      Deno.exit(125);
    },
  });
  host.startWhenNeeded();

  // --- signals: the terminal already sends Ctrl-C and Ctrl-\ to the command's process group
  const handlers: [Deno.Signal, () => void][] = [];
  if (!pty) {
    for (const sig of ["SIGINT", "SIGQUIT"] as const) handlers.push([sig, () => {}]);
    for (const sig of ["SIGTERM", "SIGHUP"] as const) handlers.push([sig, () => end(sig)]);
    for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  }
  pty?.start();
  guard?.start();
  watchLauncher(mySock, plan.argv[0], warn, pty);

  const status = await launcher.status;
  await host.stop();
  // The listener's file holds the command's credentials, and so its Landlock domain: closed (when audit is on),
  // the domain ends and its last audit record (its count of denials) comes.
  const refused = watch ? await watch.finish(() => close(listenerFd)) : null;
  const refusedLines = refused?.lines ?? [];
  // Every sandboxed process is gone (the launcher kills and reaps them before it exits): nothing can race this.
  // Before the exit checks: a file they put back is hallpass's own, not one the sandbox made.
  const created = opts.quiet ? [] : newInCarved(reads, realCarveFs);
  // Skipped when the sandbox provably wrote nothing (no trapped call after its exec: lib/sandbox/wrote_nothing.ts).
  const wroteNothing = sandboxWroteNothing({
    onlyFirstExec,
    notified: host.notified,
    keepFds: opts.keepFds === true,
    stdio: [0, 1, 2].map(fdKind),
  });
  const repoLines = wroteNothing
    ? []
    : [...nestedRepoLines(plan, startMs), ...checkAgentConfig(agentConfig, plan.home, startMs)];
  await backend.close();
  if (pty) await pty.finish();
  await guard?.finish();
  repoLines.forEach((l) => console.error(l));
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  if (!opts.quiet) {
    summary.print((l) => console.error(l));
    const failed = status.code !== 0 || !!status.signal;
    if (pty) readLines.forEach((l) => console.error(l));
    refusedLines.forEach((l) => console.error(l));
    const unreported = refused ? refused.unreported : reporting && !reporting.ok ? reporting.why : undefined;
    const owner = (p: string) => agentOwning(plan.rules, p);
    for (const l of readExitLines(created, failed, plan.home, unreported, owner)) {
      console.error(l);
    }
  }
  const denied = summary.lines().length > 0 || refusedLines.length > 0;
  const code = finalStatus(
    status.signal ? 128 + status.signal : status.code,
    denied,
    opts.failOnDeny ?? false,
  );
  if (code === DENIED_STATUS && code !== status.code) {
    console.error(`hallpass: the command succeeded, but something was denied: exit ${code} (--fail-on-deny)`);
  }
  return { code, signal: status.signal || null };
}

/** lib/sandbox/nested_repos.ts at exit: hooks and config of repositories below the top, changed during the session. */
function nestedRepoLines(plan: Plan, startMs: number): string[] {
  const gitDirs = (plan.protected ?? []).filter((p) =>
    p.reason === GIT_REASON && p.scope.kind === "tree" && p.scope.path.endsWith("/hooks")
  ).map((p) => p.scope.path.slice(0, -"/hooks".length));
  const r = checkNestedRepos(
    { project: plan.project, startMs, protectedGitDirs: gitDirs, deadlineMs: Date.now() + 5_000 },
    realRepoFs,
  );
  r.lines.push(...checkProjectAgentConfig(r.agentDirs, { project: plan.project, startMs }, realRepoFs));
  r.lines.push(...checkGeminiExtensions(plan.home, startMs));
  r.lines.push(...checkCopilotRuntime(plan.home, outsideEnv, startMs));
  r.lines.push(...checkPythonStartup(plan.home, Deno.env.get("PYTHONUSERBASE"), startMs));
  r.lines.push(...checkPathShadows(plan.pathEnv, plan.home, plan.project, startMs));
  if (r.incomplete) {
    r.lines.push(
      `hallpass: stopped looking for git repositories in ${plan.project} after ${r.entries} entries: hooks or ` +
        "config the sandbox wrote in one not reached could run outside it (docs/threat-model.md)",
    );
  }
  return r.lines;
}

/**
 * The first trapped call is the launcher's exec of the command, which hallpass itself resolved: answered
 * here, so the command starts without waiting for the supervisor Worker to load. True when that exec was the
 * one notification taken here (and continued).
 */
function answerFirstExec(listenerFd: number, commandPid: number): boolean {
  const nfd = new NotifyFd(listenerFd);
  const end = Date.now() + 10_000;
  for (;;) {
    if (!pollFds([listenerFd], Math.max(end - Date.now(), 0))) return false;
    // null: RECV was interrupted (a signal to this thread) and the exec is still to take, or the command died.
    const n = nfd.recv();
    const exec = n !== null && n.tid === commandPid && n.nr === SYS.execve;
    if (exec) nfd.continue(n.id);
    else if (n) nfd.fail(n.id, EACCES);
    if (n || nfd.hungUp() || Date.now() >= end) return exec;
  }
}

/**
 * Launcher messages: an exec of the command that failed; the command stopped by job control (pty mode: the
 * person pressed Ctrl-Z in it), in which case hallpass stops too, as the program would have without it, and
 * continues it when it is continued itself.
 */
async function watchLauncher(
  sock: number,
  argv0: string,
  warn: (l: string) => void,
  pty: PtySession | null,
): Promise<void> {
  for (;;) {
    const r = await readAsync(sock, 16);
    if (typeof r === "number" || r.length < 16) return;
    const v = new DataView(r.buffer);
    const kind = String.fromCharCode(v.getUint32(4, true));
    if (kind === "E") {
      const err = v.getInt32(8, true);
      const what = err === Errno.ENOENT
        ? "command not found"
        : err === EACCES
        ? "Permission denied"
        : `cannot run (errno ${err})`;
      warn(`hallpass: ${argv0}: ${what}`);
    } else if (kind === "S" && pty) {
      pty.suspend();
      Deno.kill(Deno.pid, "SIGSTOP");
      // Continued (fg): take the terminal again and continue the command.
      pty.resume();
      const msg = new Uint8Array(16);
      const mv = new DataView(msg.buffer);
      mv.setUint32(0, MAGIC, true);
      mv.setUint32(4, "C".charCodeAt(0), true);
      try {
        sendWithFds(sock, msg, []);
      } catch {
        return;
      }
    }
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
  SIGXCPU: 24,
  SIGXFSZ: 25,
  SIGSYS: 31,
};
function signalNumber(name: string): number {
  return SIGNUMS[name] ?? 0;
}
