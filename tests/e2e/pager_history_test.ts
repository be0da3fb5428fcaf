/**
 * less saves its history at every exit through `~/.lesshsQ` and a rename (lib/policy/pager_history.ts): a session
 * that pages asks nothing and the history is saved (issue 15), judged by the file in $HOME and hallpass's lines,
 * with a bare control showing less writes it on this machine.
 */
import { ok as assert } from "node:assert/strict";
import { exists, hallpass, HALLPASS_ARGV, scratch } from "./harness.ts";

const PATH = "/usr/local/bin:/usr/bin:/bin";
import { test, tool } from "../helpers/skip.ts";

/** Runs `argv` on a terminal (script(1)) with `q` typed, in `cwd` with HOME=`home`; returns what it printed. */
async function onTerminal(argv: readonly string[], cwd: string, home: string): Promise<string> {
  const cmd = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const child = new Deno.Command("script", {
    args: ["-qec", cmd, "/dev/null"],
    cwd,
    env: { HOME: home, PATH: "/usr/local/bin:/usr/bin:/bin", TERM: "xterm", LESSHISTFILE: "" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(new TextEncoder().encode("q"));
  await w.close();
  const out = await child.output();
  return new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
}

test({
  name: "less saves its history without a question or a denial",
  ignore: [tool("script"), tool("less")],
  async fn() {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.project}/f`, "hello\n");
      const ctlHome = `${s.outside}/ctl`;
      await Deno.mkdir(ctlHome);
      await onTerminal(["less", "f"], s.project, ctlHome);
      assert(await exists(`${ctlHome}/.lesshst`), "control: less saved no history on this machine");

      const home = `${s.outside}/home`;
      await Deno.mkdir(home);
      const out = await onTerminal([...HALLPASS_ARGV, "--no-ask", "--", "less", "f"], s.project, home);
      assert(await exists(`${home}/.lesshst`), `less's history was not saved: ${out}`);
      assert(!out.includes("denied"), out);
    } finally {
      await s.cleanup();
    }
  },
});

/**
 * Red team: the rule for less's temporary sibling (`~/.lesshs*`) let the sandbox plant `~/.lesshsQ` as a symlink
 * to `~/.bashrc` (made there, renamed or linked in from the project) next to a `~/.lesshst` it wrote: the
 * person's next `less` outside saved its history through the link, and the next shell ran the sandbox's line.
 * Judged by ~/.bashrc after less and bash run outside, with a bare control.
 */
test({
  name: "the less history rule plants nothing that less outside would write through",
  ignore: [tool("script"), tool("less"), tool("bash")],
  async fn() {
    const s = await scratch();
    try {
      await Deno.writeTextFile(`${s.project}/f`, "hello\n");
      const plant = (home: string, marker: string) =>
        [
          `ln -s ${home}/.bashrc ${home}/.lesshsQ`,
          `ln -s ${home}/.bashrc x1; mv x1 ${home}/.lesshsQ`,
          `ln -s ${home}/.bashrc x2; ln -P x2 ${home}/.lesshsQ`,
          `printf '.less-history-file:\\n.shell\\n"x" ; echo ran > ${marker} #\\n' > ${home}/.lesshst`,
          "true",
        ].join("; ");
      const attack = async (home: string, marker: string, sandboxed: boolean) => {
        await Deno.mkdir(home);
        await Deno.writeTextFile(`${home}/.bashrc`, "# mine\n");
        const argv = ["/bin/sh", "-c", plant(home, marker)];
        if (sandboxed) {
          await hallpass(["--no-ask", "-q", "--", ...argv], {
            cwd: s.project,
            env: { HOME: home, PATH: PATH },
          });
        } else {await new Deno.Command(argv[0], { args: argv.slice(1), cwd: s.project, env: { HOME: home } })
            .output();}
        for (const f of ["x1", "x2"]) await Deno.remove(`${s.project}/${f}`).catch(() => {});
        // The person, later, outside: less, then a new shell.
        await onTerminal(["less", "f"], s.project, home);
        await new Deno.Command("bash", { args: ["-ic", "true"], env: { HOME: home, PATH }, stderr: "null" })
          .output();
      };
      await attack(`${s.outside}/ctl`, `${s.outside}/ctl.ran`, false);
      assert(await exists(`${s.outside}/ctl.ran`), "control: the plant did not run bare");
      await attack(`${s.outside}/home`, `${s.outside}/home.ran`, true);
      assert(!(await exists(`${s.outside}/home.ran`)), "the sandbox's line ran in a shell outside");
      assert(
        (await Deno.readTextFile(`${s.outside}/home/.bashrc`)) === "# mine\n",
        "~/.bashrc was rewritten",
      );
    } finally {
      await s.cleanup();
    }
  },
});
