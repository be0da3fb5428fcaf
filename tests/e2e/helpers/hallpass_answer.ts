/**
 * `hallpass answer` for the end-to-end tests until main.ts routes the subcommand: the same parse and run.
 *
 *   deno run -A tests/e2e/helpers/hallpass_answer.ts [--agent URL] [--token-file PATH]
 */
import { answerMain, parseAnswerArgs } from "../../../lib/agent/answer_client.ts";

const a = parseAnswerArgs(Deno.args);
if ("help" in a) {
  console.log(a.help);
  Deno.exit(0);
}
if ("error" in a) {
  console.error(`hallpass answer: ${a.error}`);
  Deno.exit(125); // as main.ts: a usage error
}
Deno.exit(await answerMain(a));
