/** The pure part of the agent configuration exit check (lib/policy/agent_config.ts) and its guarded write. */
import { deepEqual, equal, ok as assert } from "node:assert/strict";
import {
  agentConfigFiles,
  describeChanges,
  judgeConfig,
  namedPrograms,
  tomlEntries,
  watchedKeys,
} from "../lib/policy/agent_config.ts";
import { read, writeNew } from "../lib/sandbox/agent_config_check.ts";

const { files } = agentConfigFiles("/h", "/p");
const spec = (path: string) => files.find((f) => f.path === path)!;
const settings = spec("/h/.claude/settings.json");
const state = spec("/h/.claude.json");
const codex = spec("/h/.codex/config.toml");

Deno.test("the files judged: each agent's, the project's .claude settings, $CLAUDE_CONFIG_DIR", () => {
  const paths = files.map((f) => f.path);
  for (
    const p of [
      "/h/.claude/settings.json",
      "/h/.claude/settings.local.json",
      "/h/.claude.json",
      "/h/.claude.json.backup",
      "/p/.claude/settings.json",
      "/p/.claude/settings.local.json",
      "/h/.codex/config.toml",
      "/h/.gemini/settings.json",
      "/h/.copilot/config.json",
      "/h/.copilot/mcp-config.json",
    ]
  ) assert(paths.includes(p), p);
  const env = (k: string) => ({ CLAUDE_CONFIG_DIR: "/c", CODEX_HOME: "/x/" })[k];
  const more = agentConfigFiles("/h", "/p", env).files.map((f) => f.path);
  assert(
    more.includes("/c/.claude.json") && more.includes("/c/settings.json") && more.includes("/x/config.toml"),
  );
  assert(!agentConfigFiles("/h", "/p", () => "rel/dir").files.some((f) => f.path.startsWith("rel")));
});

Deno.test("settings: every key but the inert ones is watched; state: only the listed ones", () => {
  const w = watchedKeys(
    JSON.stringify({ model: "x", permissions: { allow: ["a"] }, newKey: "cmd" }),
    settings,
  );
  deepEqual([...(w as Map<string, string>).keys()], ['["newKey"]']);
  const s = watchedKeys(
    JSON.stringify({
      numStartups: 1,
      projects: { "/a": { mcpServers: { x: { command: "c" } }, lastCost: 1 } },
    }),
    state,
  );
  deepEqual([...(s as Map<string, string>).keys()], ['["projects","/a","mcpServers"]']);
});

Deno.test("an empty value is no change; a reordering is no change; a state write is kept", () => {
  equal(
    judgeConfig(state, undefined, JSON.stringify({ projects: { "/a": { mcpServers: {} } } })).kind,
    "same",
  );
  equal(
    judgeConfig(settings, '{"hooks":{"A":1,"B":2}}', '{"hooks":{"B":2,"A":1},"model":"y"}').kind,
    "same",
  );
  equal(judgeConfig(state, '{"n":1}', '{"n":2,"tips":{"a":1}}').kind, "same");
});

Deno.test("a hook added is taken out of the file as it is now; the person's own and the state stay", () => {
  const start = JSON.stringify({ n: 1, mcpServers: { mine: { command: "m" } } });
  const now = JSON.stringify({ n: 2, mcpServers: { mine: { command: "m" }, x: { command: "evil" } } });
  const v = judgeConfig(state, start, now);
  assert(v.kind === "keys");
  deepEqual(JSON.parse(v.text), { n: 2, mcpServers: { mine: { command: "m" } } });
  equal(v.changes[0].key, "mcpServers");
  assert(v.changes[0].now!.includes("evil"));
  const v2 = judgeConfig(settings, undefined, JSON.stringify({ statusLine: { command: "s" }, model: "m" }));
  assert(v2.kind === "keys");
  deepEqual(JSON.parse(v2.text), { model: "m" });
});

Deno.test("a key named __proto__ is a plain key, set back as one", () => {
  const v = judgeConfig(settings, '{"__proto__":{"a":1}}', '{"__proto__":{"a":2}}');
  assert(v.kind === "keys");
  equal(v.text.replace(/\s/g, ""), '{"__proto__":{"a":1}}');
  equal(({} as Record<string, unknown>).a, undefined);
});

Deno.test("an escaped key is read as the agent reads it", () => {
  const v = judgeConfig(settings, "{}", '{"hoo\\u006bs":{"x":1}}');
  assert(v.kind === "keys" && v.changes[0].key === "hooks");
});

Deno.test("a file not valid JSON that changed is put back whole; removed keys are not put back", () => {
  const v = judgeConfig(settings, '{"model":"a"}', '{"hooks": 1, // x\n}');
  assert(v.kind === "whole" && v.text === '{"model":"a"}');
  const n = judgeConfig(settings, undefined, "garbage");
  assert(n.kind === "whole" && n.text === undefined);
  equal(judgeConfig(settings, '{"hooks":{"a":1}}', "{}").kind, "same");
  equal(judgeConfig(settings, '{"hooks":{"a":1}}', undefined).kind, "same");
});

Deno.test("toml: tables, dotted and quoted keys, multi-line arrays; strict otherwise", () => {
  const t = tomlEntries(
    'model = "o3" # c\n[projects."/a b"]\ntrust_level = "trusted"\n[mcp_servers.x]\nargs = [\n "a", # c\n "b",\n]\n' +
      "env.K = 'v'\n[[p]]\nq = 1\n[[p]]\nq = 2\n",
  );
  assert(Array.isArray(t), String(t));
  deepEqual(t.map(([k, v]) => `${k.join(".")}=${v}`), [
    'model="o3"',
    'projects./a b.trust_level="trusted"',
    'mcp_servers.x.args=[ "a", "b", ]',
    "mcp_servers.x.env.K='v'",
    "p.0.q=1",
    "p.1.q=2",
  ]);
  for (const bad of ['a = """x\n"""', "a = 1\na = 2", '"a\\u0062" = 1', "[a\nb = 1", "just words"]) {
    equal(typeof tomlEntries(bad), "string", bad);
  }
});

Deno.test("codex: its own writes (trust, model, notices) are kept; notify or a server puts the file back", () => {
  const start = 'model = "o3"\n';
  equal(
    judgeConfig(
      codex,
      start,
      'model = "gpt-5"\n[projects."/a"]\ntrust_level = "trusted"\n[notice]\nhide_x = true\n',
    )
      .kind,
    "same",
  );
  const v = judgeConfig(codex, start, start + 'notify = ["sh", "-c", "x"]\n');
  assert(v.kind === "whole" && v.text === start && v.changes[0].key === "notify");
  const m = judgeConfig(codex, start, start + "mcp_servers.x.command = 'evil'\n");
  assert(m.kind === "whole" && m.changes[0].key === "mcp_servers.x.command");
});

Deno.test("the write back is made only while the path still holds the file read", () => {
  const dir = Deno.makeTempDirSync();
  try {
    const p = `${dir}/f.json`;
    Deno.writeTextFileSync(p, "sandbox");
    const r = read(p)!;
    Deno.writeTextFileSync(`${dir}/t`, "another session");
    Deno.renameSync(`${dir}/t`, p);
    equal(writeNew(p, "restored", 0o600, r), "again");
    equal(Deno.readTextFileSync(p), "another session");
    equal(writeNew(p, "restored", 0o600, read(p)!), true);
    equal(Deno.readTextFileSync(p), "restored");
    equal(Deno.statSync(p).mode! & 0o777, 0o600);
    deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["f.json"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("programs a watched command names in the agents' directories or the project", () => {
  const within = ["/h/.claude", "/p"];
  const text = JSON.stringify({
    model: "/h/.claude/not-a-command",
    hooks: { A: [{ hooks: [{ command: 'bash ~/.claude/hooks/a.sh && "$CLAUDE_PROJECT_DIR"/x/b.sh' }] }] },
    statusLine: { command: "${HOME}/.claude/s.js --x" },
    apiKeyHelper: "/usr/bin/helper /h/.claude/../.bashrc",
  });
  deepEqual(namedPrograms(text, settings, { home: "/h", project: "/p", within }).sort(), [
    "/h/.claude/hooks/a.sh",
    "/h/.claude/s.js",
    "/p/x/b.sh",
  ]);
  deepEqual(
    namedPrograms('notify = ["node", "/h/.claude/n.js"]\n', codex, { home: "/h", project: "/p", within }),
    ["/h/.claude/n.js"],
  );
});

Deno.test("the message shows what the sandbox wrote without passing an escape to the terminal", () => {
  const v = judgeConfig(settings, "{}", JSON.stringify({ ["k\x1b]52;c;x\x07"]: "v" }));
  assert(v.kind === "keys");
  const m = describeChanges(v.changes);
  assert(![...m].some((c) => c.charCodeAt(0) < 0x20), m);
  const t = judgeConfig(codex, "", 'notify = "a\x1b[2Jb"\n');
  assert(t.kind === "whole" && !describeChanges(t.changes).includes("\x1b"));
});

Deno.test("a dotenv file the agent loads: any line added or changed puts it back whole", () => {
  const env = spec("/h/.gemini/.env");
  assert(
    files.some((f) => f.path === "/p/.gemini/settings.json") &&
      files.some((f) => f.path === "/p/.codex/config.toml"),
  );
  equal(judgeConfig(env, "A=1\n", "# note\nA=1\n\n").kind, "same");
  const v = judgeConfig(env, "A=1\n", "A=1\nNODE_OPTIONS=--require /h/.gemini/x.js\n");
  assert(v.kind === "whole" && v.text === "A=1\n" && v.changes[0].now!.includes("NODE_OPTIONS"));
  deepEqual(
    namedPrograms("NODE_OPTIONS=--require /h/.gemini/x.js\n", env, {
      home: "/h",
      project: "/p",
      within: ["/h/.gemini"],
    }),
    ["/h/.gemini/x.js"],
  );
});

Deno.test("whole `//` comment lines (copilot's config.json) are read past; other comments are not JSON", () => {
  const head = "// User settings belong in settings.json.\n// This file is managed automatically.\n";
  equal(judgeConfig(settings, head + '{"model":"a"}\n', head + '{"model":"b"}\n').kind, "same");
  const v = judgeConfig(
    settings,
    head + '{"model":"a"}\n',
    head + '{"model":"b",\n  // x\n  "hooks":{"x":1}}\n',
  );
  assert(v.kind === "keys");
  deepEqual(JSON.parse(v.text), { model: "b" });
  // A `//` inside a string is content; a comment after a value or a block comment is not JSON: judged whole.
  equal(judgeConfig(settings, '{"model":"a"}', '{"model":"http://x"}').kind, "same");
  equal(judgeConfig(settings, '{"model":"a"}', '{"model":"a", "hooks":{"x":1} // y\n}').kind, "whole");
  equal(judgeConfig(settings, '{"model":"a"}', '{"model":"a", /* y */ "hooks":{"x":1}}').kind, "whole");
});

Deno.test("a byte-order mark at the start of a JSON file is read past", () => {
  equal(judgeConfig(settings, '\ufeff{"model":"a"}', '{"model":"b"}').kind, "same");
  const v = judgeConfig(settings, '\ufeff{"model":"a"}', '\ufeff{"model":"b","hooks":{"x":1}}');
  assert(v.kind === "keys");
  deepEqual(JSON.parse(v.text), { model: "b" });
});
