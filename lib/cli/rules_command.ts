/**
 * `hallpass rules [write|exec|connect|read TARGET]`: the rules in force for a run started here (options, the saved
 * rules, rules files, the project's file), and, given an operation and a target, which rule decides it and why.
 */
import type { CliOptions } from "./options.ts";
import { makePlan } from "../sandbox/plan.ts";
import { formatSource, Policy } from "../policy/policy.ts";
import { lookupInPath } from "../policy/path_lookup.ts";
import { formatScope, normalizePath } from "../policy/path_scope.ts";
import { formatProtected, protectedHit } from "../policy/protected_paths.ts";
import { formatRule } from "../policy/rules_file.ts";
import { UsageError } from "../types.ts";
import { visible } from "../ui/sanitize.ts";
import { readRulesLines, readVerdict } from "./secrets_command.ts";
import { notEnforcedLines, readFloor } from "../floor/read_floor.ts";
import { existingResolver, realCarveFs } from "../floor/carve_fs.ts";

export function rulesCommand(args: string[], opts: CliOptions): number {
  // Targets, rules and paths may hold control characters (the project's rules file is the sandbox's to write):
  // every line is printed visible (lib/ui/sanitize.ts), never as raw escapes.
  const console = { log: (l: string) => globalThis.console.log(visible(l)) };
  const plan = makePlan({ ...opts, command: ["/bin/sh"] }, (k) => Deno.env.get(k));
  const policy: Policy = new Policy(plan.rules, {
    home: plan.home,
    cwd: plan.cwd,
    lookup: (p) => lookupInPath(p, plan.pathEnv),
    isWritable: (p: string): boolean => policy.decide("write", p, Date.now()).effect === "allow",
    groups: plan.groups,
  });
  const now = Date.now();
  if (args.length === 0) {
    console.log(`# saved rules: ${plan.userRulesFile}`);
    for (const r of plan.rules) console.log(`${formatRule(r, now).padEnd(60)} # ${formatSource(r.source)}`);
    console.log("# protected: asks even where writing is allowed (an allow rule naming the path allows it)");
    for (const p of plan.protected ?? []) console.log(formatProtected(p));
    for (const l of readRulesLines(plan.reads, plan.home)) console.log(l);
    const floor = readFloor(plan.reads, plan.project, realCarveFs, existingResolver());
    for (const l of notEnforcedLines(floor, plan.home)) console.log(l);
    return 0;
  }
  if (args.length !== 2 || !["write", "exec", "connect", "read"].includes(args[0])) {
    throw new UsageError("usage: hallpass rules [write|exec|connect|read TARGET]");
  }
  if (args[0] === "read") {
    const floor = readFloor(plan.reads, plan.project, realCarveFs, existingResolver());
    for (const l of readVerdict(plan.reads, normalizePath(args[1], plan.cwd, plan.home), plan.home, floor)) {
      console.log(l);
    }
    return 0;
  }
  const op = args[0] as "write" | "exec" | "connect";
  let target = args[1];
  if (op === "write") target = normalizePath(target, plan.cwd, plan.home);
  if (op === "exec" && !target.includes("/")) {
    const found = lookupInPath(target, plan.pathEnv);
    if (!found) throw new UsageError(`${target}: not found in $PATH`);
    target = found;
  } else if (op === "exec") target = normalizePath(target, plan.cwd, plan.home);
  const { decision, matching } = policy.explain(op, target, now);
  const hit = op === "write" && decision.effect === "allow"
    ? protectedHit(plan.protected ?? [], target, false, decision.rule)
    : null;
  if (hit) {
    console.log(`${op} ${target}: asks (protected: ${hit.reason}; ${formatScope(hit.scope)})`);
    return 0;
  }
  const verdict = decision.effect === "ask" ? "asks" : decision.effect === "allow" ? "allowed" : "denied";
  // Not mediated in this configuration: the call goes through, whatever the rules say (they are shown for
  // when it is). Network connects unless --mediate has connect; programs unless it has exec.
  const notMediated = (op === "connect" && !opts.mediate.connect && !target.startsWith("unix:")) ||
    (op === "exec" && !opts.mediate.exec);
  if (notMediated) {
    console.log(
      `${op} ${target}: not mediated (goes through: --mediate has no ${op}); ` +
        `with --mediate …,${op} it would be ${verdict}`,
    );
  } else console.log(`${op} ${target}: ${verdict}${decision.effect === "ask" ? ` (${decision.why})` : ""}`);
  if (decision.rule) {
    console.log(`  decided by: ${formatRule(decision.rule, now)}   (${formatSource(decision.rule.source)})`);
  }
  for (const m of matching) {
    if (m.rule === decision.rule) continue;
    console.log(
      `  also matches: ${formatRule(m.rule, now)}   (${
        formatSource(m.rule.source)
      }, less specific or outranked)`,
    );
  }
  return 0;
}
