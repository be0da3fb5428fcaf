/**
 * Credential locations the sandbox cannot read: the built-in list, `protect PATH` / `--protect PATH` to add
 * one, `allow read PATH` / `--allow-read PATH` to lift one. Pure: the caller passes the environment and a
 * directory lister. The protections become Landlock holes in a read grant of "/" (lib/floor/landlock_carve.ts,
 * lib/sandbox/plan.ts `readCarve`).
 *
 * Choices, where the issue left them open:
 *   - A protection covers a path and everything below it, whether it exists or not (a key made later is
 *     protected too). Protected means: its files cannot be opened for reading or run; names in a protected
 *     directory can still be listed and stat'ed (Landlock cannot withhold listing a directory on the way
 *     without withholding it everywhere below).
 *   - `allow read PATH` lifts every protection at or below PATH; inside a protection it makes PATH (which must
 *     exist at start) readable. Only you lift: a project rules file can only add protections.
 *   - `~/.ssh` is protected except `config`, `known_hosts`, `known_hosts2` and `*.pub` as they are at start:
 *     an ssh client needs them to connect (git over ssh through the agent socket), and none is a secret.
 *   - As root, the same list also under every directory in /home, and the system's own secrets
 *     (/etc/shadow, /etc/gshadow, the ssh host keys); other users cannot read those anyway.
 *   - Where an environment variable moves a location (GNUPGHOME, KUBECONFIG, ...), both are protected.
 *
 * @module
 */
import { normalizePath } from "./path_scope.ts";
import type { ReadRule, RuleSource } from "../types.ts";

interface BuiltinEntry {
  /** `~/`-relative or absolute. */
  path: string;
  what: string;
  /** Environment variables that move it: each value (a `:` list for KUBECONFIG) is protected too. */
  env?: string[];
  /** A file inside the moved location (DOCKER_CONFIG holds a directory; the secret is config.json). */
  envFile?: string;
}

/** The built-in list (shown by `hallpass rules`, documented in docs/threat-model.md "Secrets"). */
export const BUILTIN: readonly BuiltinEntry[] = [
  { path: "~/.ssh", what: "SSH keys" },
  { path: "~/.gnupg", what: "GnuPG keys", env: ["GNUPGHOME"] },
  { path: "~/.aws", what: "AWS credentials", env: ["AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"] },
  { path: "~/.azure", what: "Azure credentials", env: ["AZURE_CONFIG_DIR"] },
  { path: "~/.config/gcloud", what: "Google Cloud credentials", env: ["CLOUDSDK_CONFIG"] },
  { path: "~/.kube", what: "Kubernetes credentials", env: ["KUBECONFIG"] },
  {
    path: "~/.docker/config.json",
    what: "Docker registry credentials",
    env: ["DOCKER_CONFIG"],
    envFile: "config.json",
  },
  {
    path: "~/.config/containers/auth.json",
    what: "Podman registry credentials",
    env: ["REGISTRY_AUTH_FILE"],
  },
  { path: "~/.netrc", what: "netrc passwords", env: ["NETRC"] },
  { path: "~/.git-credentials", what: "git credential store" },
  { path: "~/.config/git/credentials", what: "git credential store" },
  { path: "~/.config/gh", what: "GitHub CLI token", env: ["GH_CONFIG_DIR"] },
  { path: "~/.config/hub", what: "hub token" },
  { path: "~/.npmrc", what: "npm token", env: ["NPM_CONFIG_USERCONFIG"] },
  { path: "~/.yarnrc.yml", what: "yarn token" },
  { path: "~/.pypirc", what: "PyPI token" },
  { path: "~/.cargo/credentials", what: "cargo token" },
  { path: "~/.cargo/credentials.toml", what: "cargo token" },
  { path: "~/.gem/credentials", what: "RubyGems token" },
  { path: "~/.terraform.d/credentials.tfrc.json", what: "Terraform token" },
  { path: "~/.vault-token", what: "Vault token" },
  { path: "~/.config/op", what: "1Password CLI" },
  { path: "~/.password-store", what: "pass password store", env: ["PASSWORD_STORE_DIR"] },
  { path: "~/.local/share/keyrings", what: "GNOME keyring" },
  { path: "~/.local/share/kwalletd", what: "KDE wallet" },
  { path: "~/.mozilla", what: "Firefox profiles" },
  { path: "~/.librewolf", what: "LibreWolf profiles" },
  { path: "~/.config/google-chrome", what: "Chrome profiles" },
  { path: "~/.config/chromium", what: "Chromium profiles" },
  { path: "~/.config/BraveSoftware", what: "Brave profiles" },
  { path: "~/.config/microsoft-edge", what: "Edge profiles" },
  { path: "~/.config/vivaldi", what: "Vivaldi profiles" },
  { path: "~/snap/firefox", what: "Firefox profiles (snap)" },
  { path: "~/snap/chromium", what: "Chromium profiles (snap)" },
  { path: "~/.var/app/org.mozilla.firefox", what: "Firefox profiles (flatpak)" },
  { path: "~/.var/app/com.google.Chrome", what: "Chrome profiles (flatpak)" },
  { path: "~/.var/app/org.chromium.Chromium", what: "Chromium profiles (flatpak)" },
];

/** Root's extra list: the machine's own secrets. */
export const BUILTIN_ROOT: readonly BuiltinEntry[] = [
  { path: "/etc/shadow", what: "password hashes" },
  { path: "/etc/gshadow", what: "group password hashes" },
  { path: "/etc/ssh/ssh_host_*_key", what: "ssh host keys" },
];

/** In ~/.ssh, what an ssh client needs to connect through an agent, and is no secret. */
export const SSH_READABLE = ["config", "known_hosts", "known_hosts2"];
export const isSshReadable = (name: string) => SSH_READABLE.includes(name) || name.endsWith(".pub");

export interface Protection {
  path: string;
  source: RuleSource;
}

export interface ReadProtection {
  /** In force: each becomes a Landlock hole (READ_FILE withheld below it). */
  protect: Protection[];
  /** Lifted by an `allow read`. */
  lifted: { protection: Protection; by: ReadRule }[];
  /** Paths made readable inside a protection (each a Landlock read grant; must exist at start). */
  readable: Protection[];
  /** Allow rules that changed nothing (neither at/above a protection nor inside one): worth a word. */
  unused: ReadRule[];
}

export interface ProtectionInput {
  home: string;
  uid: number;
  env: (k: string) => string | undefined;
  /** `allow read` / `protect` from options and rules files, in order. */
  rules: readonly ReadRule[];
  /** Names in a directory (undefined when it is not one). */
  list: (dir: string) => string[] | undefined;
}

const at = (p: string, dir: string) => p === dir || p.startsWith(dir + "/");

/** The built-in protections for one home directory. */
function builtinFor(home: string, env: (k: string) => string | undefined, withEnv: boolean): Protection[] {
  const out: Protection[] = [];
  for (const b of BUILTIN) {
    const source: RuleSource = { kind: "builtin", what: b.what };
    out.push({ path: normalizePath(b.path, "/", home), source });
    if (!withEnv) continue;
    for (const v of b.env ?? []) {
      for (const part of (env(v) ?? "").split(":")) {
        if (!part.startsWith("/")) continue;
        const p = normalizePath(b.envFile ? `${part}/${b.envFile}` : part, "/");
        if (p !== "/") out.push({ path: p, source: { kind: "builtin", what: `${b.what} ($${v})` } });
      }
    }
  }
  return out;
}

/** Expands a final-component `*` against the directory's names (ssh host keys). */
function expand(p: string, list: ProtectionInput["list"]): string[] {
  const slash = p.lastIndexOf("/");
  const name = p.slice(slash + 1);
  if (!name.includes("*")) return [p];
  const dir = p.slice(0, slash) || "/";
  const [pre, post] = name.split("*", 2);
  return (list(dir) ?? []).filter((n) =>
    n.startsWith(pre) && n.endsWith(post) && n.length >= pre.length + post.length
  )
    .sort().map((n) => `${dir === "/" ? "" : dir}/${n}`);
}

/** What is protected, lifted and made readable for a session. */
export function readProtection(input: ProtectionInput): ReadProtection {
  const { home, list } = input;
  let all: Protection[] = builtinFor(home, input.env, true);
  if (input.uid === 0) {
    for (const h of list("/home") ?? []) {
      const dir = `/home/${h}`;
      if (dir !== home && list(dir)) all.push(...builtinFor(dir, input.env, false));
    }
    for (const b of BUILTIN_ROOT) {
      for (const p of expand(b.path, list)) all.push({ path: p, source: { kind: "builtin", what: b.what } });
    }
  }
  for (const r of input.rules) if (r.effect === "protect") all.push({ path: r.path, source: r.source });
  // One per path (the first source names it).
  const seen = new Set<string>();
  all = all.filter((p) => !seen.has(p.path) && (seen.add(p.path), true));

  const allows = input.rules.filter((r) => r.effect === "allow");
  const lifted: ReadProtection["lifted"] = [];
  const protect: Protection[] = [];
  for (const p of all) {
    const by = allows.find((a) => at(p.path, a.path));
    if (by) lifted.push({ protection: p, by });
    else protect.push(p);
  }
  const readable: Protection[] = [];
  const unused: ReadRule[] = [];
  for (const a of allows) {
    const inside = protect.some((p) => at(a.path, p.path));
    if (inside) readable.push({ path: a.path, source: a.source });
    else if (!lifted.some((l) => l.by === a)) unused.push(a);
  }
  // ~/.ssh's client files, unless ~/.ssh was lifted (then everything is readable anyway).
  const ssh = `${home === "/" ? "" : home}/.ssh`;
  if (protect.some((p) => p.path === ssh)) {
    for (const n of (list(ssh) ?? []).sort()) {
      if (!isSshReadable(n)) continue;
      const path = `${ssh}/${n}`;
      if (protect.some((p) => p.path !== ssh && at(path, p.path))) continue; // a protect of its own wins
      readable.push({ path, source: { kind: "builtin", what: "an ssh client needs it to connect" } });
    }
  }
  return { protect, lifted, readable, unused };
}

/** The protection that makes `path` unreadable, if any (for `hallpass rules read PATH` and messages). */
export function protectionOf(rp: ReadProtection, path: string): Protection | undefined {
  const deepest = (list: Protection[]) => {
    let best: Protection | undefined;
    for (const p of list) if (at(path, p.path) && (!best || p.path.length > best.path.length)) best = p;
    return best;
  };
  const p = deepest(rp.protect);
  const r = deepest(rp.readable);
  return p && (!r || p.path.length > r.path.length) ? p : undefined;
}
