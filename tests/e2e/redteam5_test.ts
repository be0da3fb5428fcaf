/**
 * Red team, fifth round: a promise audit (docs/threat-model.md), each attack judged from outside the sandbox
 * with a bare control.
 *
 * - hallpass's own saved rules (`$XDG_CONFIG_HOME/hallpass/rules`) reached through a symlink into a dotfiles
 *   project (`~/.config/hallpass -> ~/dot/hallpass`, `~/.config -> ~/dot/config`, the file itself a link): the
 *   deny rule named the path as written, the write was decided on where it leads, so a session in the dotfiles
 *   project added `allow write` lines that the next session, in any other project, obeyed.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { bare, exists, scratch } from "./harness.ts";
import { test } from "../helpers/skip.ts";
import { engineRunner, ENGINES } from "./engine.ts";

// --- hallpass's saved rules through a symlink into the project ------------------------------------------------

type Layout = "rules directory" | "config directory" | "rules file";

/**
 * A home whose saved rules lie in the dotfiles project `~/dot` through a symlink of the given layout, another
 * project `~/work`, and a directory outside everything, `~/outside`. Returns the real rules file.
 */
async function dotfilesRules(base: string, layout: Layout): Promise<{ home: string; real: string }> {
  const home = `${base}/home`;
  for (const d of ["dot/hallpass", "dot/config/hallpass", "work", "outside", ".config"]) {
    await Deno.mkdir(`${home}/${d}`, { recursive: true });
  }
  let real: string;
  if (layout === "rules directory") {
    await Deno.symlink("../dot/hallpass", `${home}/.config/hallpass`);
    real = `${home}/dot/hallpass/rules`;
  } else if (layout === "config directory") {
    await Deno.remove(`${home}/.config`);
    await Deno.symlink("dot/config", `${home}/.config`);
    real = `${home}/dot/config/hallpass/rules`;
  } else {
    await Deno.mkdir(`${home}/.config/hallpass`);
    await Deno.symlink("../../dot/hallpass-rules", `${home}/.config/hallpass/rules`);
    real = `${home}/dot/hallpass-rules`;
  }
  await Deno.writeTextFile(real, "# saved answers\n");
  return { home, real };
}

const WIDEN = (home: string) => `echo 'allow write ${home}/outside/**' >> "$1"; echo "write=$?"`;

for (const layout of ["rules directory", "config directory", "rules file"] as const) {
  for (const [name, fast] of ENGINES) {
    const hp = engineRunner(fast, `saved rules (${layout})`);
    test({
      name:
        `the saved rules reached through a symlink (${layout}) into the project are not writable (${name})`,
      fn: async () => {
        const s = await scratch();
        try {
          // Control: the line written bare is obeyed by the next session in another project.
          const c = await dotfilesRules(`${s.outside}/c`, layout);
          const cenv = { HOME: c.home, XDG_CONFIG_HOME: `${c.home}/.config` };
          await bare(["sh", "-c", WIDEN(c.home), "sh", c.real], { cwd: `${c.home}/dot`, env: cenv });
          const c2 = await hp(["--no-ask", "-q", "--", "sh", "-c", `echo x > ${c.home}/outside/f`], {
            cwd: `${c.home}/work`,
            env: cenv,
          });
          assertEquals(await exists(`${c.home}/outside/f`), true, `control: not obeyed: ${c2.stderr}`);

          const h = await dotfilesRules(s.outside, layout);
          const env = { HOME: h.home, XDG_CONFIG_HOME: `${h.home}/.config` };
          const r = await hp(["--no-ask", "-q", "--", "sh", "-c", WIDEN(h.home), "sh", h.real], {
            cwd: `${h.home}/dot`,
            env,
          });
          assertEquals(
            r.stdout.trim() === "write=0",
            false,
            `the rules were written: ${r.stdout}${r.stderr}`,
          );
          assertEquals(await Deno.readTextFile(h.real), "# saved answers\n");
          await hp(["--no-ask", "-q", "--", "sh", "-c", `echo x > ${h.home}/outside/f`], {
            cwd: `${h.home}/work`,
            env,
          });
          assertEquals(
            await exists(`${h.home}/outside/f`),
            false,
            "the next session obeyed the sandbox's rule",
          );
        } finally {
          await s.cleanup();
        }
      },
    });
  }
}
