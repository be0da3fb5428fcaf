/**
 * The fast path checked against the one decision (lib/supervisor/fast_replay.ts). Real workloads run under
 * hallpass with HALLPASS_FASTPATH_RECORD set: the C fast path records every answer it gives, with the
 * canonical paths it decided on, and the supervisor records the context (rules, floor, protected paths).
 * Every answer is then replayed through the TypeScript decision the mediator runs (lib/supervisor/decide.ts,
 * lib/policy/policy.ts): one answer the mediator would not have given fails the test.
 *
 * Each workload runs twice, with the fast path and with HALLPASS_FAST_PATH=0, and each run asserts which
 * engine answered: the fast path's run recorded answers of its own, the mediator's none (a missing fast-path
 * library would otherwise make both runs the mediator, silently). The write-forms matrix, the adversarial
 * path tests and the fd metadata attacks (tests/e2e/fd_meta_test.ts) run as they are, under the record, and
 * are replayed too.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { DENO, hallpass, isRoot, ROOT, scratch } from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";
import type { ReplayResult } from "../../lib/supervisor/fast_replay.ts";
import { assertAgrees, replayFile } from "./engine.ts";
import { GIT_ENV } from "../helpers/git.ts";

const LIB = `${ROOT}/build/libhallpass-fastpath.so`;
const lib = (() => {
  try {
    Deno.statSync(LIB);
    return undefined;
  } catch {
    return { reason: `${LIB} is not built (make builds it)` };
  }
})();

interface Workload {
  name: string;
  needs: string[];
  setup?: (project: string) => Promise<void>;
  /** More hallpass options, given the work directory. */
  flags?: (work: string) => string[];
  /** More environment, given the work directory. */
  env?: (work: string) => Record<string, string>;
  script: string;
  /** Answers the fast path must have given in its run (it answered, and with these). */
  answered: string[];
  /**
   * chmod/utimes it performs: not as root, whose sandbox runs without capabilities (the fast path performs
   * only with the caller's credentials; the mediator performs the rest as the caller).
   */
  performs?: boolean;
}

const ENV = GIT_ENV;

const WORKLOADS: Workload[] = [
  {
    name: "tar x of a tree",
    needs: ["tar"],
    setup: async (p) => {
      await Deno.mkdir(`${p}/src/a/b`, { recursive: true });
      for (let i = 0; i < 60; i++) await Deno.writeTextFile(`${p}/src/a/b/f${i}`, `${i}\n`);
      await Deno.symlink("b/f1", `${p}/src/a/link`);
    },
    script: "tar cf t.tar src && mkdir out && cd out && tar xf ../t.tar && tar xpf ../t.tar && " +
      "chmod -R go-w src && touch src/a/b/f1 && cd .. && rm -rf out/src/a/b && mv out gone && " +
      // a name beside the root that starts like it (work-x, not below work/): the mediator's
      "echo x > ../work-x && mkdir ../workdir && mv gone ../workdir/",
    answered: ["continue", "exec"],
    performs: true,
  },
  {
    name: "git add and commit",
    needs: ["git"],
    setup: async (p) => {
      await new Deno.Command("git", { args: ["init", "-q", p], env: ENV }).output();
      for (let i = 0; i < 30; i++) await Deno.writeTextFile(`${p}/file${i}.txt`, `line ${i}\n`);
    },
    script: "git add -A && git commit -qm one && echo more >> file1.txt && git commit -qam two && " +
      "git checkout -qb side && git rm -q file2.txt && git commit -qm three && git gc -q",
    answered: ["continue", "exec"],
  },
  {
    name: "make -j2 with gcc",
    needs: ["make", "gcc"],
    setup: async (p) => {
      const objs: string[] = [];
      for (let i = 0; i < 8; i++) {
        await Deno.writeTextFile(`${p}/m${i}.c`, `int f${i}(void) { return ${i}; }\n`);
        objs.push(`m${i}.o`);
      }
      await Deno.writeTextFile(`${p}/main.c`, "int main(void) { return 0; }\n");
      await Deno.writeTextFile(
        `${p}/Makefile`,
        `prog: main.o ${objs.join(" ")}\n\tgcc -o $@ $^\n%.o: %.c\n\tgcc -c -o $@ $<\n` +
          `clean:\n\trm -f prog *.o\n`,
      );
    },
    script: "make -s -j2 && make -s clean && make -s -j2",
    answered: ["continue", "exec"],
  },
  {
    // Offline: a local package packed with `npm pack`, installed from its tarball and from its folder.
    name: "npm pack and install of a local package",
    needs: ["npm", "node"],
    setup: async (p) => {
      await Deno.mkdir(`${p}/pkg/lib`, { recursive: true });
      await Deno.mkdir(`${p}/app`);
      await Deno.writeTextFile(
        `${p}/pkg/package.json`,
        JSON.stringify({
          name: "hp-local",
          version: "1.0.0",
          main: "lib/index.js",
          bin: { "hp-local": "lib/cli.js" },
        }),
      );
      for (let i = 0; i < 40; i++) {
        await Deno.writeTextFile(`${p}/pkg/lib/m${i}.js`, `exports.f = () => ${i};\n`);
      }
      await Deno.writeTextFile(`${p}/pkg/lib/index.js`, `module.exports = require("./m1");\n`);
      await Deno.writeTextFile(`${p}/pkg/lib/cli.js`, `#!/usr/bin/env node\nconsole.log("hi");\n`);
      await Deno.writeTextFile(`${p}/app/package.json`, JSON.stringify({ name: "app", version: "1.0.0" }));
    },
    // The package's program, installed into the project during the session: allowed by a rule (exec answers
    // of the fast path under an allow exec rule).
    flags: (p) => ["--allow-exec", `${p}/app/node_modules/**`],
    env: (p) => ({
      npm_config_cache: `${p}/tmp/npm-cache`,
      npm_config_offline: "true",
      npm_config_audit: "false",
      npm_config_fund: "false",
      npm_config_update_notifier: "false",
    }),
    script: "(cd pkg && npm pack --silent) && cd app && npm install --silent ../pkg/hp-local-1.0.0.tgz && " +
      'test "$(npx hp-local)" = hi && npm uninstall --silent hp-local && ' +
      "npm install --silent --install-links ../pkg && node -e 'if (require(\"hp-local\").f() !== 1) process.exit(3)'",
    answered: ["continue", "exec"],
    performs: true,
  },
  {
    // IP connects and UDP sends to a server of the sandbox's own (connects not mediated under --no-ask: the
    // fast path performs them, and records where to).
    name: "curl and UDP sends to a local server",
    needs: ["curl", "python3"],
    script: `python3 -c 'import http.server as h, os
s = h.ThreadingHTTPServer(("127.0.0.1", 0), h.SimpleHTTPRequestHandler)
open("port.tmp", "w").write(str(s.server_port)); os.rename("port.tmp", "port"); s.serve_forever()' 2>/dev/null &
while [ ! -s port ]; do sleep 0.05; done; p=$(cat port)
for i in $(seq 20); do curl -sf "http://127.0.0.1:$p/port" >/dev/null || exit 1; done
python3 -c 'import socket, sys
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(5): u.sendto(b"x", ("127.0.0.1", int(sys.argv[1])))' "$p"
kill $!`,
    answered: ["continue", "exec", "net"],
  },
  {
    name: "a node script writing many files",
    needs: ["node"],
    setup: async (p) => {
      await Deno.writeTextFile(
        `${p}/w.js`,
        `const fs = require("fs");
fs.mkdirSync("gen/deep/er", { recursive: true });
for (let i = 0; i < 300; i++) fs.writeFileSync(\`gen/deep/er/f\${i}.txt\`, String(i));
for (let i = 0; i < 300; i += 3) fs.renameSync(\`gen/deep/er/f\${i}.txt\`, \`gen/deep/r\${i}.txt\`);
for (let i = 1; i < 300; i += 3) fs.unlinkSync(\`gen/deep/er/f\${i}.txt\`);
for (let i = 2; i < 300; i += 3) { fs.chmodSync(\`gen/deep/er/f\${i}.txt\`, 0o600); fs.utimesSync(\`gen/deep/er/f\${i}.txt\`, 1, 1); }
fs.linkSync("gen/deep/r0.txt", "gen/hard");
fs.symlinkSync("deep", "gen/sym");
fs.rmSync("gen/deep/er", { recursive: true });
`,
      );
    },
    script: "node w.js",
    answered: ["continue", "exec"],
    performs: true,
  },
];

for (const w of WORKLOADS) {
  test({ name: `fast path replay: ${w.name}`, ignore: [lib, ...w.needs.map(tool)] }, async () => {
    const runs: Record<string, ReplayResult> = {};
    for (const mode of ["fast", "mediator"] as const) {
      const s = await scratch();
      try {
        // The work happens in a directory that is there at start: the project's top may be carved entry by
        // entry (lib/sandbox/plan.ts carveFloor), and a name made there later is the mediator's.
        const work = `${s.project}/work`;
        await Deno.mkdir(`${work}/tmp`, { recursive: true });
        await w.setup?.(work);
        const rec = `${s.outside}/record`;
        const env: Record<string, string> = {
          ...ENV,
          ...w.env?.(work),
          TMPDIR: `${work}/tmp`,
          HALLPASS_FASTPATH_RECORD: rec,
        };
        if (mode === "mediator") env.HALLPASS_FAST_PATH = "0";
        const r = await hallpass(
          ["--no-ask", ...w.flags?.(work) ?? [], "--", "sh", "-c", `cd work || exit 1; ${w.script}`],
          { cwd: s.project, env, timeoutMs: 120_000 },
        );
        runs[mode] = await replayFile(rec);
        // The replay first: a wrong answer of the fast path may also make the run fail (Landlock's EACCES).
        assertAgrees(runs[mode], `${w.name} (${mode})`);
        assertEquals(r.code, 0, `${mode}: ${r.stderr.slice(0, 1500)}`);
      } finally {
        await s.cleanup();
      }
    }
    // Which engine answered: the fast path's run has answers of its own, the mediator's run none.
    assertEquals(runs.mediator.answers, 0, "HALLPASS_FAST_PATH=0: the fast path answered nonetheless");
    for (const a of [...w.answered, ...(w.performs && !isRoot() ? ["perform"] : [])]) {
      if (!runs.fast.byAnswer[a]) {
        throw new Error(`the fast path never answered "${a}": ${JSON.stringify(runs.fast.byAnswer)}`);
      }
    }
    console.log(
      `${w.name}: ${runs.fast.answers} fast-path answers replayed: ${JSON.stringify(runs.fast.byAnswer)}`,
    );
  });
}

test({
  name:
    "fast path replay: the write-forms matrix, the adversarial path and fd metadata tests, under the record",
  ignore: [lib, tool("gcc")],
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "hallpass-replay-" });
  try {
    const rec = `${dir}/record`;
    const out = await new Deno.Command(DENO, {
      args: [
        "test",
        "-A",
        "tests/e2e/write_forms_test.ts",
        "tests/e2e/adversarial_paths_test.ts",
        "tests/e2e/fd_meta_test.ts",
      ],
      cwd: ROOT,
      env: { HALLPASS_FASTPATH_RECORD: rec },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, text.slice(-3000));
    const r = await replayFile(rec);
    if (!r.byAnswer.continue) throw new Error(`the fast path never answered: ${JSON.stringify(r.byAnswer)}`);
    assertAgrees(r, "write forms, adversarial paths and fd metadata");
    console.log(`${r.answers} fast-path answers replayed: ${JSON.stringify(r.byAnswer)}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
