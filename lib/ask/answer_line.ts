/**
 * The answer line an ask program prints (docs/ask-program.md):
 *
 *   once | deny | always [SCOPE] | never [SCOPE] | for DURATION [SCOPE]
 *
 * SCOPE, when given, must cover the target (a path scope `/dir/**` or `/file` for write and exec, a DEST for
 * connect). Pure: returns an Answer or a one-line error; the caller turns an error into a deny.
 */
import { parseDuration } from "../policy/duration.ts";
import { formatScope, parsePathScope, scopeCovers } from "../policy/path_scope.ts";
import { destCovers, parseConnectDest, parseConnectTarget } from "../policy/connect_dest.ts";
import type { Answer, Question } from "../types.ts";

export function parseAnswerLine(line: string, q: Question, by: string): Answer | { error: string } {
  const text = line.trim();
  if (text.length === 0) return { error: "empty answer" };
  if (text.length > 8192) return { error: "answer longer than 8 KiB" };
  const words = text.split(/\s+/);
  const kind = words[0].toLowerCase();
  let rest = words.slice(1);
  let durationMs: number | undefined;
  switch (kind) {
    case "once":
    case "deny":
      if (rest.length) return { error: `"${kind}" takes no scope` };
      return { kind, by };
    case "for": {
      if (!rest.length) return { error: `"for" needs a duration (e.g. for 10m)` };
      try {
        durationMs = parseDuration(rest[0]);
      } catch (e) {
        return { error: (e as Error).message };
      }
      rest = rest.slice(1);
      break;
    }
    case "always":
    case "never":
      break;
    default:
      return { error: `unknown answer ${JSON.stringify(words[0].slice(0, 40))}` };
  }
  if (rest.length > 1) return { error: "too many words: a scope has no spaces" };
  const scope = rest.length ? rest[0] : q.suggestedScope;
  const checked = checkScope(scope, q);
  if (typeof checked !== "string") return checked;
  return { kind: kind as "for" | "always" | "never", durationMs, scope: checked, by };
}

/** Returns the normalised scope, or an error when it does not parse or does not cover the target. */
export function checkScope(scope: string, q: Question): string | { error: string } {
  try {
    if (q.op === "connect") {
      const d = parseConnectDest(scope);
      const t = parseConnectTarget(q.target);
      if (!destCovers(d, t)) return { error: `scope ${scope} does not cover ${q.target}` };
      return scope;
    }
    const s = parsePathScope(scope, { cwd: "/" });
    if (!scope.startsWith("/")) return { error: `scope ${JSON.stringify(scope)} must be an absolute path` };
    // A rename or link: the scope must cover one of its ends (an end it leaves out is asked about again).
    const ends = q.paths ?? [q.target.endsWith("/**") ? q.target.slice(0, -3) : q.target];
    if (!ends.some((t) => scopeCovers(s, t))) return { error: `scope ${scope} does not cover ${q.target}` };
    return formatScope(s);
  } catch (e) {
    return { error: (e as Error).message };
  }
}
