/**
 * What the two end-to-end tests of answering from outside the pod share (agent_answer_tui_test.ts: `hallpass
 * answer` in tmux; agent_web_page_test.ts: the web page in chromium): a question from a pod, and a question
 * service on a free loopback port that knows one token.
 */
import { AnswerService } from "../../lib/agent/answer_service.ts";
import type { Question } from "../../lib/types.ts";

/** npm in pod shop/web-7d9f wants to write into its cache; `over` changes any field. */
export function podQuestion(over: Partial<Question> = {}): Question {
  return {
    id: 1,
    op: "write",
    pid: 4242,
    name: "npm",
    target: "/home/app/.npm/_cacache/tmp/x",
    syscall: "openat",
    chain: ["npm install", "sh -c npm install"],
    suggestedScope: "/home/app/.npm/_cacache/**",
    scopes: [
      "/home/app/.npm/_cacache/tmp/x",
      "/home/app/.npm/_cacache/**",
      "/home/app/.npm/**",
      "/home/app/**",
    ],
    container: { namespace: "shop", pod: "web-7d9f", container: "builder", id: "c0ffee" },
    ...over,
  };
}

/** A question service whose only token is `token`, naming `user`; questions it is not answered deny after 60 s. */
export function startService(token: string, user: string): Promise<AnswerService> {
  return AnswerService.start({
    listen: "127.0.0.1:0",
    tokens: new Map([[token, user]]),
    timeoutMs: 60_000,
    logPath: null,
    warn: () => {},
  });
}
