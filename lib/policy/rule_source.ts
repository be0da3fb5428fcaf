/**
 * Where a rule came from, as the person reads it. On its own (lib/policy/policy.ts re-exports it) so that the
 * start-up path, which only prints it, does not load the decision's code (helper/bundle/bundle.ts: a module
 * the start-up path imports is in its chunk whole).
 *
 * @module
 */
import type { RuleSource } from "../types.ts";

/** Where a rule came from, in a few words. */
export function formatSource(s: RuleSource): string {
  switch (s.kind) {
    case "cli":
      return s.option;
    case "file":
      return `${s.file}:${s.line}`;
    case "answer":
      return `answer by ${s.by}`;
    case "request":
      return `hallpass-request #${s.requestId}`;
    case "builtin":
      return `builtin: ${s.what}`;
  }
}
