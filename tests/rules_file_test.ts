import assert from "node:assert/strict";
import { BUILTIN_GROUPS, defineGroup, expandGroup, newGroupTable } from "../lib/policy/exec_groups.ts";
import {
  formatRule,
  parseRules,
  parseRuleTarget,
  quoteTarget,
  ruleFileLine,
  RulesError,
} from "../lib/policy/rules_file.ts";
import { type Rule, UsageError } from "../lib/types.ts";

const HOME = "/home/me";
const NOW = 1_700_000_000_000;
const BIN: Record<string, string> = {
  git: "/usr/bin/git",
  node: "/home/me/.nvm/versions/node/v22/bin/node",
  npm: "/home/me/.nvm/versions/node/v22/bin/npm",
  bash: "/bin/bash",
  mytool: "/opt/x/bin/mytool",
};
const lookup = (p: string) => BIN[p] ?? null;
const dirs = new Set(["/home/me/.cargo", "/proj/out"]);

function opts(extra: Partial<Parameters<typeof parseRules>[1]> = {}) {
  return {
    file: "rules",
    project: false,
    cwd: "/proj",
    home: HOME,
    isDir: (p: string) => dirs.has(p),
    lookup,
    now: NOW,
    groups: newGroupTable(),
    ...extra,
  };
}

const src = (line: number, project = false) => ({ kind: "file" as const, file: "rules", line, project });

Deno.test("parseRules: good lines", async (t) => {
  const cases: [string, Omit<Rule, "source">[]][] = [
    ["", []],
    ["# only a comment\n\n   \n\t# indented comment", []],
    ["allow write ~/.npm/**", [{ effect: "allow", op: "write", target: "/home/me/.npm/**" }]],
    ["allow write ~/.cargo", [{ effect: "allow", op: "write", target: "/home/me/.cargo/**" }]],
    ["allow write out/log.txt", [{ effect: "allow", op: "write", target: "/proj/out/log.txt" }]],
    ["allow write out", [{ effect: "allow", op: "write", target: "/proj/out/**" }]],
    ["allow write ~/.claude.json*", [{ effect: "allow", op: "write", target: "/home/me/.claude.json*" }]],
    ["allow write /tmp/claude-*-cwd", [{ effect: "allow", op: "write", target: "/tmp/claude-*-cwd" }]],
    ["deny write out/../x*", [{ effect: "deny", op: "write", target: "/proj/x*" }]],
    ["deny write ../../etc/passwd", [{ effect: "deny", op: "write", target: "/etc/passwd" }]],
    ["  allow   write\t/tmp/x   ", [{ effect: "allow", op: "write", target: "/tmp/x" }]],
    ["allow write /tmp/x # trailing comment", [{ effect: "allow", op: "write", target: "/tmp/x" }]],
    ["allow write /tmp/a#b", [{ effect: "allow", op: "write", target: "/tmp/a#b" }]],
    ['allow write "/home/me/My Files/**"', [{
      effect: "allow",
      op: "write",
      target: "/home/me/My Files/**",
    }]],
    ['allow write "/tmp/q\\"uote#"  # c', [{ effect: "allow", op: "write", target: '/tmp/q"uote#' }]],
    ["allow exec /usr/local/bin/hallpass-request", [{
      effect: "allow",
      op: "exec",
      target: "/usr/local/bin/hallpass-request",
    }]],
    ["allow exec git", [{ effect: "allow", op: "exec", target: "/usr/bin/git" }]],
    ["allow exec ~/.local/bin/**", [{ effect: "allow", op: "exec", target: "/home/me/.local/bin/**" }]],
    ["allow exec @node", [{ effect: "allow", op: "exec", target: "@node" }]],
    ["deny exec @system", [{ effect: "deny", op: "exec", target: "@system" }]],
    ["deny connect 0.0.0.0/0:25", [{ effect: "deny", op: "connect", target: "0.0.0.0/0:25" }]],
    ["allow connect tcp:[::1]:8080", [{ effect: "allow", op: "connect", target: "tcp:[::1]:8080" }]],
    ["allow connect unix:@prefix*", [{ effect: "allow", op: "connect", target: "unix:@prefix*" }]],
    ["allow connect *", [{ effect: "allow", op: "connect", target: "*" }]],
    ["allow write /tmp/x for 10m", [{
      effect: "allow",
      op: "write",
      target: "/tmp/x",
      expiresAt: NOW + 600_000,
    }]],
    ["deny connect * for 1h30m # lunch", [{
      effect: "deny",
      op: "connect",
      target: "*",
      expiresAt: NOW + 5_400_000,
    }]],
    ["\uFEFFallow write /a\r\ndeny write /b\r\n", [
      { effect: "allow", op: "write", target: "/a" },
      { effect: "deny", op: "write", target: "/b" },
    ]],
  ];
  for (const [text, want] of cases) {
    await t.step(JSON.stringify(text), () => {
      const got = parseRules(text, opts());
      assert.deepEqual(got.map(({ source: _, ...r }) => r), want);
    });
  }
  await t.step("sources carry file and line", () => {
    const got = parseRules("# c\n\nallow write /a\n  # x\ndeny write /b\n", opts());
    assert.deepEqual(got.map((r) => r.source), [src(3), src(5)]);
  });
  await t.step("now defaults to the clock", () => {
    const before = Date.now();
    const [r] = parseRules("allow write /a for 1m", { ...opts(), now: undefined });
    assert.ok(r.expiresAt! >= before + 60_000 && r.expiresAt! <= Date.now() + 60_000);
  });
});

Deno.test("parseRules: errors name the file and line", async (t) => {
  const cases: [string, string][] = [
    ["permit write /a", 'rules:1: expected "allow", "deny", "protect" or "group", got "permit"'],
    ["\n\nallow", "rules:3: missing operation: allow write|exec|connect TARGET"],
    ["allow reed /a", 'rules:1: unknown operation "reed": expected write, exec or connect'],
    [
      "allow read /a",
      'rules:1: "allow read PATH" is not available in these rules: read protections are set when a sandbox or pod starts',
    ],
    ["allow write", 'rules:1: missing target after "allow write"'],
    ["allow write /a /b", 'rules:1: unexpected "/b" after the target (a duration is written "for 10m")'],
    ["allow write /a 10m", 'rules:1: unexpected "10m" after the target (a duration is written "for 10m")'],
    ["allow write /a for", 'rules:1: missing duration after "for"'],
    ["allow write /a for 10m extra", 'rules:1: unexpected "extra" after the duration'],
    ["allow write /a for soon", 'rules:1: bad duration "soon": expected e.g. 90s, 10m, 1h30m'],
    ["allow write /a for 0s", 'rules:1: bad duration "0s": must be more than zero'],
    [
      "allow write /a/*/x.txt",
      'rules:1: bad path "/a/*/x.txt": "*" is not allowed (the patterns are a trailing /** and one * in the last component)',
    ],
    ["allow exec nosuchprog", 'rules:1: program "nosuchprog" not found in $PATH'],
    [
      "allow exec @nosuch",
      "rules:1: unknown group @nosuch (known: @system, @shells, @coreutils, @git, @node, @python, @build)",
    ],
    [
      "allow exec @Bad!",
      'rules:1: bad group name "@Bad!": use @ then lower-case letters, digits, "-" or "_"',
    ],
    ["allow connect example.com:443", "rules:1: host names are not allowed: use an address (example.com)"],
    [
      "allow connect 1.2.3.4:0",
      'rules:1: bad connect destination "1.2.3.4:0": port 0 is out of range: ports are 1-65535',
    ],
    ['allow write "/a', 'rules:1: unterminated quoted target (a " without its closing ")'],
    ['allow write "/a"x', "rules:1: expected a space after the quoted target"],
    ['allow write "\\q"', 'rules:1: bad quoted target "\\q": use JSON string escapes'],
    ["allow write /a\0b", "rules:1: the line contains a NUL byte"],
    ["group", "rules:1: missing group name: group @name MEMBER..."],
    ["group @x", "rules:1: group @x needs at least one member"],
    [
      "group @x a*b",
      'rules:1: bad group member "a*b": expected an absolute path, DIR/**, a program name or @group',
    ],
    [
      "group @x @nosuch",
      "rules:1: unknown group @nosuch (known: @system, @shells, @coreutils, @git, @node, @python, @build)",
    ],
    ["group @x /a/*", 'rules:1: bad group member "/a/*": no * here'],
    [
      "allow write /ok\nallow write /ok2\nbogus",
      'rules:3: expected "allow", "deny", "protect" or "group", got "bogus"',
    ],
  ];
  for (const [text, want] of cases) {
    await t.step(JSON.stringify(text), () => {
      assert.throws(() => parseRules(text, opts()), (e: Error) => {
        assert.ok(e instanceof RulesError, String(e));
        assert.ok(e instanceof UsageError);
        assert.equal(e.message, want);
        return true;
      });
    });
  }
  await t.step("RulesError fields", () => {
    try {
      parseRules("\nallow nope /x", opts({ file: "/etc/x/rules" }));
    } catch (e) {
      const r = e as RulesError;
      assert.equal(r.file, "/etc/x/rules");
      assert.equal(r.line, 2);
      assert.equal(r.problem, 'unknown operation "nope": expected write, exec or connect');
      return;
    }
    assert.fail("no error");
  });
});

Deno.test("parseRules: project files can only deny", async (t) => {
  const p = opts({ project: true, file: "/proj/.hallpass/rules" });
  await t.step("deny lines are fine", () => {
    const got = parseRules("deny write ~/.ssh/**\ndeny connect *\ndeny exec @shells for 1h", p);
    assert.equal(got.length, 3);
    assert.deepEqual(got[0].source, { kind: "file", file: "/proj/.hallpass/rules", line: 1, project: true });
  });
  const cases: [string, string][] = [
    [
      "deny write /a\nallow write ~/.ssh/**",
      '/proj/.hallpass/rules:2: a project rules file can only deny: "allow write ~/.ssh/**" would widen what is allowed (a rules file inside the project, which the sandbox could have written: allow rules go in one outside it)',
    ],
    [
      "allow exec nosuchprog",
      '/proj/.hallpass/rules:1: a project rules file can only deny: "allow exec nosuchprog" would widen what is allowed (a rules file inside the project, which the sandbox could have written: allow rules go in one outside it)',
    ],
    [
      "allow connect *",
      '/proj/.hallpass/rules:1: a project rules file can only deny: "allow connect *" would widen what is allowed (a rules file inside the project, which the sandbox could have written: allow rules go in one outside it)',
    ],
    [
      "group @node /tmp/evil/**",
      "/proj/.hallpass/rules:1: a project rules file cannot define groups (it could widen what user rules allow)",
    ],
  ];
  for (const [text, want] of cases) {
    await t.step(JSON.stringify(text), () => {
      assert.throws(() => parseRules(text, p), (e: Error) => e instanceof RulesError && e.message === want);
    });
  }
});

Deno.test("groups: group lines, expandGroup, defineGroup", async (t) => {
  await t.step("a group line defines a group usable below it", () => {
    const o = opts();
    const rules = parseRules("group @mytools /opt/x/bin/** mytool ~/bin/tool\nallow exec @mytools", o);
    assert.deepEqual(rules.map((r) => r.target), ["@mytools"]);
    assert.deepEqual(o.groups.get("@mytools"), ["/opt/x/bin/**", "mytool", "/home/me/bin/tool"]);
    assert.deepEqual(expandGroup("@mytools", lookup, o.groups), [
      { kind: "tree", path: "/opt/x/bin" },
      { kind: "exact", path: "/opt/x/bin/mytool" },
      { kind: "exact", path: "/home/me/bin/tool" },
    ]);
  });
  await t.step("a group line extends an existing group", () => {
    const o = opts();
    parseRules("group @node mytool\ngroup @node mytool /opt/n/**", o);
    assert.deepEqual(o.groups.get("@node")!.slice(-2), ["mytool", "/opt/n/**"]);
  });
  await t.step("use before definition is an error", () => {
    assert.throws(
      () => parseRules("allow exec @later\ngroup @later git", opts()),
      (e: Error) => e.message.startsWith("rules:1: unknown group @later"),
    );
  });
  await t.step("nested groups expand, cycles are refused", () => {
    const g = newGroupTable();
    defineGroup("@dev", ["@node", "@git", "/opt/dev/**"], g);
    assert.deepEqual(expandGroup("dev", lookup, g).map((s) => s.path), [
      "/home/me/.nvm/versions/node/v22/bin/node",
      "/home/me/.nvm/versions/node/v22/bin/npm",
      "/usr/bin/git",
      "/opt/dev",
    ]);
    assert.throws(() => defineGroup("@node", ["@dev"], g), /cannot contain itself/);
    assert.throws(() => defineGroup("@dev", ["@dev"], g), /cannot contain itself/);
    assert.throws(() => defineGroup("@e", [], g), /needs at least one member/);
    assert.throws(() => defineGroup("@e", ["rel/path"], g), /bad group member/);
  });
  await t.step("@system covers /lib*, /opt, /nix/store, /snap", () => {
    const paths = expandGroup("@system", lookup, newGroupTable()).map((s) => `${s.kind}:${s.path}`);
    assert.deepEqual(paths, [
      "tree:/usr",
      "tree:/bin",
      "tree:/sbin",
      "tree:/lib",
      "tree:/lib32",
      "tree:/lib64",
      "tree:/libx32",
      "tree:/opt",
      "tree:/nix/store",
      "tree:/snap",
    ]);
  });
  await t.step("names not found are skipped", () => {
    assert.deepEqual(expandGroup("@shells", lookup).map((s) => s.path), ["/bin/bash"]);
    assert.deepEqual(expandGroup("@build", () => null), []);
  });
  await t.step("builtin groups hold what the brief lists", () => {
    assert.deepEqual(BUILTIN_GROUPS.get("@node"), ["node", "npm", "npx", "corepack", "yarn", "pnpm"]);
    assert.deepEqual(BUILTIN_GROUPS.get("@python"), ["python3", "python", "pip", "pip3"]);
    for (
      const n of ["make", "cc", "gcc", "g++", "clang", "ld", "as", "cmake", "ninja", "cargo", "rustc", "go"]
    ) {
      assert.ok(BUILTIN_GROUPS.get("@build")!.includes(n), n);
    }
    for (const n of ["sh", "bash", "dash", "zsh", "fish"]) {
      assert.ok(BUILTIN_GROUPS.get("@shells")!.includes(n), n);
    }
    for (const n of ["ls", "cat", "cp", "mv", "rm", "mkdir", "env", "[", "sort"]) {
      assert.ok(BUILTIN_GROUPS.get("@coreutils")!.includes(n), n);
    }
    assert.ok(BUILTIN_GROUPS.get("@git")!.includes("git"));
  });
  await t.step("unknown group", () => assert.throws(() => expandGroup("@nope", lookup), UsageError));
});

Deno.test("parseRuleTarget", async (t) => {
  const o = { cwd: "/proj", home: HOME, lookup, groups: newGroupTable() };
  const cases: [Parameters<typeof parseRuleTarget>[0], string, string][] = [
    ["write", "~/x/../y", "/home/me/y"],
    ["write", "/**", "/**"],
    ["exec", "node", "/home/me/.nvm/versions/node/v22/bin/node"],
    ["exec", "./node_modules/.bin/tsc", "/proj/node_modules/.bin/tsc"],
    ["exec", "@git", "@git"],
    ["exec", "git", "/usr/bin/git"],
    ["connect", "tcp:127.000.0.1:80".replace("000", "0"), "tcp:127.0.0.1:80"],
  ];
  for (const [op, text, want] of cases) {
    await t.step(`${op} ${text}`, () => assert.equal(parseRuleTarget(op, text, o), want));
  }
});

Deno.test("formatRule and ruleFileLine round-trip", async (t) => {
  const rule = (target: string, extra: Partial<Rule> = {}): Rule => ({
    effect: "allow",
    op: "write",
    target,
    source: { kind: "answer", by: "terminal" },
    ...extra,
  });
  const cases: [Rule, number | undefined, string][] = [
    [rule("/home/me/.npm/**"), undefined, "allow write /home/me/.npm/**"],
    [rule("/home/me/My Files/**"), undefined, 'allow write "/home/me/My Files/**"'],
    [rule("/tmp/#x"), undefined, 'allow write "/tmp/#x"'],
    [rule("/tmp/a\nb"), undefined, 'allow write "/tmp/a\\nb"'],
    [rule("@node", { op: "exec" }), undefined, "allow exec @node"],
    [rule("0.0.0.0/0:25", { op: "connect", effect: "deny" }), undefined, "deny connect 0.0.0.0/0:25"],
    [rule("/x", { expiresAt: NOW + 90_000 }), NOW, "allow write /x for 1m30s"],
    [rule("/x", { expiresAt: NOW + 1 }), NOW, "allow write /x for 1s"],
    [rule("/x", { expiresAt: NOW }), NOW, "allow write /x  # expired"],
    [rule("/x", { expiresAt: NOW + 1000 }), undefined, "allow write /x"],
  ];
  for (const [r, now, want] of cases) {
    await t.step(want, () => {
      assert.equal(formatRule(r, now), want);
      if (r.expiresAt === undefined || (now !== undefined && r.expiresAt > now)) {
        const line = ruleFileLine(r, { now });
        assert.equal(line, want + "\n");
        const [back] = parseRules(line, opts({ now: now ?? NOW, lookup: (p) => p }));
        assert.equal(back.target, r.target);
        assert.equal(back.op, r.op);
        assert.equal(back.effect, r.effect);
      }
    });
  }
  await t.step("comment is one line", () => {
    assert.equal(
      ruleFileLine(rule("/a"), { comment: "by terminal\n\x1b[31mred" }),
      "allow write /a  # by terminal  [31mred\n",
    );
  });
  await t.step("expiring rules need now; expired ones cannot be saved", () => {
    assert.throws(() => ruleFileLine(rule("/a", { expiresAt: NOW + 1 })), UsageError);
    assert.throws(() => ruleFileLine(rule("/a", { expiresAt: NOW }), { now: NOW }), UsageError);
  });
  await t.step("quoteTarget", () => {
    assert.equal(quoteTarget("/plain"), "/plain");
    assert.equal(quoteTarget(""), '""');
    assert.equal(quoteTarget("a\u2028b"), '"a\u2028b"');
  });
});

Deno.test("huge inputs", async (t) => {
  await t.step("a 1 MB line fails fast with a short message", () => {
    const t0 = performance.now();
    const big = "allow write /" + "a".repeat(1 << 20) + " extra";
    assert.throws(
      () => parseRules(big, opts()),
      (e: Error) => e.message.length < 200 && e.message.startsWith("rules:1:"),
    );
    const ok = parseRules("allow write /" + "a/".repeat(1 << 19) + "x", opts());
    assert.equal(ok.length, 1);
    assert.ok(performance.now() - t0 < 10_000, `${performance.now() - t0} ms`); // ~0.1 s here
  });
  await t.step("a 1 MB comment line is skipped", () => {
    assert.deepEqual(parseRules("# " + "x".repeat(1 << 20) + "\nallow write /a", opts()).length, 1);
  });
  await t.step("100,000 rules parse in seconds, not minutes", () => {
    const lines = Array.from({ length: 100_000 }, (_, i) => `allow write /data/d${i}/** # n${i}`).join("\n");
    const t0 = performance.now();
    const rules = parseRules(lines, opts());
    assert.equal(rules.length, 100_000);
    assert.equal(rules[99_999].source.kind === "file" && rules[99_999].source.line, 100_000);
    assert.ok(performance.now() - t0 < 15_000, `${performance.now() - t0} ms`); // ~1 s at load 20 here
  });
});
