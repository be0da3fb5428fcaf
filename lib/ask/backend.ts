/**
 * Who answers a question the supervisor cannot decide alone: one interface, four backends. A run picks one
 * (lib/sandbox/run.ts); `hallpass agent` gives every container's supervisor the answer service's.
 *
 *   no_ask.ts        nobody: every question is denied at once (--no-ask, no terminal, CI)
 *   ask_program.ts   --ask-program PROG: run outside the sandbox per question; its answer line (answer_line.ts)
 *   terminal_ask.ts  the person at the terminal: the prompt bar (lib/ui/ draws it)
 *   lib/agent/answer_service.ts  `hallpass agent`: people answer over HTTP (`AnswerService.backend()`)
 *
 * @module
 */
import type { Answer, Question } from "../types.ts";

/** A backend that answers questions. */
export interface AskBackend {
  readonly name: string;
  /** Resolves with the answer; must never reject (a failure is a deny). */
  ask(q: Question, signal: AbortSignal): Promise<Answer>;
  close(): Promise<void> | void;
}
