/**
 * The supervisor's decisions on trapped system calls.
 *
 * Threat model: every sandboxed process is hostile. What it passes (pointers, paths, fds) is read once into
 * our memory and never trusted again; a second thread may change its memory, cwd, fds or the file system at
 * any moment. Authoritative: the kernel (Landlock, the seccomp filter, SECCOMP_IOCTL_NOTIF_ID_VALID) and the
 * rules. Therefore:
 *   - CONTINUE only for an allowed write inside the Landlock floor, by a call Landlock covers (the kernel
 *     re-checks whatever path it finally walks), and only when no deny rule lies inside that floor;
 *   - every other allowed write is emulated here on our own copy of the canonical path, walked again without
 *     following symlinks (so it can only touch what was decided on), and the result injected (ADDFD) or
 *     returned;
 *   - anything unreadable, malformed, unknown or unanswered is denied (EACCES), and the notification id is
 *     checked (ID_VALID) after reading the thread's memory and before acting.
 * The Worker never waits for a person: questions go to the main thread and are answered later by id.
 */
import { cstr, readlink } from "../../ffi/libc.ts";
import { setThreadEffectiveCaps, setThreadFsCreds } from "../../ffi/creds.ts";
import { getRemoteFd, type Notification, type NotifyFd, openat2, RESOLVE } from "../../ffi/notify.ts";
import { fs, S_IFDIR, S_IFIFO, S_IFREG } from "../../ffi/fsops.ts";
import { resolveSyscall } from "../../ffi/seccomp.ts";
import { formatSource, Policy } from "../policy/policy.ts";
import { groupTableOf } from "../policy/exec_groups.ts";
import { formatRule } from "../policy/rules_file.ts";
import { isGlobTarget } from "../policy/path_scope.ts";
import { suggestExecScopes, suggestScopes } from "../policy/suggest_scope.ts";
import { siblingScope } from "../policy/atomic_save.ts";
import { MAGIC_PREFIX } from "../policy/request_protocol.ts";
import type { Answer, Op, PathScope, Question, Rule } from "../types.ts";
import { baseDir, pathExists, type Resolved, resolvePath } from "./resolve.ts";
import { view } from "./view.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import type { SessionConfig, ToMain } from "./session_config.ts";
import {
  AT_EMPTY_PATH,
  AT_REMOVEDIR,
  AT_SYMLINK_FOLLOW,
  AT_SYMLINK_NOFOLLOW,
  NEW_SYSCALL_NUMBERS,
  WRITE_CALLS,
  type WriteCall,
} from "../filter/syscall_table.ts";
import { ProcInfo } from "./proc_info.ts";
import { fastRootsOf, performContext, taintedFloor } from "./fast_roots.ts";
import type { FastRoots } from "../../ffi/fastpath.ts";
import { type NetKind, NetMediator, type NetOp } from "./connect.ts";
import { unixAddr } from "../../ffi/unix_socket.ts";
import { bindFd } from "../../ffi/net.ts";
import { type ConnectTarget, formatTarget, suggestDestScopes } from "../policy/connect_dest.ts";
import { isLoopback, netVerdict } from "../policy/socket_policy.ts";
import { RequestHandler } from "./requests.ts";
import { otherProcessPath, SysCalls } from "./sys_calls.ts";
import { formatScope } from "../policy/path_scope.ts";
import { protectedHit, type ProtectedPath } from "../policy/protected_paths.ts";
import { privilegedRefusal, privilegedXattr } from "../policy/privileged_bits.ts";
import { execVerdict, inFloor, type Verdict, writeVerdict } from "./decide.ts";
import { recordContext } from "./fast_replay.ts";
import { ANOTHER_TERMINAL, isPtyPath, isTerminalPath, openOwnPty } from "./other_terminals.ts";
import { carvedCreateNotice } from "../floor/read_floor.ts";

const EPERM = 1,
  EAGAIN = 11,
  EACCES = 13,
  EFAULT = 14,
  ENXIO = 6,
  EISDIR = 21,
  EINVAL = 22,
  ENAMETOOLONG = 36,
  ENOSYS = 38,
  EOPNOTSUPP = 95;
const O_NONBLOCK = 0o4000, O_PATH = 0o10000000;
const O_WRONLY = 0o1,
  O_CREAT = 0o100,
  O_EXCL = 0o200,
  O_NOFOLLOW = 0o400000,
  O_CLOEXEC = 0o2000000;
const O_TMPFILE = 0o20200000;
/** The kernel's VALID_OPEN_FLAGS (x86_64 and aarch64 values). */
const VALID_OPEN_FLAGS = 0o37777703;
const RESOLVE_NO_SYMLINKS = RESOLVE.NO_SYMLINKS | RESOLVE.NO_MAGICLINKS;

interface Target {
  /** Canonical path decided on (or the fd's path for fd forms). */
  path: string;
  anon: boolean;
}

interface Pending {
  n: Notification;
  op: Op;
  call: WriteCall | null;
  targets: Target[];
  /** For fd forms: our copy of the thread's fd. */
  fdCopy: number;
  /** For exec: continue on allow. */
  exec?: boolean;
  /** For exec: execveat rather than execve. */
  execAt?: boolean;
  /** For bind of a unix socket path: the program's socket fd. */
  bindFd?: number;
  /** For connect: the operation, copied into our memory, and the destination as a rule would name it. */
  net?: NetOp;
  suggest?: string;
  /** The end the question was about (its scopes are that end's). */
  asked?: string;
  /** What the emulation reads from the caller's memory (see #mem). */
  mem?: {
    text: Uint8Array | null;
    times: Uint8Array<ArrayBuffer> | null | number;
    xattr?: { name: Uint8Array<ArrayBuffer>; value: Uint8Array<ArrayBuffer>; size: number } | number;
  };
  /** For an open waiting for a FIFO's reader: writes its log line once performed. */
  log?: (rec: Record<string, unknown>) => void;
  /** How many of its ends still asked when the question was put (a rename or link: 1 or 2). */
  asking?: number;
  /** Why this asks although a rule allows it (a protected path, another terminal): shown in the bar. */
  warning?: string;
  /** The scopes `[t]`/`[a]` may cover, when narrower than the usual suggestions (a protected path). */
  scopes?: string[];
  qid: number;
}

const dec = new TextDecoder("utf-8", { fatal: true });

export interface Stats {
  notifications: number;
  continued: number;
  emulated: number;
  denied: number;
}

export class Mediator {
  readonly stats: Stats = { notifications: 0, continued: 0, emulated: 0, denied: 0 };
  readonly #cfg: SessionConfig;
  readonly #nfd: NotifyFd;
  readonly #post: (m: ToMain) => void;
  readonly policy: Policy;
  readonly #floor: PathScope[];
  /** lib/policy/protected_paths.ts: ask even where a rule allows. */
  readonly #protected: ProtectedPath[];
  /** Carved floor directories (session_config.ts). */
  readonly #carved: Set<string>;
  #taintedFloor: PathScope[] = [];
  readonly #byNr = new Map<number, WriteCall | "execve" | "execveat" | "bind" | "cwd" | NetKind>();
  readonly net: NetMediator;
  readonly #pending = new Map<number, Pending>();
  /** Paths already named by a carved-directory notice (lib/floor/read_floor.ts carvedCreateNotice). */
  readonly #noticed = new Set<string>();
  #nextQid = 1;
  /** The main thread answers the command's own exec before the Worker starts. */
  #firstExecDone = true;
  /** A container's runtime executable (dev, ino), while its setup runs (see #inRuntimeSetup). */
  #setupExe: [number, number] | null = null;
  /** This Worker thread's own file system credentials (see #asCaller). */
  #ownCreds: { uid: number; gid: number; groups: number[]; capEff: bigint } | null = null;
  readonly proc: ProcInfo;
  readonly #requests: RequestHandler;
  /** Other processes, keyrings, file ioctls (lib/supervisor/sys_calls.ts). */
  readonly #sys: SysCalls;
  readonly #log: Deno.FsFile | null;
  /** The question whose answer is being applied (its log lines say so), or undefined. */
  #answering: number | undefined;
  readonly #enc = new TextEncoder();

  constructor(cfg: SessionConfig, nfd: NotifyFd, post: (m: ToMain) => void) {
    this.#cfg = cfg;
    this.#nfd = nfd;
    this.#post = post;
    this.#firstExecDone = !cfg.container || cfg.container.setupDone === true;
    this.#floor = cfg.floor.map((f) => ({ kind: f.kind, path: f.path }));
    this.#protected = cfg.protected ?? [];
    this.#carved = new Set(cfg.carved ?? []);
    this.policy = new Policy(cfg.rules, {
      home: cfg.home,
      cwd: cfg.cwd,
      // In a container, a program in its $PATH is looked up inside its root.
      lookup: (p) =>
        cfg.container ? lookupInPath(p, cfg.pathEnv, programInView) : lookupInPath(p, cfg.pathEnv),
      isWritable: (p) => this.#inFloor(p) || this.policy.decide("write", p, Date.now()).effect === "allow",
      groups: groupTableOf(cfg.groups),
    });
    this.#retaint();
    for (const c of WRITE_CALLS) {
      const nr = NEW_SYSCALL_NUMBERS[c.name] ?? resolveSyscall(c.name);
      if (nr >= 0) this.#byNr.set(nr, c);
    }
    for (const name of ["chdir", "fchdir"] as const) {
      const nr = resolveSyscall(name);
      if (nr >= 0) this.#byNr.set(nr, "cwd");
    }
    for (
      const name of [
        "execve",
        "execveat",
        "connect",
        "sendto",
        "sendmsg",
        "sendmmsg",
        "listen",
        "bind",
      ] as const
    ) {
      const nr = resolveSyscall(name);
      if (nr >= 0) this.#byNr.set(nr, name);
    }
    this.net = new NetMediator(nfd, cfg.mediate.connect);
    this.proc = new ProcInfo(cfg.commandPid);
    this.#requests = new RequestHandler(this, cfg);
    this.#sys = new SysCalls({
      nfd,
      policy: this.policy,
      launcherPid: cfg.launcherPid,
      container: cfg.container !== undefined,
      allowKeyring: cfg.allowKeyring === true,
      tgid: (tid) => this.proc.tgid(tid),
      continued: () => this.stats.continued++,
      performed: () => this.stats.emulated++,
      denied: (n, syscall, op, target, suggest) => {
        const pid = this.proc.tgid(n.tid), name = this.proc.comm(pid);
        this.stats.denied++;
        this.#post({ t: "decided", effect: "deny", op, target, pid, name, syscall, by: "rule", suggest });
        this.#logLine({ pid, name, op, syscall, target, decision: "deny", by: "rule" });
      },
    });
    this.#log = cfg.logPath ? Deno.openSync(cfg.logPath, { append: true, create: true, mode: 0o600 }) : null;
  }

  /** Paths that ask even where a rule allows (lib/policy/protected_paths.ts). */
  get protectedPaths(): readonly ProtectedPath[] {
    return this.#protected;
  }

  get config(): SessionConfig {
    return this.#cfg;
  }

  /**
   * What the fast path (ffi/fastpath.ts) may decide by itself: the floor trees it may continue writes in, and
   * the trees it may continue execs in (lib/supervisor/fast_roots.ts). Nothing while every decision is logged
   * (--log) or in a container (no floor). `rootsVersion` changes whenever they may have.
   */
  fastRoots(): FastRoots {
    if (this.#log || this.#cfg.container) return { write: [], exec: [], files: [] };
    // HALLPASS_FASTPATH_RECORD: what the fast path's answers from now on are replayed against.
    recordContext({ ...this.#cfg, rules: [...this.policy.rules], floor: [...this.#floor] });
    // With connects not mediated, the fast path performs IP connects and sends (lib/policy/socket_policy.ts).
    return {
      ...fastRootsOf(this.policy, this.#floor, this.#cfg.mediate.exec, performContext(this.#cfg)),
      netDirect: !this.#cfg.mediate.connect,
    };
  }
  rootsVersion = 0;

  /** Floor roots that contain a deny rule: allowed writes there are emulated, not continued. */
  #retaint(): void {
    this.rootsVersion++;
    this.#taintedFloor = taintedFloor(this.#floor, this.policy.pathEntries("write"));
  }

  /**
   * Whether Landlock lets the sandbox make this write itself. `contents` (open, truncate): a rule on the file
   * or a tree above it; any other call changes a name in the parent directory, which a tree must cover (a
   * tree's own top is a name in a directory outside it: a carved one, or outside the floor).
   */
  #inFloor(path: string, contents = true): boolean {
    return inFloor(this.#floor, path, contents);
  }

  /**
   * After a performed change of names in a carved directory: the entries it removed or replaced there are no
   * longer what Landlock granted at start (its rules hold the inodes), so they leave the floor, and writes
   * there are performed from now on.
   */
  #forgetCarved(targets: Target[]): void {
    let changed = false;
    for (const t of targets) {
      const parent = t.path.slice(0, t.path.lastIndexOf("/")) || "/";
      if (!this.#carved.has(parent)) continue;
      for (let i = this.#floor.length - 1; i >= 0; i--) {
        if (this.#floor[i].path === t.path) {
          this.#floor.splice(i, 1);
          changed = true;
        }
      }
    }
    if (changed) this.#retaint();
  }

  addRule(rule: Rule): void {
    this.policy.add(rule);
    this.#retaint(); // any rule may change what the fast path may decide (fastRoots)
  }

  removeRules(pred: (r: Rule) => boolean): number {
    const n = this.policy.remove(pred);
    this.#retaint();
    return n;
  }

  /** Handles one notification: answers it now, or posts a question and answers later. */
  handle(n: Notification): void {
    this.stats.notifications++;
    const h = this.#byNr.get(n.nr);
    try {
      if (!this.#firstExecDone && this.#cfg.container && this.#inRuntimeSetup(n)) {
        this.#nfd.continue(n.id);
        this.stats.continued++;
        return;
      }
      if (h === undefined) {
        if (!this.#sys.handle(n)) this.#deny(n, "unknown", `syscall ${n.nr}`, "write", "filter");
      } else if (h === "cwd") {
        // chdir/fchdir: trapped only so that the fast path knows when a working directory changes.
        this.#nfd.continue(n.id);
        this.stats.continued++;
      } else if (h === "execve" || h === "execveat") this.#exec(n, h === "execveat");
      else if (h === "bind") this.#bind(n);
      else if (typeof h === "string") this.#connect(n, h);
      else this.#write(n, h);
    } catch (e) {
      // The caller is gone (its thread exited while this was decided, e.g. its /proc entry vanished): there is
      // no call left to answer, and nothing was denied to anyone.
      if (!this.#nfd.idValid(n.id)) return;
      // Fail closed: whatever went wrong, the call does not go through.
      this.#nfd.fail(n.id, EACCES);
      this.stats.denied++;
      this.#logLine({
        pid: n.tid,
        op: "write",
        target: "?",
        decision: "deny",
        by: "error",
        error: String(e),
      });
    }
  }

  /**
   * A container process before its first execve: the runtime's own code runs in it (runc opens its exec fifo
   * through /proc/self/fd, then execs the entrypoint), so its calls pass. "Before" is told by the process's
   * executable: still the file it was at the first notification on this fresh listener (the runtime's, since
   * nothing of the container's image can run before an exec is answered). A comparison rather than a flag,
   * because an exec notification can be interrupted and re-sent (runc is a Go program: its preemption
   * signals do that), and the re-sent one is the runtime's exec still.
   */
  #inRuntimeSetup(n: Notification): boolean {
    const setupPid = this.#cfg.commandPid;
    if (setupPid !== 0 && n.tid !== setupPid) return false;
    let id: [number, number] | null = null;
    try {
      const st = Deno.statSync(`/proc/${n.tid}/exe`);
      if (st.ino !== null) id = [st.dev, st.ino];
    } catch { /* gone */ }
    if (this.#setupExe === null) this.#setupExe = id ?? [-1, -1];
    else if (id === null || id[0] !== this.#setupExe[0] || id[1] !== this.#setupExe[1]) {
      this.#firstExecDone = true;
      return false;
    }
    return true;
  }

  // ---------------------------------------------------------------- write

  #readPath(n: Notification, arg: number): string | number {
    const p = this.#nfd.readPath(n.tid, n.args[arg]);
    // not UTF-8: decided only inside the floor (see docs/guarantees.md)
    return p === -84 ? -EACCES : p;
  }

  #target(
    n: Notification,
    dirfdArg: number,
    pathArg: number,
    follow: boolean,
  ): Resolved | { kind: "nonutf8" } {
    const p = this.#readPath(n, pathArg);
    if (typeof p === "number") {
      if (p === -EACCES) return { kind: "nonutf8" };
      return { kind: "error", errno: -p };
    }
    let base = "/";
    if (!p.startsWith("/")) {
      const dirfd = dirfdArg < 0 ? -100 : Number(BigInt.asIntN(32, n.args[dirfdArg]));
      const b = baseDir(n.tid, dirfd);
      if (b.kind !== "path") return b;
      base = b.path;
    }
    return resolvePath(p, base, follow, n.tid, n.tid);
  }

  #write(n: Notification, c: WriteCall): void {
    const a = n.args;
    const atFlags = c.atFlags !== undefined ? Number(a[c.atFlags] & 0xffffffffn) : 0;
    const targets: Target[] = [];
    let fdCopy = -1;

    // fd forms: fchmod, fchown, fsetxattr, fremovexattr, utimensat(fd, NULL), *at(fd, "", AT_EMPTY_PATH)
    const fdForm = c.path < 0 || (c.kind === "utime" && c.name === "utimensat" && a[1] === 0n);
    let emptyPathForm = false;
    if (!fdForm && (atFlags & AT_EMPTY_PATH)) {
      const p = this.#readPath(n, c.path);
      emptyPathForm = p === "";
    }
    if (fdForm || emptyPathForm) {
      const fdArg = c.path < 0 ? c.fd! : c.dirfd;
      const tgid = this.proc.tgid(n.tid);
      fdCopy = getRemoteFd(tgid, Number(BigInt.asIntN(32, a[fdArg])));
      if (fdCopy < 0) return this.#fail(n, -fdCopy);
      // What our copy of the fd is: the kernel's path for it is already canonical.
      const link = readlink(`/proc/self/fd/${fdCopy}`);
      const r: Resolved = typeof link === "number" ? { kind: "error", errno: -link } : link.startsWith("/") // a deleted file keeps its old path + " (deleted)": decided on that (it asks)
        ? { kind: "path", path: link }
        : { kind: "anon", what: link }; // pipe:[…], socket:[…], anon_inode:…: no file system object
      if (r.kind === "error") {
        fs.close(fdCopy);
        return this.#fail(n, r.errno);
      }
      targets.push(
        r.kind === "anon" ? { path: `anon:${r.what}`, anon: true } : { path: r.path, anon: false },
      );
    } else {
      let follow = c.follow;
      if (c.kind === "open") {
        const flags = this.#openFlags(n, c);
        follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
      } else if (c.kind === "link") {
        follow = (atFlags & AT_SYMLINK_FOLLOW) !== 0;
      } else if (c.atFlags !== undefined && (atFlags & AT_SYMLINK_NOFOLLOW)) {
        follow = false;
      }
      const t1 = this.#target(n, c.dirfd, c.path, follow);
      if (t1.kind === "nonutf8") return this.#nonUtf8(n, c);
      if (t1.kind === "error") return this.#fail(n, t1.errno);
      targets.push(
        t1.kind === "anon" ? { path: `anon:${t1.what}`, anon: true } : { path: t1.path, anon: false },
      );
    }
    if (c.path2 !== undefined) {
      // The second end of a rename or link (linkat(fd, "", …, AT_EMPTY_PATH) too): decided like the first.
      const t2 = this.#target(n, c.dirfd2 ?? -1, c.path2, false);
      if (t2.kind === "nonutf8") {
        fs.close(fdCopy);
        return this.#nonUtf8(n, c);
      }
      if (t2.kind === "error") {
        fs.close(fdCopy);
        return this.#fail(n, t2.errno);
      }
      targets.push(
        t2.kind === "anon" ? { path: `anon:${t2.what}`, anon: true } : { path: t2.path, anon: false },
      );
    }

    // Nothing that leaves privilege behind (setuid/setgid, devices, capabilities), wherever it is.
    const priv = this.#cfg.allowPrivilegedFiles ? null : (privilegedRefusal(c, a) ??
      (c.kind === "setxattr" && privilegedXattr(this.#nfd.readCString(n.tid, a[1], 256) ?? "security.?")
        ? "a security or trusted extended attribute"
        : null));
    if (priv !== null) {
      fs.close(fdCopy);
      return this.#deny(
        n,
        c.name,
        `${priv}: ${targets.map((t) => t.path).join(" → ")}`,
        "write",
        "rule",
        undefined,
        EPERM,
      );
    }

    // A rename or link that would carry a read-protected file (or a directory holding one) to another name: the
    // name it gets is not protected, so no answer can allow it (only --allow-read can lift a protection).
    if ((c.kind === "rename" || c.kind === "link") && this.#carriesProtected(targets[0].path)) {
      fs.close(fdCopy);
      return this.#deny(
        n,
        c.name,
        `a read-protected file: ${targets.map((t) => t.path).join(" → ")}`,
        "write",
        "rule",
      );
    }

    // An open that would read (O_RDWR, or O_RDONLY with O_CREAT) a read-protected file: Landlock refuses it to a
    // continued call; an open performed here must not hand out a readable fd either, whatever the rules or an
    // answer to a write question say (only --allow-read lifts a protection).
    if (
      c.kind === "open" && (this.#openFlags(n, c) & 3) !== 1 && this.#readProtectedAt(targets[0].path)
    ) {
      fs.close(fdCopy);
      return this.#deny(
        n,
        c.name,
        `opened for reading, a read-protected file: ${targets[0].path}`,
        "write",
        "rule",
      );
    }

    // ID_VALID is checked before acting (emulating, asking), not before a CONTINUE or a deny: answering a
    // notification whose thread is gone simply fails in the kernel.
    if (targets.length === 1 && fdCopy < 0 && c.landlock) {
      // The common case, kept allocation-light: one path, a call Landlock covers.
      const v = this.#verdict(targets[0], c.kind === "open" || c.kind === "truncate");
      if (v === "floor") {
        const who = this.#log ? this.#who(n.tid) : null;
        this.#nfd.continue(n.id);
        this.stats.continued++;
        if (who) {
          this.#logLine({
            ...who,
            op: "write",
            syscall: c.name,
            target: targets[0].path,
            decision: "allow",
            by: "rule",
          });
        }
        return;
      }
    }
    const contents = c.kind === "open" || c.kind === "truncate";
    const names = c.kind === "rename" || c.kind === "link";
    const verdicts = targets.map((t) => this.#verdict(t, contents, names));
    const shown = targets.map((t) => t.path).join(" → ");
    // A pty the sandbox opened itself (through /dev/ptmx) is its own; any other terminal asks.
    // (Not in a container: its /dev/pts is its own devpts instance, and its paths are not ours.)
    if (!this.#cfg.container && c.kind === "open" && verdicts[0] === "ask" && isPtyPath(targets[0].path)) {
      if (openOwnPty(this.#nfd, n, this.#openFlags(n, c), targets[0].path, this.#cfg.launcherPid)) {
        this.stats.emulated++;
        return;
      }
    }
    if (verdicts.includes("deny")) {
      fs.close(fdCopy);
      return this.#deny(n, c.name, shown, "write", "rule");
    }
    if (verdicts.includes("ask") && c.kind === "open" && (this.#openFlags(n, c) & O_TMPFILE) === O_TMPFILE) {
      // An unnamed temporary file (O_TMPFILE; SQLite's and Rust's temp files in /tmp, /var/tmp): no name appears
      // outside, and giving it one later (linkat) is a write of its own, decided like any other. Performed.
      return this.#allow(
        { n, op: "write", call: c, targets, fdCopy, qid: 0 },
        false,
        "unnamed temporary file",
      );
    }
    if (verdicts.includes("ask")) {
      // A call that cannot change anything (mkdir of what exists, unlink of what does not) is answered as the
      // kernel would, without a question: `mkdir -p ~` must not ask.
      const noop = fdCopy < 0 || c.kind === "link" ? this.#noopErrno(n, c, targets) : 0;
      if (noop) {
        fs.close(fdCopy);
        return this.#fail(n, noop);
      }
      const asking = verdicts.filter((v) => v === "ask").length;
      const p: Pending = { n, op: "write", call: c, targets, fdCopy, qid: 0, asking };
      const end = askedEnd(targets, verdicts);
      const why = this.#protectedAt(targets.find((t) => t.path === end)!, names);
      if (why) {
        p.warning = why.reason;
        p.suggest = formatScope(why.scope);
        p.scopes = [...new Set([formatScope(why.scope), end])];
      } else if (c.kind === "open" && isTerminalPath(end)) {
        // A terminal number is reused: never offer more than this one terminal, and never for good.
        p.warning = ANOTHER_TERMINAL;
        p.suggest = end;
        p.scopes = [end];
      }
      return this.#ask(p, end, c.name);
    }
    this.#allow(
      { n, op: "write", call: c, targets, fdCopy, qid: 0 },
      verdicts.every((v) => v === "floor"),
      "rule",
    );
  }

  /** EEXIST or ENOENT when the call would fail that way before changing anything, else 0. */
  #noopErrno(n: Notification, c: WriteCall, targets: Target[]): number {
    const t = targets[targets.length - 1]; // the created end for link/rename
    if (t.anon) return 0;
    const exists = view.exists(t.path);
    switch (c.kind) {
      case "mkdir":
      case "mknod":
      case "symlink":
      case "link":
        return exists ? 17 /* EEXIST */ : 0;
      case "open": {
        const flags = this.#openFlags(n, c);
        if (!exists && !(flags & O_CREAT)) return 2; // ENOENT
        if (exists && (flags & O_CREAT) && (flags & O_EXCL)) return 17;
        return 0;
      }
      case "unlink":
      case "rmdir":
      case "truncate":
      case "chmod":
      case "chown":
      case "utime":
      case "setxattr":
      case "removexattr":
        return exists ? 0 : 2;
      case "rename": {
        if (targets.length !== 2) return 0;
        if (!pathExists(targets[0].path)) return 2; // ENOENT
        // renameat2: RENAME_NOREPLACE onto an existing name, RENAME_EXCHANGE with a missing one (`mv` tries
        // NOREPLACE first, then a plain rename: one question, not two).
        const flags = c.atFlags !== undefined ? Number(n.args[c.atFlags] & 0xffffffffn) : 0;
        if ((flags & 1 /* RENAME_NOREPLACE */) && exists) return 17; // EEXIST
        if ((flags & 2 /* RENAME_EXCHANGE */) && !exists) return 2;
        return 0;
      }
    }
    return 0;
  }

  #openFlags(n: Notification, c: WriteCall): number {
    return typeof c.openFlags === "number" ? Number(n.args[c.openFlags] & 0xffffffffn) : c.openFlags!.fixed;
  }

  /**
   * `contents`: the call writes a file's contents (open, truncate), which a Landlock rule on the file itself
   * covers; any other call (create, remove, rename a name) needs a rule on a directory above it.
   */
  #verdict(t: Target, contents: boolean, names = false): Verdict {
    if (t.anon) return "floor"; // a pipe or socket reached through /proc/PID/fd: no file system change
    if (t.path.startsWith("/proc/") && otherProcessPath(t.path, this.#cfg.launcherPid)) return "deny";
    const ctx = {
      policy: this.policy,
      floor: this.#floor,
      tainted: this.#taintedFloor,
      protected: this.#protected,
    };
    return writeVerdict(ctx, t.path, contents, names);
  }

  /** The protected path an allowed write of `t` touches, if any (for the bar's reason). */
  /** `path` is read-protected (and not made readable), or holds a read-protected path below it. */
  #carriesProtected(path: string): boolean {
    const rp = this.#cfg.readProtected;
    if (!rp) return false;
    const under = (p: string, dir: string) => p === dir || p.startsWith(dir === "/" ? "/" : dir + "/");
    if (rp.protect.some((p) => under(p, path) && p !== path)) return true; // a directory holding one
    return this.#readProtectedAt(path);
  }

  /** `path` is at or below a read-protected path and not made readable again below it. */
  #readProtectedAt(path: string): boolean {
    const rp = this.#cfg.readProtected;
    if (!rp) return false;
    const under = (p: string, dir: string) => p === dir || p.startsWith(dir === "/" ? "/" : dir + "/");
    let best = -1;
    for (const p of rp.protect) if (under(path, p) && p.length > best) best = p.length;
    if (best < 0) return false;
    return !rp.readable.some((r) => under(path, r) && r.length > best);
  }

  #protectedAt(t: Target, names: boolean): ProtectedPath | null {
    if (t.anon || this.#protected.length === 0) return null;
    const d = this.policy.decide("write", t.path, Date.now());
    return d.effect === "allow" ? protectedHit(this.#protected, t.path, names, d.rule) : null;
  }

  /** Allowed: continue inside the floor for calls Landlock covers, emulate otherwise. */
  #allow(p: Pending, floor: boolean, by: string): void {
    const { n, call } = p;
    // With --log, name the process before answering: once answered, it may exit at once.
    const who = this.#log ? this.#who(n.tid) : null;
    const log = (rec: Record<string, unknown>) =>
      who && this.#logLine({ ...who, ...rec, decision: "allow", by });
    const target = p.targets.map((t) => t.path).join(" → ");
    if (p.bindFd !== undefined) {
      const r = this.#asCaller(n.tid, () => this.#emulateBind(p));
      this.stats.emulated++;
      if (r >= 0) this.#nfd.succeed(n.id, 0);
      else this.#nfd.fail(n.id, -r);
      log({ op: "write", syscall: "bind", target, emulated: true, result: r });
      return;
    }
    if (p.net) {
      const net = p.net;
      const r = this.#asCaller(n.tid, () => this.net.perform(n, net));
      this.stats.emulated++;
      log({ op: "connect", syscall: p.net.kind, target, result: r });
      return;
    }
    if (p.exec) {
      this.#nfd.continue(n.id);
      this.stats.continued++;
      log({ op: "exec", target });
      return;
    }
    if (floor && call!.landlock && p.fdCopy < 0) {
      this.#nfd.continue(n.id);
      this.stats.continued++;
      log({ op: "write", syscall: call!.name, target });
      return;
    }
    if (!this.#nfd.idValid(n.id)) {
      fs.close(p.fdCopy);
      return;
    }
    if (call) this.#mem(p);
    const r = this.#asCaller(n.tid, () => this.#emulate(p));
    if (r.wait) {
      // A FIFO without a reader (the kernel would block the caller until one comes): the call waits, the loop
      // does not; tried again at every sweep (retryWaiting) while the caller lives.
      this.#waiting.add(p);
      p.log = log;
      return;
    }
    fs.close(p.fdCopy);
    this.stats.emulated++;
    if (this.#carved.size > 0 && p.fdCopy < 0) this.#forgetCarved(p.targets);
    if (r.sent) {
      // ADDFD with SEND completed the call.
    } else if (r.value >= 0) this.#nfd.succeed(n.id, r.value);
    else this.#nfd.fail(n.id, -r.value);
    log({ op: "write", syscall: call!.name, target, emulated: true, result: r.value });
    if ((r.sent || r.value >= 0) && this.#cfg.readCarved) {
      const line = carvedCreateNotice(
        this.#cfg.readCarved,
        call!.kind,
        p.targets.map((t) => t.path),
        this.#noticed,
      );
      if (line) this.#post({ t: "notice", line });
    }
  }

  /** Performed opens waiting for a FIFO's reader (see #allow). */
  readonly #waiting = new Set<Pending>();

  /** Tries the waiting opens again; forgets those whose caller is gone. */
  retryWaiting(): void {
    for (const p of this.#waiting) {
      if (!this.#nfd.idValid(p.n.id)) {
        this.#waiting.delete(p);
        continue;
      }
      let r: { value: number; sent: boolean; wait?: boolean };
      try {
        r = this.#asCaller(p.n.tid, () => this.#emulate(p));
      } catch {
        r = { value: -EACCES, sent: false }; // fail closed
      }
      if (r.wait) continue;
      this.#waiting.delete(p);
      this.stats.emulated++;
      if (!r.sent) {
        if (r.value >= 0) this.#nfd.succeed(p.n.id, r.value);
        else this.#nfd.fail(p.n.id, -r.value);
      }
      p.log?.({
        op: "write",
        syscall: p.call!.name,
        target: p.targets[0].path,
        emulated: true,
        result: r.value,
      });
    }
  }

  /**
   * A performed write is done with the caller's credentials, never the supervisor's: its file system ids,
   * groups and effective capabilities (per-thread, set on this Worker's thread only), so the kernel checks
   * permissions as for the caller and what is created is owned as it would be. The supervisor may be root with
   * every capability (locally, or `hallpass agent` on a node) while the caller is another user, or root with
   * few capabilities: it must lend none. The caller's umask is applied by each emulation; no_new_privs does not
   * bear on a file operation (nothing is executed).
   */
  #asCaller<T>(tid: number, fn: () => T): T {
    const c = this.proc.fsCreds(tid);
    const own = this.#ownCreds ??= this.proc.fsCreds("thread-self");
    if (c === null || own === null) throw new Error(`cannot read the credentials of ${tid}`);
    const sameIds = c.uid === own.uid && c.gid === own.gid && c.groups.join() === own.groups.join();
    if (sameIds && c.capEff === own.capEff) return fn();
    if (!sameIds) setThreadFsCreds(c.uid, c.gid, c.groups);
    try {
      // After the ids: changing the fsuid from 0 clears the file system capabilities, which are set here.
      setThreadEffectiveCaps(c.capEff);
      return fn();
    } finally {
      // Capabilities first: taking our ids back (setgroups) needs CAP_SETGID, which the caller may lack.
      setThreadEffectiveCaps(own.capEff);
      if (!sameIds) setThreadFsCreds(own.uid, own.gid, own.groups);
    }
  }

  #who(tid: number): { pid: number; exe: string; name: string; chain: string[] } {
    const pid = this.proc.tgid(tid);
    return { pid, exe: this.proc.exe(pid), name: this.proc.comm(pid), chain: this.proc.chain(pid) };
  }

  #fail(n: Notification, errno: number): void {
    if (this.#nfd.idValid(n.id)) this.#nfd.fail(n.id, errno);
  }

  #nonUtf8(n: Notification, c: WriteCall): void {
    // Names that are not UTF-8 cannot be shown or matched faithfully: they go through only where Landlock
    // decides anyway (the floor) - the kernel checks the real bytes - and are denied elsewhere.
    if (c.landlock && this.#taintedFloor.length === 0) {
      this.#nfd.continue(n.id);
      this.stats.continued++;
      return;
    }
    this.#deny(n, c.name, "(a file name that is not UTF-8)", "write", "rule");
  }

  #deny(
    n: Notification,
    syscall: string,
    target: string,
    op: Op,
    by: string,
    suggestion?: string,
    errno = EACCES,
  ): void {
    // Name the process before answering: once answered, it may exit at once and its name be gone ("?").
    const pid = this.proc.tgid(n.tid);
    const name = this.proc.comm(pid);
    const exe = this.proc.exe(pid);
    const chain = this.#log ? this.proc.chain(pid) : undefined;
    this.#nfd.fail(n.id, errno);
    this.stats.denied++;
    // A rename or link: the end that was not allowed, the destination first (what a person means to allow).
    const ends = target.startsWith("/") ? target.split(" → ").reverse() : [];
    // Denied by a rule (a saved `never`, a rules file): an --allow-path would not override it; the summary
    // names that rule instead.
    let rule: string | undefined;
    if (by === "rule" && (op === "write" || op === "exec")) {
      for (const t of ends) {
        const d = this.policy.decide(op, t, Date.now());
        if (d.effect === "deny" && d.rule) {
          rule = `${formatRule(d.rule)}   (${formatSource(d.rule.source)})`;
          break;
        }
      }
    }
    const suggest = suggestion === undefined && op === "write" && ends.length
      ? (() => {
        const end = ends.find((t) => this.#verdict({ path: t, anon: false }, false) === "ask") ??
          ends.find((t) => !this.#inFloor(t)) ?? ends[0];
        const s = suggestScopes(end, {
          home: this.#cfg.home,
          project: this.#cfg.project,
        });
        return s.scopes[s.suggested];
      })()
      : suggestion;
    this.#post({ t: "decided", effect: "deny", op, target, pid, name, syscall, by, suggest, rule });
    this.#logLine({
      pid,
      exe,
      name,
      op,
      syscall,
      target,
      decision: "deny",
      by,
      chain,
    });
  }

  // ---------------------------------------------------------------- asking

  #ask(p: Pending, target: string, syscall: string): void {
    if (this.#cfg.noAsk) return this.#denyUnasked(p, syscall);
    const pid = this.proc.tgid(p.n.tid);
    const qid = this.#nextQid++;
    p.qid = qid;
    const choice = p.op === "exec" ? suggestExecScopes(target) : suggestScopes(target, {
      home: this.#cfg.home,
      project: this.#cfg.project,
    });
    if (p.op === "write") {
      // An atomic save (lib/policy/atomic_save.ts): "NAME and its temporary siblings" offered first and suggested.
      const from = p.targets.length === 2 && p.call?.kind === "rename" && target === p.targets[1].path
        ? p.targets[0].path
        : null;
      const sib = p.targets.length === 1 || from !== null
        ? siblingScope(target, from, (x) => view.exists(x), (d) => {
          // In a container the directory is the container's: not listed here, so not offered.
          if (this.#cfg.container) return null;
          try {
            return [...Deno.readDirSync(d)].map((e) => e.name);
          } catch {
            return null;
          }
        })
        : null;
      if (sib !== null && !choice.scopes.includes(sib)) {
        choice.scopes.splice(1, 0, sib);
        choice.suggested = 1;
      }
    }
    // An operation with two paths (rename, link) shows both ends: an answer grants only what the bar showed.
    const shown = p.op === "write" && p.targets.length > 1
      ? p.targets.map((t) => t.path).join(" → ")
      : target;
    const q: Question = {
      id: qid,
      op: p.op,
      pid,
      name: this.proc.comm(pid),
      exe: this.proc.exe(pid),
      target: shown,
      syscall,
      chain: this.proc.chain(pid),
      suggestedScope: p.scopes?.[0] ?? choice.scopes[choice.suggested],
      scopes: p.scopes ?? choice.scopes,
    };
    if (p.warning) q.warning = p.warning;
    if (this.#cfg.container) q.container = this.#cfg.container.identity;
    if (shown !== target) q.paths = p.targets.map((t) => t.path);
    p.asked = target;
    if (p.op === "exec") {
      const argv = this.proc.argvOf(p.n, this.#nfd, p.execAt === true);
      if (argv) q.argv = argv;
      if (this.policy.decide("write", target, Date.now()).effect === "allow" || this.#inFloor(target)) {
        q.warning =
          "the sandbox can write this program without asking: allowing it lets the sandbox run anything it writes there";
      }
    }
    this.#pending.set(qid, p);
    // Calls with the same key join one question and get its answer: for exec the bar shows the arguments too,
    // so a run with other arguments asks on its own.
    const argvKey = p.op === "exec" ? `\0${JSON.stringify(q.argv ?? null)}` : "";
    this.#post({ t: "ask", q, key: `${p.op}\0${shown}${argvKey}` });
  }

  /** --no-ask: what would ask is denied here, without a round trip to the main thread. */
  #denyUnasked(p: Pending, syscall: string): void {
    fs.close(p.fdCopy);
    if (p.bindFd !== undefined) fs.close(p.bindFd);
    if (p.net) this.net.release(p.net);
    this.#deny(p.n, syscall, p.targets.map((t) => t.path).join(" → "), p.op, "no-ask", p.suggest);
  }

  /** The main thread's answer to question `qid`. */
  answer(qid: number, a: Answer): void {
    // The log lines written while the answer is applied name the question they come from.
    this.#answering = qid;
    try {
      this.#applyAnswer(qid, a);
    } finally {
      this.#answering = undefined;
    }
  }

  #applyAnswer(qid: number, a: Answer): void {
    if (this.#requests.owns(qid)) return this.#requests.answer(qid, a);
    const p = this.#pending.get(qid);
    if (!p) return;
    try {
      this.#answer(qid, p, a);
    } catch (e) {
      // Fail closed, as handle() does: the call does not go through, the session goes on.
      this.#pending.delete(qid);
      fs.close(p.fdCopy);
      if (!this.#nfd.idValid(p.n.id)) return; // the caller is gone: nothing to answer or report
      this.#nfd.fail(p.n.id, EACCES);
      this.stats.denied++;
      this.#logLine({ pid: p.n.tid, op: p.op, target: "?", decision: "deny", by: "error", error: String(e) });
    }
  }

  #answer(qid: number, p: Pending, a: Answer): void {
    this.#pending.delete(qid);
    if (!this.#nfd.idValid(p.n.id)) {
      fs.close(p.fdCopy);
      if (p.bindFd !== undefined) fs.close(p.bindFd);
      if (p.net) this.net.release(p.net);
      return;
    }
    const now = Date.now();
    if (a.kind === "for" || a.kind === "always" || a.kind === "never") {
      const target = a.scope ?? p.asked ?? p.targets[0].path;
      try {
        // A name with a `*` in it would become a glob rule covering its neighbours (`~/.bash*`): refused.
        if (isGlobTarget(target) && p.targets.some((t) => isGlobTarget(t.path))) throw new Error("glob");
        this.addRule({
          effect: a.kind === "never" ? "deny" : "allow",
          op: p.op,
          target,
          expiresAt: a.kind === "for" ? now + (a.durationMs ?? 300_000) : undefined,
          source: { kind: "answer", by: a.by },
        });
      } catch {
        // A scope that does not parse is a bad answer: deny.
        fs.close(p.fdCopy);
        return this.#deny(p.n, p.call?.name ?? "execve", p.targets[0].path, p.op, a.by);
      }
    }
    if (a.kind === "deny" || a.kind === "never") {
      fs.close(p.fdCopy);
      if (p.bindFd !== undefined) fs.close(p.bindFd);
      if (p.net) this.net.release(p.net);
      const shown = p.targets.map((t) => t.path).join(" → ");
      return this.#deny(p.n, p.call?.name ?? p.net?.kind ?? "execve", shown, p.op, a.by, p.suggest);
    }
    // Allowed by the answer. `once` grants what the bar showed (every end of a rename or link); a grant with a
    // scope (`[t]`, `[a]`) covers an end only if the end is inside it: an end it leaves out is asked again.
    if (p.exec || p.net) return this.#allow(p, false, a.by);
    const contents = p.call?.kind === "open" || p.call?.kind === "truncate";
    const verdicts = p.targets.map((t) =>
      this.#verdict(t, contents, p.call?.kind === "rename" || p.call?.kind === "link")
    );
    if (verdicts.includes("deny")) {
      fs.close(p.fdCopy);
      return this.#deny(p.n, p.call!.name, p.targets.map((t) => t.path).join(" → "), "write", "rule");
    }
    if (a.kind !== "once" && verdicts.includes("ask")) {
      // Asked again about the end left out, once per end: an answer that covers nothing new denies.
      const asking = verdicts.filter((v) => v === "ask").length;
      if (asking >= (p.asking ?? 1)) {
        fs.close(p.fdCopy);
        return this.#deny(p.n, p.call!.name, p.targets.map((t) => t.path).join(" → "), "write", a.by);
      }
      p.asking = asking;
      return this.#ask(p, askedEnd(p.targets, verdicts), p.call!.name);
    }
    this.#allow(p, verdicts.every((v) => v === "floor"), a.by);
  }

  /** A process died or the session ends: forget its questions. */
  withdrawDead(): void {
    for (const [qid, p] of this.#pending) {
      if (!this.#nfd.idValid(p.n.id)) {
        fs.close(p.fdCopy);
        if (p.bindFd !== undefined) fs.close(p.bindFd);
        if (p.net) this.net.release(p.net);
        this.#pending.delete(qid);
        this.#post({ t: "withdraw", qid });
      }
    }
    this.#requests.withdrawDead((n) => this.#nfd.idValid(n.id));
  }

  /** Questions waiting for an answer (operations and hallpass-request requests), and opens waiting for a FIFO. */
  get pendingCount(): number {
    return this.#pending.size + this.#requests.pendingCount + this.#waiting.size;
  }

  // ---------------------------------------------------------------- emulation

  #emulate(p: Pending): { value: number; sent: boolean; wait?: boolean } {
    const { n, call } = p;
    const c = call!;
    const a = n.args;
    if (p.fdCopy >= 0) return { value: this.#emulateFd(p), sent: false };
    const t = p.targets[0];
    if (t.anon) return { value: -EACCES, sent: false };
    const { dirfd, name } = openParent(t.path);
    if (dirfd < 0) return { value: dirfd, sent: false };
    const nameC = cstr(name);
    try {
      switch (c.kind) {
        case "open": {
          const flags = this.#openFlags(n, c);
          const mode = c.mode !== undefined && typeof c.openFlags === "number"
            ? Number(a[c.mode] & 0o7777n)
            : c.name === "creat"
            ? Number(a[1] & 0o7777n)
            : 0;
          const umask = this.proc.umask(n.tid);
          // openat2 RESOLVE_NO_SYMLINKS rather than O_NOFOLLOW: O_NOFOLLOW would stay in the file's flags
          // (F_GETFL, /proc/PID/fdinfo), and the program did not ask for it. openat2 refuses unknown flag bits
          // (openat ignores them) and a mode without O_CREAT/O_TMPFILE.
          const how = (flags & VALID_OPEN_FLAGS) | O_CLOEXEC | 0o400 /* O_NOCTTY */;
          // Never blocks on what the sandbox controls: O_NONBLOCK (a FIFO without a reader says ENXIO, a device
          // does not wait, a leased file says EAGAIN), cleared again below when the program did not ask for it.
          const fd = openat2(
            dirfd,
            nameC,
            how | O_NONBLOCK,
            how & (O_CREAT | O_TMPFILE) ? mode & ~umask : 0,
            RESOLVE_NO_SYMLINKS,
          );
          if (!(flags & O_NONBLOCK)) {
            // The kernel would block the caller: a writer on a FIFO until a reader comes, a lease until broken.
            if (fd === -EAGAIN) return { value: fd, sent: false, wait: true };
            if (fd === -ENXIO && (flags & 3) === O_WRONLY && isFifo(dirfd, nameC)) {
              return { value: fd, sent: false, wait: true };
            }
          }
          if (fd < 0) return { value: fd, sent: false };
          if (!(flags & O_NONBLOCK)) fs.setNonblocking(fd, false);
          const r = this.#nfd.addFdAndReturn(n.id, fd, (flags & O_CLOEXEC) !== 0);
          fs.close(fd);
          return { value: r, sent: r >= 0 };
        }
        case "truncate": {
          // Type-checked before it is opened for writing: a FIFO or device is never opened (it could block, a
          // device's open can act), and the kernel's truncate(2) refuses them anyway.
          const pathFd = fs.openat(dirfd, nameC, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
          if (pathFd < 0) return { value: pathFd, sent: false };
          try {
            const type = fs.fileType(pathFd);
            if (type < 0) return { value: type, sent: false };
            if (type === S_IFDIR) return { value: -EISDIR, sent: false };
            if (type !== S_IFREG) return { value: -EINVAL, sent: false };
            const fd = fs.reopen(pathFd, O_WRONLY | O_NONBLOCK);
            if (fd < 0) return { value: fd, sent: false };
            const r = fs.ftruncate(fd, BigInt.asIntN(64, a[1]));
            fs.close(fd);
            return { value: r, sent: false };
          } finally {
            fs.close(pathFd);
          }
        }
        case "mkdir":
          return {
            value: fs.mkdirat(dirfd, nameC, Number(a[c.mode!] & 0o7777n) & ~this.proc.umask(n.tid)),
            sent: false,
          };
        case "mknod": {
          const mode = Number(a[c.mode!] & 0xffffffffn);
          const umask = this.proc.umask(n.tid);
          const dev = c.name === "mknod" ? a[2] : a[3];
          return {
            value: fs.mknodat(dirfd, nameC, (mode & ~0o7777) | (mode & 0o7777 & ~umask), dev),
            sent: false,
          };
        }
        case "unlink": {
          const flags = c.atFlags !== undefined ? Number(a[c.atFlags] & BigInt(AT_REMOVEDIR)) : 0;
          return { value: fs.unlinkat(dirfd, nameC, flags), sent: false };
        }
        case "rmdir":
          return { value: fs.unlinkat(dirfd, nameC, AT_REMOVEDIR), sent: false };
        case "rename":
        case "link": {
          const t2 = p.targets[1];
          const second = openParent(t2.path);
          if (second.dirfd < 0) return { value: second.dirfd, sent: false };
          try {
            if (c.kind === "rename") {
              const flags = c.atFlags !== undefined ? Number(a[c.atFlags] & 0xffffffffn) : 0;
              return {
                value: fs.renameat2(dirfd, nameC, second.dirfd, cstr(second.name), flags),
                sent: false,
              };
            }
            return { value: fs.linkat(dirfd, nameC, second.dirfd, cstr(second.name), 0), sent: false };
          } finally {
            fs.close(second.dirfd);
          }
        }
        case "symlink": {
          const text = this.#mem(p).text;
          if (text === null) return { value: -EFAULT, sent: false };
          return { value: fs.symlinkat(cstr(text), dirfd, nameC), sent: false };
        }
        case "chmod": {
          const mode = Number(a[c.mode!] & 0o7777n);
          return { value: fs.fchmodatNoFollow(dirfd, nameC, mode), sent: false };
        }
        case "chown": {
          const [u, g] = c.name === "fchownat" ? [a[2], a[3]] : [a[1], a[2]];
          return {
            value: fs.fchownatNoFollow(dirfd, nameC, Number(u & 0xffffffffn), Number(g & 0xffffffffn)),
            sent: false,
          };
        }
        case "utime": {
          const ts = this.#mem(p).times;
          if (typeof ts === "number") return { value: ts, sent: false };
          return { value: fs.utimensatNoFollow(dirfd, nameC, ts), sent: false };
        }
        case "setxattr": {
          const x = this.#mem(p).xattr!;
          if (typeof x === "number") return { value: x, sent: false };
          return {
            value: fs.lsetxattrAt(dirfd, name, x.name, x.value, x.size, Number(a[4] & 0xffffffffn)),
            sent: false,
          };
        }
        case "removexattr": {
          const attr = this.#mem(p).text;
          if (attr === null) return { value: -EFAULT, sent: false };
          return { value: fs.lremovexattrAt(dirfd, name, cstr(attr)), sent: false };
        }
      }
    } finally {
      fs.close(dirfd);
    }
    return { value: -ENOSYS, sent: false };
  }

  #emulateFd(p: Pending): number {
    const { n, call } = p;
    const c = call!;
    const a = n.args;
    const fd = p.fdCopy;
    switch (c.kind) {
      case "link": {
        // linkat(fd, "", newdirfd, newpath, AT_EMPTY_PATH): our copy of the fd, linked at the decided path.
        const t2 = p.targets[1];
        if (!t2 || t2.anon) return -EACCES;
        const second = openParent(t2.path);
        if (second.dirfd < 0) return second.dirfd;
        try {
          return fs.linkat(fd, cstr(""), second.dirfd, cstr(second.name), AT_EMPTY_PATH);
        } finally {
          fs.close(second.dirfd);
        }
      }
      case "chmod":
        return fs.fchmod(fd, Number(a[c.mode!] & 0o7777n));
      case "chown": {
        const [u, g] = c.name === "fchownat" ? [a[2], a[3]] : [a[1], a[2]];
        return fs.fchown(fd, Number(u & 0xffffffffn), Number(g & 0xffffffffn));
      }
      case "utime": {
        const ts = this.#mem(p).times;
        if (typeof ts === "number") return ts;
        return fs.futimens(fd, ts);
      }
      case "setxattr": {
        const x = this.#mem(p).xattr!;
        if (typeof x === "number") return x;
        return fs.fsetxattr(fd, x.name, x.value, x.size, Number(a[4] & 0xffffffffn));
      }
      case "removexattr": {
        const attr = this.#mem(p).text;
        if (attr === null) return -EFAULT;
        return fs.fremovexattr(fd, cstr(attr));
      }
    }
    return -EOPNOTSUPP;
  }

  /**
   * What an emulation needs from the caller's memory (a symlink's text, times, an xattr), read once and before
   * the caller's credentials are taken on (#asCaller): reading another process's memory needs ours.
   */
  #mem(p: Pending): NonNullable<Pending["mem"]> {
    if (p.mem) return p.mem;
    const c = p.call!, n = p.n, a = n.args;
    const m: NonNullable<Pending["mem"]> = { text: null, times: null };
    if (c.kind === "symlink") m.text = this.#nfd.readCString(n.tid, a[0]);
    else if (c.kind === "removexattr") m.text = this.#nfd.readCString(n.tid, a[1], 256);
    else if (c.kind === "utime") m.times = this.#readTimes(n, c);
    else if (c.kind === "setxattr") m.xattr = this.#readXattr(n, 1, 2, 3);
    p.mem = m;
    return m;
  }

  /** Reads the times argument of the utime family as struct timespec[2] (null = now). */
  #readTimes(n: Notification, c: WriteCall): Uint8Array<ArrayBuffer> | null | number {
    const a = n.args;
    const ptr = c.name === "utime" || c.name === "utimes" ? a[1] : a[2];
    if (ptr === 0n) return null;
    const out = new Uint8Array(128);
    const ov = new DataView(out.buffer);
    if (c.name === "utime") {
      const b = this.#nfd.readBytes(n.tid, ptr, 16); // struct utimbuf { time_t actime, modtime; }
      if (!b) return -EFAULT;
      const v = new DataView(b.buffer);
      ov.setBigInt64(0, v.getBigInt64(0, true), true);
      ov.setBigInt64(16, v.getBigInt64(8, true), true);
      return out;
    }
    const b = this.#nfd.readBytes(n.tid, ptr, 32);
    if (!b) return -EFAULT;
    const v = new DataView(b.buffer);
    if (c.name === "utimensat") return new Uint8Array([...b, ...new Uint8Array(96)]);
    // struct timeval[2] → timespec[2]
    for (let i = 0; i < 2; i++) {
      ov.setBigInt64(i * 16, v.getBigInt64(i * 16, true), true);
      ov.setBigInt64(i * 16 + 8, v.getBigInt64(i * 16 + 8, true) * 1000n, true);
    }
    return out;
  }

  #readXattr(
    n: Notification,
    nameArg: number,
    valueArg: number,
    sizeArg: number,
  ): { name: Uint8Array<ArrayBuffer>; value: Uint8Array<ArrayBuffer>; size: number } | number {
    const a = n.args;
    const attr = this.#nfd.readCString(n.tid, a[nameArg], 256);
    if (attr === null) return -EFAULT;
    if (privilegedXattr(attr) && !this.#cfg.allowPrivilegedFiles) return -EPERM; // decided on the copy that is used (lib/policy/privileged_bits.ts)
    const size = Number(a[sizeArg] & 0xffffffffn);
    if (size > 65536) return -7; // E2BIG
    const value = new Uint8Array(Math.max(128, size));
    for (let off = 0; off < size; off += 8192) {
      const len = Math.min(8192, size - off);
      const chunk = this.#nfd.readBytes(n.tid, a[valueArg] + BigInt(off), len);
      if (!chunk) return -EFAULT;
      value.set(chunk, off);
    }
    return { name: cstr(attr), value, size };
  }

  // ---------------------------------------------------------------- connect

  /**
   * bind(2) of a unix socket to a path creates a file there: decided as a write. Inside the floor it continues
   * (Landlock's MAKE_SOCK re-checks); elsewhere, when allowed, the supervisor binds a copy of the program's
   * socket through its own verified directory fd. Other families and abstract names are not file writes.
   */
  #bind(n: Notification): void {
    const len = Number(n.args[2] & 0xffffffffn);
    const a = len >= 3 && len <= 110 ? this.#nfd.readBytes(n.tid, n.args[1], len) : null;
    const family = a ? a[0] | (a[1] << 8) : -1;
    if (a && family === 1 && a[2] === 0) return this.#bindAbstract(n, a, len);
    if (!a || family !== 1 /* AF_UNIX */) {
      this.#nfd.continue(n.id);
      this.stats.continued++;
      return;
    }
    const raw = a.subarray(2, len);
    const end = raw.indexOf(0);
    let path: string;
    try {
      path = dec.decode(end >= 0 ? raw.subarray(0, end) : raw);
    } catch {
      return this.#deny(n, "bind", "(a socket path that is not UTF-8)", "write", "rule");
    }
    let base = "/";
    if (!path.startsWith("/")) {
      const b = baseDir(n.tid, -100);
      if (b.kind !== "path") return this.#fail(n, b.kind === "error" ? b.errno : EACCES);
      base = b.path;
    }
    const r = resolvePath(path, base, false, n.tid, n.tid);
    if (r.kind !== "path") return this.#fail(n, r.kind === "error" ? r.errno : EACCES);
    const target: Target = { path: r.path, anon: false };
    const v = this.#verdict(target, false);
    if (v === "deny") return this.#deny(n, "bind", r.path, "write", "rule");
    if (pathExists(r.path)) return this.#fail(n, 98); // EADDRINUSE, as the kernel would say
    const fd = getRemoteFd(this.proc.tgid(n.tid), Number(BigInt.asIntN(32, n.args[0])));
    if (fd < 0) return this.#fail(n, -fd);
    const p: Pending = { n, op: "write", call: null, targets: [target], fdCopy: -1, bindFd: fd, qid: 0 };
    // Performed here in the floor too, so that the socket the sandbox made is known as its own (connects to
    // it need no question: lib/policy/socket_policy.ts) only once it exists.
    if (v === "allow" || v === "floor") return this.#allow(p, false, v === "floor" ? "floor" : "rule");
    this.#ask(p, r.path, "bind");
  }

  /**
   * bind of an abstract name: performed here on a copy of the socket, so that a name the sandbox really got is
   * known as its own (with the socket's inode: a name it once had may be an outside daemon's later).
   */
  #bindAbstract(n: Notification, a: Uint8Array, len: number): void {
    const fd = getRemoteFd(this.proc.tgid(n.tid), Number(BigInt.asIntN(32, n.args[0])));
    if (fd < 0) return this.#fail(n, -fd);
    try {
      const addr = new Uint8Array(128);
      addr.set(a.subarray(0, len));
      const r = bindFd(fd, addr, len);
      if (r >= 0) {
        try {
          this.net.ownAbstract.set(
            dec.decode(a.subarray(3, len)),
            Deno.statSync(`/proc/self/fd/${fd}`).ino ?? -1,
          );
        } catch { /* not UTF-8: never matched */ }
      }
      this.stats.emulated++;
      if (!this.#nfd.idValid(n.id)) return;
      if (r >= 0) this.#nfd.succeed(n.id, 0);
      else this.#nfd.fail(n.id, -r);
    } finally {
      fs.close(fd);
    }
  }

  #emulateBind(p: Pending): number {
    const fd = p.bindFd!;
    try {
      const t = p.targets[0].path;
      const i = t.lastIndexOf("/");
      const dirfd = view.openDir(i <= 0 ? "/" : t.slice(0, i));
      if (dirfd < 0) return dirfd;
      try {
        // Through our verified directory fd: no symlink in the directory part can redirect the bind.
        const name = `/proc/self/fd/${dirfd}/${t.slice(i + 1)}`;
        const addr = unixAddr(name);
        if (!addr) return -ENAMETOOLONG;
        const r = bindFd(fd, addr.addr, addr.len);
        if (r < 0) return r;
        // We run with umask 0: give the socket the mode the program's umask would have.
        fs.fchmodatNoFollow(dirfd, cstr(t.slice(i + 1)), 0o777 & ~this.proc.umask(p.n.tid));
        try {
          const st = Deno.lstatSync(name);
          this.net.ownFiles.add(`${st.dev}:${st.ino}`); // the sandbox's own socket (lib/policy/socket_policy.ts)
        } catch { /* gone already */ }
        return 0;
      } finally {
        fs.close(dirfd);
      }
    } finally {
      fs.close(fd);
    }
  }

  /** connect, sends with a destination, listen: lib/policy/socket_policy.ts decides, lib/supervisor/connect.ts does. */
  #connect(n: Notification, kind: NetKind): void {
    const d = this.net.prepare(n, kind, this.proc.tgid(n.tid));
    if (d.kind === "continue") {
      if (this.#nfd.idValid(n.id)) this.#nfd.continue(n.id);
      this.stats.continued++;
      return;
    }
    if (d.kind === "fail") return this.#fail(n, d.errno);
    if (!this.#nfd.idValid(n.id)) return this.net.release(d.op);
    const p: Pending = {
      n,
      op: "connect",
      call: null,
      targets: [{ path: d.display, anon: false }],
      fdCopy: -1,
      net: d.op,
      suggest: d.target ? formatTarget(d.target) : undefined,
      qid: 0,
    };
    const t = d.target;
    if (t === null) return this.#allow(p, false, "not a destination"); // a connected peer, netlink, socketpair
    if (kind === "listen") {
      // Trapped under --mediate connect only: a listener on a reachable address lets other hosts in.
      if (isLoopback(t)) return this.#allow(p, false, "a loopback listener");
    } else if (
      netVerdict(t, { mediateConnect: this.#cfg.mediate.connect, ownSocket: d.own === true }) === "perform"
    ) {
      return this.#allow(p, false, d.own ? "the sandbox's own socket" : "network connects are not mediated");
    }
    const dec = this.policy.decide("connect", t, Date.now());
    if (dec.effect === "allow") return this.#allow(p, false, "rule");
    if (dec.effect === "deny") {
      this.net.release(d.op);
      return this.#deny(n, kind, d.display, "connect", "rule", formatTarget(t));
    }
    this.#askConnect(p, t, d.display, kind);
  }

  #askConnect(p: Pending, t: ConnectTarget, display: string, syscall: string): void {
    if (this.#cfg.noAsk) return this.#denyUnasked(p, syscall);
    const pid = this.proc.tgid(p.n.tid);
    const qid = this.#nextQid++;
    p.qid = qid;
    const scopes = suggestDestScopes(t);
    const q: Question = {
      id: qid,
      op: "connect",
      pid,
      name: this.proc.comm(pid),
      exe: this.proc.exe(pid),
      target: display,
      syscall,
      chain: this.proc.chain(pid),
      suggestedScope: scopes[0] ?? formatTarget(t),
      scopes: scopes.length ? scopes : [formatTarget(t)],
    };
    this.#pending.set(qid, p);
    this.#post({ t: "ask", q, key: `connect\0${formatTarget(t)}` });
  }

  // ---------------------------------------------------------------- exec

  #exec(n: Notification, at: boolean): void {
    const a = n.args;
    // execveat(dirfd, path, argv, envp, flags); execve(path, argv, envp)
    const pathArg = at ? 1 : 0;
    const read = this.#nfd.readPath(n.tid, a[pathArg]);
    if (typeof read === "string" ? read.startsWith(MAGIC_PREFIX) : read === -84 /* not UTF-8 */) {
      // A hallpass-request request (a malformed one too: the handler answers EINVAL).
      const raw = typeof read === "string"
        ? new TextEncoder().encode(read)
        : this.#nfd.readCString(n.tid, a[pathArg]);
      if (raw !== null && raw.length >= MAGIC_PREFIX.length && startsWithMagic(raw)) {
        return this.#requests.handle(n, raw);
      }
    }
    if (!this.#firstExecDone && !this.#cfg.container && n.tid === this.#cfg.commandPid) {
      // The command hallpass was asked to run (resolved by hallpass itself before the launch).
      this.#firstExecDone = true;
      if (!this.#nfd.idValid(n.id)) return;
      this.#nfd.continue(n.id);
      this.stats.continued++;
      return;
    }
    if (!this.#cfg.mediate.exec) {
      if (this.#nfd.idValid(n.id)) this.#nfd.continue(n.id);
      this.stats.continued++;
      return;
    }
    if (read === -84) {
      return this.#deny(n, at ? "execveat" : "execve", "(a program name that is not UTF-8)", "exec", "rule");
    }
    if (typeof read === "number") return this.#fail(n, -read);
    const path = read;
    const flags = at ? Number(a[4] & 0xffffffffn) : 0;
    let r: Resolved;
    if (at && path === "" && (flags & AT_EMPTY_PATH)) {
      view.noteSelf(n.tid);
      r = resolvePath(`/proc/${n.tid}/fd/${Number(BigInt.asIntN(32, a[0]))}`, "/", true, n.tid, n.tid);
    } else if (!path.startsWith("/")) {
      const b = baseDir(n.tid, at ? Number(BigInt.asIntN(32, a[0])) : -100);
      if (b.kind !== "path") return this.#fail(n, b.kind === "error" ? b.errno : EACCES);
      r = resolvePath(path, b.path, true, n.tid, n.tid);
    } else {
      r = resolvePath(path, "/", true, n.tid, n.tid);
    }
    if (r.kind === "error") return this.#fail(n, r.errno);
    // Through an fd or /proc/PID/fd the path is only the text /proc shows, and a memfd's name is chosen by the
    // program ("x/../../usr/bin/true" reads as /usr/bin/true): decide on that path only when it is the very
    // file the kernel will run, else the program is anonymous (asks; no rule can name it).
    const viaProc = at && path === "" && (flags & AT_EMPTY_PATH)
      ? `/proc/${n.tid}/fd/${Number(BigInt.asIntN(32, a[0]))}`
      : procPath(path, n.tid, () => this.proc.tgid(n.tid), at ? Number(BigInt.asIntN(32, a[0])) : -100);
    if (viaProc !== null && r.kind === "path" && !sameFile(viaProc, r.path)) {
      let what = r.path;
      try {
        what = Deno.readLinkSync(viaProc);
      } catch { /* not a link: keep the resolved text */ }
      r = { kind: "anon", what };
    }
    // A memfd or deleted file has no path a rule can name: it asks, shown as what /proc says.
    const target = r.kind === "anon" ? `anon:${r.what}` : r.path;
    if (r.kind === "path" && !target.endsWith(" (deleted)")) {
      // Nothing to ask about a program that is not there or cannot run (a shell searching $PATH tries many):
      // answer as the kernel would, without running anything.
      const err = notRunnable(target);
      if (err) return this.#fail(n, err);
    }
    if (!this.#nfd.idValid(n.id)) return;
    const v = execVerdict(this.policy, target, r.kind === "anon", (s) => shebang(s, n.tid));
    const p: Pending = {
      n,
      op: "exec",
      call: null,
      targets: [{ path: target, anon: r.kind === "anon" }],
      fdCopy: -1,
      exec: true,
      execAt: at,
      qid: 0,
    };
    const syscall = at ? "execveat" : "execve";
    if (v.at !== target) p.targets = [{ path: v.at, anon: false }]; // a script's interpreter decided
    if (v.effect === "allow") return this.#allow(p, false, "rule");
    if (v.loader) {
      // Say why: the loader would run its first argument, which no exec decision sees (lib/policy/loader.ts).
      const shown = `${target} (the dynamic loader as a program: allowed only by a rule naming it)`;
      return this.#deny(n, syscall, shown, "exec", "rule", target);
    }
    if (v.effect === "deny") return this.#deny(n, syscall, v.at, "exec", "rule");
    return this.#ask(p, v.at, syscall);
  }

  /** Answers a request made with hallpass-request. */
  answerRequest(n: Notification, errno: number): void {
    if (this.#nfd.idValid(n.id)) this.#nfd.fail(n.id, errno);
  }

  postToMain(m: ToMain): void {
    this.#post(m);
  }

  nextQid(): number {
    return this.#nextQid++;
  }

  // ---------------------------------------------------------------- log

  #logLine(rec: Record<string, unknown>): void {
    if (!this.#log) return;
    // Every line names the process and its chain of command lines (callers that answer first pass them).
    if (typeof rec.pid === "number" && rec.chain === undefined) {
      const pid = this.proc.tgid(rec.pid);
      rec = {
        ...rec,
        pid,
        exe: rec.exe ?? this.proc.exe(pid),
        name: rec.name ?? this.proc.comm(pid),
        chain: this.proc.chain(pid),
      };
    }
    if (this.#cfg.container) rec = { container: this.#cfg.container.identity, ...rec };
    if (this.#answering !== undefined) rec = { question: this.#answering, ...rec };
    const line = JSON.stringify({ time: new Date().toISOString(), event: "decision", ...rec }) + "\n";
    try {
      this.#log.writeSync(this.#enc.encode(line));
    } catch {
      // A full disk must not stop mediation.
    }
  }

  logDecision(rec: Record<string, unknown>): void {
    this.#logLine(rec);
  }

  close(): void {
    for (const p of this.#waiting) if (this.#nfd.idValid(p.n.id)) this.#nfd.fail(p.n.id, EACCES);
    this.#waiting.clear();
    for (const p of this.#pending.values()) {
      if (this.#nfd.idValid(p.n.id)) this.#nfd.fail(p.n.id, EACCES);
      fs.close(p.fdCopy);
    }
    this.#pending.clear();
    this.#log?.close();
  }
}

/**
 * The path an exec names, as a path under /proc this process can open, when it goes through /proc (where
 * /proc/self would mean us); null when it does not.
 */
function procPath(path: string, tid: number, tgid: () => number, dirfd: number): string | null {
  if (!path.startsWith("/")) {
    const b = baseDir(tid, dirfd);
    if (b.kind !== "path") return null;
    if (b.path !== "/proc" && !b.path.startsWith("/proc/")) return null;
    path = `${b.path}/${path}`;
  }
  if (!path.startsWith("/proc") && !path.startsWith("//")) return null; // the common case: not through /proc
  const p = path.replace(/\/{2,}/g, "/");
  if (p !== "/proc" && !p.startsWith("/proc/")) return null;
  const g = tgid();
  view.noteSelf(g);
  return p.replace(/^\/proc\/thread-self(?=\/|$)/, `/proc/${g}/task/${tid}`).replace(
    /^\/proc\/self(?=\/|$)/,
    `/proc/${g}`,
  );
}

/** The canonical interpreter of a `#!` script (resolved as the kernel does, from the thread's cwd), else null. */
function shebang(path: string, tid: number): string | null {
  const head = view.readHead(path);
  if (head === null) return null;
  if (head[0] !== 0x23 || head[1] !== 0x21) return null;
  const nl = head.indexOf(10);
  const line = new TextDecoder().decode(head.subarray(2, nl < 0 ? head.length : nl));
  const interp = line.trim().split(/[ \t]/)[0];
  if (!interp) return null;
  let base = "/";
  if (!interp.startsWith("/")) {
    const b = baseDir(tid, -100);
    if (b.kind !== "path") return null;
    base = b.path;
  }
  const r = resolvePath(interp, base, true, tid, tid);
  return r.kind === "path" ? r.path : null;
}

/** Whether `a` and `b` (both followed) are the same file. */
function sameFile(a: string, b: string): boolean {
  const x = view.fileId(a), y = view.fileId(b);
  return x !== null && y !== null && x[0] === y[0] && x[1] === y[1];
}

/** ENOENT, ENOTDIR or EACCES when execve would fail on `path` for those reasons, else 0. */
function notRunnable(path: string): number {
  const r = view.accessExec(path); // access(X_OK): one system call, real ids (the sandbox's own)
  if (r === -2 || r === -20 || r === -13) return -r;
  if (r < 0) return 0; // anything else: let the kernel say it
  return view.isDirectory(path) ? EACCES : 0;
}

/**
 * The end of a write a question is about: for two paths (rename, link) the destination when it asks (the file
 * that changes: an atomic save `x.tmp.1 → x` is about `x`), else the first end that asks.
 */
function askedEnd(targets: Target[], verdicts: Verdict[]): string {
  const last = targets.length - 1;
  return verdicts[last] === "ask" ? targets[last].path : targets[verdicts.indexOf("ask")].path;
}

function startsWithMagic(raw: Uint8Array): boolean {
  for (let i = 0; i < MAGIC_PREFIX.length; i++) if (raw[i] !== MAGIC_PREFIX.charCodeAt(i)) return false;
  return true;
}

function programInView(p: string): boolean {
  return p.startsWith("/") && view.accessExec(p) === 0 && !view.isDirectory(p);
}

/** Whether `name` in `dirfd` is a FIFO (looked at through an O_PATH fd: opening it could block). */
function isFifo(dirfd: number, name: Uint8Array<ArrayBuffer>): boolean {
  const fd = openat2(dirfd, name, O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS);
  if (fd < 0) return false;
  try {
    return fs.fileType(fd) === S_IFIFO;
  } finally {
    fs.close(fd);
  }
}

/** Opens the canonical parent of `path` without following symlinks; returns its fd and the last name. */
function openParent(path: string): { dirfd: number; name: string } {
  const i = path.lastIndexOf("/");
  const dir = i <= 0 ? "/" : path.slice(0, i);
  const name = path.slice(i + 1);
  if (name === "" || name === "." || name === "..") return { dirfd: -EACCES, name };
  return { dirfd: view.openDir(dir), name };
}
