/**
 * The one line hallpass prints for an error it stops on (main.ts): the message with Deno's own decoration cut
 * (`Permission denied (os error 13): readfile '/x'` → `Permission denied`: the file is named by the message's
 * own start), and every control character made visible (lib/ui/sanitize.ts): a path or argument given on the
 * command line or found on disk may hold escape sequences or newlines, which must not reach the terminal raw.
 *
 * @example
 * ```ts
 * import { errorLine } from "./error_line.ts";
 * errorLine("/x: Permission denied (os error 13): readfile '/x'"); // "/x: Permission denied"
 * errorLine("\x1b]0;t\x07: command not found"); // "^[]0;t^G: command not found"
 * ```
 */
import { visible } from "../ui/sanitize.ts";

// Deno's "(os error N)" and the operation and path it appends after it (the path may hold anything).
const OS_ERROR = / \(os error \d+\)(?:: [a-z_]+ '[\s\S]*')?$/;

export function errorLine(message: string): string {
  return visible(message.replace(OS_ERROR, ""));
}

/** hallpass's options that a person types as a word (`hallpass agents`): the command not found was meant as one. */
const OWN_WORDS: Record<string, string> = { agents: "--agents", help: "--help", version: "--version" };

/** The hint for `hallpass WORD` when WORD is not a command but one of hallpass's options without its dashes. */
export function ownWordHint(word: string | undefined): string | undefined {
  const option = word !== undefined && Object.hasOwn(OWN_WORDS, word) ? OWN_WORDS[word] : undefined;
  return option && `did you mean \`hallpass ${option}\`? (${word} is not a program here)`;
}
