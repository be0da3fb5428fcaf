/**
 * Every write form of docs/threat-model.md, made with raw system calls by tests/helpers/try_write.c, four ways on identical
 * fresh directories:
 *   bare     without hallpass (the reference);
 *   inside   the directory is the project: must give the same output and the same host tree as bare;
 *   once     the directory is outside the project, an ask program answers `once`: the same as bare too
 *            (the fd's flags via /proc/self/fdinfo, the mode under the umask, the content, errno on failure);
 *   no-ask   outside with --no-ask: every write fails with EACCES and the host tree is unchanged.
 * All cases run in one helper process per way (one case = one subdirectory), then each case is checked in
 * its own step. The three hallpass ways run twice, with the C fast path and with the mediator alone
 * (HALLPASS_FAST_PATH=0), and each run asserts which engine answered it (tests/e2e/engine.ts: the fast
 * path's counters; inside the project it must have answered writes itself) and replays the fast path's
 * answers through the mediator's decision.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import {
  askProgram,
  bare,
  compileHelper,
  hallpass,
  readQuestions,
  type Result,
  scratch,
  snapshot,
} from "./harness.ts";
import { probeAsync, step } from "../helpers/skip.ts";
import { engine } from "./engine.ts";

type Setup = Record<string, string>; // rel path → "file:CONTENT" | "dir" | "link:TARGET" | "fifo"

interface Case {
  name: string;
  setup: Setup;
  /** Operations; `$C` is the case directory (absolute), `@` the case directory relative to the cwd. */
  ops: string[][];
  xattr?: boolean;
  /** The kernel refuses every op before any permission check: nothing is asked (lib/supervisor/path_forms.ts). */
  quiet?: boolean;
}

/**
 * A last component written with a trailing slash, `.` or `..`: what the kernel refuses (or does) with such a
 * form, the supervisor must too, where it performs the call (lib/supervisor/path_forms.ts). Before, inside the
 * project and outside after `once`, both engines removed `d/sub` for `rmdir d/sub/.`, a file for `unlink f/`,
 * and made `new` for `open new/ O_CREAT`.
 */
const TAIL_CASES: Case[] = [
  {
    name: "rmdir d/sub/. → EINVAL, d/sub/.. → ENOTEMPTY",
    setup: { d: "dir", "d/sub": "dir" },
    quiet: true,
    ops: [
      ["rmdir", "@/d/sub/."],
      ["rmdir", "@/d/sub/.."],
      ["unlinkat", ".", "@/d/sub/.", "removedir"],
    ],
  },
  {
    name: "rmdir d/ removes it; rmdir ln/ (a symlink to a dir) → ENOTDIR",
    setup: { d: "dir", e: "dir", ln: "link:e" },
    ops: [
      ["rmdir", "@/d/"],
      ["rmdir", "@/ln/"],
    ],
  },
  {
    name: "unlink f/ → ENOTDIR, d/ → EISDIR, a symlink/ → ENOTDIR, d/. → EISDIR",
    quiet: true,
    setup: {
      f: "file:F",
      d: "dir",
      ln: "link:d",
      lf: "link:f",
    },
    ops: [["unlink", "@/f/"], ["unlink", "@/d/"], ["unlink", "@/ln/"], ["unlink", "@/lf/"], [
      "unlink",
      "@/d/.",
    ]],
  },
  {
    name: "open new/ and f/ with O_CREAT → EISDIR; f/ → ENOTDIR; d/. → EISDIR",
    quiet: true,
    setup: {
      f: "file:F",
      d: "dir",
      ln: "link:d",
    },
    ops: [
      ["open", "@/new/", "wronly|creat", "0644"],
      ["open", "@/f/", "wronly|creat", "0644"],
      ["open", "@/f/", "wronly", "0"],
      ["open", "@/d/.", "wronly|creat", "0644"],
      ["open", "@/ln/", "wronly|nofollow", "0"],
    ],
  },
  {
    name: "mkdir nx/. → ENOENT, x/. → EEXIST; mkdir y/ makes y",
    setup: { x: "dir" },
    ops: [
      ["mkdir", "@/nx/.", "0777"],
      ["mkdir", "@/x/.", "0777"],
      ["mkdir", "@/y/", "0777"],
    ],
  },
  {
    name: "rename a file a/ → ENOTDIR (either end); a dir a2/ → b2/ moves it; d/s/. → EBUSY",
    setup: {
      a: "file:A",
      a2: "dir",
      d: "dir",
      "d/s": "dir",
      ln: "link:d",
    },
    ops: [
      ["rename", "@/a/", "@/b"],
      ["rename", "@/a", "@/b/"],
      ["rename", "@/ln/", "@/b3"],
      ["rename", "@/a2/", "@/b2/"],
      ["rename", "@/d/s/.", "@/t"],
      ["rename", "@/a", "@/nt/."],
    ],
  },
  {
    name: "symlink, link, mknod to n/ → ENOENT, to f/ → EEXIST; link f/ → ENOTDIR, d/. → EPERM",
    quiet: true,
    setup: {
      f: "file:F",
      d: "dir",
    },
    ops: [
      ["symlink", "t", "@/n/"],
      ["symlink", "t", "@/f/"],
      ["symlink", "t", "@/d/."],
      ["link", "@/f/", "@/g"],
      ["link", "@/f", "@/g/"],
      ["link", "@/d/.", "@/g3"],
      ["mknod-fifo", "@/p/", "0644"],
    ],
  },
  {
    name: "chmod, chown, truncate, utimes of f/ → ENOTDIR; chmod d/. and ln/ act on the directory",
    setup: {
      f: "file:F",
      lf: "link:f",
      d: "dir",
      e: "dir",
      ln: "link:e",
    },
    ops: [
      ["chmod", "@/f/", "0600"],
      ["chmod", "@/lf/", "0600"],
      ["chown", "@/f/"],
      ["truncate", "@/f/", "0"],
      ["utimes", "@/f/", "100000000"],
      ["chmod", "@/d/.", "0700"],
      ["lchown", "@/ln/"],
      ["chmod", "@/ln/", "0750"],
    ],
  },
];

const T = 100_000_000; // an explicit time, recorded by snapshot()

const CASES: Case[] = [
  {
    name: "open O_CREAT under umask, content",
    setup: {},
    ops: [["open", "@/new", "wronly|creat", "0666", "hello"]],
  },
  {
    name: "open absolute path O_CREAT|O_EXCL|O_CLOEXEC",
    setup: {},
    ops: [["open", "$C/new", "wronly|creat|excl|cloexec", "0644", "abc"]],
  },
  {
    name: "open O_CREAT|O_EXCL on existing → EEXIST",
    setup: { f: "file:old" },
    ops: [["open", "@/f", "wronly|creat|excl", "0644"]],
  },
  {
    name: "open O_APPEND|O_CLOEXEC",
    setup: { f: "file:xyz" },
    ops: [["open", "@/f", "wronly|append|cloexec", "0", "more"]],
  },
  {
    name: "open O_RDWR|O_TRUNC",
    setup: { f: "file:long content" },
    ops: [["open", "@/f", "rdwr|trunc", "0", "ab"]],
  },
  {
    name: "open O_WRONLY without create",
    setup: { f: "file:12345" },
    ops: [["open", "@/f", "wronly", "0", "ab"]],
  },
  {
    name: "open in a missing directory → ENOENT",
    setup: {},
    ops: [["open", "@/nodir/x", "wronly|creat", "0644"]],
  },
  {
    name: "open below a file → ENOTDIR",
    setup: { f: "file:x" },
    ops: [["open", "@/f/x", "wronly|creat", "0644"]],
  },
  {
    name: "open O_WRONLY of a directory → EISDIR",
    setup: { d: "dir" },
    ops: [["open", "@/d", "wronly", "0"]],
  },
  {
    name: "open through a symlink in the same directory",
    setup: { f: "file:1", l: "link:f" },
    ops: [["open", "@/l", "wronly|append", "0", "2"]],
  },
  {
    name: "open O_NOFOLLOW on a symlink → ELOOP",
    setup: { f: "file:1", l: "link:f" },
    ops: [["open", "@/l", "wronly|nofollow", "0"]],
  },
  {
    name: "open O_CREAT through a dangling symlink creates the target",
    setup: { l: "link:target" },
    ops: [["open", "@/l", "wronly|creat", "0600", "t"]],
  },
  {
    name: "open with .. and //",
    setup: { d: "dir" },
    ops: [["open", "@/d/..//x", "wronly|creat", "0644", "dots"]],
  },
  { name: "openat dirfd", setup: {}, ops: [["openat", "$C", "x", "wronly|creat|excl", "0600", "data"]] },
  {
    name: "openat AT_FDCWD relative",
    setup: {},
    ops: [["openat", ".", "@/y", "rdwr|creat|append", "0666", "yy"]],
  },
  { name: "creat", setup: {}, ops: [["creat", "@/z", "0777", "zz"]] },
  {
    name: "creat over an existing file truncates",
    setup: { z: "file:old content" },
    ops: [["creat", "@/z", "0600", "n"]],
  },
  { name: "truncate", setup: { f: "file:abcdef" }, ops: [["truncate", "@/f", "2"]] },
  { name: "truncate missing → ENOENT", setup: {}, ops: [["truncate", "@/f", "2"]] },
  {
    name: "ftruncate (open for writing, then ftruncate)",
    setup: { f: "file:abcdef" },
    ops: [["ftruncate", "$C/f", "3"]],
  },
  { name: "mkdir under umask", setup: {}, ops: [["mkdir", "@/d", "0777"], ["mkdir", "@/d", "0777"]] },
  { name: "mkdir in a missing dir → ENOENT", setup: {}, ops: [["mkdir", "@/a/b", "0777"]] },
  {
    name: "mkdirat dirfd",
    setup: {},
    ops: [["mkdirat", "$C", "e", "0700"], ["mkdirat", ".", "@/g", "0755"]],
  },
  { name: "mknod fifo", setup: {}, ops: [["mknod-fifo", "@/fifo", "0666"]] },
  { name: "mknodat fifo", setup: {}, ops: [["mknodat-fifo", "$C", "fifo", "0640"]] },
  { name: "unlink", setup: { f: "file:x" }, ops: [["unlink", "@/f"], ["unlink", "@/f"]] },
  {
    name: "unlink a symlink removes the link only",
    setup: { f: "file:x", l: "link:f" },
    ops: [["unlink", "@/l"]],
  },
  { name: "unlink a directory → EISDIR", setup: { d: "dir" }, ops: [["unlink", "@/d"]] },
  {
    name: "unlinkat dirfd, file and AT_REMOVEDIR",
    setup: { f: "file:x", d: "dir" },
    ops: [["unlinkat", "$C", "f", "0"], ["unlinkat", "$C", "d", "removedir"]],
  },
  {
    name: "rmdir, ENOTEMPTY",
    setup: { d: "dir", e: "dir", "e/x": "file:x" },
    ops: [["rmdir", "@/d"], ["rmdir", "@/e"]],
  },
  { name: "rename within a dir", setup: { a: "file:A" }, ops: [["rename", "@/a", "@/b"]] },
  {
    name: "rename over an existing file",
    setup: { a: "file:A", b: "file:B" },
    ops: [["rename", "@/a", "@/b"]],
  },
  { name: "rename missing source → ENOENT", setup: {}, ops: [["rename", "@/a", "@/b"]] },
  { name: "renameat dirfds", setup: { a: "file:A", d: "dir" }, ops: [["renameat", "$C", "a", "$C/d", "a2"]] },
  {
    name: "renameat2 RENAME_NOREPLACE → EEXIST",
    setup: { a: "file:A", b: "file:B" },
    ops: [["renameat2", "$C", "a", "$C", "b", "noreplace"]],
  },
  {
    name: "renameat2 RENAME_EXCHANGE",
    setup: { a: "file:A", b: "file:B" },
    ops: [["renameat2", "$C", "a", "$C", "b", "exchange"]],
  },
  { name: "link", setup: { a: "file:A" }, ops: [["link", "@/a", "@/h"], ["link", "@/a", "@/h"]] },
  {
    name: "linkat dirfds (and AT_SYMLINK_FOLLOW)",
    setup: { a: "file:A", l: "link:a" },
    ops: [["linkat", "$C", "a", "$C", "h", "0"], ["linkat", "$C", "l", "$C", "h2", "symlink_follow"], [
      "linkat",
      "$C",
      "l",
      "$C",
      "h3",
      "0",
    ]],
  },
  { name: "symlink", setup: {}, ops: [["symlink", "../somewhere/else", "@/sl"], ["symlink", "x", "@/sl"]] },
  { name: "symlinkat", setup: {}, ops: [["symlinkat", "/etc/passwd", "$C", "sl"]] },
  {
    name: "chmod, fchmod, fchmodat",
    setup: { a: "file:A", b: "file:B", c: "file:C" },
    ops: [["chmod", "@/a", "0600"], ["fchmod", "$C/b", "0751"], ["fchmodat", "$C", "c", "1711"]],
  },
  {
    name: "chmod through a symlink changes the target",
    setup: { a: "file:A", l: "link:a" },
    ops: [["chmod", "@/l", "0604"]],
  },
  { name: "chmod missing → ENOENT", setup: {}, ops: [["chmod", "@/nope", "0600"]] },
  {
    name: "chown, lchown, fchown, fchownat (to one's own ids)",
    setup: { a: "file:A", l: "link:a" },
    ops: [["chown", "@/a"], ["lchown", "@/l"], ["fchown", "$C/a"], [
      "fchownat",
      "$C",
      "l",
      "symlink_nofollow",
    ]],
  },
  {
    name: "utime, utimes, utimensat, futimens",
    setup: { a: "file:A", b: "file:B", c: "file:C", d: "file:D" },
    ops: [["utime", "@/a", String(T)], ["utimes", "@/b", String(T + 1)], [
      "utimensat",
      "$C",
      "c",
      String(T + 2),
      "0",
    ], [
      "futimens",
      "$C/d",
      String(T + 3),
    ]],
  },
  {
    name: "utimensat AT_SYMLINK_NOFOLLOW on a symlink",
    setup: { a: "file:A", l: "link:a" },
    ops: [["utimensat", "$C", "l", String(T), "symlink_nofollow"]],
  },
  {
    name: "setxattr, lsetxattr, fsetxattr, then read back",
    setup: { a: "file:A", b: "file:B", c: "file:C" },
    xattr: true,
    ops: [
      ["setxattr", "@/a", "user.x", "one"],
      ["lsetxattr", "@/b", "user.y", "two"],
      ["fsetxattr", "$C/c", "user.z", "three"],
      ["getxattr", "@/a", "user.x"],
      ["getxattr", "@/b", "user.y"],
      ["getxattr", "@/c", "user.z"],
    ],
  },
  {
    name: "removexattr, lremovexattr, fremovexattr",
    setup: { a: "file:A" },
    xattr: true,
    ops: [
      ["setxattr", "@/a", "user.p", "1"],
      ["setxattr", "@/a", "user.q", "2"],
      ["setxattr", "@/a", "user.r", "3"],
      ["removexattr", "@/a", "user.p"],
      ["lremovexattr", "@/a", "user.q"],
      ["fremovexattr", "$C/a", "user.r"],
      ["removexattr", "@/a", "user.p"],
      ["getxattr", "@/a", "user.p"],
    ],
  },
  ...TAIL_CASES,
];

const READS = new Set(["getxattr"]);

async function makeTree(base: string, cases: Case[]) {
  for (const [i, c] of cases.entries()) {
    const dir = `${base}/c${i}`;
    await Deno.mkdir(dir);
    for (const [rel, spec] of Object.entries(c.setup)) {
      const p = `${dir}/${rel}`;
      if (spec === "dir") await Deno.mkdir(p);
      else if (spec.startsWith("file:")) await Deno.writeTextFile(p, spec.slice(5), { mode: 0o644 });
      else if (spec.startsWith("link:")) await Deno.symlink(spec.slice(5), p);
      else throw new Error(spec);
      if (spec.startsWith("file:")) await Deno.chmod(p, 0o644);
    }
  }
}

/** The helper's argv for all cases, run with cwd = the parent of `base` (so `@` is relative). */
function script(base: string, cases: Case[]): string[] {
  const parent = base.slice(0, base.lastIndexOf("/"));
  const relBase = base.slice(parent.length + 1);
  const argv = ["umask", "027", ";"];
  for (const [i, c] of cases.entries()) {
    for (const op of c.ops) {
      argv.push(
        ...op.map((a) => a.replace("$C", `${base}/c${i}`).replace(/^@/, `${relBase}/c${i}`)),
        ";",
      );
    }
  }
  return argv;
}

/** Splits the helper's output back into cases (one line per operation). */
function perCase(out: string, cases: Case[]): string[][] {
  const lines = out.split("\n").filter(Boolean);
  const res: string[][] = [];
  let k = 0;
  for (const c of cases) {
    res.push(lines.slice(k, k + c.ops.length));
    k += c.ops.length;
  }
  return res;
}

function caseTree(snap: Record<string, unknown>, i: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(snap)) {
    if (k === `c${i}` || k.startsWith(`c${i}/`)) out[k] = v;
  }
  return out;
}

interface Way {
  out: string[][];
  tree: Record<string, unknown>;
  raw: Result;
}

async function runWay(
  way: "bare" | "inside" | "once" | "noask",
  helper: string,
  cases: Case[],
  fast = true,
): Promise<Way & { before: Record<string, unknown>; questions: Record<string, unknown>[] }> {
  const s = await scratch();
  try {
    // bare and the outside ways work in `outside/w`; inside works in `project/w`.
    const base = way === "inside" ? `${s.project}/w` : `${s.outside}/w`;
    await Deno.mkdir(base);
    await makeTree(base, cases);
    const before = await snapshot(base);
    const cwd = base.slice(0, base.lastIndexOf("/"));
    const argv = script(base, cases);
    const qlog = `${s.outside}/../questions.jsonl`;
    let raw: Result;
    if (way === "bare") raw = await bare([helper, ...argv], { cwd });
    else {
      const opts = way === "noask"
        ? ["--no-ask"]
        : way === "once"
        ? ["--ask-program", await askProgram(`${s.outside}/..`, "once", qlog)]
        : ["--no-ask"];
      const e = await engine(fast, `write forms ${way}`);
      raw = await hallpass([...opts, "--project", s.project, "--", helper, ...argv], { cwd, env: e.env });
      // Inside the project the fast path answers writes itself (continued, or performed: chmod, utimensat).
      await e.check(way === "inside" ? ["continue"] : []);
    }
    const out = perCase(raw.stdout.replaceAll(base, "$B"), cases);
    return { out, tree: await snapshot(base), raw, before, questions: await readQuestions(qlog) };
  } finally {
    await s.cleanup();
  }
}

/** What cannot change anything; ENOTDIR, EISDIR, EINVAL, ENOTEMPTY, EBUSY, EPERM: path forms (TAIL_CASES). */
const NOOP = /^\S+ (EEXIST|ENOENT|ENOTDIR|EISDIR|EINVAL|ENOTEMPTY|EBUSY|EPERM)$/;

// Control: do user xattrs work on the file system of the temp dir (and for this user), without hallpass?
const xattr = await probeAsync("xattr", async () => {
  const helper = await compileHelper("try_write");
  const probe = await scratch();
  await Deno.writeTextFile(`${probe.outside}/f`, "");
  const pr = await bare([helper, "setxattr", `${probe.outside}/f`, "user.probe", "1"]);
  await probe.cleanup();
  return pr.stdout.startsWith("setxattr OK")
    ? undefined
    : `user xattrs unsupported here (${pr.stdout.trim()})`;
});

for (const fast of [true, false]) {
  const what = fast ? "fast path" : "mediator";
  Deno.test(`write forms (${what}): inside the project, outside with once, outside with --no-ask`, async (t) => {
    const helper = await compileHelper("try_write");
    const cases = CASES.filter((c) => !c.xattr || !xattr);
    for (const c of CASES) if (c.xattr && xattr) await step(t, { name: c.name, ignore: xattr }, () => {});

    const [b, inside, once, noask] = [
      await runWay("bare", helper, cases),
      await runWay("inside", helper, cases, fast),
      await runWay("once", helper, cases, fast),
      await runWay("noask", helper, cases, fast),
    ];
    assertEquals(b.raw.code, 0, b.raw.stderr);
    assertEquals(inside.raw.code, 0, inside.raw.stderr);
    assertEquals(once.raw.code, 0, once.raw.stderr);
    assertEquals(noask.raw.code, 0, noask.raw.stderr);
    // The ask program was asked about writes, and never about a path inside the project.
    const writes = once.questions.filter((q) => q.op === "write");
    if (writes.length < cases.filter((c) => !c.quiet).length) {
      throw new Error(`only ${writes.length} write questions: ${once.raw.stderr}`);
    }

    for (const [i, c] of cases.entries()) {
      await t.step(c.name, () => {
        const ref = b.out[i];
        const refTree = caseTree(b.tree, i);
        assertEquals(inside.out[i], ref, `inside: output differs\n${inside.raw.stderr}`);
        assertEquals(caseTree(inside.tree, i), refTree, "inside: host tree differs from a bare run");
        assertEquals(once.out[i], ref, `once: output differs\n${once.raw.stderr}`);
        assertEquals(caseTree(once.tree, i), refTree, "once: host tree differs from a bare run");
        // A call that cannot change anything (EEXIST, ENOENT in a bare run) is answered as the kernel would,
        // without a question; every other write fails with EACCES.
        const denied = c.ops.map((op, k) =>
          READS.has(op[0])
            ? noask.out[i][k]
            : NOOP.test(ref[k] ?? "") && noask.out[i][k] === ref[k]
            ? ref[k]
            : `${op[0]} EACCES`
        );
        assertEquals(
          noask.out[i],
          denied,
          `--no-ask: every write must fail with EACCES\n${noask.raw.stderr}`,
        );
        assertEquals(caseTree(noask.tree, i), caseTree(noask.before, i), "--no-ask: the host changed");
      });
    }
  });
}
