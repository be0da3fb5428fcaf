/**
 * Pod rules that protect paths (docs/kubernetes.md "Protected paths in pods"): a container on the protect
 * profile (`hallpass agent --print-profile --protect`) cannot read what its pod's rules protect — directly,
 * through a symlink, `..`, its cwd, or a symlink swapped while it reads — and reads everything else; judged
 * from outside by what the container printed. Controls: the same reads on the plain profile and without
 * hallpass read the file. A pod whose rules protect paths but whose profile does not trap reads fails closed,
 * with a line saying what to change. A thread rewriting the path in memory while the agent decides never reads
 * the key (tests/helpers/path_flip.c; control: it does on the plain profile).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  AgentProcess,
  agentTest,
  containerId,
  CONTAINERS,
  makeBundle,
  runContainer,
  withAgent as withAgentOn,
} from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const SECRET = "TOPSECRET-4711";
const BASE =
  "allow write /tmp/**\nallow write /dev/null\nallow exec /bin/busybox\nallow exec /bin/path_flip\n";
// Only the pod `team/guarded` protects: other pods' files do not.
const GUARDED = "protect /secret\nallow read /secret/public\nprotect /etc/shadow\n";

/** An agent whose pod `team/guarded` protects, the others only BASE. */
function withAgent(fn: (dir: string, socket: string, agent: AgentProcess) => Promise<void>): Promise<void> {
  return withAgentOn({ "default.rules": BASE, "team.guarded.rules": GUARDED }, fn);
}

async function plantSecret(rootfs: string): Promise<void> {
  await Deno.mkdir(`${rootfs}/secret`, { recursive: true });
  await Deno.writeTextFile(`${rootfs}/secret/key`, `${SECRET}\n`);
  await Deno.writeTextFile(`${rootfs}/secret/public`, "public-ok\n");
  await Deno.writeTextFile(`${rootfs}/etc/shadow`, `root:${SECRET}:1::::::\n`);
  await Deno.writeTextFile(`${rootfs}/tmp/benign`, "benign\n");
}

/** Every way in the script reads the key; each prints NAME=STATUS. */
const ATTACKS = [
  'cat /secret/key; echo "direct=$?"',
  'ln -s /secret/key /tmp/l; cat /tmp/l; echo "symlink=$?"',
  'ln -s /secret /tmp/d; cat /tmp/d/key; echo "dirlink=$?"',
  'cat /tmp/../secret/./key; echo "dotdot=$?"',
  'cat /proc/self/root/secret/key; echo "procroot=$?"',
  '(cd /secret && cat key); echo "cwd=$?"',
  'ls /secret >/dev/null; echo "list=$?"',
  'cat /etc/shadow; echo "shadow=$?"',
  // A symlink swapped between a harmless file and the key while another loop reads through it.
  "(i=0; while [ $i -lt 300 ]; do ln -sfn /tmp/benign /tmp/s; ln -sfn /secret/key /tmp/s; i=$((i+1)); done) & " +
  'j=0; while [ $j -lt 300 ]; do cat /tmp/s 2>/dev/null; j=$((j+1)); done; wait; echo "swap=done"',
];
/** Reads that must keep working. */
const READS = [
  'cat /secret/public; echo "public=$?"',
  'cat /etc/passwd >/dev/null; echo "passwd=$?"',
  'ls / >/dev/null; echo "root=$?"',
  'cat /proc/self/status >/dev/null; echo "proc=$?"',
  'echo piped | cat /dev/stdin; echo "stdin=$?"',
  'echo w > /tmp/w && cat /tmp/w; echo "own=$?"',
];

for (const runtime of ["runc", "crun"] as const) {
  agentTest(
    `${runtime}: a pod's protected paths are unreadable on the protect profile; other reads work`,
    async () => {
      await withAgent(async (dir, socket, agent) => {
        const rootfs = await makeBundle(`${dir}/b`, {
          socket,
          reads: true,
          namespace: "team",
          pod: "guarded",
          script: [...ATTACKS, ...READS].join("; "),
        });
        await plantSecret(rootfs);
        const r = await runContainer(runtime, `${dir}/b`, containerId(runtime));
        assertEquals(r.code, 0, r.stderr);
        const out = r.stdout;
        assert(!out.includes(SECRET), `the secret was read:\n${out}`);
        const bads = [
          "direct=0",
          "symlink=0",
          "dirlink=0",
          "dotdot=0",
          "procroot=0",
          "cwd=0",
          "list=0",
          "shadow=0",
        ];
        for (const bad of bads) {
          assert(!out.includes(bad), `${bad} in\n${out}`);
        }
        assert(out.includes("swap=done"), out);
        for (
          const want of ["public=0", "passwd=0", "root=0", "proc=0", "stdin=0", "own=0", "public-ok", "piped"]
        ) {
          assert(out.includes(want), `${want} in\n${out}`);
        }
        await agent.waitOutput(/team\/guarded app: denied read \/secret\/key/);
      });
    },
  );

  agentTest(
    `${runtime}: controls — the same reads work on the plain profile and without hallpass`,
    async () => {
      await withAgent(async (dir, socket) => {
        for (const [name, opts] of [["plain", {}], ["bare", { noSeccomp: true }]] as const) {
          const rootfs = await makeBundle(`${dir}/${name}`, {
            socket,
            namespace: "team",
            pod: "plain",
            script: ATTACKS.join("; "),
            ...opts,
          });
          await plantSecret(rootfs);
          const r = await runContainer(runtime, `${dir}/${name}`, containerId(runtime));
          assertEquals(r.code, 0, r.stderr);
          for (const want of ["direct=0", "symlink=0", "dotdot=0", "cwd=0", "shadow=0", SECRET]) {
            assert(r.stdout.includes(want), `${name}: ${want} in\n${r.stdout}`);
          }
        }
      });
    },
  );

  agentTest(
    `${runtime}: protect rules for a pod on the plain profile: its calls fail, the agent says what to change`,
    async () => {
      await withAgent(async (dir, socket, agent) => {
        const rootfs = await makeBundle(`${dir}/b`, {
          socket,
          namespace: "team",
          pod: "guarded",
          script: 'cat /secret/key; echo "ran=$?"',
        });
        await plantSecret(rootfs);
        const r = await runContainer(runtime, `${dir}/b`, containerId(runtime));
        assert(!r.stdout.includes(SECRET), r.stdout);
        await agent.waitOutput(
          /team\/guarded app: its rules protect \/secret .*does not trap reads.*hallpass-protect\.json/,
        );
      });
    },
  );
}

agentTest("a container process that is not root reads with its own ids on the protect profile", async () => {
  await withAgent(async (dir, socket) => {
    const rootfs = await makeBundle(`${dir}/b`, {
      socket,
      reads: true,
      namespace: "team",
      pod: "guarded",
      user: { uid: 1000, gid: 1000 },
      script: 'cat /root/private; echo "private=$?"; cat /etc/passwd >/dev/null; echo "passwd=$?"',
    });
    await plantSecret(rootfs);
    await Deno.writeTextFile(`${rootfs}/root/private`, `${SECRET}\n`);
    await Deno.chmod(`${rootfs}/root/private`, 0o600);
    const r = await runContainer("runc", `${dir}/b`, containerId("runc"));
    assertEquals(r.code, 0, r.stderr);
    assert(!r.stdout.includes(SECRET) && !r.stdout.includes("private=0"), r.stdout);
    assert(r.stdout.includes("passwd=0"), r.stdout);
  });
});

/** Builds tests/helpers/path_flip.c (static: the busybox rootfs has no libc) into the container's /bin. */
async function buildFlip(rootfs: string): Promise<void> {
  const src = new URL("../helpers/path_flip.c", import.meta.url).pathname;
  const cc = await new Deno.Command("musl-gcc", {
    args: ["-static", "-O2", "-pthread", "-o", `${rootfs}/bin/path_flip`, src],
  }).output();
  if (!cc.success) throw new Error(new TextDecoder().decode(cc.stderr));
}

test({
  name: "runc: a path rewritten in memory by another thread while the agent decides never reads the key",
  ignore: [...CONTAINERS, tool("musl-gcc")],
}, async () => {
  await withAgent(async (dir, socket) => {
    const runs: Record<string, string> = {};
    // Same length names (no torn strings): /tmp/benign (harmless) and /secret/key.
    // The plain run's opens are fast: more of them, so that the flipping thread is scheduled in between.
    const runsOf = [
      ["protect", { reads: true, pod: "guarded" }, 2000],
      ["plain", { pod: "plain" }, 100000],
    ] as const;
    for (const [name, o, opens] of runsOf) {
      const rootfs = await makeBundle(`${dir}/${name}`, {
        socket,
        namespace: "team",
        script: `/bin/path_flip /tmp/benign /secret/key TOPSECRET ${opens}`,
        ...o,
      });
      await plantSecret(rootfs);
      await buildFlip(rootfs);
      // Generous: each refused open is a decision by the agent, and path_flip goes on (up to 60 s) until the
      // race has happened; at load 2000 of them took more than 30 s.
      const r = await runContainer("runc", `${dir}/${name}`, containerId(name), 150_000);
      assertEquals(r.code, 0, r.stderr);
      runs[name] = r.stdout;
    }
    const count = (s: string, k: string) => Number(new RegExp(`${k}=(\\d+)`).exec(s)?.[1] ?? NaN);
    // Control: without protection the race reads the key (the flip works on this machine).
    assert(count(runs.plain, "leaked") > 0, `control: ${runs.plain}`);
    assertEquals(count(runs.protect, "leaked"), 0, runs.protect);
    assert(count(runs.protect, "opened") > 0, `the harmless name was never opened: ${runs.protect}`);
    assert(count(runs.protect, "failed") > 0, `the race never reached the key: ${runs.protect}`);
  });
});
