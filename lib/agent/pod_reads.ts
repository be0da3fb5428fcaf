/**
 * A pod's read protection (docs/kubernetes.md "Protected paths in pods"): the `protect PATH` and `allow read PATH`
 * lines of its rules files, as the supervisor's decide() reads them (lib/supervisor/decide.ts decideRead). No
 * built-in list: a pod's files are its image's and its mounts', not a developer's home directory. An `allow read`
 * at or above a protection lifts it; one inside a protection makes that part readable again. Pure.
 *
 * @module
 */
import type { ReadRule } from "../types.ts";
import { parseProfileMetadata } from "./profile.ts";

const at = (p: string, dir: string) => p === dir || p.startsWith(dir + "/");

/** What the pod's rules protect, and what they make readable inside a protection. */
export function podReadProtection(rules: readonly ReadRule[]): { protect: string[]; readable: string[] } {
  const allows = rules.filter((r) => r.effect === "allow").map((r) => r.path);
  const protect = [
    ...new Set(
      rules.filter((r) => r.effect === "protect" && !allows.some((a) => at(r.path, a))).map((r) => r.path),
    ),
  ];
  const readable = allows.filter((a) => protect.some((p) => at(a, p)));
  return { protect, readable };
}

/**
 * Null when the container's profile can hold the protections; else why not, as the agent's line says it (the
 * profile does not trap read opens: every read would go through unseen).
 */
export function protectionUnheld(metadata: string, protect: readonly string[]): string | null {
  if (protect.length === 0) return null;
  if (parseProfileMetadata(metadata)?.mediate.has("read")) return null;
  return `its rules protect ${protect[0]}${
    protect.length > 1 ? ` (and ${protect.length - 1} more)` : ""
  } but its seccomp profile does not trap reads: set the pod's securityContext.seccompProfile to ` +
    `{type: Localhost, localhostProfile: profiles/hallpass-protect.json} (or remove the protect lines)`;
}
