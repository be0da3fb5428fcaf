/**
 * Unnamed temporary files (open with O_TMPFILE) outside the project are performed without a question: nothing
 * appears outside until the file is given a name, and that (linkat) is a write of its own, decided like any
 * other. Attack: make an O_TMPFILE outside, fill it, and link it to a name there; judged from outside (the name
 * must not exist afterwards), with a control that shows the same program makes the name without hallpass.
 */
import { ok as assert } from "node:assert/strict";
import { bare, compileHelper, hallpass, scratch } from "./harness.ts";

Deno.test({
  name: "O_TMPFILE outside the project: performed without asking; linking it to a name is decided",
}, async () => {
  const s = await scratch();
  try {
    const prog = await compileHelper("tmpfile_link");
    const ctl = await bare([prog, s.outside, "ctl"], { cwd: s.project });
    assert(ctl.stdout.includes("linked"), `control: ${ctl.stdout}${ctl.stderr}`);
    assert((await Deno.readTextFile(`${s.outside}/ctl`)) === "payload");
    const r = await hallpass(["--no-ask", "--allow-exec", prog, "--", prog, s.outside, "x"], {
      cwd: s.project,
    });
    assert(r.stdout.includes("tmpfile ok"), `the O_TMPFILE open failed: ${r.stdout}${r.stderr}`);
    assert(
      r.stdout.includes("link refused 13"),
      `the link was not refused with EACCES: ${r.stdout}${r.stderr}`,
    );
    assert(!(await Deno.stat(`${s.outside}/x`).catch(() => null)), "the name exists outside");
    assert(!r.stderr.includes(`denied write ${s.outside} `), `the O_TMPFILE open was denied: ${r.stderr}`);
  } finally {
    await s.cleanup();
  }
});
