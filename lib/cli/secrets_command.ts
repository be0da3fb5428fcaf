/**
 * The read protections in `hallpass rules`: the list in force (rules syntax, so a line can be copied into a
 * rules file), and `hallpass rules read PATH`. Pure.
 *
 * @module
 */
import { formatSource } from "../policy/policy.ts";
import { quoteTarget } from "../policy/rules_file.ts";
import { protectionOf, type ReadProtection } from "../policy/secrets.ts";
import { tilde } from "../floor/read_floor.ts";

/** `protect PATH   # source` lines, then `allow read PATH` lines, then what was lifted. */
export function readRulesLines(rp: ReadProtection, home: string): string[] {
  const out = ["# unreadable to the sandbox (lift one with --allow-read PATH or a rule: allow read PATH)"];
  const line = (rule: string, why: string) => `${rule.padEnd(60)} # ${why}`;
  for (const p of rp.protect) {
    out.push(line(`protect ${quoteTarget(tilde(p.path, home))}`, formatSource(p.source)));
  }
  for (const r of rp.readable) {
    out.push(line(`allow read ${quoteTarget(tilde(r.path, home))}`, formatSource(r.source)));
  }
  for (const l of rp.lifted) {
    out.push(
      `# lifted: protect ${tilde(l.protection.path, home)} (${
        formatSource(l.protection.source)
      }) by allow read ${tilde(l.by.path, home)} (${formatSource(l.by.source)})`,
    );
  }
  return out;
}

/** `hallpass rules read PATH`: readable or not, and by which rule. */
export function readVerdict(
  rp: ReadProtection,
  path: string,
  home: string,
  notKept: { dropped: string[]; inProject: string[] } = { dropped: [], inProject: [] },
): string[] {
  const p = protectionOf(rp, path);
  if (p && (notKept.dropped.includes(p.path) || notKept.inProject.includes(p.path))) {
    const why = notKept.dropped.includes(p.path)
      ? "it lies below a directory everyone creates files in (such as /tmp)"
      : "it lies in the project";
    return [
      `read ${path}: readable: protect ${tilde(p.path, home)} (${
        formatSource(p.source)
      }) is not kept, as ${why}`,
    ];
  }
  if (!p) {
    const r = rp.readable.find((x) => path === x.path || path.startsWith(x.path + "/"));
    const out = [`read ${path}: readable`];
    if (r) out.push(`  decided by: allow read ${tilde(r.path, home)}   (${formatSource(r.source)})`);
    return out;
  }
  return [
    `read ${path}: unreadable (EACCES)`,
    `  decided by: protect ${tilde(p.path, home)}   (${formatSource(p.source)})`,
    `  to allow it: --allow-read ${quoteTarget(tilde(p.path, home))}   or rule: allow read ${
      quoteTarget(tilde(p.path, home))
    }`,
  ];
}
