/**
 * hallpass-request under hallpass with `--no-ask` (docs/request-protocol.md): the exit codes a session without a person gives,
 * each reached for real through the supervisor: 1 (allowed), 3 (denied / a rule denies part of it),
 * 5 (check: would ask), 7 (category not mediated), 10 (release: nothing granted).
 * (Outside hallpass, 8, is in tests/hallpass_request_cli_test.ts.)
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { q, requestScratch, session, show } from "./request_harness.ts";

Deno.test("request --no-ask: check says 5 outside, 1 inside the project or --allow-path, 3 when a rule denies", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    await Deno.mkdir(`${o}/allowed`);
    await Deno.mkdir(`${o}/x/sub`, { recursive: true });
    await Deno.mkdir(`${o}/tree/secret`, { recursive: true });
    const rules = `${s.base}/deny.rules`;
    await Deno.writeTextFile(rules, `deny write ${o}/x/**\ndeny write ${o}/tree/secret/**\n`);
    const r = await session(
      s,
      ["--no-ask", "--allow-path", `${o}/allowed`, "--rules", rules],
      [
        `req outside check write ${q(o + "/f")}`,
        `req outside_tree check write ${q(o + "/new/**")}`,
        `req project check write ${q(s.project + "/f")}`,
        `req project_rel check write sub/file`,
        `req project_tree check write ./**`,
        `req allow_path check write ${q(o + "/allowed/**")}`,
        `req allow_path_file check write ${q(o + "/allowed/deep/f")}`,
        `req denied check write ${q(o + "/x/sub/f")}`,
        `req denied_tree check write ${q(o + "/x/**")}`,
        `req deny_inside check write ${q(o + "/tree/**")}`,
        `req deny_inside_ask write ${q(o + "/tree/**")}`,
        `req parent_of_deny check write ${q(o + "/**")}`,
        `req system_exec check exec /bin/sh`,
        `req unknown_exec check exec ${q(o + "/prog")}`,
      ].join("\n"),
    );
    assertEquals(r.code, 0, show(r));
    assertEquals(r.rc, {
      outside: "5",
      outside_tree: "5",
      project: "1",
      project_rel: "1",
      project_tree: "1",
      allow_path: "1",
      allow_path_file: "1",
      denied: "3",
      denied_tree: "3",
      deny_inside: "3",
      deny_inside_ask: "3",
      parent_of_deny: "3",
      system_exec: "1",
      unknown_exec: "5",
    }, show(r));
    assert(r.stderr.includes(`hallpass-request: a request would ask: write ${o}/f\n`), show(r));
  } finally {
    await s.cleanup();
  }
});

Deno.test("request --no-ask: a request that would ask is denied (3), and nothing is granted", async () => {
  const s = await requestScratch();
  try {
    const o = s.outside;
    const r = await session(
      s,
      ["--no-ask"],
      [
        `req ask write ${q(o + "/**")} --reason 'need the outside dir'`,
        `req ask_file write ${q(o + "/f")} --for 10m --timeout 5s`,
        `req after check write ${q(o + "/**")}`,
        `wr write ${q(o + "/f")}`,
        `req release release write ${q(o + "/**")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, { ask: "3", ask_file: "3", after: "5", write: "fail", release: "10" }, show(r));
    assert(r.stderr.includes(`hallpass-request: denied: write ${o}/**\n`), show(r));
    assertEquals(await Deno.readDir(o)[Symbol.asyncIterator]().next(), { value: undefined, done: true });
  } finally {
    await s.cleanup();
  }
});

Deno.test("request --no-ask: exec and connect requests when the category is not mediated answer 7", async () => {
  const s = await requestScratch();
  try {
    const r = await session(
      s,
      ["--no-ask", "--mediate", "write"],
      [
        `req exec exec /bin/true`,
        `req exec_check check exec ${q(s.outside + "/prog")}`,
        `req exec_release release exec /bin/true`,
        `req connect connect tcp:127.0.0.1:9`,
        `req connect_check check connect unix:/run/x.sock`,
        `req connect_release release connect 127.0.0.1:9`,
        `req write check write ${q(s.outside + "/f")}`,
      ].join("\n"),
    );
    assertEquals(r.rc, {
      exec: "7",
      exec_check: "7",
      exec_release: "7",
      connect: "7",
      connect_check: "7",
      connect_release: "7",
      write: "5",
    }, show(r));
    assert(/^hallpass-request: exec is not mediated/m.test(r.stderr), show(r));
  } finally {
    await s.cleanup();
  }
});

Deno.test("request --no-ask: connect requests when connect is mediated (check: 1, 3, 5; ranges)", async () => {
  const s = await requestScratch();
  try {
    const rules = `${s.base}/net.rules`;
    await Deno.writeTextFile(rules, "deny connect 10.0.0.5:25\ndeny connect 192.168.0.0/16\n");
    const r = await session(
      s,
      [
        "--no-ask",
        "--mediate",
        "write,exec,connect",
        "--allow-connect",
        "127.0.0.1:8000-9000",
        "--allow-connect",
        `unix:${s.outside}/socks/**`,
        "--allow-connect",
        "tcp:192.168.1.2:443",
        "--rules",
        rules,
      ],
      [
        `req one check connect 127.0.0.1:8080`,
        `req range check connect 127.0.0.1:8000-9000`,
        `req range_wider check connect 127.0.0.1:8000-9001`,
        `req other_addr check connect 127.0.0.2:8080`,
        `req denied check connect tcp:10.0.0.5:25`,
        `req deny_in_net check connect 10.0.0.0/24:25`,
        `req deny_in_ports check connect 10.0.0.5:1-100`,
        `req beside_deny check connect 10.0.0.5:26`,
        `req allow_in_deny check connect tcp:192.168.1.2:443`,
        `req allow_in_deny_wider check connect tcp:192.168.1.2:443-444`,
        `req unix check connect ${q(`unix:${s.outside}/socks/a.sock`)}`,
        `req unix_tree check connect ${q(`unix:${s.outside}/socks/**`)}`,
        `req unix_wider check connect ${q(`unix:${s.outside}/**`)}`,
        `req v6 check connect '[::1]:80'`,
        `req abstract check connect unix:@foo`,
        `req ask connect 127.0.0.2:8080`,
        `req release release connect 127.0.0.2:8080`,
      ].join("\n"),
    );
    assertEquals(r.rc, {
      one: "1",
      range: "1",
      range_wider: "5",
      other_addr: "5",
      denied: "3",
      deny_in_net: "3",
      deny_in_ports: "3",
      beside_deny: "5",
      allow_in_deny: "1",
      allow_in_deny_wider: "3",
      unix: "1",
      unix_tree: "1",
      unix_wider: "5",
      v6: "5",
      abstract: "5",
      ask: "3",
      release: "10",
    }, show(r));
  } finally {
    await s.cleanup();
  }
});
