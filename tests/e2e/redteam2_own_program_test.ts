/**
 * Red team: hallpass's own program, as the person runs it next (docs/threat-model.md, "What is left
 * behind to run outside": hallpass's own program). `make install` writes ~/.local/bin/hallpass as a two-line wrapper script that runs the checkout:
 * with a grant such as `--allow-path ~/.local` (pip install --user) the sandbox rewrote it, and the next
 * `hallpass` the person typed ran the sandbox's code outside. A `hallpass` made in an earlier directory of
 * $PATH would be run instead. Run from source, the deno running hallpass is its program too. Judged from
 * outside: the wrapper's bytes, what exists in $PATH; a bare control shows each write works without hallpass.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import { bare, DENO, exists, hallpass, isRoot, scratch } from "./harness.ts";
import { test } from "../helpers/skip.ts";

const ATTACK = [
  `printf '#!/bin/sh\\necho PWNED\\n' > "$HOME/.local/bin/hallpass"`,
  `mv "$HOME/.local/bin/hallpass" "$HOME/.local/bin/old"`,
  `ln -sf /bin/true "$HOME/.local/bin/hallpass"`,
  `printf '#!/bin/sh\\necho PWNED\\n' > "$HOME/bin/hallpass"`,
  // Control inside the same grant: another file there is written.
  `echo ok > "$HOME/.local/bin/other"`,
].map((c) => `${c} 2>/dev/null`).join("; ");

test({
  name: "the installed hallpass wrapper and a hallpass earlier on $PATH cannot be written by the sandbox",
  async fn() {
    const s = await scratch();
    try {
      for (const where of ["control", "sandbox"]) {
        const home = `${s.outside}/${where}`;
        await Deno.mkdir(`${home}/.local/bin`, { recursive: true });
        await Deno.mkdir(`${home}/bin`);
        const wrapper = `#!/bin/sh\nexec "/somewhere/hallpass" "$@"\n`;
        await Deno.writeTextFile(`${home}/.local/bin/hallpass`, wrapper, { mode: 0o755 });
        const env = { HOME: home, PATH: `${home}/bin:${home}/.local/bin:/usr/bin:/bin` };
        const r = where === "control"
          ? await bare(["/bin/sh", "-c", ATTACK], { cwd: s.project, env })
          : await hallpass(
            ["--no-ask", "--allow-path", "~/.local", "--allow-path", "~/bin", "--", "/bin/sh", "-c", ATTACK],
            { cwd: s.project, env },
          );
        const other = await Deno.readTextFile(`${home}/.local/bin/other`).catch(() => "");
        assertEquals(other, "ok\n", `${where}: the grant did not hold: ${r.stderr}`);
        const now = await Deno.readTextFile(`${home}/.local/bin/hallpass`).catch(() => "(gone)");
        const shadow = await exists(`${home}/bin/hallpass`);
        if (where === "control") {
          assert(now !== wrapper && shadow, "control: the writes did not work without hallpass");
        } else {
          assertEquals(now, wrapper, `the wrapper was changed: ${r.stderr}`);
          assert(!(await Deno.lstat(`${home}/.local/bin/hallpass`)).isSymlink, r.stderr);
          assert(!(await exists(`${home}/.local/bin/old`)), r.stderr);
          assert(!shadow, `a hallpass was made earlier on $PATH: ${r.stderr}`);
        }
      }
    } finally {
      await s.cleanup();
    }
  },
});

test({
  name: "run from source, the deno running hallpass cannot be written under a grant covering it",
  async fn() {
    const s = await scratch();
    try {
      const deno = await Deno.realPath(DENO);
      const before = await Deno.stat(deno);
      const r = await hallpass(
        [
          "--no-ask",
          "--allow-path",
          deno.slice(0, deno.lastIndexOf("/")),
          "--",
          "/bin/sh",
          "-c",
          `: >> '${deno}'`,
        ],
        { cwd: s.project },
      );
      assert(r.code !== 0, `the sandbox opened deno for writing: ${r.stderr}`);
      if (isRoot()) assert(r.stderr.includes(`denied write ${deno}`), r.stderr);
      assertEquals((await Deno.stat(deno)).mtime, before.mtime);
    } finally {
      await s.cleanup();
    }
  },
});
