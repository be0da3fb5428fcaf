/**
 * less saves its history at every exit through `~/.lesshsQ` and a rename (lib/policy/pager_history.ts): a session
 * that pages asks nothing and the history is saved (issue 15), judged by the file in $HOME and hallpass's lines,
 * with a bare control showing less writes it on this machine.
 */
import { ok as assert } from "node:assert/strict";
import { exists, HALLPASS_ARGV, scratch } from "./harness.ts";
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
