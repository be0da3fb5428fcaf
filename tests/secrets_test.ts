/**
 * The protected list and its rules (lib/policy/secrets.ts), the `protect` / `allow read` grammar, the options, what
 * `hallpass rules` prints (lib/cli/secrets_command.ts), and the read floor's carve over a made-up tree
 * (lib/floor/read_floor.ts): every built-in entry is a hole, lifting and narrowing work, new files in carved
 * directories are found at exit.
 */
import assert from "node:assert/strict";
import { parseCommandLine } from "../lib/cli/options.ts";
import { type CarveEntry, type CarveFs, isAtOrBelow } from "../lib/floor/landlock_carve.ts";
import {
  newInCarved,
  notEnforcedLines,
  readExitLines,
  readFloor,
  readStartLines,
  treesToMake,
} from "../lib/floor/read_floor.ts";
import { parseRules } from "../lib/policy/rules_file.ts";
import { BUILTIN, protectionOf, readProtection } from "../lib/policy/secrets.ts";
import { readRulesLines, readVerdict } from "../lib/cli/secrets_command.ts";
import type { ReadRule } from "../lib/types.ts";
import { FS } from "../ffi/landlock.ts";

const HOME = "/home/me";
const cli = (option: string) => ({ kind: "cli" as const, option });
const noEnv = () => undefined;

function dirsOf(tree: Record<string, string[]>) {
  return (d: string) => tree[d];
}

Deno.test("rules grammar: protect and allow read", () => {
  const reads: ReadRule[] = [];
  const rules = parseRules(
    "protect ~/secrets\nallow read ~/.ssh/known_hosts  # c\nprotect rel/x/**\nallow write /tmp/x\n",
    { file: "f", project: false, cwd: "/p", home: HOME, reads },
  );
  assert.equal(rules.length, 1);
  assert.deepEqual(reads.map((r) => [r.effect, r.path]), [
    ["protect", "/home/me/secrets"],
    ["allow", "/home/me/.ssh/known_hosts"],
    ["protect", "/p/rel/x"],
  ]);
  const bad: [string, boolean, RegExp][] = [
    ["allow read ~/.ssh", true, /project rules file can only add protections/],
    ["protect ~/x for 5m", false, /cannot expire/],
    ["protect", false, /missing path/],
    ["allow read", false, /missing path/],
    ["protect ~/a ~/b", false, /unexpected "~\/b"/],
    ["protect ~/.config/*", false, /no wildcard/],
    ["protect /", false, /cannot be protected or allowed as a whole/],
    ["deny read ~/x", false, /to make a path unreadable: "protect PATH"/],
  ];
  for (const [text, project, re] of bad) {
    assert.throws(() => parseRules(text, { file: "f", project, cwd: "/p", home: HOME, reads: [] }), re, text);
  }
  // a project file may protect
  const pr: ReadRule[] = [];
  parseRules("protect ~/.work-token\n", { file: "f", project: true, cwd: "/p", home: HOME, reads: pr });
  assert.equal(pr[0].path, "/home/me/.work-token");
});

Deno.test("options: --allow-read and --protect, also after `rules`", () => {
  const inv = parseCommandLine(["--allow-read", "~/.aws", "--protect=/srv/keys", "--", "true"]);
  assert.equal(inv.kind, "run");
  if (inv.kind !== "run") return;
  assert.deepEqual([inv.opts.allowRead, inv.opts.protect], [["~/.aws"], ["/srv/keys"]]);
  const r = parseCommandLine(["rules", "--protect", "/x", "read", "/x/y"]);
  assert.equal(r.kind, "rules");
  if (r.kind === "rules") assert.deepEqual([r.opts.protect, r.args], [["/x"], ["read", "/x/y"]]);
});

Deno.test("the built-in list: every entry protected, env overrides too, ~/.ssh's client files readable", () => {
  const rp = readProtection({
    home: HOME,
    uid: 1000,
    env: (k) =>
      ({ GNUPGHOME: "/srv/gpg", KUBECONFIG: "/a/kc:/b/kc:rel", DOCKER_CONFIG: "/d" } as Record<
        string,
        string
      >)[k],
    rules: [],
    list: dirsOf({
      "/home/me/.ssh": ["id_ed25519", "id_ed25519.pub", "config", "known_hosts", "agent.sock"],
    }),
  });
  for (const b of BUILTIN) {
    const p = b.path.replace("~", HOME);
    assert.ok(protectionOf(rp, p), `${b.path} not protected`);
    assert.ok(protectionOf(rp, `${p}/below`), `${b.path}/below not protected`);
  }
  for (const p of ["/srv/gpg", "/a/kc", "/b/kc", "/d/config.json"]) assert.ok(protectionOf(rp, p), p);
  assert.equal(rp.protect.some((p) => p.path.endsWith("rel")), false);
  assert.equal(protectionOf(rp, "/home/me/.ssh/id_ed25519")?.path, "/home/me/.ssh");
  assert.equal(protectionOf(rp, "/home/me/.ssh/id_new"), rp.protect[0]);
  for (const n of ["config", "known_hosts", "id_ed25519.pub"]) {
    assert.equal(protectionOf(rp, `/home/me/.ssh/${n}`), undefined, n);
  }
  assert.equal(protectionOf(rp, "/home/me/.bashrc"), undefined);
  assert.equal(protectionOf(rp, "/home/me/.sshx"), undefined);
});

Deno.test("as root: every home in /home and the machine's secrets", () => {
  const rp = readProtection({
    home: "/root",
    uid: 0,
    env: noEnv,
    rules: [],
    list: dirsOf({
      "/home": ["alice", "file"],
      "/home/alice": [],
      "/etc/ssh": ["ssh_host_rsa_key", "ssh_host_rsa_key.pub", "sshd_config"],
    }),
  });
  for (
    const p of ["/root/.ssh/id", "/home/alice/.aws/credentials", "/etc/shadow", "/etc/ssh/ssh_host_rsa_key"]
  ) {
    assert.ok(protectionOf(rp, p), p);
  }
  for (const p of ["/etc/ssh/ssh_host_rsa_key.pub", "/etc/ssh/sshd_config", "/home/file/.ssh"]) {
    assert.equal(protectionOf(rp, p), undefined, p);
  }
});

Deno.test("allow read lifts at or below it; inside a protection it narrows; more protections only add", () => {
  const rules: ReadRule[] = [
    { effect: "allow", path: "/home/me/.aws", source: cli("--allow-read") },
    { effect: "allow", path: "/home/me/.config", source: cli("--allow-read") },
    { effect: "allow", path: "/home/me/.gnupg/pubring.kbx", source: cli("--allow-read") },
    {
      effect: "protect",
      path: "/srv/token",
      source: { kind: "file", file: "p/.hallpass/rules", line: 1, project: true },
    },
    { effect: "allow", path: "/tmp/nothing", source: cli("--allow-read") },
  ];
  const rp = readProtection({ home: HOME, uid: 1000, env: noEnv, rules, list: () => undefined });
  assert.equal(protectionOf(rp, "/home/me/.aws/credentials"), undefined);
  assert.equal(protectionOf(rp, "/home/me/.config/gcloud/x"), undefined);
  assert.equal(protectionOf(rp, "/home/me/.config/gh/hosts.yml"), undefined);
  assert.equal(protectionOf(rp, "/home/me/.gnupg/pubring.kbx"), undefined);
  assert.ok(protectionOf(rp, "/home/me/.gnupg/private-keys-v1.d/x"));
  assert.ok(protectionOf(rp, "/srv/token"));
  assert.deepEqual(rp.unused.map((u) => u.path), ["/tmp/nothing"]);
  assert.ok(rp.lifted.some((l) => l.protection.path === "/home/me/.config/gh"));
  const lines = readRulesLines(rp, HOME);
  assert.ok(lines.includes(`${"protect ~/.ssh".padEnd(60)} # builtin: SSH keys`), lines.join("\n"));
  assert.ok(lines.some((l) => l.startsWith("allow read ~/.gnupg/pubring.kbx")));
  assert.ok(lines.some((l) => l.startsWith("# lifted: protect ~/.aws")));
  assert.deepEqual(readVerdict(rp, "/home/me/.ssh/id_rsa", HOME), [
    "read /home/me/.ssh/id_rsa: unreadable (EACCES)",
    "  decided by: protect ~/.ssh   (builtin: SSH keys)",
    "  to allow it: --allow-read ~/.ssh   or rule: allow read ~/.ssh",
  ]);
  assert.equal(readVerdict(rp, "/etc/passwd", HOME)[0], "read /etc/passwd: readable");
});

/** A made-up tree for the read floor. */
function fakeFs(tree: Record<string, string[]>): CarveFs {
  return {
    list(d: string): CarveEntry[] | undefined {
      const names = tree[d];
      if (!names) return undefined;
      return names.map((n) => ({
        name: n,
        kind: tree[`${d === "/" ? "" : d}/${n}`] ? "dir" : "file",
        ino: 1,
      }));
    },
  };
}

Deno.test("the read floor: holes at the protections, the project readable, new files in carved directories found", () => {
  const tree: Record<string, string[]> = {
    "/": ["home", "etc", "tmp"],
    "/home": ["me"],
    "/home/me": [".ssh", ".bashrc", "proj", ".config"],
    "/home/me/.ssh": ["id", "known_hosts"],
    "/home/me/.config": ["gh", "nvim"],
    "/home/me/.config/gh": [],
    "/home/me/.config/nvim": [],
    "/home/me/proj": [".env"],
    "/etc": [],
    "/tmp": [],
  };
  const rp = readProtection({
    home: HOME,
    uid: 1000,
    env: noEnv,
    rules: [{ effect: "protect", path: "/home/me/proj/.env", source: cli("--protect") }],
    list: (d) => tree[d],
  });
  const floor = readFloor(rp, "/home/me/proj", fakeFs(tree), (p) => p);
  const readable = (p: string) =>
    floor.rules.some((r) => isAtOrBelow(p, r.path) && (r.access & FS.READ_FILE) !== 0n);
  assert.ok(!readable("/home/me/.ssh/id"));
  assert.ok(readable("/home/me/.ssh/known_hosts"));
  assert.ok(readable("/home/me/.bashrc"));
  assert.ok(readable("/home/me/proj/src/a.ts") || floor.carved.some((c) => c.path === "/home/me/proj"));
  assert.ok(!readable("/home/me/proj/.env"));
  assert.ok(!readable("/home/me/.config/gh/hosts.yml"));
  assert.ok(readable("/home/me/.config/nvim/init.lua"));
  assert.deepEqual(floor.carved.map((c) => c.path), [
    "/",
    "/home",
    "/home/me",
    "/home/me/.config",
    "/home/me/proj",
  ]);
  assert.deepEqual(readStartLines(floor, rp, "/home/me/proj", HOME), [
    "hallpass: files the sandbox creates directly in ~/proj cannot be read back in this session (a protected location is below it)",
  ]);
  // at exit: a new file in ~, a file replaced in ~ (another inode), a new file in /tmp (not carved)
  const after = structuredClone(tree);
  after["/home/me"].push(".newrc");
  after["/tmp"].push("x");
  const fs2 = fakeFs(after);
  const replaced: CarveFs = {
    list: (d) => fs2.list(d)?.map((e) => (e.name === ".bashrc" ? { ...e, ino: 2 } : e)),
  };
  assert.deepEqual(newInCarved(floor, replaced), ["/home/me/.bashrc", "/home/me/.newrc"]);
  assert.equal(readExitLines(["/home/me/.newrc"], false, HOME)[1], "  ~/.newrc");
  assert.equal(readExitLines([], false, HOME).length, 0);
  // an agent's own file says what to do
  assert.equal(
    readExitLines(["/home/me/.claude.json"], false, HOME, null, () => "claude")[1],
    "  ~/.claude.json (claude's own file: readable from its next start; if claude failed on it, run it again)",
  );
  assert.equal(readExitLines([], true, HOME).length, 1);
});

Deno.test("trees it may write that would be made in a carved directory are made at start", () => {
  const src = { kind: "cli" as const, option: "--agent claude" };
  const rules = [
    { effect: "allow" as const, op: "write" as const, target: "/home/me/.claude/**", source: src },
    { effect: "allow" as const, op: "write" as const, target: "/home/me/.config/new/**", source: src },
    { effect: "allow" as const, op: "write" as const, target: "/home/me/proj/out/**", source: src },
    { effect: "allow" as const, op: "write" as const, target: "/home/me/.npm/**", source: src }, // exists
    { effect: "allow" as const, op: "write" as const, target: "/tmp/claude-0/**", source: src }, // /tmp shared
    { effect: "allow" as const, op: "write" as const, target: "/home/me/.claude.json", source: src }, // a file
    {
      effect: "allow" as const,
      op: "write" as const,
      target: "/home/me/.later/**",
      source: src,
      expiresAt: 1,
    },
  ];
  const existing = new Set([
    "/",
    "/home",
    "/home/me",
    "/home/me/.config",
    "/home/me/proj",
    "/home/me/.npm",
    "/tmp",
  ]);
  const got = treesToMake(
    rules,
    ["/home/me/.ssh", "/home/me/.config/gh", "/tmp/home/.aws"],
    (p) => existing.has(p),
    (p) => p === "/tmp",
  );
  assert.deepEqual(got, ["/home/me/.claude", "/home/me/.config/new"]);
});

Deno.test("built-in protections in the project are not kept (said at start); yours are", () => {
  const tree: Record<string, string[]> = {
    "/": ["home"],
    "/home": ["me"],
    "/home/me": [".ssh", "a"],
    "/home/me/.ssh": ["id"],
  };
  const rp = readProtection({
    home: HOME,
    uid: 1000,
    env: noEnv,
    rules: [{ effect: "protect", path: "/home/me/a", source: cli("--protect") }],
    list: (d) => tree[d],
  });
  const floor = readFloor(rp, HOME, fakeFs(tree), (p) => p);
  assert.ok(floor.inProject.includes("/home/me/.ssh"));
  assert.ok(!floor.inProject.includes("/home/me/a"));
  assert.deepEqual(floor.carved.map((c) => c.path), ["/", "/home", "/home/me"]);
  const lines = notEnforcedLines(floor, HOME);
  assert.ok(lines[0].startsWith("# not protected, as they lie in the project"), lines[0]);
  assert.deepEqual(readStartLines(floor, rp, HOME, HOME), [
    "hallpass: files the sandbox creates directly in ~ cannot be read back in this session (a protected location is below it)",
  ]);
});

Deno.test("hallpass rules read PATH: a protection that is not kept says so", () => {
  const rp = readProtection({ home: "/tmp/h", uid: 1000, env: noEnv, rules: [], list: () => undefined });
  assert.deepEqual(readVerdict(rp, "/tmp/h/.ssh/id", "/tmp/h", { dropped: ["/tmp/h/.ssh"], inProject: [] }), [
    "read /tmp/h/.ssh/id: readable: protect ~/.ssh (builtin: SSH keys) is not kept, as it lies below a directory everyone creates files in (such as /tmp)",
  ]);
  assert.equal(readVerdict(rp, "/tmp/h/.ssh/id", "/tmp/h")[0], "read /tmp/h/.ssh/id: unreadable (EACCES)");
});
