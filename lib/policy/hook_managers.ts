/**
 * Git hook managers: the hook git runs is theirs, and it runs what a file in the working tree says. pre-commit
 * (`.pre-commit-config.yaml`: a `repo: local` hook's `entry` is a command), lefthook (`lefthook.yml` and its
 * `.lefthook/` scripts) and husky 9 (`core.hooksPath = .husky/_`, whose `h` runs `.husky/HOOK`) make those
 * project files as much a hook as `.git/hooks/pre-commit` (red team: the sandbox edited `.husky/pre-commit` and
 * the person's next `git commit` outside ran it; tests/e2e/redteam6_test.ts). Found at start by reading the
 * hooks the repository has (a manager's hook names it), they are protected paths (lib/policy/protected_paths.ts).
 * Pure: the caller gives what it read.
 *
 * @module
 */

import { normalizePath } from "./path_scope.ts";

/** git's hook names a manager installs (the ones run on the person's own commands). */
const HOOK_NAMES = [
  "pre-commit",
  "prepare-commit-msg",
  "commit-msg",
  "post-commit",
  "pre-push",
  "post-checkout",
  "post-merge",
  "pre-rebase",
  "post-rewrite",
  "pre-merge-commit",
];

const LEFTHOOK_FILES = [
  "lefthook.yml",
  ".lefthook.yml",
  "lefthook.yaml",
  ".lefthook.yaml",
  "lefthook.json",
  ".lefthook.json",
  "lefthook.toml",
  ".lefthook.toml",
  "lefthook-local.yml",
  ".lefthook-local.yml",
  "lefthook-local.yaml",
  ".lefthook-local.yaml",
];

export interface HookReader {
  /** A small text file's contents, or undefined. */
  read(path: string): string | undefined;
  kind(path: string): "dir" | "file" | "symlink" | "other" | undefined;
}

/**
 * The working-tree files the hooks in `hooksDir` run through a manager, for the working tree `worktree`:
 * exact files and trees, absolute (lexical; the caller makes them canonical).
 */
export function hookManagerFiles(
  hooksDir: string,
  worktree: string,
  fs: HookReader,
): { kind: "exact" | "tree"; path: string }[] {
  const out: { kind: "exact" | "tree"; path: string }[] = [];
  const at = (p: string) => `${worktree}/${p}`;
  // husky 9: core.hooksPath is `.husky/_`, each hook there sources `_/h`, which runs `.husky/HOOK`.
  if (hooksDir.endsWith("/_") && fs.kind(`${hooksDir}/h`) === "file") {
    out.push({ kind: "tree", path: hooksDir.slice(0, -2) });
  }
  let preCommit = false, lefthook = false;
  for (const name of HOOK_NAMES) {
    const text = fs.read(`${hooksDir}/${name}`);
    if (text === undefined) continue;
    if (/pre-commit\.com|hook-impl/.test(text)) {
      preCommit = true;
      for (const m of text.matchAll(/--config[= ]['"]?([^'"\s]+)/g)) {
        // Relative to the working tree's top (where git runs hooks), `..` included; or absolute (a config kept
        // in a dotfiles directory): lexically normal, so that the caller's canonical form can match it.
        out.push({ kind: "exact", path: normalizePath(m[1], worktree) });
      }
    }
    if (/lefthook/i.test(text)) lefthook = true;
  }
  if (preCommit) out.push({ kind: "exact", path: at(".pre-commit-config.yaml") });
  if (lefthook) {
    for (const f of LEFTHOOK_FILES) out.push({ kind: "exact", path: at(f) });
    out.push({ kind: "tree", path: at(".lefthook") }, { kind: "tree", path: at(".lefthook-local") });
  }
  return out;
}
