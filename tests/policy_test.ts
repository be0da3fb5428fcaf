import process from "node:process";
import assert from "node:assert/strict";
import type { ConnectTarget } from "../lib/policy/connect_dest.ts";
import { newGroupTable } from "../lib/policy/exec_groups.ts";
import { type Decision, Policy, type PolicyOptions } from "../lib/policy/policy.ts";
import { parseRules } from "../lib/policy/rules_file.ts";
import { type Op, type Rule, UsageError } from "../lib/types.ts";

const HOME = "/home/me";
const NOW = 1_700_000_000_000;
const BIN: Record<string, string> = {
  git: "/usr/bin/git",
  node: "/home/me/.nvm/bin/node",
  bash: "/bin/bash",
};

function options(extra: Partial<PolicyOptions> = {}): PolicyOptions {
  return { home: HOME, cwd: "/proj", lookup: (p) => BIN[p] ?? null, groups: newGroupTable(), ...extra };
}

/** Rules from rules-file text (line numbers identify them in the tables). */
function rules(text: string, now = NOW): Rule[] {
  return parseRules(text, {
    file: "r",
    project: false,
    cwd: "/proj",
    home: HOME,
    lookup: (p) => BIN[p] ?? null,
    now,
    groups: newGroupTable(),
  });
}

const builtin: Rule = {
  effect: "allow",
  op: "exec",
  target: "@system",
  source: { kind: "builtin", what: "@system" },
};

type Want = "allow" | "deny" | "ask";
/** [rules text, op, target, effect, line of the deciding rule (0: none)] */
type Case = [string, Op, string | ConnectTarget, Want, number];

function run(cases: Case[], opts: PolicyOptions = options()) {
  return async (t: Deno.TestContext) => {
    for (const [text, op, target, want, line] of cases) {
      const name = `${text.replaceAll("\n", " | ")} :: ${op} ${
        typeof target === "string" ? target : JSON.stringify(target)
      }`;
      await t.step(name, () => {
        const p = new Policy(rules(text), opts);
        const d = p.decide(op, target, NOW);
        assert.equal(d.effect, want, d.why);
        const src = d.rule?.source;
        assert.equal(src?.kind === "file" ? src.line : 0, line, d.why);
      });
    }
  };
}

/**
 * CPU time of this process in ms (user + system): what the speed tests measure, so that a loaded machine (other
 * processes taking the cores) does not make them fail; the decisions themselves are single-threaded.
 */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

Deno.test(
  "write: specificity and deny",
  run([
    ["", "write", "/tmp/x", "ask", 0],
    ["allow write /tmp/**", "write", "/tmp/x", "allow", 1],
    ["allow write /tmp/**", "write", "/tmp", "allow", 1],
    ["allow write /tmp/**", "write", "/tmpx", "ask", 0],
    ["allow write /tmp/x", "write", "/tmp/x/y", "ask", 0],
    ["allow write /**", "write", "/etc/passwd", "allow", 1],
    ["allow write /**\ndeny write /etc/**", "write", "/etc/passwd", "deny", 2],
    ["allow write /**\ndeny write /etc/**", "write", "/var/x", "allow", 1],
    // deeper wins, whichever way round
    ["deny write ~/**\nallow write ~/.npm/**", "write", "/home/me/.npm/_cacache/x", "allow", 2],
    ["allow write ~/.npm/**\ndeny write ~/**", "write", "/home/me/.npm/_cacache/x", "allow", 1],
    ["deny write ~/**\nallow write ~/.npm/**", "write", "/home/me/.ssh/id", "deny", 1],
    ["allow write ~/**\ndeny write ~/.ssh/**", "write", "/home/me/.ssh/authorized_keys", "deny", 2],
    [
      "allow write ~/**\ndeny write ~/.ssh/**\nallow write ~/.ssh/known_hosts",
      "write",
      "/home/me/.ssh/known_hosts",
      "allow",
      3,
    ],
    [
      "deny write ~/.npm/_logs/**\nallow write ~/.npm/**\ndeny write ~/**",
      "write",
      "/home/me/.npm/_logs/1.log",
      "deny",
      1,
    ],
    // equal specificity: deny wins, in either order
    ["allow write /a/**\ndeny write /a/**", "write", "/a/b", "deny", 2],
    ["deny write /a/**\nallow write /a/**", "write", "/a/b", "deny", 1],
    ["allow write /a/f\ndeny write /a/f", "write", "/a/f", "deny", 2],
    // exact beats a tree at the same path; a deeper tree beats an exact parent
    ["deny write /a/**\nallow write /a", "write", "/a", "allow", 2],
    ["allow write /a/**\ndeny write /a", "write", "/a", "deny", 2],
    ["allow write /a/**\ndeny write /a", "write", "/a/b", "allow", 1],
    // duplicates
    ["allow write /a/**\nallow write /a/**", "write", "/a/b", "allow", 1],
    // malformed targets are denied
    ["allow write /**", "write", "relative/path", "deny", 0],
    ["allow write /**", "write", "", "deny", 0],
    // op separation
    ["allow exec /tmp/**", "write", "/tmp/x", "ask", 0],
    ["allow write /tmp/**", "exec", "/tmp/x", "ask", 0],
  ]),
);

Deno.test("write: expiry", async (t) => {
  const cases: [string, number, Want, number][] = [
    // [rules, now offset, effect, line]
    ["allow write /a/** for 1m", 0, "allow", 1],
    ["allow write /a/** for 1m", 59_999, "allow", 1],
    ["allow write /a/** for 1m", 60_000, "ask", 0],
    ["allow write /a/** for 1m\ndeny write /a/**", 0, "deny", 2],
    ["deny write /a/b/** for 1m\nallow write /a/**", 30_000, "deny", 1],
    ["deny write /a/b/** for 1m\nallow write /a/**", 61_000, "allow", 2],
    ["allow write /a/b/** for 1m\ndeny write /a/**", 61_000, "deny", 2],
  ];
  for (const [text, dt, want, line] of cases) {
    await t.step(`${text.replaceAll("\n", " | ")} at +${dt}ms`, () => {
      const p = new Policy(rules(text), options());
      const d = p.decide("write", "/a/b/c", NOW + dt);
      assert.equal(d.effect, want);
      const src = d.rule?.source;
      assert.equal(src?.kind === "file" ? src.line : 0, line);
    });
  }
  await t.step("prune drops expired rules", () => {
    const p = new Policy(rules("allow write /a/** for 1m\nallow write /b/**"), options());
    assert.equal(p.prune(NOW + 60_000), 1);
    assert.equal(p.rules.length, 1);
  });
});

Deno.test(
  "exec",
  run([
    ["", "exec", "/usr/bin/ls", "ask", 0],
    ["allow exec git", "exec", "/usr/bin/git", "allow", 1],
    ["allow exec git", "exec", "/usr/bin/gitk", "ask", 0],
    ["allow exec @git", "exec", "/usr/bin/git", "allow", 1],
    ["allow exec @node", "exec", "/home/me/.nvm/bin/node", "allow", 1],
    ["allow exec @system", "exec", "/usr/bin/ls", "allow", 1],
    // The loader as a program: @system does not allow it, only a rule naming it (lib/policy/loader.ts).
    ["allow exec @system", "exec", "/lib64/ld-linux-x86-64.so.2", "deny", 0],
    [
      "allow exec @system\nallow exec /lib64/ld-linux-x86-64.so.2",
      "exec",
      "/lib64/ld-linux-x86-64.so.2",
      "allow",
      2,
    ],
    ["allow exec /lib64/**", "exec", "/lib64/ld-linux-x86-64.so.2", "deny", 0],
    ["allow exec /lib64/ld-*", "exec", "/lib64/ld-linux-x86-64.so.2", "deny", 0],
    ["allow exec @system", "exec", "/usr/lib/musl/lib/libc.so", "deny", 0],
    ["allow exec @system", "exec", "/lib/ld-musl-x86_64.so.1", "deny", 0],
    ["allow exec @system", "exec", "/usr/lib/libc.so.6", "allow", 1],
    ["allow exec @system", "exec", "/libx32/x", "allow", 1],
    ["allow exec @system", "exec", "/nix/store/abc-hello/bin/hello", "allow", 1],
    ["allow exec @system", "exec", "/library/x", "ask", 0],
    ["allow exec @system", "exec", "/home/me/bin/x", "ask", 0],
    ["allow exec @system\ndeny exec @shells", "exec", "/bin/bash", "deny", 2],
    ["allow exec @system\ndeny exec /usr/bin/curl", "exec", "/usr/bin/curl", "deny", 2],
    ["allow exec @system\ndeny exec /usr/bin/curl", "exec", "/usr/bin/wget", "allow", 1],
    ["allow exec ~/.local/bin/**", "exec", "/home/me/.local/bin/tool", "allow", 1],
    [
      "deny exec ~/.local/bin/**\nallow exec ~/.local/bin/tool",
      "exec",
      "/home/me/.local/bin/tool",
      "allow",
      2,
    ],
  ]),
);

Deno.test("exec: @system does not apply to programs the sandbox may write", async (t) => {
  const writable = new Set(["/usr/local/bin/evil", "/opt/mine/tool"]);
  let asked = 0;
  const isWritable = (p: string) => {
    asked++;
    return writable.has(p) || p.startsWith("/opt/mine/");
  };
  const base = (extra: Rule[] = []) => new Policy([builtin, ...extra], options({ isWritable }));
  const cases: [Rule[], string, Want, string][] = [
    [[], "/usr/bin/ls", "allow", "allowed by"],
    [[], "/usr/local/bin/evil", "ask", "the sandbox may write this program"],
    [[], "/opt/mine/tool", "ask", "the sandbox may write this program"],
    [rules("allow exec /opt/mine/**"), "/opt/mine/tool", "allow", "allowed by"],
    [rules("deny exec /opt/**"), "/opt/mine/tool", "deny", "denied by"],
    [rules("allow exec @git"), "/usr/bin/git", "allow", "allowed by"],
  ];
  for (const [extra, path, want, why] of cases) {
    await t.step(`${path} → ${want}`, () => {
      const d = base(extra).decide("exec", path, NOW);
      assert.equal(d.effect, want);
      assert.ok(d.why.startsWith(why), d.why);
    });
  }
  await t.step("isWritable is asked only when an @system allow covers the program", () => {
    asked = 0;
    const p = base(rules("allow exec ~/bin/**"));
    p.decide("exec", "/home/me/bin/x", NOW);
    assert.equal(asked, 0);
    p.decide("exec", "/usr/bin/x", NOW);
    assert.equal(asked, 1);
  });
  await t.step("isWritable may call decide again", () => {
    const holder: { p?: Policy } = {};
    const reentrant = (path: string) =>
      holder.p!.decide("write", path, NOW).effect === "allow" ||
      holder.p!.decide("exec", "/home/me/x", NOW).effect === "allow";
    const p = new Policy(
      [builtin, ...rules("allow write /usr/local/**\ndeny exec /usr/bin/**")],
      options({ isWritable: reentrant }),
    );
    holder.p = p;
    assert.equal(p.decide("exec", "/usr/local/bin/tool", NOW).effect, "ask");
    assert.equal(p.decide("exec", "/usr/bin/ls", NOW).effect, "deny");
    assert.equal(p.decide("exec", "/usr/sbin/x", NOW).effect, "allow");
    assert.deepEqual(p.explain("exec", "/usr/sbin/x", NOW).matching.map((m) => m.rule), [builtin]);
  });
  await t.step("without isWritable @system always applies", () => {
    assert.equal(new Policy([builtin], options()).decide("exec", "/usr/local/bin/evil", NOW).effect, "allow");
  });
  await t.step("a writable program in a group that nests @system", () => {
    const groups = newGroupTable();
    groups.set("@base", ["@system"]);
    const p = new Policy([{ ...builtin, target: "@base" }], options({ isWritable, groups }));
    assert.equal(p.decide("exec", "/opt/mine/tool", NOW).effect, "ask");
    assert.equal(p.decide("exec", "/usr/bin/ls", NOW).effect, "allow");
  });
});

const t4 = (addr: string, port: number, proto: "tcp" | "udp" = "tcp"): ConnectTarget => ({
  family: "inet",
  proto,
  addr,
  port,
});
const t6 = (addr: string, port: number, proto: "tcp" | "udp" = "tcp"): ConnectTarget => ({
  family: "inet6",
  proto,
  addr,
  port,
});

Deno.test(
  "connect",
  run([
    ["", "connect", t4("1.2.3.4", 80), "ask", 0],
    ["allow connect *", "connect", t4("1.2.3.4", 80), "allow", 1],
    ["allow connect *", "connect", { family: "unix", path: "/run/x" }, "allow", 1],
    ["allow connect *\ndeny connect 0.0.0.0/0:25", "connect", t4("8.8.8.8", 25), "deny", 2],
    ["allow connect *\ndeny connect 0.0.0.0/0:25", "connect", t4("8.8.8.8", 26), "allow", 1],
    // a host beats a whole-internet port rule; a port-limited small network beats a host
    ["deny connect 0.0.0.0/0:25\nallow connect 10.0.0.5", "connect", t4("10.0.0.5", 25), "allow", 2],
    ["deny connect 10.0.0.0/24:25\nallow connect 10.0.0.5", "connect", t4("10.0.0.5", 25), "deny", 1],
    ["allow connect 127.0.0.1", "connect", t6("::ffff:127.0.0.1", 8080), "allow", 1],
    ["allow connect [::ffff:127.0.0.1]", "connect", t4("127.0.0.1", 8080), "allow", 1],
    ["allow connect [::]/0", "connect", t6("::ffff:127.0.0.1", 8080), "ask", 0],
    ["allow connect [::1]:8000-8999", "connect", t6("::1", 8999), "allow", 1],
    ["allow connect [::1]:8000-8999", "connect", t6("::1", 9000), "ask", 0],
    ["allow connect tcp:[::1]\ndeny connect udp:*", "connect", t6("::1", 53, "udp"), "deny", 2],
    ["allow connect tcp:*\ndeny connect tcp:*", "connect", t4("1.1.1.1", 443), "deny", 2],
    [
      "allow connect unix:/run/**\ndeny connect unix:/run/docker.sock",
      "connect",
      { family: "unix", path: "/run/docker.sock" },
      "deny",
      2,
    ],
    [
      "allow connect unix:/run/**\ndeny connect unix:/run/docker.sock",
      "connect",
      { family: "unix", path: "/run/user/1/bus" },
      "allow",
      1,
    ],
    [
      "allow connect unix:@*\ndeny connect unix:@/tmp/.X11*",
      "connect",
      { family: "unix", abstract: "/tmp/.X11-unix/X0" },
      "deny",
      2,
    ],
    [
      "allow connect unix:@*\ndeny connect unix:@/tmp/.X11*",
      "connect",
      { family: "unix", abstract: "dbus-xyz" },
      "allow",
      1,
    ],
    ["allow connect tcp:127.0.0.1:8080", "connect", "tcp:127.0.0.1:8080", "allow", 1],
    ["allow connect *", "connect", "tcp:example.com:80", "deny", 0],
    ["allow connect 1.2.3.4 for 1m", "connect", t4("1.2.3.4", 1), "allow", 1],
  ]),
);

Deno.test("explain lists every live match, most specific first", () => {
  const p = new Policy(
    rules(
      "allow write /**\ndeny write ~/**\nallow write ~/.npm/**\nallow write /tmp/**\nallow write ~/.npm/** for 1s",
    ),
    options(),
  );
  const { decision, matching } = p.explain("write", "/home/me/.npm/x", NOW + 5000);
  assert.equal(decision.effect, "allow");
  assert.deepEqual(
    matching.map((m) => [m.rule.source.kind === "file" && m.rule.source.line, m.specificity]),
    [[3, 6], [2, 4], [1, 0]],
  );
  const c = new Policy(rules("allow connect *\ndeny connect 0.0.0.0/0:25"), options()).explain(
    "connect",
    t4("1.2.3.4", 25),
    NOW,
  );
  assert.equal(c.decision.effect, "deny");
  assert.equal(c.matching.length, 2);
  assert.equal(c.matching[0].rule.effect, "deny");
  const e = new Policy([builtin], options()).explain("exec", "/usr/bin/ls", NOW);
  assert.deepEqual(e.matching.map((m) => m.rule), [builtin]);
});

Deno.test("add and remove", () => {
  const p = new Policy([], options());
  assert.equal(p.decide("write", "/a/b", NOW).effect, "ask");
  const r: Rule = {
    effect: "allow",
    op: "write",
    target: "/a/**",
    source: { kind: "answer", by: "terminal" },
  };
  p.add(r);
  const d = p.decide("write", "/a/b", NOW);
  assert.equal(d.effect, "allow");
  assert.equal(d.rule, r);
  assert.equal(d.why, 'allowed by "allow write /a/**" (answer by terminal)');
  p.add({ effect: "deny", op: "write", target: "/a/b", source: { kind: "request", requestId: 7 } });
  assert.equal(p.decide("write", "/a/b", NOW).why, 'denied by "deny write /a/b" (hallpass-request #7)');
  assert.equal(p.remove((x) => x.source.kind === "request"), 1);
  assert.equal(p.decide("write", "/a/b", NOW).effect, "allow");
  assert.equal(p.remove(() => false), 0);
  assert.equal(p.rules.length, 1);
  assert.throws(() => p.add({ ...r, target: "/a/*/b" }), UsageError);
  assert.throws(() => p.add({ ...r, op: "connect", target: "example.com" }), UsageError);
  assert.throws(() => p.add({ ...r, op: "exec", target: "nosuch" }), UsageError);
  assert.equal(p.rules.length, 1, "a rule that fails to compile is not added");
  // targets with ~ and relative paths are resolved with the policy's home and cwd
  p.add({ ...r, target: "~/.npm/**" });
  p.add({ ...r, target: "build/**" });
  assert.equal(p.decide("write", "/home/me/.npm/x", NOW).effect, "allow");
  assert.equal(p.decide("write", "/proj/build/x", NOW).effect, "allow");
  assert.ok(Object.isFrozen(p.decide("write", "/proj/build/x", NOW)));
});

Deno.test("hash collisions do not confuse paths", () => {
  // Many rules with similar paths: every decision must find exactly its own rule.
  const rs: Rule[] = [];
  for (let i = 0; i < 5000; i++) {
    rs.push({
      effect: i % 2 ? "deny" : "allow",
      op: "write",
      target: `/d/${i}/**`,
      source: { kind: "cli", option: `${i}` },
    });
  }
  const p = new Policy(rs, options());
  for (let i = 0; i < 5000; i++) {
    const d = p.decide("write", `/d/${i}/f`, NOW);
    assert.equal(d.rule, rs[i]);
  }
  assert.equal(p.decide("write", "/d/5000/f", NOW).effect, "ask");
});

Deno.test("speed: 100k decisions with 1,000 rules in under a second", () => {
  const rs: Rule[] = [builtin];
  for (let i = 0; i < 1000; i++) {
    const k = i % 4;
    const op: Op = k === 3 ? "connect" : k === 2 ? "exec" : "write";
    const target = op === "connect"
      ? `tcp:10.${i >> 8}.${i & 255}.0/24:${1000 + i}`
      : `/home/me/p${i}/sub/**`;
    rs.push({ effect: i % 3 ? "allow" : "deny", op, target, source: { kind: "cli", option: "x" } });
  }
  const p = new Policy(rs, options({ isWritable: () => false }));
  const paths = Array.from({ length: 64 }, (_, i) => `/home/me/p${i * 4}/sub/deeper/dir/file${i}.txt`);
  const targets = Array.from({ length: 16 }, (_, i) => t4(`10.0.${i * 4 + 3}.9`, 1003 + i * 4));
  // warm up
  for (let i = 0; i < 10_000; i++) p.decide("write", paths[i & 63], NOW);
  let allowed = 0;
  const t0 = cpuMs();
  for (let i = 0; i < 100_000; i++) {
    if (p.decide("write", paths[i & 63], NOW).effect === "allow") allowed++;
  }
  const writeMs = cpuMs() - t0;
  const t1 = cpuMs();
  for (let i = 0; i < 100_000; i++) p.decide("exec", "/usr/bin/git", NOW);
  const execMs = cpuMs() - t1;
  const t2 = cpuMs();
  for (let i = 0; i < 100_000; i++) p.decide("connect", targets[i & 15], NOW);
  const connectMs = cpuMs() - t2;
  console.log(
    `100k decisions, 1,000 rules: write ${writeMs.toFixed(1)} ms, exec ${execMs.toFixed(1)} ms, connect ${
      connectMs.toFixed(1)
    } ms`,
  );
  assert.ok(allowed > 0);
  assert.ok(writeMs < 1000, `write ${writeMs} ms`);
  assert.ok(execMs < 1000, `exec ${execMs} ms`);
  assert.ok(connectMs < 1000, `connect ${connectMs} ms`);
});

Deno.test("speed: 100,000 rules compile and decide fast", () => {
  const rs: Rule[] = [];
  for (let i = 0; i < 100_000; i++) {
    rs.push({ effect: "allow", op: "write", target: `/data/${i}/**`, source: { kind: "cli", option: "x" } });
  }
  const t0 = cpuMs();
  const p = new Policy(rs, options());
  const compileMs = cpuMs() - t0;
  const t1 = cpuMs();
  for (let i = 0; i < 100_000; i++) p.decide("write", `/data/${i}/x`, NOW);
  const decideMs = cpuMs() - t1;
  console.log(`100,000 rules: compile ${compileMs.toFixed(0)} ms, 100k decisions ${decideMs.toFixed(0)} ms`);
  // ~0.4 s and ~0.1 s here: bounds a loaded machine keeps, that a slow algorithm does not.
  assert.ok(compileMs < 15_000, `compile ${compileMs} ms`);
  assert.ok(decideMs < 5000, `decide ${decideMs} ms`);
});

Deno.test("a very long path is decided in linear time", () => {
  const p = new Policy(rules("allow write /deep/**"), options());
  const long = "/deep" + "/x".repeat(500_000);
  const t0 = performance.now();
  assert.equal(p.decide("write", long, NOW).effect, "allow");
  assert.equal(p.decide("write", "/other" + long, NOW).effect, "ask");
  assert.ok(performance.now() - t0 < 5000, `${performance.now() - t0} ms`); // ~0.2 s; quadratic: minutes
});

Deno.test("decide allocates nothing in the common path", () => {
  // `now` is a small integer here: a time in ms since the epoch is a double, and an optimised caller may box a
  // double argument (16 bytes) when it calls a function it did not inline. That cost is the caller's, not
  // decide's.
  const now = 1_000_000;
  const rs: Rule[] = [
    builtin,
    ...rules("allow write ~/.npm/**\ndeny write ~/**\nallow connect 200.0.0.0/8:80", now),
  ];
  const p = new Policy(rs, options({ isWritable: () => false }));
  const target = t6("::ffff:200.1.2.3", 80);
  const calls: [string, Want, () => Decision][] = [
    ["write", "allow", () => p.decide("write", "/home/me/.npm/_cacache/index-v5/ab/cd", now)],
    ["exec", "allow", () => p.decide("exec", "/usr/bin/git", now)],
    ["connect", "allow", () => p.decide("connect", target, now)],
  ];
  for (const [name, want, f] of calls) {
    assert.equal(f().effect, want);
    for (let i = 0; i < 100_000; i++) f();
    // Median of 9 rounds: a garbage collection of earlier tests' garbage shows as one odd round.
    const rounds: number[] = [];
    for (let r = 0; r < 9; r++) {
      const before = Deno.memoryUsage().heapUsed;
      for (let i = 0; i < 100_000; i++) f();
      rounds.push((Deno.memoryUsage().heapUsed - before) / 100_000);
    }
    const perCall = rounds.sort((a, b) => a - b)[4];
    assert.ok(perCall < 4, `${name}: ${perCall} bytes per call (rounds: ${rounds.map((x) => x.toFixed(1))})`);
  }
});

Deno.test(
  "write: a glob in the last component covers names in that one directory, and ranks by specificity",
  run([
    ["allow write ~/.claude.json*", "write", "/home/me/.claude.json", "allow", 1],
    ["allow write ~/.claude.json*", "write", "/home/me/.claude.json.tmp.12.ab", "allow", 1],
    ["allow write ~/.claude.json*", "write", "/home/me/.claude.json.d/x", "ask", 0],
    ["allow write ~/.claude.json*", "write", "/home/me/.claude.jso", "ask", 0],
    ["allow write ~/.claude.json*", "write", "/home/me/.bashrc", "ask", 0],
    ["allow write ~/.claude.json*", "write", "/home/me", "ask", 0],
    ["allow write /tmp/claude-*-cwd", "write", "/tmp/claude-8c4b-cwd", "allow", 1],
    ["allow write /tmp/claude-*-cwd", "write", "/tmp/claude-8c4b-cwdx", "ask", 0],
    ["allow write /tmp/claude-*-cwd", "write", "/tmp/claude-cwd", "ask", 0],
    ["allow write /tmp/claude-*-cwd", "write", "/tmp/claude-a/b-cwd", "ask", 0],
    ["allow write /*", "write", "/x", "allow", 1],
    ["allow write /*", "write", "/x/y", "ask", 0],
    // an exact name beats the glob, the glob beats its directory's tree, a deeper tree ties and deny wins
    ["allow write ~/.claude.json*\ndeny write ~/.claude.json", "write", "/home/me/.claude.json", "deny", 2],
    ["allow write ~/.claude.json*\ndeny write ~/**", "write", "/home/me/.claude.json.tmp.1", "allow", 1],
    ["deny write ~/.claude.json*\nallow write ~/**", "write", "/home/me/.claude.json.tmp.1", "deny", 1],
    ["allow write ~/.c*\ndeny write ~/.cache/**", "write", "/home/me/.cache", "deny", 2],
    ["allow write ~/.c*\ndeny write ~/.cache/**", "write", "/home/me/.config", "allow", 1],
    ["allow write ~/.c*\ndeny write ~/.c*", "write", "/home/me/.c", "deny", 2],
    // globs of other directories with the same hash bucket are not confused
    ["allow write /a/x*\nallow write /b/y*", "write", "/a/y1", "ask", 0],
    ["allow write /a/x*\nallow write /b/y*", "write", "/b/y1", "allow", 2],
    ["allow exec /opt/tool-*", "exec", "/opt/tool-1.2", "allow", 1],
    ["allow exec /opt/tool-*", "exec", "/opt/tool-1.2/bin/x", "ask", 0],
  ]),
);

Deno.test("glob rules: expiry, explain and pathEntries", () => {
  const p = new Policy(rules("allow write /tmp/x-* for 1s\ndeny write /tmp/x-secret*"), options());
  assert.equal(p.decide("write", "/tmp/x-1", NOW).effect, "allow");
  assert.equal(p.decide("write", "/tmp/x-1", NOW + 2000).effect, "ask");
  assert.equal(p.decide("write", "/tmp/x-secret", NOW).effect, "deny");
  assert.equal(p.explain("write", "/tmp/x-secret.1", NOW).matching.length, 2);
  const e = p.pathEntries("write");
  assert.deepEqual(e.map((x) => [x.path, x.glob, x.tree]).sort(), [
    ["/tmp/x-*", true, false],
    ["/tmp/x-secret*", true, false],
  ]);
});
