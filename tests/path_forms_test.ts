/**
 * lib/supervisor/path_forms.ts: the kernel's answers to a last component written with a trailing slash, `.` or
 * `..` (each checked against the kernel by tests/e2e/write_forms_test.ts, bare and under both engines).
 */
import { strictEqual as eq } from "node:assert/strict";
import { type Found, type Tail, tailErrno, tailOf } from "../lib/supervisor/path_forms.ts";
import type { WriteKind } from "../lib/filter/syscall_table.ts";

Deno.test("tailOf: how the last component is written", () => {
  const table: [string, Tail][] = [
    ["f", "plain"],
    ["/", "plain"],
    ["d/f", "plain"],
    ["f/", "slash"],
    ["d/f//", "slash"],
    [".", "dot"],
    ["d/sub/.", "dot"],
    ["d/sub/./", "dot"],
    ["d/..", "dotdot"],
    ["..", "dotdot"],
    ["d/.x", "plain"],
    ["d/x.", "plain"],
  ];
  for (const [p, want] of table) eq(tailOf(p), want, p);
});

Deno.test("tailErrno: the kernel's errno, or 0 where the form acts as the plain name", () => {
  const table: [WriteKind, 0 | 1, Tail, Found, Found, { rmdir?: boolean; creat?: boolean }, number][] = [
    ["rmdir", 0, "dot", "dir", "dir", {}, 22],
    ["rmdir", 0, "dotdot", "dir", "dir", {}, 39],
    ["unlink", 0, "dot", "dir", "dir", { rmdir: true }, 22], // unlinkat(AT_REMOVEDIR)
    ["rmdir", 0, "slash", "dir", "dir", {}, 0],
    ["rmdir", 0, "dot", "none", "none", {}, 2], // the directory the dot names is not there
    ["rmdir", 0, "dot", "other", "other", {}, 20],
    ["unlink", 0, "slash", "other", "other", {}, 20],
    ["unlink", 0, "slash", "dir", "dir", {}, 21],
    ["unlink", 0, "slash", "link", "dir", {}, 20],
    ["unlink", 0, "slash", "none", "none", {}, 2],
    ["unlink", 0, "dot", "dir", "dir", {}, 21],
    ["open", 0, "slash", "none", "none", { creat: true }, 21],
    ["open", 0, "slash", "other", "other", { creat: true }, 21],
    ["open", 0, "slash", "other", "other", {}, 20],
    ["open", 0, "slash", "link", "dir", {}, 21],
    ["open", 0, "dot", "dir", "dir", { creat: true }, 21],
    ["mkdir", 0, "dot", "none", "none", {}, 2],
    ["mkdir", 0, "dot", "dir", "dir", {}, 17],
    ["mkdir", 0, "slash", "none", "none", {}, 0],
    ["rename", 0, "dot", "dir", "dir", {}, 16],
    ["rename", 1, "dot", "none", "none", {}, 2],
    ["symlink", 0, "slash", "none", "none", {}, 2],
    ["symlink", 0, "slash", "other", "other", {}, 17],
    ["symlink", 0, "dot", "dir", "dir", {}, 17],
    ["link", 0, "slash", "other", "other", {}, 20],
    ["link", 1, "slash", "none", "none", {}, 2],
    ["link", 0, "dot", "dir", "dir", {}, 1],
    ["mknod", 0, "slash", "none", "none", {}, 2],
    ["chmod", 0, "slash", "other", "other", {}, 20],
    ["chmod", 0, "slash", "link", "other", {}, 20],
    ["chmod", 0, "slash", "link", "dir", {}, 0],
    ["chmod", 0, "dot", "dir", "dir", {}, 0],
    ["truncate", 0, "slash", "other", "other", {}, 20],
    ["chown", 0, "plain", "other", "other", {}, 0],
  ];
  for (const [kind, end, tail, at, followed, o, want] of table) {
    eq(tailErrno(kind, end, tail, at, followed, o), want, `${kind} ${end} ${tail} ${at} ${followed}`);
  }
});
