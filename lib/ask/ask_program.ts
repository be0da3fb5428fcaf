/**
 * The ask-program backend: each question runs PROG (through /bin/sh -c, so it may carry arguments) outside
 * the sandbox, with one JSON object on its stdin; the first line of its stdout is the answer. A bad answer, a
 * program that fails, dies or says nothing within the timeout is a deny, with one line on stderr.
 */
import type { Answer, Question } from "../types.ts";
import type { AskBackend } from "./backend.ts";
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
      // In a session of its own (setsid), so a timeout kills the program and everything it started.
      child = new Deno.Command(SETSID ?? "/bin/sh", {
        args: SETSID ? ["/bin/sh", "-c", this.#prog] : ["-c", this.#prog],
        stdin: "piped",
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
    } catch (e) {
      return deny(`cannot start ${JSON.stringify(this.#prog)}: ${(e as Error).message}`);
    }
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killQuietly(child);
    }, this.#timeoutMs);
    const onAbort = () => killQuietly(child);
    signal.addEventListener("abort", onAbort);
    try {
      const payload = JSON.stringify(questionJson(q)) + "\n";
      const w = child.stdin.getWriter();
      await w.write(new TextEncoder().encode(payload)).catch(() => {});
      await w.close().catch(() => {});
      const line = await firstLine(child.stdout, signal, () => timedOut);
      const status = await Promise.race([
        child.status,
        new Promise<null>((r) => setTimeout(() => r(null), 1000)),
      ]);
      if (status === null) killQuietly(child);
      if (signal.aborted) return { kind: "deny", by: "withdrawn" };
      if (timedOut) return deny(`no answer within ${this.#timeoutMs / 1000} s`);
      if (line === null) return deny(`no answer (${status ? `exit ${status.code}` : "still running"})`);
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
    paths: q.paths,
    argv: q.argv,
    syscall: q.syscall,
    pid: q.pid,
    exe: q.exe,
    name: q.name,
    chain: q.chain,
    scope: q.suggestedScope,
    scopes: q.scopes,
    reason: q.reason,
    warning: q.warning,
    request_for: q.requestedForMs !== undefined ? q.requestedForMs / 1000 : undefined,
  };
}

const SETSID = (() => {
  for (const p of ["/usr/bin/setsid", "/bin/setsid"]) {
    try {
      if (Deno.statSync(p).isFile) return p;
    } catch {
      // not here
    }
  }
  return null;
})();

/** Kills the ask program and, when it runs in its own session, everything it started. */
function killQuietly(child: Deno.ChildProcess): void {
  try {
    if (SETSID) Deno.kill(-child.pid, "SIGKILL");
  } catch {
    // no such group
  }
  try {
    child.kill("SIGKILL");
  } catch {
    // already gone
  }
}

/**
 * The first line of the program's output. Stops reading at the first newline, on abort, or on timeout: a
 * child of the program that keeps the pipe open must not keep hallpass waiting.
 */
async function firstLine(
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  timedOut: () => boolean,
): Promise<string | null> {
  const dec = new TextDecoder();
  const reader = stream.getReader();
  const stop = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", stop);
  const poll = setInterval(() => {
    if (timedOut()) stop();
  }, 100);
  let text = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !value) break;
      text += dec.decode(value, { stream: true });
      const nl = text.indexOf("\n");
      if (nl >= 0) return text.slice(0, nl);
      if (text.length > MAX_OUTPUT) return text.slice(0, MAX_OUTPUT);
    }
  } catch {
    // cancelled
  } finally {
    clearInterval(poll);
    signal.removeEventListener("abort", stop);
    stop();
  }
  if (timedOut()) return null;
  return text.length ? text : null;
}
