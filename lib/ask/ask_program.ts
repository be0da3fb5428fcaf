/**
 * The ask-program backend: each question runs PROG (through /bin/sh -c, so it may carry arguments) outside
 * the sandbox, with one JSON object on its stdin; the first line of its stdout is the answer. A bad answer, a
 * program that fails, dies or says nothing within the timeout is a deny, with one line on stderr.
 */
import type { Answer, AskBackend, Question } from "../types.ts";
import { parseAnswerLine } from "./answer_line.ts";

export const ASK_PROGRAM_DEFAULT_TIMEOUT_MS = 60_000;
const MAX_OUTPUT = 64 * 1024;

export class AskProgram implements AskBackend {
  readonly name = "ask-program";
  readonly #prog: string;
  readonly #timeoutMs: number;
  readonly #warn: (line: string) => void;

  constructor(prog: string, opts: { timeoutMs?: number; warn: (line: string) => void }) {
    this.#prog = prog;
    this.#timeoutMs = opts.timeoutMs ?? ASK_PROGRAM_DEFAULT_TIMEOUT_MS;
    this.#warn = opts.warn;
  }

  async ask(q: Question, signal: AbortSignal): Promise<Answer> {
    const deny = (why: string): Answer => {
      this.#warn(`hallpass: ask program: ${why}; denied`);
      return { kind: "deny", by: "ask-program" };
    };
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command("/bin/sh", {
        args: ["-c", this.#prog],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
    } catch (e) {
      return deny(`cannot start ${JSON.stringify(this.#prog)}: ${(e as Error).message}`);
    }
    const timer = setTimeout(() => killQuietly(child), this.#timeoutMs);
    const onAbort = () => killQuietly(child);
    signal.addEventListener("abort", onAbort);
    try {
      const payload = JSON.stringify(questionJson(q)) + "\n";
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(payload)).catch(() => {});
      await w.close().catch(() => {});
      const line = await firstLine(child.stdout);
      const status = await child.status;
      if (signal.aborted) return { kind: "deny", by: "withdrawn" };
      if (line === null) {
        if (status.signal) return deny(`killed by ${status.signal} (timeout ${this.#timeoutMs / 1000}s?)`);
        return deny(`no answer (exit ${status.code})`);
      }
      const a = parseAnswerLine(line, q, "ask-program");
      if ("error" in a) return deny(`bad answer ${JSON.stringify(line.slice(0, 80))}: ${a.error}`);
      return a;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    }
  }

  close(): void {}
}

/** The JSON object an ask program reads (docs/ask-program.md). */
export function questionJson(q: Question): Record<string, unknown> {
  return {
    version: 1,
    id: q.id,
    op: q.op,
    target: q.target,
    argv: q.argv,
    syscall: q.syscall,
    pid: q.pid,
    name: q.name,
    chain: q.chain,
    scope: q.suggestedScope,
    scopes: q.scopes,
    reason: q.reason,
    warning: q.warning,
    request_for: q.requestedForMs !== undefined ? q.requestedForMs / 1000 : undefined,
  };
}

function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // already gone
  }
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string | null> {
  const dec = new TextDecoder();
  let text = "";
  let total = 0;
  let found: string | null = null;
  for await (const chunk of stream) {
    if (found !== null) continue; // drain
    total += chunk.length;
    text += dec.decode(chunk, { stream: true });
    const nl = text.indexOf("\n");
    if (nl >= 0) found = text.slice(0, nl);
    else if (total > MAX_OUTPUT) found = text.slice(0, MAX_OUTPUT);
  }
  if (found !== null) return found;
  return text.length ? text : null;
}
