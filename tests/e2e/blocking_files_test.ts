/**
 * Files that block (docs/threat-model.md, "Files that block"): with a deny rule inside the project, project
 * writes are performed by the supervisor, and a FIFO without a reader must not make it block in its own open:
 * the sandbox's FIFO writer waits (as the kernel would make it wait), every other write goes on, and the writer
 * gets its FIFO once a reader comes. truncate(2) of a FIFO is refused as the kernel refuses it, without opening
 * it. Judged from outside (files written, data read from the FIFO by the test itself), through the fast path
 * and the mediator, with a bare control of the kernel's own behaviour.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, compileHelper, exists, HALLPASS_ARGV, scratch, waitFor } from "./harness.ts";
import { engine, ENGINES } from "./engine.ts";

/** Starts hallpass (not waiting for it), with a deny rule inside the project so that project writes are performed. */
function start(
  s: { project: string; outside: string },
  script: string,
  env: Record<string, string>,
  extra: string[] = [],
) {
  Deno.writeTextFileSync(`${s.outside}/rules`, `deny write ${s.project}/secret/**\n`);
  return new Deno.Command(HALLPASS_ARGV[0], {
    args: [
      ...HALLPASS_ARGV.slice(1),
      "--no-ask",
      "-q",
      "--rules",
      `${s.outside}/rules`,
      ...extra,
      "--",
      "sh",
      "-c",
      script,
    ],
    cwd: s.project,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

for (const [E, fast] of ENGINES) {
  Deno.test(`FIFO (${E}): a writer without a reader blocks itself, never the supervisor`, async () => {
    const s = await scratch();
    const e = await engine(fast, "FIFO writer");
    const child = start(
      s,
      // The writer waits for a reader in the background; the writes after it must go on meanwhile.
      "mkfifo ff; (exec 3>ff; echo from-the-sandbox >&3) & " +
        "sleep 0.3; echo one > one.txt; mkdir d; echo two > d/two.txt; touch ready; wait; echo done > done.txt",
      e.env,
    );
    try {
      assert(
        await waitFor(() => exists(`${s.project}/ready`), 60_000), // generous: a sandbox's start at load
        "the writes after the FIFO open hung",
      );
      assertEquals(await Deno.readTextFile(`${s.project}/d/two.txt`), "two\n");
      // Now be the reader (outside the sandbox): the writer's open completes and its data arrives.
      const data = await Deno.readTextFile(`${s.project}/ff`);
      assertEquals(data, "from-the-sandbox\n");
      const out = await child.output();
      await e.check();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
      assertEquals(await Deno.readTextFile(`${s.project}/done.txt`), "done\n");
    } finally {
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
      await s.cleanup();
    }
  });

  Deno.test(`FIFO (${E}): a writer that never gets a reader does not hold up the session's end`, async () => {
    const s = await scratch();
    const e = await engine(fast, "FIFO without a reader");
    const child = start(
      s,
      "mkfifo ff; (exec 3>ff) & pid=$!; echo x > after.txt; kill $pid; wait; echo ok",
      e.env,
    );
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    try {
      const out = await child.output();
      clearTimeout(timer);
      await e.check();
      assertEquals(new TextDecoder().decode(out.stdout), "ok\n", new TextDecoder().decode(out.stderr));
      assertEquals(await Deno.readTextFile(`${s.project}/after.txt`), "x\n");
    } finally {
      clearTimeout(timer);
      await s.cleanup();
    }
  });

  Deno.test(`FIFO (${E}): truncate and O_NONBLOCK opens answer as the kernel does`, async () => {
    const helper = await compileHelper("try_write");
    const ops = ["truncate", "ff", "0", ";", "open", "ff", "wronly|nonblock", "0"];
    const c = await scratch();
    let ref: string;
    try {
      await bare(["mkfifo", `${c.project}/ff`]);
      ref = (await bare([helper, ...ops], { cwd: c.project })).stdout;
      assertEquals(ref, "truncate EINVAL\nopen E6\n", "control: the kernel's answers (ENXIO: no reader)");
    } finally {
      await c.cleanup();
    }
    const s = await scratch();
    try {
      await bare(["mkfifo", `${s.project}/ff`]);
      const e = await engine(fast, "FIFO truncate and O_NONBLOCK");
      const child = start(s, `${helper} ${ops.map((o) => `'${o}'`).join(" ")}`, e.env, [
        "--allow-exec",
        helper,
      ]);
      const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
      const out = await child.output();
      clearTimeout(timer);
      await e.check();
      assertEquals(new TextDecoder().decode(out.stdout), ref, new TextDecoder().decode(out.stderr));
    } finally {
      await s.cleanup();
    }
  });
}
