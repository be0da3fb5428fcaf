/**
 * Program groups for `--allow-exec @group` and `allow exec @group` rules (README.md, docs/threat-model.md).
 *
 * A member is a path pattern (`/usr/**`, `/opt/x/bin/tool`), a bare program name (`git`, looked up in `$PATH`
 * by the caller's `lookup`; a name that is not found adds nothing), or another group (`@shells`).
 *
 * Rules files add to a table with a line `group @name MEMBER...` (see rules_file.ts): a new name defines a
 * group, an existing one gets the members appended. There is no process-wide table: a run's table is made by
 * its plan ({@link newGroupTable}, lib/sandbox/plan.ts) and travels with its rules to the supervisor Worker
 * (lib/supervisor/session_config.ts `groups`); without one, only the builtins ({@link BUILTIN_GROUPS}) exist.
 *
 * `@system` is special in policy.ts: its builtin allow does not apply to a program the sandbox may write.
 *
 * @module
 */

import { formatScope, parsePathScope } from "./path_scope.ts";
import { type PathScope, UsageError } from "../types.ts";

/** The builtin groups, in one readable table. */
const BUILTIN: Readonly<Record<string, readonly string[]>> = {
  // Read-only system locations (docs/threat-model.md). /lib* = /lib, /lib32, /lib64, /libx32.
  "@system": [
    "/usr/**",
    "/bin/**",
    "/sbin/**",
    "/lib/**",
    "/lib32/**",
    "/lib64/**",
    "/libx32/**",
    "/opt/**",
    "/nix/store/**",
    "/snap/**",
  ],
  "@shells": ["sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "tcsh", "csh", "busybox"],
  "@coreutils": [
    ..."arch b2sum base32 base64 basename basenc cat chcon chgrp chmod chown chroot cksum comm cp csplit cut date"
      .split(" "),
    ..."dd df dir dircolors dirname du echo env expand expr factor false fmt fold groups head hostid id install"
      .split(" "),
    ..."join link ln logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste pathchk"
      .split(" "),
    ..."pinky pr printenv printf ptx pwd readlink realpath rm rmdir runcon seq sha1sum sha224sum sha256sum"
      .split(" "),
    ..."sha384sum sha512sum shred shuf sleep sort split stat stdbuf stty sum sync tac tail tee test timeout touch"
      .split(" "),
    ..."tr true truncate tsort tty uname unexpand uniq unlink users vdir wc who whoami yes [".split(" "),
  ],
  "@git": ["git", "git-lfs", "git-upload-pack", "git-receive-pack", "git-upload-archive"],
  "@node": ["node", "npm", "npx", "corepack", "yarn", "pnpm"],
  "@python": ["python3", "python", "pip", "pip3"],
  "@build": ["make", "cc", "gcc", "g++", "clang", "ld", "as", "cmake", "ninja", "cargo", "rustc", "go"],
};

/** A group table: `@name` → members as written. */
export type GroupTable = Map<string, string[]>;
/** A table only read: the builtins, or a run's table. */
export type ReadonlyGroupTable = ReadonlyMap<string, readonly string[]>;

/** A fresh table holding only the builtin groups. */
export function newGroupTable(): GroupTable {
  return new Map(Object.entries(BUILTIN).map(([k, v]) => [k, [...v]]));
}

/** The builtin groups alone, read-only. */
export const BUILTIN_GROUPS: ReadonlyGroupTable = new Map(
  Object.entries(BUILTIN).map(([k, v]) => [k, Object.freeze([...v])]),
);

/** A table as the session config carries it (a plain object: it is also written as JSON), or the builtins. */
export function groupTableOf(
  groups: Readonly<Record<string, readonly string[]>> | undefined,
): ReadonlyGroupTable {
  return groups ? new Map(Object.entries(groups)) : BUILTIN_GROUPS;
}

/** The table as a plain object, for {@link groupTableOf} on the other side. */
export function groupRecord(groups: ReadonlyGroupTable): Record<string, string[]> {
  return Object.fromEntries([...groups].map(([k, v]) => [k, [...v]]));
}

const GROUP_NAME = /^@[a-z0-9][a-z0-9_-]{0,63}$/;
const PROG_NAME = /^[^/\s\0*?[]+$/;

/** The group name with its `@`, checked; throws {@link UsageError}. */
export function groupName(name: string): string {
  const n = name.startsWith("@") ? name : "@" + name;
  if (!GROUP_NAME.test(n)) {
    throw new UsageError(
      `bad group name ${JSON.stringify(n.slice(0, 80))}: use @ then lower-case letters, digits, "-" or "_"`,
    );
  }
  return n;
}

/**
 * Checks one member: an absolute path or `DIR/**` (returned in canonical form), a program name, or `@group`.
 * Relative paths and `~` must be resolved by the caller. Throws {@link UsageError}.
 */
export function checkMember(member: string): string {
  if (member.startsWith("@")) return groupName(member);
  if (member.startsWith("/")) {
    const s = parsePathScope(member, { cwd: "/" });
    if (s.kind === "glob") {
      throw new UsageError(`bad group member ${JSON.stringify(member.slice(0, 80))}: no * here`);
    }
    return formatScope(s);
  }
  if (PROG_NAME.test(member) && member !== "." && member !== "..") return member;
  throw new UsageError(
    `bad group member ${
      JSON.stringify(member.slice(0, 80))
    }: expected an absolute path, DIR/**, a program name or @group`,
  );
}

/**
 * Defines `name` (with or without `@`) or appends members to it. Members are checked ({@link checkMember});
 * a group that would contain itself is refused.
 *
 * @example
 * ```ts
 * defineGroup("@mytools", ["/opt/x/bin/**", "mytool"], table);
 * ```
 */
export function defineGroup(name: string, members: readonly string[], groups: GroupTable): void {
  const n = groupName(name);
  if (members.length === 0) throw new UsageError(`group ${n} needs at least one member`);
  const checked = members.map(checkMember);
  for (const m of checked) {
    if (m.startsWith("@")) {
      if (!groups.has(m)) {
        throw new UsageError(`unknown group ${m} (known: ${[...groups.keys()].join(", ")})`);
      }
      if (m === n || reaches(m, n, groups, new Set())) {
        throw new UsageError(`group ${n} cannot contain itself`);
      }
    }
  }
  const list = groups.get(n);
  if (list) list.push(...checked.filter((m) => !list.includes(m)));
  else groups.set(n, checked);
}

function reaches(from: string, to: string, groups: ReadonlyGroupTable, seen: Set<string>): boolean {
  if (seen.has(from)) return false;
  seen.add(from);
  for (const m of groups.get(from) ?? []) {
    if (m === to || (m.startsWith("@") && reaches(m, to, groups, seen))) return true;
  }
  return false;
}

/**
 * The scopes a group stands for: path members as they are, names through `lookup` (missing ones skipped),
 * nested groups expanded. Throws {@link UsageError} for an unknown group.
 *
 * @example
 * ```ts
 * expandGroup("@node", (p) => p === "node" ? "/usr/local/bin/node" : null); // [{ kind: "exact", path: "/usr/local/bin/node" }]
 * ```
 */
export function expandGroup(
  name: string,
  lookup: (prog: string) => string | null,
  groups: ReadonlyGroupTable = BUILTIN_GROUPS,
): PathScope[] {
  const out: PathScope[] = [];
  const seen = new Set<string>();
  const walk = (g: string) => {
    if (seen.has(g)) return;
    seen.add(g);
    const members = groups.get(g);
    if (!members) throw new UsageError(`unknown group ${g} (known: ${[...groups.keys()].join(", ")})`);
    for (const m of members) {
      if (m.startsWith("@")) walk(m);
      else if (m.startsWith("/")) out.push(parsePathScope(m, { cwd: "/" }));
      else {
        const p = lookup(m);
        if (p !== null && p.startsWith("/")) out.push({ kind: "exact", path: p });
      }
    }
  };
  walk(groupName(name));
  const keys = new Set<string>();
  return out.filter((s) => {
    const k = formatScope(s);
    return keys.has(k) ? false : (keys.add(k), true);
  });
}
