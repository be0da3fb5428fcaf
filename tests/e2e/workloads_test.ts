/**
 * Real workloads an agent runs (git with a hook, npm install + npx from a local cache, python venv + pip of a
 * local wheel, make + gcc, a test runner), under hallpass, compared with a bare run: same exit status, same
 * output, same files. No network: everything comes from the test's temp dir.
 *
 * Each workload runs three times:
 * * bare, in its own temp dir;
 * * under hallpass with no options (`plain`), an ask program answering `once` and counting the questions: what a
 *   user feels with plain `hallpass -- CMD`;
 * * under hallpass with the narrow options a user would give it (`tuned`): TMPDIR and caches inside the project
 *   or the tool's own cache dir, exec of the one project program that runs. The ask program answers `deny`
 *   here, so any question left fails the run; the count must be 0.
 * The counts are printed (docs/agents.md has the table). $HOME is outside the project, as for a real user.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { hallpass, snapshot } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import { GIT_ENV } from "../helpers/git.ts";

const dec = new TextDecoder();

interface Workload {
  name: string;
  needs: string[];
  /** Prepares $B (the base dir: project/, home/, and whatever else it needs), bare. */
  setup?: (base: string) => Promise<void>;
  /** sh script run in $B/project, with $B set. */
  script: string;
  /** Options that bring the questions down to 0 without widening the sandbox; env additions likewise. */
  tuned: { args: (base: string) => string[]; env: (base: string) => Record<string, string> };
  /** Files in the project not compared (run-specific: timestamps, inode numbers). */
  ignore?: RegExp;
  /**
   * Files hallpass sets aside at exit under hallpass (renamed NAME.hallpass-quarantined): what the sandbox left
   * behind to run outside (lib/sandbox/nested_repos.ts). Compared with bare after undoing exactly that rename.
   */
  quarantined?: string[];
}

const ENV = {
  ...GIT_ENV,
  npm_config_update_notifier: "false",
  npm_config_fund: "false",
  npm_config_audit: "false",
  PIP_DISABLE_PIP_VERSION_CHECK: "1",
};

async function sh(cwd: string, script: string, env: Record<string, string> = {}): Promise<void> {
  const r = await new Deno.Command("/bin/sh", {
    args: ["-c", script],
    cwd,
    env: { ...ENV, ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (r.code !== 0) {
    throw new Error(`setup failed: ${script}\n${dec.decode(r.stdout)}${dec.decode(r.stderr)}`);
  }
}

/** A wheel made by hand (a zip with the package and its dist-info): no setuptools, no index needed. */
async function makeWheel(dir: string): Promise<void> {
  await sh(
    dir,
    `python3 - <<'EOF'
import base64, hashlib, zipfile
files = {
    "greet/__init__.py": "def hello():\\n    return 'hello from a local wheel'\\n",
    "greet-1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: greet\\nVersion: 1.0\\n",
    "greet-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: hand\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
record = []
for name, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record.append(f"{name},sha256={digest},{len(text.encode())}")
record.append("greet-1.0.dist-info/RECORD,,")
with zipfile.ZipFile("greet-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
    z.writestr("greet-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
EOF`,
  );
}

const WORKLOADS: Workload[] = [
  {
    name: "git: clone a local repo, branch, commit with a pre-commit hook",
    needs: ["/usr/bin/git"],
    setup: async (b) => {
      await sh(
        b,
        `set -e; git init -q -b main src; cd src; echo one > one.txt; git add .; git commit -q -m first
         git clone -q --bare . ../origin.git`,
        { HOME: `${b}/home` },
      );
    },
    script: `set -e; git clone -q --no-hardlinks "$B/origin.git" work; cd work; git checkout -q -b feature
      printf '#!/bin/sh\\necho "hook ran" > hook.out\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
      echo two > two.txt; git add two.txt; git commit -q -m second; cat hook.out
      git log --format='%s' main..feature; git branch --list; git status --porcelain`,
    tuned: {
      // The hook is a program the sandbox wrote: running it is allowed by name, nothing else in the project.
      args: (b) => ["--allow-exec", `${b}/project/work/.git/hooks/pre-commit`],
      env: () => ({}),
    },
    // Objects are content-addressed (the log compared above names them); whether git hard-links or copies
    // them from the origin (outside the project) changes only their link count and mode.
    ignore: /(^|\/)\.git\/(index|FETCH_HEAD|ORIG_HEAD)$|\.git\/logs\/|\.git\/objects\//,
    // The hook the sandbox wrote in the cloned repository would run outside on the person's next commit there.
    quarantined: ["work/.git/hooks/pre-commit"],
  },
  {
    name: "npm install and npx from a local cache (--offline)",
    needs: ["/usr/bin/npm", "/usr/bin/node"],
    setup: async (b) => {
      await Deno.mkdir(`${b}/pkg`);
      await Deno.writeTextFile(
        `${b}/pkg/package.json`,
        JSON.stringify({ name: "hello-cli", version: "1.0.0", bin: { "hello-cli": "cli.js" } }),
      );
      await Deno.writeTextFile(`${b}/pkg/cli.js`, "#!/usr/bin/env node\nconsole.log('hello from npx');\n");
      await Deno.chmod(`${b}/pkg/cli.js`, 0o755);
      await sh(
        `${b}/pkg`,
        `set -e; npm pack --silent --pack-destination "$0" >/dev/null; npm cache add "$0/hello-cli-1.0.0.tgz" --cache "$0/cache" >/dev/null 2>&1`
          .replaceAll("$0", b),
        { HOME: `${b}/packhome` },
      );
      await Deno.remove(`${b}/packhome`, { recursive: true }).catch(() => {});
      await Deno.mkdir(`${b}/project/app`);
      await Deno.writeTextFile(
        `${b}/project/app/package.json`,
        JSON.stringify({ name: "app", version: "1.0.0", private: true }),
      );
    },
    script: `set -e; cd app
      npm install --offline --no-audit --no-fund --cache "$B/cache" --loglevel=error "$B/hello-cli-1.0.0.tgz" >/dev/null
      npx --offline --cache "$B/cache" hello-cli; node -e 'console.log(require("./package.json").dependencies)'`,
    tuned: {
      // npm's cache (and its logs, which go next to it) is the tool's own place, like `allow write ~/.npm/**`.
      args: (
        b,
      ) => [
        "--allow-path",
        `${b}/cache/**`,
        "--allow-exec",
        `${b}/project/app/node_modules/hello-cli/cli.js`,
      ],
      env: (b) => ({ TMPDIR: `${b}/project/.tmp` }),
    },
    ignore: /node_modules\/\.package-lock\.json$|^\.tmp(\/|$)/,
  },
  {
    name: "python3 -m venv + pip install of a local wheel (--no-index)",
    needs: ["/usr/bin/python3"],
    setup: async (b) => {
      await Deno.mkdir(`${b}/wheels`);
      await makeWheel(`${b}/wheels`);
    },
    script: `set -e; python3 -m venv venv
      venv/bin/python -m pip install -q --no-index --find-links "$B/wheels" greet
      venv/bin/python -c 'import greet; print(greet.hello())'; venv/bin/python -m pip list --format=freeze | grep greet`,
    tuned: {
      // No pip cache outside the project (it is only a download cache), temp files in the project.
      args: () => [],
      env: (b) => ({ PIP_NO_CACHE_DIR: "1", TMPDIR: `${b}/project/.tmp` }),
    },
    // ensurepip compiles pip in the venv: its RECORD lists the .pyc files, which differ between any two runs.
    ignore: /__pycache__|\.pyc$|^\.tmp(\/|$)|\/pip-[^/]*\.dist-info\/RECORD$/,
  },
  {
    name: "make + gcc build, then run what it built",
    needs: ["/usr/bin/gcc", "/usr/bin/make"],
    setup: async (b) => {
      await Deno.writeTextFile(
        `${b}/project/hello.c`,
        '#include <stdio.h>\nint main(void){puts("hello from make");return 0;}\n',
      );
      await Deno.writeTextFile(
        `${b}/project/Makefile`,
        "run: hello\n\t./hello\nhello: hello.o\n\tgcc -o $@ $^\nhello.o: hello.c\n\tgcc -c -o $@ $<\n",
      );
    },
    script: `set -e; make -s; make -s`,
    tuned: {
      args: (b) => ["--allow-exec", `${b}/project/hello`],
      env: (b) => ({ TMPDIR: `${b}/project/.tmp` }),
    },
    ignore: /^\.tmp(\/|$)/,
  },
  {
    name: "test runner: python3 -m unittest",
    needs: ["/usr/bin/python3"],
    setup: async (b) => {
      await Deno.mkdir(`${b}/project/tests`);
      await Deno.writeTextFile(`${b}/project/tests/__init__.py`, "");
      await Deno.writeTextFile(
        `${b}/project/tests/test_x.py`,
        "import tempfile, unittest\nclass T(unittest.TestCase):\n" +
          "    def test_add(self):\n        self.assertEqual(1 + 1, 2)\n" +
          "    def test_tmp(self):\n        with tempfile.TemporaryDirectory() as d:\n" +
          "            with open(d + '/f', 'w') as f:\n                f.write('x')\n",
      );
    },
    script: `python3 -m unittest discover -q 2>&1 | sed -E 's/in [0-9.]+s/in Ns/'`,
    tuned: { args: () => [], env: (b) => ({ TMPDIR: `${b}/project/.tmp` }) },
    ignore: /__pycache__|^\.tmp(\/|$)/,
  },
];

interface Outcome {
  code: number;
  out: string;
  /** hallpass's own stderr lines (what the exit check moved aside, and why). */
  err: string;
  files: string;
  questions: { op: string; target: string }[];
}

async function prepare(w: Workload): Promise<string> {
  const base = await Deno.makeTempDir({ prefix: "hallpass-work-" });
  await Deno.chmod(base, 0o755);
  for (const d of ["project", "home", "xdg"]) await Deno.mkdir(`${base}/${d}`);
  await Deno.mkdir(`${base}/project/.tmp`);
  await w.setup?.(base);
  return base;
}

function norm(s: string, base: string): string {
  return s.replaceAll(base, "$B");
}

async function files(base: string, ignore?: RegExp): Promise<string> {
  const snap = await snapshot(`${base}/project`);
  const kept = Object.entries(snap).filter(([k]) => !ignore?.test(k)).sort(([a], [b]) => a < b ? -1 : 1);
  return norm(JSON.stringify(Object.fromEntries(kept)), base);
}

async function run(w: Workload, mode: "bare" | "plain" | "tuned"): Promise<Outcome> {
  const base = await prepare(w);
  try {
    const env: Record<string, string> = {
      ...ENV,
      HOME: `${base}/home`,
      XDG_CONFIG_HOME: `${base}/xdg`,
      B: base,
      ...(mode === "tuned" ? w.tuned.env(base) : {}),
    };
    let code: number, stdout: string, stderr = "";
    let questions: Outcome["questions"] = [];
    if (mode === "bare") {
      const r = await new Deno.Command("/bin/sh", {
        args: ["-c", w.script],
        cwd: `${base}/project`,
        env,
        clearEnv: true,
        stdout: "piped",
        stderr: "piped",
      }).output();
      code = r.code;
      stdout = dec.decode(r.stdout);
    } else {
      const qlog = `${base}/questions.jsonl`;
      const ask = `${base}/ask.sh`;
      await Deno.writeTextFile(
        ask,
        `#!/bin/sh\ncat >> '${qlog}'\necho >> '${qlog}'\necho ${mode === "plain" ? "once" : "deny"}\n`,
      );
      await Deno.chmod(ask, 0o755);
      const r = await hallpass(
        [
          "--ask-program",
          ask,
          ...(mode === "tuned" ? w.tuned.args(base) : []),
          "--",
          "/bin/sh",
          "-c",
          w.script,
        ],
        { cwd: `${base}/project`, env, timeoutMs: 120_000 },
      );
      code = r.code;
      stdout = r.stdout;
      stderr = r.stderr;
      questions = (await Deno.readTextFile(qlog).catch(() => "")).split("\n").filter((l) => l.trim())
        .map((l) => JSON.parse(l));
      if (code !== 0) console.error(r.stderr);
    }
    return {
      code,
      out: norm(stdout, base),
      err: stderr.split("\n").filter((l) => l.startsWith("hallpass")).join("\n"),
      files: await files(base, w.ignore),
      questions: questions.map((x) => ({ op: x.op, target: norm(x.target, base) })),
    };
  } finally {
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
}

/**
 * The snapshot with hallpass's exit renames undone: each NAME must be absent and NAME.hallpass-quarantined
 * present (so a run that did not set it aside, or set aside something else, still differs from bare).
 */
function unquarantine(snapshot: string, names: string[] = []): string {
  const x = JSON.parse(snapshot);
  for (const n of names) {
    const q = `${n}.hallpass-quarantined`;
    if (n in x || !(q in x)) continue;
    x[n] = x[q];
    delete x[q];
  }
  return JSON.stringify(x);
}

/** The entries that differ between two snapshots, with both sides. */
function diff(a: string, b: string): string[] {
  const x = JSON.parse(a), y = JSON.parse(b);
  const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
  return keys.filter((k) => JSON.stringify(x[k]) !== JSON.stringify(y[k]))
    .map((k) => `${k}: ${JSON.stringify(x[k])?.slice(0, 300)} != ${JSON.stringify(y[k])?.slice(0, 300)}`);
}

const counts: string[] = [];

for (const w of WORKLOADS) {
  test(
    { name: `workload under hallpass = bare: ${w.name}`, ignore: w.needs.map((p) => tool(p)) },
    async () => {
      const bare = await run(w, "bare");
      assertEquals(bare.code, 0, `the bare run failed:\n${bare.out}`);
      const plain = await run(w, "plain");
      const tuned = await run(w, "tuned");
      for (const [label, o] of [["plain (all questions answered once)", plain], ["tuned", tuned]] as const) {
        assertEquals(o.code, bare.code, `${label}: exit status\n${o.out}`);
        assertEquals(o.out, bare.out, `${label}: output`);
        assertEquals(
          diff(unquarantine(o.files, w.quarantined), bare.files),
          [],
          `${label}: files in the project differ; hallpass said:\n${o.err}`,
        );
      }
      assertEquals(tuned.questions, [], "tuned: questions left");
      const summary = [...new Set(plain.questions.map((x) => `${x.op} ${x.target}`))].slice(0, 8).join("; ");
      const line = `${w.name}: ${plain.questions.length} question(s) plain, ${tuned.questions.length} tuned` +
        (summary ? ` — plain asked: ${summary}` : "");
      counts.push(line);
      console.log(line);
    },
  );
}
