/**
 * The cost of a pod's read protection per open (docs/kubernetes.md "Protected paths in pods"): the same
 * container program (bench/pod_opens.c: N opens of /etc/passwd) on the plain profile and on the protect
 * profile, in interleaved pairs, with runc; bare (no seccomp) as a reference. Root only.
 *
 *     POD_REPEAT=10 POD_OPENS=2000 .tools/node_modules/deno/deno run -A bench/pod_protect.ts
 */
import {
  AgentProcess,
  containerId,
  makeBundle,
  needRoot,
  needTools,
  runContainer,
  scratch,
} from "../tests/agent/harness.ts";

needRoot();
needTools("runc", "busybox", "musl-gcc");
const repeat = Number(Deno.env.get("POD_REPEAT") ?? 10);
const opens = Number(Deno.env.get("POD_OPENS") ?? 2000);
const dir = await scratch();
await Deno.writeTextFile(`${dir}/rules/default.rules`, "allow exec /bin/busybox\nallow exec /bin/opens\n");
await Deno.writeTextFile(`${dir}/rules/team.guarded.rules`, "protect /secret\n");
const socket = `${dir}/agent.sock`;
const agent = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`]);
const here = new URL(".", import.meta.url).pathname;
const kinds = {
  bare: { noSeccomp: true, pod: "plain" },
  plain: { pod: "plain" },
  protect: { reads: true, pod: "guarded" },
} as const;
try {
  for (const [k, o] of Object.entries(kinds)) {
    const rootfs = await makeBundle(`${dir}/${k}`, {
      socket,
      namespace: "team",
      script: `/bin/opens /etc/passwd ${opens}`,
      ...o,
    });
    const cc = await new Deno.Command("musl-gcc", {
      args: ["-static", "-O2", "-o", `${rootfs}/bin/opens`, `${here}/pod_opens.c`],
    }).output();
    if (!cc.success) throw new Error(new TextDecoder().decode(cc.stderr));
  }
  const ns: Record<string, number[]> = { bare: [], plain: [], protect: [] };
  const ratios: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const order = i % 2 ? ["protect", "plain", "bare"] : ["bare", "plain", "protect"];
    const round: Record<string, number> = {};
    for (const k of order) {
      const r = await runContainer("runc", `${dir}/${k}`, containerId(k));
      const v = Number(r.stdout.trim());
      if (r.code !== 0 || !Number.isFinite(v)) throw new Error(`${k}: ${r.stdout} ${r.stderr}`);
      round[k] = v;
      ns[k].push(v);
    }
    ratios.push(round.protect / round.plain);
  }
  const q = (a: number[], p: number) =>
    [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(p * a.length))];
  for (const k of Object.keys(ns)) {
    console.log(
      `${k.padEnd(8)} ns/open median ${q(ns[k], 0.5)}  (q10 ${q(ns[k], 0.1)}, q90 ${q(ns[k], 0.9)})`,
    );
  }
  console.log(
    `protect/plain per round: median ${q(ratios, 0.5).toFixed(1)}x (min ${
      Math.min(...ratios).toFixed(1)
    }, max ${Math.max(...ratios).toFixed(1)}); ${repeat} rounds of ${opens} opens, load ${
      Deno.loadavg()[0].toFixed(1)
    }`,
  );
} finally {
  await agent.stop();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
