/**
 * The Landlock execute floor (docs/exec.md, docs/threat-model.md "Exec"): when no person can widen what may
 * run (`--no-ask`, and every run without a terminal), the Landlock ruleset handles EXECUTE and grants it only
 * where the rules allow programs. The supervisor still decides every exec first; the floor makes the kernel
 * refuse what it did not decide on: a path a second thread swaps after the decision, a symlink retargeted in
 * between. Must be a superset of what the policy allows, or an allowed exec would fail: every `allow exec`
 * rule without a duration (groups and program names expanded, `@system` included), the command hallpass
 * starts and its `#!` interpreters, and hallpass-request.
 *
 * Not with a person (or an ask program): an answer can allow any program, including memfds and files the
 * person lets the sandbox write later, which no ruleset fixed at start can hold.
 */
import { expandGroup } from "../policy/exec_groups.ts";
import { parsePathScope, scopeCovers } from "../policy/path_scope.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import type { Plan } from "../sandbox/plan.ts";
import type { PathScope } from "../types.ts";
import { exists } from "../util/exists.ts";

export interface ExecFloorEntry {
  kind: "tree" | "exact";
  path: string;
}

/** The trees and files the kernel lets the sandbox execute, for a plan run without a person. */
export function execFloor(plan: Plan): ExecFloorEntry[] {
  const lookup = (p: string) => lookupInPath(p, plan.pathEnv);
  const out: ExecFloorEntry[] = [];
  const add = (e: ExecFloorEntry) => {
    if (!exists(e.path)) {
      // A rule may name a program that does not exist yet (`--allow-exec ./build/app` before the build).
      // Landlock can only name what exists: inside the write floor, where the program will appear without the
      // supervisor, the floor's directory holding it is granted whole (docs/exec.md); elsewhere nothing (a
      // missing @system tree such as /lib32 grants nothing).
      const w = (plan.writeGrants ?? plan.floor).find((f) => f.kind === "tree" && scopeCovers(f, e.path));
      if (!w) return;
      let dir = e.path;
      do dir = dir.slice(0, Math.max(dir.lastIndexOf("/"), 1)); while (
        dir.length > w.path.length && !exists(dir)
      );
      e = { kind: "tree", path: dir };
    }
    if (!out.some((o) => o.kind === e.kind && o.path === e.path)) out.push(e);
  };
  for (const r of plan.rules) {
    if (r.op !== "exec" || r.effect !== "allow" || r.expiresAt !== undefined) continue;
    // The targets as lib/policy/policy.ts compiles them (kept in step by tests/exec_floor_unit_test.ts).
    let scopes: PathScope[];
    try {
      const t = r.target;
      if (t.startsWith("@")) scopes = expandGroup(t, lookup, plan.groups);
      else if (t.length > 0 && !t.includes("/") && t !== "~") {
        const p = lookup(t);
        scopes = p !== null && p.startsWith("/") ? [parsePathScope(p, { cwd: "/" })] : [];
      } else scopes = [parsePathScope(t, { cwd: plan.cwd, home: plan.home })];
    } catch {
      continue; // a target the policy refuses allows nothing
    }
    for (const sc of scopes) {
      // A pattern (`DIR/x*`): the directory before its first wildcard, whole.
      const glob = sc.path.search(/[*?[]/);
      if (glob >= 0) add({ kind: "tree", path: sc.path.slice(0, sc.path.lastIndexOf("/", glob)) || "/" });
      else add({ kind: sc.kind === "tree" ? "tree" : "exact", path: sc.path });
    }
  }
  // The command hallpass starts (the person named it), and the interpreters of a script, as the kernel runs
  // them (up to its 4 levels).
  let program: string | null = plan.program;
  for (let level = 0; program !== null && level < 5; level++) {
    add({ kind: "exact", path: program });
    program = interpreterOf(program, plan.cwd);
  }
  const request = lookup("hallpass-request");
  if (request !== null && request.startsWith("/")) add({ kind: "exact", path: request });
  return out;
}

/** The `#!` interpreter of a file, or null. */
export function interpreterOf(path: string, cwd: string): string | null {
  let head: Uint8Array;
  try {
    const f = Deno.openSync(path);
    try {
      head = new Uint8Array(256);
      const n = f.readSync(head) ?? 0;
      head = head.subarray(0, n);
    } finally {
      f.close();
    }
  } catch {
    return null;
  }
  if (head[0] !== 0x23 || head[1] !== 0x21) return null;
  const nl = head.indexOf(10);
  const interp =
    new TextDecoder().decode(head.subarray(2, nl < 0 ? head.length : nl)).trim().split(/[ \t]/)[0];
  if (!interp) return null;
  return interp.startsWith("/") ? interp : `${cwd}/${interp}`;
}
