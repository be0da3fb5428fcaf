/**
 * hallpass: parse, plan, run, and map the outcome to one table of exit codes (README.md).
 *   command's own status · 128+N killed by signal N · 125 hallpass failed before the command ran
 *   126 not executable · 127 not found (usage errors are failures before the command ran: 125)
 *   123 with --fail-on-deny: the command exited 0 but something was denied (lib/cli/fail_on_deny.ts)
 */
import { HELP, parseCommandLine, VERSION } from "./lib/cli/options.ts";
import { CommandError, makePlan, projectStateDir } from "./lib/sandbox/plan.ts";
import { projectRulesNotice } from "./lib/policy/project_rules.ts";
import { HallpassError, runSandbox } from "./lib/sandbox/run.ts";
import { UsageError } from "./lib/types.ts";
import { RulesError } from "./lib/policy/rules_file.ts";
import { dieOfSignal } from "./ffi/signal.ts";
import { lazyImport } from "./lib/util/lazy_import.ts";
import { errorLine, ownWordHint } from "./lib/cli/error_line.ts";
import { checkLogFile } from "./lib/cli/log_file.ts";

/** `died.signal`: the signal the command died of, if it did (lib/sandbox/run.ts {@link RunOutcome}). */
async function main(argv: string[], died: { signal: number | null }): Promise<number> {
  const inv = parseCommandLine(argv);
  switch (inv.kind) {
    case "help":
      console.log(HELP);
      return 0;
    case "version":
      console.log(`hallpass ${VERSION}`);
      return 0;
    case "agents": {
      const { formatRecipes } = await lazyImport<typeof import("./lib/policy/agent_recipes.ts")>(
        new URL("./lib/policy/agent_recipes.ts", import.meta.url),
      );
      const env = (k: string) => Deno.env.get(k);
      const lines = formatRecipes({
        home: env("HOME") ?? "/",
        cwd: Deno.cwd(),
        pathEnv: env("PATH") ?? "",
        tmpdir: env("TMPDIR"),
      });
      for (const l of lines) console.log(l);
      return 0;
    }
    case "doctor": {
      const { runChecks, formatChecks, essentialOk } = await lazyImport<typeof import("./lib/cli/doctor.ts")>(
        new URL("./lib/cli/doctor.ts", import.meta.url),
      );
      const checks = runChecks();
      if (inv.json) console.log(JSON.stringify(checks, null, 2));
      else for (const l of formatChecks(checks)) console.log(l);
      return essentialOk(checks) ? 0 : 1;
    }
    case "rules": {
      const { rulesCommand } = await lazyImport<typeof import("./lib/cli/rules_command.ts")>(
        new URL("./lib/cli/rules_command.ts", import.meta.url),
      );
      return rulesCommand(inv.args, inv.opts);
    }
    case "agent": {
      const { agentCommand } = await lazyImport<typeof import("./lib/agent/agent_cli.ts")>(
        new URL("./lib/agent/agent_cli.ts", import.meta.url),
      );
      return await agentCommand(inv.args);
    }
    case "answer": {
      const { answerMain, parseAnswerArgs } = await lazyImport<typeof import("./lib/agent/answer_client.ts")>(
        new URL("./lib/agent/answer_client.ts", import.meta.url),
      );
      const a = parseAnswerArgs(inv.args);
      if ("help" in a) {
        console.log(a.help);
        return 0;
      }
      if ("error" in a) throw new UsageError(`answer: ${a.error}`);
      return await answerMain(a);
    }
    case "run": {
      if (inv.opts.logPath !== undefined) checkLogFile("--log", inv.opts.logPath);
      const plan = makePlan(inv.opts, (k) => Deno.env.get(k));
      const notice = plan.projectRules
        ? projectRulesNotice(plan.project, plan.projectRules, projectStateDir(plan.userRulesFile))
        : null;
      if (notice) console.error(notice);
      const interactive = Deno.stdin.isTerminal() && Deno.stdout.isTerminal();
      // A person at a terminal whose stdin or stdout is a pipe (`hallpass -- make | tee log`) is not asked:
      // said at start, not only seen as denials at exit.
      const o = inv.opts;
      if (!interactive && !o.noAsk && !o.askProgram && !o.quiet && Deno.stderr.isTerminal()) {
        const which = Deno.stdin.isTerminal() ? "stdout" : "stdin";
        console.error(
          `hallpass: ${which} is not a terminal, so nothing asks: what would ask is denied and listed at exit ` +
            "(--no-ask: meant so, no notice)",
        );
      }
      const outcome = await runSandbox(inv.opts, plan, interactive);
      died.signal = outcome.signal;
      return outcome.code;
    }
  }
}

if (import.meta.main) {
  let code: number;
  const died = { signal: null as number | null };
  // With PATH unset or empty, Deno sets it to its own (empty) node_compat_bin directory: taken back out, so that
  // names are looked for in the default path and the command gets no PATH, as under `env -i`.
  const path = Deno.env.get("PATH");
  if (path && !path.includes(":") && path.endsWith("/node_compat_bin")) Deno.env.delete("PATH");
  try {
    code = await main(Deno.args, died);
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(`hallpass: ${errorLine(e.message)}`);
      const sub = /^(agent|answer): /.exec(e.message)?.[1];
      console.error(
        e instanceof RulesError
          ? "hint: fix or remove that line; `hallpass rules` lists the rules in force"
          : `hint: \`hallpass ${sub ? sub + " " : ""}--help\` lists the options; nothing was run`,
      );
      code = 125;
    } else if (e instanceof CommandError) {
      console.error(`hallpass: ${errorLine(e.message)}`);
      const hint = e.status === 127 ? ownWordHint(Deno.args[0]) : undefined;
      if (hint) console.error(`hint: ${hint}`);
      code = e.status;
    } else if (e instanceof HallpassError) {
      console.error(`hallpass: ${errorLine(e.message)}`);
      if (e.hint) console.error(`hint: ${errorLine(e.hint)}`);
      code = 125;
    } else if (e instanceof Deno.errors.BrokenPipe) {
      code = 141; // what was printed goes to a reader that left (`| head`): quietly, as a program SIGPIPE ended
    } else {
      console.error(`hallpass: internal error: ${errorLine(e instanceof Error ? e.message : String(e))}`);
      console.error("hint: please report this with `hallpass doctor` output");
      code = 125;
    }
  }
  // The command died of a signal: so does hallpass (the terminal is restored by now), for the calling shell.
  if (died.signal !== null && code === 128 + died.signal) dieOfSignal(died.signal);
  Deno.exit(code);
}
