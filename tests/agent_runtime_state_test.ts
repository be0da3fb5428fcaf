/** The runtime's ContainerProcessState, pod rules files, and `hallpass agent`'s command line (pure code). */
import { deepStrictEqual as assertEquals, ok as assert, throws } from "node:assert/strict";
import { describeContainer, parseProcessState, podRuleFiles } from "../lib/agent/runtime_state.ts";
import { parseAgentArgs } from "../lib/agent/agent_cli.ts";
import { UsageError } from "../lib/types.ts";

// As runc 1.1.5 sent it (one line), and crun 1.8.1 (pretty-printed, pid 0 for an exec'd process).
const RUNC = JSON.stringify({
  ociVersion: "1.0.2-dev",
  fds: ["seccompFd"],
  pid: 4242,
  metadata: "hallpass/1 mediate=write,exec",
  state: {
    ociVersion: "1.0.2-dev",
    id: "abc",
    status: "creating",
    pid: 4242,
    bundle: "/run/b",
    annotations: {
      "io.kubernetes.cri.sandbox-namespace": "team",
      "io.kubernetes.cri.sandbox-name": "builder",
      "io.kubernetes.cri.container-name": "app",
      "io.kubernetes.cri.container-type": "container",
    },
  },
});

Deno.test("runc's state: the pod, the pids, the metadata", () => {
  const s = parseProcessState(RUNC);
  assertEquals(s.identity, { namespace: "team", pod: "builder", container: "app", id: "abc" });
  assertEquals([s.pid, s.initPid, s.seccompFdIndex, s.sandbox], [4242, 4242, 0, false]);
  assertEquals(s.metadata, "hallpass/1 mediate=write,exec");
  assertEquals(describeContainer(s.identity), "team/builder app");
});

Deno.test("crun's exec state (pid 0, pretty-printed) and CRI-O's annotations", () => {
  const crun = JSON.stringify(
    {
      ociVersion: "0.2.0",
      fds: ["other", "seccompFd"],
      pid: 0,
      state: {
        id: "x",
        pid: 0,
        annotations: {
          "io.kubernetes.pod.namespace": "ns",
          "io.kubernetes.pod.name": "p",
          "io.kubernetes.container.name": "c",
        },
      },
    },
    null,
    4,
  );
  const s = parseProcessState(crun);
  assertEquals([s.pid, s.initPid, s.seccompFdIndex], [0, 0, 1]);
  assertEquals(s.identity, { namespace: "ns", pod: "p", container: "c", id: "x" });
  assertEquals(describeContainer({ namespace: "", pod: "", container: "", id: "bare" }), "container bare");
});

Deno.test("a sandbox (pause) container is told apart", () => {
  const j = JSON.parse(RUNC);
  j.state.annotations["io.kubernetes.cri.container-type"] = "sandbox";
  assert(parseProcessState(JSON.stringify(j)).sandbox);
});

Deno.test("malformed states are refused with a reason", () => {
  const cases: [string, RegExp][] = [
    ["", /not JSON/],
    ["[1]", /not an object/],
    ['{"fds":["seccompFd"],"state":{"id":"a"}}', /no ociVersion/],
    ['{"ociVersion":"1","fds":[],"state":{"id":"a"}}', /no seccompFd/],
    ['{"ociVersion":"1","fds":["seccompFd"]}', /no state/],
    ['{"ociVersion":"1","fds":["seccompFd"],"state":{"id":""}}', /no container id/],
  ];
  for (const [text, re] of cases) throws(() => parseProcessState(text), re, text);
  // Odd values are not trusted: a negative or fractional pid is "unknown", non-string annotations are dropped.
  const j = JSON.parse(RUNC);
  j.pid = -1;
  j.state.pid = 1.5;
  j.state.annotations["io.kubernetes.cri.sandbox-name"] = { evil: true };
  const s = parseProcessState(JSON.stringify(j));
  assertEquals([s.pid, s.initPid, s.identity.pod], [0, 0, ""]);
});

Deno.test("rules files for a pod: general to specific; names that are not Kubernetes names build no path", () => {
  const id = (namespace: string, pod: string) => ({ namespace, pod, container: "c", id: "i" });
  assertEquals(podRuleFiles(id("team", "builder-7f9c")), [
    "default.rules",
    "team.rules",
    "team.builder-7f9c.rules",
  ]);
  assertEquals(podRuleFiles(id("default", "web")), ["default.rules", "default.web.rules"]);
  assertEquals(podRuleFiles(id("", "")), ["default.rules"]);
  for (
    const [ns, pod] of [["../etc", "x"], ["team", "../../x"], ["Team", "x"], ["team", "a/b"], ["t", ".x"]]
  ) {
    const files = podRuleFiles(id(ns, pod));
    assert(files.every((f) => !f.includes("/") && !f.startsWith(".")), `${ns} ${pod}: ${files}`);
  }
  assertEquals(podRuleFiles(id("team", "../../x")), ["default.rules", "team.rules"]);
});

Deno.test("hallpass agent's options: defaults, the profile, and clear errors", () => {
  const inv = parseAgentArgs([]);
  assert(inv.kind === "run");
  assertEquals(inv.opts.socket, "/var/run/hallpass/agent.sock");
  assertEquals(inv.opts.askTimeoutMs, 60_000);
  const p = parseAgentArgs(["--print-profile", "--socket", "/run/x.sock"]);
  assert(p.kind === "profile");
  assertEquals(JSON.parse(p.json).listenerPath, "/run/x.sock");
  assertEquals(parseAgentArgs(["--help"]).kind, "help");
  const bad: [string[], RegExp][] = [
    [["--socket", "rel.sock"], /absolute/],
    [["--socket", "/" + "x".repeat(120)], /too long/],
    [["--listen", "nope"], /HOST:PORT/],
    [["--listen", "h:70000", "--token-file", "/t"], /HOST:PORT/],
    [["--listen", "127.0.0.1:7474"], /needs --token-file/],
    [["--token-file", "/t"], /goes with --listen/],
    [["--ask-timeout", "soon"], /ask-timeout/],
    [["--rules", "/nonexistent-hallpass-rules"], /--rules/],
    [["--socket", "/a", "--socket", "/b"], /twice/],
    [["--connect"], /goes with --print-profile/],
    [["--bogus"], /unknown argument/],
    [["--log"], /needs a value/],
  ];
  for (const [argv, re] of bad) {
    throws(
      () => parseAgentArgs(argv),
      (e: unknown) => e instanceof UsageError && re.test(e.message),
      argv.join(" "),
    );
  }
});
