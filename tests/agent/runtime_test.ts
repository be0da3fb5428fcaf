/**
 * `hallpass agent` with real container runtimes (runc, crun) and busybox containers: the runtime hands each
 * container process's seccomp fd to the agent, which applies the pod's rules inside the container's root.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import {
  AgentProcess,
  agentTest,
  containerId,
  CONTAINERS,
  execIn,
  exists,
  forceDelete,
  makeBundle,
  needRoot,
  needTools,
  runContainer,
  scratch,
  sleep,
  startDetached,
  until,
  which,
  withAgent as withAgentOn,
} from "./harness.ts";
import { test, tool } from "../helpers/skip.ts";

const RULES = "allow write /tmp/**\nallow exec /bin/busybox\n";

/** An agent on `rules` that logs its decisions to decisions.jsonl in its directory. */
function withAgent(
  rules: string,
  fn: (dir: string, socket: string, agent: AgentProcess) => Promise<void>,
  extraArgs: string[] = [],
): Promise<void> {
  return withAgentOn(
    { "default.rules": rules },
    fn,
    (dir) => ["--log", `${dir}/decisions.jsonl`, ...extraArgs],
  );
}

for (const runtime of ["runc", "crun"] as const) {
  agentTest(`${runtime}: allowed writes land inside the container's root, others are denied`, async () => {
    await withAgent(RULES, async (dir, socket, agent) => {
      const tag = `real-${Deno.pid}-${runtime}`;
      const rootfs = await makeBundle(`${dir}/b`, {
        socket,
        script: [
          'echo hi > /tmp/ok; echo "ok=$?"',
          'echo no > /etc/x; echo "etc=$?"',
          // An absolute symlink means the container's /etc, never the host's.
          'ln -s /etc /tmp/etc-link; echo no > /tmp/etc-link/passwd; echo "link=$?"',
          // An allowed write through an absolute symlink lands in the container's /tmp.
          `mkdir /tmp/${tag}; ln -s /tmp/${tag} /tmp/lnk; echo y > /tmp/lnk/f; echo "viaLink=$?"`,
          'mkdir /opt/newdir; echo "mkdir=$?"',
          'rm /etc/passwd; echo "rm=$?"',
          'mv /tmp/ok /tmp/ok2; echo "mv=$?"',
        ].join("; "),
      });
      const r = await runContainer(runtime, `${dir}/b`, containerId(runtime));
      assertEquals(r.code, 0, r.stderr);
      const out = r.stdout;
      for (const want of ["ok=0", "viaLink=0", "mv=0"]) assert(out.includes(want), `${want} in\n${out}`);
      for (const bad of ["etc=0", "link=0", "mkdir=0", "rm=0"]) {
        assert(!out.includes(bad), `${bad} in\n${out}`);
      }
      assertEquals(await Deno.readTextFile(`${rootfs}/tmp/ok2`), "hi\n");
      assertEquals(await Deno.readTextFile(`${rootfs}/tmp/${tag}/f`), "y\n");
      assert(!exists(`/tmp/${tag}`), "the write went to the host's /tmp");
      assert(!exists(`${rootfs}/etc/x`) && !exists(`${rootfs}/opt/newdir`));
      assertEquals(await Deno.readTextFile(`${rootfs}/etc/passwd`), "root:x:0:0:root:/root:/bin/sh\n");
      await agent.waitOutput(/denied write \/etc\/x by sh/);
      // Every decision is logged with the container's process chain.
      const log = await Deno.readTextFile(`${dir}/decisions.jsonl`);
      assert(/"target":"\/tmp\/ok".*"decision":"allow"/.test(log), log);
      assert(/"target":"\/etc\/x".*"decision":"deny"/.test(log), log);
    });
  });

  agentTest(
    `${runtime}: exec of a program no rule allows is refused; the runtime's own setup passes`,
    async () => {
      await withAgent(RULES, async (dir, socket) => {
        await makeBundle(`${dir}/b`, {
          socket,
          script: 'echo start; /opt/other echo ran-other; echo "other=$?"; /bin/busybox echo ran-busybox',
        });
        const r = await runContainer(runtime, `${dir}/b`, containerId(runtime));
        assertEquals(r.code, 0, r.stderr);
        assert(r.stdout.startsWith("start\n"), r.stdout); // the entrypoint's exec (the runtime's) went through
        assert(!r.stdout.includes("ran-other"), r.stdout);
        assert(/other=126/.test(r.stdout), r.stdout);
        assert(r.stdout.includes("ran-busybox"), r.stdout);
      });
    },
  );
}

agentTest(
  "a container process that is not root: allowed writes are done with its ids, not the agent's",
  async () => {
    await withAgent(`${RULES}allow write /opt/**\n`, async (dir, socket) => {
      const rootfs = await makeBundle(`${dir}/b`, {
        socket,
        user: { uid: 1000, gid: 1000 },
        script:
          'echo u > /tmp/u; echo "tmp=$?"; echo o > /opt/o; echo "opt=$?"; mkdir /opt/d; echo "mkdir=$?"',
      });
      const r = await runContainer("runc", `${dir}/b`, containerId("user"));
      assert(r.stdout.includes("tmp=0"), r.stdout + r.stderr);
      const st = await Deno.stat(`${rootfs}/tmp/u`);
      assertEquals([st.uid, st.gid], [1000, 1000]);
      // /opt is root's (0755): the rules allow the write, the file system does not let uid 1000 do it. Done with
      // the agent's own (root) ids, this would have gone through.
      assert(/opt=[1-9]/.test(r.stdout) && /mkdir=[1-9]/.test(r.stdout), r.stdout + r.stderr);
      assert(!exists(`${rootfs}/opt/o`) && !exists(`${rootfs}/opt/d`));
      assert(r.stderr.includes("Permission denied"), r.stderr);
    });
  },
);

agentTest("runc exec into a running container is mediated like its first process", async () => {
  await withAgent(RULES, async (dir, socket) => {
    const rootfs = await makeBundle(`${dir}/b`, { socket, script: "sleep 60" });
    const id = containerId("exec");
    await startDetached("runc", `${dir}/b`, id);
    try {
      const r = await execIn("runc", id, 'echo z > /tmp/z; echo "z=$?"; echo n > /etc/n; echo "n=$?"');
      assert(r.stdout.includes("z=0"), r.stdout + r.stderr);
      assert(!r.stdout.includes("n=0") && /n=\d+/.test(r.stdout), r.stdout + r.stderr);
      assertEquals(await Deno.readTextFile(`${rootfs}/tmp/z`), "z\n");
      assert(!exists(`${rootfs}/etc/n`));
    } finally {
      await forceDelete("runc", id);
    }
  });
});

agentTest("crun exec (the runtime gives no pid) is mediated too", async () => {
  await withAgent(RULES, async (dir, socket) => {
    const rootfs = await makeBundle(`${dir}/b`, { socket, script: "sleep 60" });
    const id = containerId("cexec");
    await startDetached("crun", `${dir}/b`, id);
    try {
      const r = await execIn("crun", id, 'echo z > /tmp/z; echo "z=$?"; echo n > /etc/n; echo "n=$?"');
      assert(r.stdout.includes("z=0"), r.stdout + r.stderr);
      assert(/n=[1-9]/.test(r.stdout), r.stdout + r.stderr);
      assert(exists(`${rootfs}/tmp/z`) && !exists(`${rootfs}/etc/n`));
    } finally {
      await forceDelete("crun", id);
    }
  });
});

agentTest("connects: an allowed destination connects, another is refused", async () => {
  const server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (server.addr as Deno.NetAddr).port;
  const accepted: number[] = [];
  const serving = (async () => {
    for await (const c of server) {
      accepted.push(Date.now());
      await c.write(new TextEncoder().encode("HTTP/1.0 200 OK\r\nContent-Length: 6\r\n\r\nhello\n"));
      c.close();
    }
  })();
  const other = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const otherPort = (other.addr as Deno.NetAddr).port;
  const otherAccepted: number[] = [];
  const servingOther = (async () => {
    for await (const c of other) {
      otherAccepted.push(Date.now());
      c.close();
    }
  })();
  try {
    await withAgent(`${RULES}allow connect 127.0.0.1:${port}\n`, async (dir, socket) => {
      await makeBundle(`${dir}/b`, {
        socket,
        connect: true,
        hostNetwork: true,
        script: `wget -q -O- http://127.0.0.1:${port}/; echo "a=$?"; ` +
          `wget -q -O- http://127.0.0.1:${otherPort}/; echo "b=$?"`,
      });
      const r = await runContainer("runc", `${dir}/b`, containerId("net"));
      assert(r.stdout.includes("hello\na=0"), r.stdout + r.stderr);
      assert(/b=[1-9]/.test(r.stdout), r.stdout + r.stderr);
      assertEquals(accepted.length, 1);
      assertEquals(otherAccepted.length, 0);
    });
  } finally {
    server.close();
    other.close();
    await serving.catch(() => {});
    await servingOther.catch(() => {});
  }
});

agentTest("per-pod rules: NAMESPACE.POD.rules adds to default.rules for that pod only", async () => {
  await withAgent(RULES, async (dir, socket) => {
    await Deno.writeTextFile(`${dir}/rules/team.builder.rules`, "allow write /opt/**\n");
    const script = 'echo x > /opt/f; echo "opt=$?"';
    const a = await makeBundle(`${dir}/a`, { socket, script, namespace: "team", pod: "builder" });
    const b = await makeBundle(`${dir}/b`, { socket, script, namespace: "team", pod: "other" });
    const ra = await runContainer("runc", `${dir}/a`, containerId("poda"));
    const rb = await runContainer("runc", `${dir}/b`, containerId("podb"));
    assert(ra.stdout.includes("opt=0"), ra.stdout + ra.stderr);
    assert(/opt=[1-9]/.test(rb.stdout), rb.stdout + rb.stderr);
    assert(exists(`${a}/opt/f`) && !exists(`${b}/opt/f`));
  });
});

/** The file's text, or "" while it cannot be read. */
function readOr(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return "";
  }
}

agentTest("agent down: a new container is refused; a running one's mediated calls fail closed", async () => {
  needRoot();
  needTools("runc", "busybox");
  const dir = await scratch();
  try {
    await Deno.writeTextFile(`${dir}/rules/default.rules`, RULES);
    const socket = `${dir}/agent.sock`;
    // No agent at all: the runtime cannot hand the fd over and does not start the container.
    await makeBundle(`${dir}/none`, { socket, script: "echo started" });
    const r0 = await runContainer("runc", `${dir}/none`, containerId("noagent"));
    assert(r0.code !== 0 && !r0.stdout.includes("started"), r0.stdout + r0.stderr);
    // An agent that goes away while the container runs.
    const agent = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`]);
    const rootfs = await makeBundle(`${dir}/b`, {
      socket,
      script: 'echo a > /tmp/before; echo "before=$?"; sleep 3; echo b > /tmp/after; echo "after=$?"',
    });
    const run = runContainer("runc", `${dir}/b`, containerId("down"));
    // Its content, not its name: the agent makes the file before the open it performs returns to the container.
    await until(() => readOr(`${rootfs}/tmp/before`) === "a\n", "the first write");
    await agent.stop("SIGKILL");
    const r = await run;
    assert(r.stdout.includes("before=0"), r.stdout + r.stderr);
    assert(/after=[1-9]/.test(r.stdout), r.stdout + r.stderr);
    assert(!exists(`${rootfs}/tmp/after`));
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});

agentTest(
  "agent restart: a new agent takes the running containers over; stopping the old one changes nothing",
  async () => {
    needRoot();
    needTools("runc", "busybox");
    const dir = await scratch();
    const id = containerId("handover");
    let a: AgentProcess | null = null, b: AgentProcess | null = null;
    try {
      await Deno.writeTextFile(`${dir}/rules/default.rules`, RULES);
      const socket = `${dir}/agent.sock`;
      a = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`]);
      const rootfs = await makeBundle(`${dir}/b`, {
        socket,
        // Writes every 100 ms, allowed and denied, for as long as it runs.
        script:
          "i=0; while true; do echo $i > /tmp/n$i; echo $i > /etc/n$i 2>/dev/null; i=$((i+1)); sleep 0.1; done",
      });
      await startDetached("runc", `${dir}/b`, id);
      await until(() => exists(`${rootfs}/tmp/n3`), "writes under the first agent");
      b = await AgentProcess.start(["--socket", socket, "--rules", `${dir}/rules`], /took over 1 containers/);
      // The old agent stays, idle, until stopped (a DaemonSet would restart one that exits); stopping it now
      // changes nothing for the container.
      await a.waitOutput(/handed over; idle until stopped/);
      const st = await a.stop();
      assertEquals(st.code, 0, a.output);
      a = null;
      const seen = [...Deno.readDirSync(`${rootfs}/tmp`)].length;
      await until(
        () => [...Deno.readDirSync(`${rootfs}/tmp`)].length >= seen + 5,
        "writes under the new agent",
      );
      assert(
        ![...Deno.readDirSync(`${rootfs}/etc`)].some((e) => e.name.startsWith("n")),
        "a denied write landed",
      );
      await b.waitOutput(/denied write \/etc\/n\d+/);
      // A new container is accepted by the new agent on the same socket.
      await makeBundle(`${dir}/c`, { socket, script: 'echo c > /tmp/c; echo "c=$?"' });
      const rc = await runContainer("runc", `${dir}/c`, containerId("after"));
      assert(rc.stdout.includes("c=0"), rc.stdout + rc.stderr);
    } finally {
      await forceDelete("runc", id);
      await a?.stop();
      await b?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

agentTest("containers that end leave nothing behind in the agent (fds, threads)", async () => {
  await withAgent(RULES, async (dir, socket, agent) => {
    const count = (what: "fd" | "task") => [...Deno.readDirSync(`/proc/${agent.child.pid}/${what}`)].length;
    await makeBundle(`${dir}/b`, { socket, script: 'echo x > /tmp/x; echo "x=$?"' });
    // One run first: what the first container starts once (modules, the answer-less backend) is not a leak.
    assert((await runContainer("runc", `${dir}/b`, containerId("leak0"))).stdout.includes("x=0"));
    await sleep(300);
    const fds = count("fd"), tasks = count("task");
    for (let i = 1; i <= 8; i++) {
      const r = await runContainer("runc", `${dir}/b`, containerId(`leak${i}`));
      assert(r.stdout.includes("x=0"), r.stdout + r.stderr);
    }
    await until(
      () => count("fd") <= fds + 2 && count("task") <= tasks + 2,
      `fds (${fds}) and threads (${tasks}) to come back`,
    ).catch((e) => {
      throw new Error(
        `${e.message}: now ${count("fd")} fds ${count("task")} threads; ${
          Deno.readDirSync(`/proc/${agent.child.pid}/fd`).toArray().map((f) =>
            Deno.readLinkSync(`/proc/${agent.child.pid}/fd/${f.name}`)
          ).join(" ")
        }`,
      );
    });
  });
});

agentTest("the agent refuses a malformed runtime message and goes on serving", async () => {
  await withAgent(RULES, async (dir, socket, agent) => {
    const conn = await Deno.connect({ transport: "unix", path: socket });
    await conn.write(new TextEncoder().encode('{"ociVersion":"1.0.2","fds":[],"state":{}}'));
    await agent.waitOutput(/names no seccompFd/);
    conn.close();
    const conn2 = await Deno.connect({ transport: "unix", path: socket });
    await conn2.write(new TextEncoder().encode("x".repeat(2 << 20)).subarray(0, 1 << 16));
    conn2.close();
    await sleep(200);
    await makeBundle(`${dir}/b`, { socket, script: 'echo hi > /tmp/ok; echo "ok=$?"' });
    const r = await runContainer("runc", `${dir}/b`, containerId("after-bad"));
    assert(r.stdout.includes("ok=0"), r.stdout + r.stderr);
  });
});

type Api = (path: string, init?: RequestInit) => Promise<Response>;

/** withAgent with the answer service on: `api` calls it with a token of "tester". */
async function withAnswerAgent(
  rules: string,
  extraArgs: string[],
  fn: (dir: string, socket: string, agent: AgentProcess, api: Api) => Promise<void>,
): Promise<void> {
  const token = crypto.randomUUID().replaceAll("-", "");
  const tokens = await Deno.makeTempFile({ prefix: "hallpass-tokens-" });
  await Deno.writeTextFile(tokens, `tester ${token}\n`);
  try {
    await withAgent(rules, async (dir, socket, agent) => {
      const url = /questions at (http:\/\/[0-9.]+:\d+)\//.exec(agent.output)![1];
      const api: Api = (path, init = {}) =>
        fetch(url + path, {
          ...init,
          headers: {
            authorization: `Bearer ${token}`,
            "x-hallpass-client": "answer",
            ...(init.headers ?? {}),
          },
        });
      // Without the token nothing is shown.
      assertEquals((await fetch(url + "/api/questions")).status, 401);
      await fn(dir, socket, agent, api);
    }, ["--listen", "127.0.0.1:0", "--token-file", tokens, ...extraArgs]);
  } finally {
    await Deno.remove(tokens);
  }
}

/** Waits for a pending question about `target`; returns it. */
async function question(api: Api, target: string) {
  let q: {
    id: number;
    digest: string;
    reason?: string;
    chain: string[];
    container: { namespace: string; pod: string; container: string; id: string };
  } | undefined;
  await until(async () => {
    const list = await (await api("/api/questions")).json();
    q = list.questions.find((x: { target: string }) => x.target === target);
    return q !== undefined;
  }, `the question about ${target}`);
  return q!;
}

async function answer(api: Api, q: { id: number; digest: string }, kind: string): Promise<void> {
  const r = await api("/api/answer", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ id: q.id, digest: q.digest, kind }),
  });
  assertEquals(r.status, 200, await r.text());
}

agentTest(
  "a question goes to the answer service: answered once over the API, or denied at the timeout",
  async () => {
    await withAnswerAgent(RULES, ["--ask-timeout", "3s"], async (dir, socket, agent, api) => {
      const rootfs = await makeBundle(`${dir}/b`, {
        socket,
        namespace: "team",
        pod: "asker",
        container: "main",
        script: 'echo q > /etc/q; echo "q=$?"; echo t > /etc/t; echo "t=$?"',
      });
      const run = runContainer("runc", `${dir}/b`, containerId("ask"));
      // The first write waits for an answer: it is listed with the pod, the container and the process chain.
      const q = await question(api, "/etc/q");
      assertEquals(q.container, { namespace: "team", pod: "asker", container: "main", id: q.container.id });
      assert(q.chain.some((c) => c.includes("echo q > /etc/q")), JSON.stringify(q.chain));
      await answer(api, q, "once");
      // The second is never answered: denied when the timeout (3 s) passes.
      const t0 = Date.now();
      const r = await run;
      assert(r.stdout.includes("q=0"), r.stdout + r.stderr);
      assert(/t=[1-9]/.test(r.stdout), r.stdout + r.stderr);
      assert(Date.now() - t0 >= 2000, "the unanswered question was denied before its timeout");
      assertEquals(await Deno.readTextFile(`${rootfs}/etc/q`), "q\n");
      assert(!exists(`${rootfs}/etc/t`));
      await agent.waitOutput(/team\/asker main: denied write \/etc\/t/);
      // The log: an answer event and the decision it led to, both naming the question; and the lines the docs
      // show have the fields real lines have (docs/kubernetes-answering.md, "The log").
      const lines = (await Deno.readTextFile(`${dir}/decisions.jsonl`)).trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      const ans = lines.find((l) => l.event === "answer" && l.target === "/etc/q");
      assert(
        ans && ans.id === q.id && ans.decision === "once" && ans.applied === true,
        JSON.stringify(lines),
      );
      const dec = lines.find((l) =>
        l.event === "decision" && l.target === "/etc/q" && l.question === ans.question
      );
      assert(dec && dec.decision === "allow" && dec.by === "answer:tester", JSON.stringify(lines));
      assertEquals(dec.container.pod, "asker");
      const doc = await Deno.readTextFile(new URL("../../docs/kubernetes-answering.md", import.meta.url));
      const shown = /## The log[\s\S]*?```json\n([\s\S]*?)```/.exec(doc)![1].trim().split("\n").map((l) =>
        JSON.parse(l)
      );
      const optional = new Set(["emulated", "result", "error", "durationMs", "scope"]);
      for (const [example, real] of [[shown[0], ans], [shown[1], dec]]) {
        const want = Object.keys(example).filter((k) => !optional.has(k)).sort();
        const got = Object.keys(real).filter((k) => !optional.has(k)).sort();
        assertEquals(got, want, `${example.event}: the docs' example has other fields than a real line`);
      }
    });
  },
);

agentTest(
  "hallpass-request inside a container: the request reaches the answer service with the pod",
  async () => {
    await withAnswerAgent(
      `${RULES}allow exec /bin/hallpass-request\n`,
      [],
      async (dir, socket, _agent, api) => {
        const rootfs = await makeBundle(`${dir}/b`, {
          socket,
          namespace: "ci",
          pod: "job-1",
          script: "hallpass-request write '/etc/app/**' --reason 'install the config'; echo \"req=$?\"; " +
            'mkdir /etc/app; echo x > /etc/app/f; echo "w=$?"',
        });
        await Deno.copyFile(
          new URL("../../hallpass-request", import.meta.url).pathname,
          `${rootfs}/bin/hallpass-request`,
        );
        await Deno.chmod(`${rootfs}/bin/hallpass-request`, 0o755);
        const run = runContainer("runc", `${dir}/b`, containerId("request"));
        const q = await question(api, "/etc/app/**");
        assertEquals(q.reason, "install the config");
        assertEquals(q.container.pod, "job-1");
        await answer(api, q, "always");
        const r = await run;
        assert(r.stdout.includes("req=0") && r.stdout.includes("w=0"), r.stdout + r.stderr);
        assertEquals(await Deno.readTextFile(`${rootfs}/etc/app/f`), "x\n");
      },
    );
  },
);

agentTest(
  'a connect question carries the pod (it showed "(no pod)" and shared one flood limit with every pod)',
  async () => {
    const server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (server.addr as Deno.NetAddr).port;
    const serving = (async () => {
      for await (const c of server) c.close();
    })();
    try {
      await withAnswerAgent(RULES, [], async (dir, socket, _agent, api) => {
        await makeBundle(`${dir}/b`, {
          socket,
          namespace: "net",
          pod: "fetcher",
          container: "main",
          connect: true,
          hostNetwork: true,
          script: `wget -q -O- http://127.0.0.1:${port}/; echo "w=$?"`,
        });
        const run = runContainer("runc", `${dir}/b`, containerId("askconnect"));
        let q:
          | { id: number; digest: string; op: string; container: { pod: string; namespace: string } }
          | undefined;
        await until(async () => {
          const list = await (await api("/api/questions")).json();
          q = list.questions.find((x: { op: string }) => x.op === "connect");
          return q !== undefined;
        }, "the connect question");
        assertEquals([q!.container.namespace, q!.container.pod], ["net", "fetcher"]);
        await answer(api, q!, "deny");
        const r = await run;
        assert(/w=[1-9]/.test(r.stdout), r.stdout + r.stderr);
      });
    } finally {
      server.close();
      await serving.catch(() => {});
    }
  },
);

/** Opens `n` connections to `port` from 127.0.0.2 that send half a request head and trickle a byte twice a second. */
const SLOW_CLIENTS = `
const net = require("net");
const [port, n] = [Number(process.argv[1]), Number(process.argv[2])];
let made = 0;
for (let i = 0; i < n; i++) {
  const s = net.connect({ port, host: "127.0.0.1", localAddress: "127.0.0.2" });
  s.on("connect", () => { made++; s.write("GET /api/questions HTTP/1.1\\r\\nHost: x\\r\\n"); });
  s.on("error", () => {});
  const t = setInterval(() => { if (!s.destroyed) s.write("X"); else clearInterval(t); }, 500);
}
setInterval(() => console.log(made), 200);
`;

test({
  name: "answer service flooded: slow connections past the agent's file limit; containers are still answered",
  ignore: [...CONTAINERS, tool("node"), tool("prlimit")], // node runs the slow clients; prlimit lowers the limit
}, async () => {
  await withAnswerAgent(RULES, ["--ask-timeout", "20s"], async (dir, socket, agent, api) => {
    const url = /questions at (http:\/\/[0-9.]+:(\d+))\//.exec(agent.output)!;
    // The agent gets a small file limit, so that a flood without bounds would exhaust it (EMFILE in accept).
    const lim = await new Deno.Command("prlimit", {
      args: ["--pid", String(agent.child.pid), "--nofile=400:400"],
    })
      .output();
    assert(lim.success, new TextDecoder().decode(lim.stderr));
    const flood = new Deno.Command(which("node")!, {
      args: ["-e", SLOW_CLIENTS, url[2], "2000"],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    try {
      // Every connection is made (those past the bound are accepted and closed at once), within 60 s (at load).
      const lines = flood.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let seen = "";
      const deadline = setTimeout(() => lines.cancel().catch(() => {}), 60_000);
      while (!/(^|\n)2000\n/.test(seen)) {
        const { value, done } = await lines.read();
        assert(
          !done,
          `not all 2000 connections were made in 60 s (last count: ${seen.trim().split("\n").pop()})`,
        );
        seen = (seen + value).slice(-64);
      }
      clearTimeout(deadline);
      lines.releaseLock();
      // A container's allowed write is answered at once, its asked write reaches a person who answers it.
      const rootfs = await makeBundle(`${dir}/b`, {
        socket,
        script: 'echo a > /tmp/a; echo "a=$?"; echo q > /etc/q; echo "q=$?"',
      });
      const t0 = Date.now();
      const run = runContainer("runc", `${dir}/b`, containerId("flood"));
      const q = await question(api, "/etc/q");
      await answer(api, q, "once");
      const r = await run;
      assert(r.stdout.includes("a=0") && r.stdout.includes("q=0"), r.stdout + r.stderr);
      // Answered (q=0) before the 20 s --ask-timeout already; this bound only catches a run that crawled.
      assert(Date.now() - t0 < 60_000, `took ${Date.now() - t0} ms`);
      assertEquals(await Deno.readTextFile(`${rootfs}/tmp/a`), "a\n");
      // The agent is alive and said it refused connections past its bound.
      await agent.waitOutput(/connection limit reached/);
      assert(!/out of memory|Uncaught|EMFILE|Too many open files/.test(agent.output), agent.output);
    } finally {
      flood.kill("SIGKILL");
      await flood.status;
      await flood.stdout.cancel().catch(() => {});
    }
  });
});

Deno.test("huge command lines: questions and the agent stay small (bounded texts), whatever a container's arguments", async () => {
  await withAnswerAgent(RULES, ["--ask-timeout", "20s"], async (dir, socket, agent, api) => {
    // Three nested shells, each with 14 arguments of 120 KB (5 MB of command lines), whose innermost asks 6 writes.
    const writes = [1, 2, 3, 4, 5, 6].map((i) => `(echo q > /etc/q${i}) &`).join(" ") + " wait";
    const rootfs = await makeBundle(`${dir}/b`, {
      socket,
      script:
        `a=$(head -c 120000 /dev/zero | tr '\\0' A); set -- $a $a $a $a $a $a $a $a $a $a $a $a $a $a; ` +
        `sh -c 'sh -c "sh -c \\"${writes}\\" x \\"\\$@\\"" x "$@"' x "$@"`,
    });
    const run = runContainer("runc", `${dir}/b`, containerId("huge"));
    await until(
      async () => (await (await api("/api/questions")).json()).questions.length === 6,
      "6 questions",
    );
    const t0 = performance.now();
    const r = await api("/api/questions");
    const body = await r.text();
    // Generous at load (2 cores shared): the size bound below is what keeps the list small.
    assert(performance.now() - t0 < 5000, `listing took ${performance.now() - t0} ms`);
    assert(body.length < 256 * 1024, `the list is ${body.length} bytes`);
    const q = JSON.parse(body).questions[0];
    assert(
      q.chain.some((c: string) => /… \[\d{7} bytes, sha256 [0-9a-f]{16}\]$/.test(c)),
      q.chain.join("\n"),
    );
    const hwm = Number(
      /VmHWM:\s+(\d+) kB/.exec(await Deno.readTextFile(`/proc/${agent.child.pid}/status`))![1],
    );
    assert(hwm < 200 * 1024, `the agent's peak RSS is ${hwm} kB`);
    for (const x of JSON.parse(body).questions) await answer(api, x, "deny");
    await run;
    assert(!exists(`${rootfs}/etc/q1`));
  });
});

agentTest(
  "agent restart with --listen: the new agent answers at the same address; answers go on there",
  async () => {
    const dir = await scratch();
    const tokens = `${dir}/tokens`;
    await Deno.writeTextFile(tokens, "tester t0k3n-0123456789abcdef\n");
    await Deno.writeTextFile(`${dir}/rules/default.rules`, RULES);
    const socket = `${dir}/agent.sock`;
    // A fixed port, as under systemd or hostNetwork: the one the first agent got.
    const probe = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (probe.addr as Deno.NetAddr).port;
    probe.close();
    const args = [
      "--socket",
      socket,
      "--rules",
      `${dir}/rules`,
      "--listen",
      `127.0.0.1:${port}`,
      "--token-file",
      tokens,
    ];
    let a: AgentProcess | null = null, b: AgentProcess | null = null;
    const api: Api = (path, init = {}) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        ...init,
        headers: { authorization: "Bearer t0k3n-0123456789abcdef", ...(init.headers ?? {}) },
      });
    try {
      a = await AgentProcess.start(args);
      b = await AgentProcess.start(args, /took over 0 containers/);
      await b.waitOutput(new RegExp(`questions at http://127.0.0.1:${port}/`));
      await a.waitOutput(/handed over; idle until stopped/);
      // Questions now reach the new agent, at the same address.
      const rootfs = await makeBundle(`${dir}/b`, { socket, script: 'echo q > /etc/q; echo "q=$?"' });
      const run = runContainer("runc", `${dir}/b`, containerId("same-port"));
      const q = await question(api, "/etc/q");
      await answer(api, q, "once");
      assert((await run).stdout.includes("q=0"));
      assertEquals(await Deno.readTextFile(`${rootfs}/etc/q`), "q\n");
    } finally {
      await a?.stop();
      await b?.stop();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);

agentTest(
  "agent: a directory at the socket path is a one-line usage error; a stale socket is removed, and said",
  async () => {
    const dir = await scratch();
    try {
      await Deno.mkdir(`${dir}/sock-dir`);
      const r = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--quiet",
          "-A",
          new URL("../../main.ts", import.meta.url).pathname,
          "agent",
          "--socket",
          `${dir}/sock-dir`,
        ],
        stdout: "null",
        stderr: "piped",
      }).output();
      const err = new TextDecoder().decode(r.stderr);
      assertEquals(r.code, 125, err);
      assert(/^hallpass: agent: .*sock-dir exists and is a directory/.test(err), err);
      assert(err.includes("`hallpass agent --help`"), err);
      assert(!/internal error|errno|at /.test(err), err);
      assert(Deno.statSync(`${dir}/sock-dir`).isDirectory, "nothing was changed");
      // A socket left by an agent killed with SIGKILL: the next agent removes it and says so.
      const socket = `${dir}/agent.sock`;
      const dead = await AgentProcess.start(["--socket", socket]);
      await dead.stop("SIGKILL");
      assert(Deno.lstatSync(socket).isSocket);
      const next = await AgentProcess.start(["--socket", socket]);
      try {
        assert(next.output.includes(`removed ${socket}, left by an agent that is gone`), next.output);
      } finally {
        await next.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
);
