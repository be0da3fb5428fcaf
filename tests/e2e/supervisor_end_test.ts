/**
 * The end of a session: when every sandboxed process is gone the kernel answers SECCOMP_IOCTL_NOTIF_RECV
 * with ENOENT at once, every time. The supervisor (fast path and mediator alike) must see the listener hang
 * up and leave its loop, not receive again and again until it is stopped (it did: a spin at every exit, and
 * a "supervisor failed" once a retry cap was added). Judged from outside with strace: the supervisor's own
 * RECV calls that failed with ENOENT.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { HALLPASS_ARGV, scratch } from "./harness.ts";
import { probe, test, tool } from "../helpers/skip.ts";

const straceWorks = tool("strace") ?? probe("strace-traces", () => {
  const r = new Deno.Command("strace", { args: ["-o", "/dev/null", "true"], stdout: "null", stderr: "piped" })
    .outputSync();
  return r.success ? undefined : `strace cannot trace here: ${new TextDecoder().decode(r.stderr).trim()}`;
});

for (const [what, fast] of [["fast path", "1"], ["mediator", "0"]] as const) {
  test(
    { name: `${what}: at the end of a session the supervisor stops receiving`, ignore: straceWorks },
    async () => {
      const s = await scratch();
      try {
        const log = `${s.outside}/strace.log`;
        // Writes outside the project (denied, --no-ask) reach the supervisor: the control that strace sees
        // its RECV calls succeed.
        const script =
          `echo in > in.txt; echo out > "${s.outside}/o.txt" 2>/dev/null; ls > /dev/null; echo done`;
        const r = await new Deno.Command("strace", {
          args: [
            "-f",
            "-e",
            "trace=ioctl",
            "-o",
            log,
            ...HALLPASS_ARGV,
            "--no-ask",
            "-q",
            "--",
            "sh",
            "-c",
            script,
          ],
          cwd: s.project,
          env: { HALLPASS_FAST_PATH: fast },
          stdout: "piped",
          stderr: "piped",
        }).output();
        const out = new TextDecoder().decode(r.stdout);
        const trace = await Deno.readTextFile(log);
        const recv = trace.split("\n").filter((l) => l.includes("SECCOMP_IOCTL_NOTIF_RECV"));
        assert(
          recv.some((l) => /\) = 0$/.test(l)),
          `control: no RECV answered in the trace\n${trace.slice(-2000)}`,
        );
        const enoent = recv.filter((l) => l.includes("ENOENT"));
        // One when the last process is gone; a thread that died with a call pending may add one each.
        assert(
          enoent.length <= 3,
          `${enoent.length} RECV calls failed with ENOENT:\n${enoent.slice(-5).join("\n")}`,
        );
        assertEquals(out.trim(), "done");
      } finally {
        await s.cleanup();
      }
    },
  );
}
