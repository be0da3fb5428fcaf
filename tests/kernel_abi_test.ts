// The kernel structures and the filter as this kernel and libseccomp see them: the layouts ffi/notify.ts
// hard-codes must match SECCOMP_GET_NOTIF_SIZES, and every call the filter plan names must compile.
import { deepStrictEqual, ok } from "node:assert/strict";
import { ADDFD_SIZE, NOTIF_SIZE, notifSizes, RESP_SIZE, userNotifAvailable } from "../ffi/notify.ts";
import { ACT, compileFilter, resolveSyscall } from "../ffi/seccomp.ts";
import { landlockAbi } from "../ffi/landlock.ts";
import { filterPlan } from "../lib/filter/filter_plan.ts";
import { close } from "../ffi/libc.ts";

Deno.test("seccomp notification struct sizes match the kernel's", () => {
  ok(userNotifAvailable(), "this kernel has no SECCOMP_RET_USER_NOTIF");
  const s = notifSizes();
  ok(s, "SECCOMP_GET_NOTIF_SIZES failed");
  deepStrictEqual({ notif: s.notif, resp: s.resp }, { notif: NOTIF_SIZE, resp: RESP_SIZE });
  deepStrictEqual(ADDFD_SIZE, 24);
});

Deno.test("Landlock is available (ABI ≥ 1) on the test machine", () => {
  ok(landlockAbi() >= 1);
});

Deno.test("the filter plan compiles, refuses the bypasses, and traps every write form", () => {
  for (const connect of [false, true]) {
    const plan = filterPlan({ mediateConnect: connect });
    const names = new Set(plan.map((e) => String(e.syscall)));
    for (
      const s of [
        "openat",
        "open",
        "creat",
        "mkdirat",
        "unlinkat",
        "renameat2",
        "linkat",
        "symlinkat",
        "fchmodat",
        "fchownat",
        "utimensat",
        "setxattr",
        "fremovexattr",
        "truncate",
        "mknodat",
        "execve",
        "execveat",
      ]
    ) ok(names.has(s), `${s} not in the filter`);
    const refused = (name: string) =>
      plan.some((e) => String(e.syscall) === name && e.action.kind === "errno");
    for (
      const s of [
        "io_uring_setup",
        "open_by_handle_at",
        "openat2",
        "ioctl",
        "unshare",
        "clone3",
        "userfaultfd",
      ]
    ) {
      ok(refused(s), `${s} is not refused`);
    }
    ok(names.has("connect")); // local IPC is decided in every mode (lib/policy/socket_policy.ts)
    ok(names.has("listen") === connect);
    const unknown = plan.filter((e) => typeof e.syscall === "string" && resolveSyscall(e.syscall) < 0);
    deepStrictEqual(unknown.map((e) => e.syscall), [], "libseccomp does not know these calls");
    const { memfd, skipped } = compileFilter(
      plan.map((e) => ({
        syscall: e.syscall,
        action: e.action.kind === "notify" ? ACT.NOTIFY : ACT.errno(e.action.errno),
        args: e.args?.map((a) => ({ arg: a.arg, op: 7, a: a.mask ?? 0n, b: a.value })),
      })),
      ACT.errno(38),
    );
    deepStrictEqual(skipped, []);
    const size = Deno.statSync(`/proc/self/fd/${memfd}`).size;
    close(memfd);
    ok(size > 0 && size % 8 === 0, `BPF size ${size}`);
  }
});
