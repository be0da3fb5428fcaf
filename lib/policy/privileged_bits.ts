/**
 * Privilege the sandbox must not leave behind (docs/threat-model.md, "What is left behind to run outside"): a
 * setuid or setgid program, a file with capabilities, a device node. Each would let whoever runs or opens it
 * later — another local user, root's next shell — act with rights the sandbox was never given. Refused with
 * EPERM everywhere (in the project too), as root too, before any rule or question.
 *
 * Pure: decided on the call's arguments as the kernel copied them into the notification (registers, which a
 * racing thread cannot change) or, for an xattr name, on the supervisor's own copy that it then uses.
 *
 * @module
 */
import type { WriteCall } from "../filter/syscall_table.ts";

const S_ISUID = 0o4000, S_ISGID = 0o2000;
const S_IFMT = 0o170000, S_IFCHR = 0o020000, S_IFBLK = 0o060000;
const O_CREAT = 0o100, O_TMPFILE_DIR = 0o20000000;

/** Why the call is refused (EPERM), or null. `args`: the notification's six arguments. */
export function privilegedRefusal(c: WriteCall, args: readonly bigint[]): string | null {
  if (c.mode === undefined) return null;
  const mode = Number(args[c.mode] & 0xffffffffn);
  switch (c.kind) {
    case "chmod":
      return mode & (S_ISUID | S_ISGID) ? "setuid/setgid bits" : null;
    case "open": {
      const flags = typeof c.openFlags === "number"
        ? Number(args[c.openFlags] & 0xffffffffn)
        : c.openFlags!.fixed;
      if (!(flags & (O_CREAT | O_TMPFILE_DIR))) return null; // the mode is not used
      return mode & (S_ISUID | S_ISGID) ? "setuid/setgid bits" : null;
    }
    case "mknod": {
      const type = mode & S_IFMT;
      if (type === S_IFCHR || type === S_IFBLK) return "a device node";
      return mode & (S_ISUID | S_ISGID) ? "setuid/setgid bits" : null;
    }
  }
  return null;
}

/**
 * Whether an extended attribute name may not be set: `security.*` (file capabilities are
 * `security.capability`; SELinux/AppArmor labels) and `trusted.*`.
 */
export function privilegedXattr(name: string | Uint8Array): boolean {
  const s = typeof name === "string" ? name : String.fromCharCode(...name.subarray(0, 9));
  return s.startsWith("security.") || s.startsWith("trusted.");
}
