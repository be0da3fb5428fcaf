/**
 * A scripted model server for driving real agent CLIs without any network: it answers the Anthropic Messages API
 * (what Claude Code calls, `ANTHROPIC_BASE_URL`) and the OpenAI Responses API (what Codex calls through a custom
 * provider's `base_url`), streaming (SSE) or not, and replays a script of tool calls, one step per model turn.
 *
 * A step is what the "model" does next: run a shell command, write a file, or finish with a text. The server maps
 * it to the tool the agent offered (claude: `Bash`, `Write`; codex: `shell_command`, `exec_command` or `shell`,
 * whichever the request lists), and records what the agent sends back for it: `results[i]` is the text of the
 * tool result for step `i` (the command's output, or the error the agent saw).
 *
 * Requests that are not the main conversation (Claude Code's side calls: titles, topic checks, quota probes;
 * they offer no `Bash` tool) get a short text answer and do not advance the script.
 *
 * @example
 * ```ts
 * const srv = startModelServer([{ run: "echo hi" }, { say: "done" }]);
 * // ANTHROPIC_BASE_URL=srv.url claude -p "go" --allowedTools Bash
 * srv.results[0]; // "hi"
 * await srv.close();
 * ```
 */

export type Step =
  /** Run a shell command (claude: Bash; codex: its shell tool). */
  | { run: string }
  /** Write a file (claude: Write; codex: a shell command that writes it). */
  | { write: string; content: string }
  /** Answer with text and end the turn. */
  | { say: string }
  /** Answer the turn with an HTTP 400 error (the agent gives up: a non-zero exit). */
  | { fail: string };

export interface ModelServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string;
  readonly port: number;
  /** The tool result text the agent sent back for each step (by step index). */
  readonly results: (string | undefined)[];
  /** Whether the agent marked each tool result as an error. */
  readonly errors: (boolean | undefined)[];
  /** Every request: method, path, and (for the main conversation) which step it was answered with. */
  readonly requests: { method: string; path: string; step?: number }[];
  /** The steps served so far (the main conversation's turns). */
  served(): number;
  close(): Promise<void>;
}

const enc = new TextEncoder();

function sse(events: [string, unknown][]): Response {
  const body = events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("");
  return new Response(enc.encode(body), {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
  });
}

/** The text of a tool result's content (a string, or a list of text blocks). */
function textOf(c: unknown): string {
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    return c.map((b) => (b && typeof b === "object" && "text" in b ? String(b.text) : "")).join("");
  }
  return c === undefined || c === null ? "" : JSON.stringify(c);
}

/** Single-quotes `s` for sh. */
function shq(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

// deno-lint-ignore no-explicit-any
type Json = any;

export function startModelServer(script: Step[], opts: { log?: (line: string) => void } = {}): ModelServer {
  const results: (string | undefined)[] = [];
  const errors: (boolean | undefined)[] = [];
  const requests: { method: string; path: string; step?: number }[] = [];
  let maxStep = 0;
  let serial = 0;
  const stepAt = (i: number): Step => script[i] ?? { say: "done" };

  // ---- Anthropic Messages ----------------------------------------------------------------------------------
  function anthropic(req: Json): { content: Json[]; stop: string; step?: number; fail?: string } {
    const tools: Json[] = Array.isArray(req.tools) ? req.tools : [];
    const main = tools.some((t) => t?.name === "Bash");
    if (!main) return { content: [{ type: "text", text: "ok" }], stop: "end_turn" };
    const msgs: Json[] = req.messages ?? [];
    // Tool results for earlier steps: each tool_use id is "toolu_s<step>_<n>".
    for (const m of msgs) {
      if (m.role !== "user" || !Array.isArray(m.content)) continue;
      for (const b of m.content) {
        const id = /^toolu_s(\d+)_/.exec(b?.tool_use_id ?? "");
        if (b?.type === "tool_result" && id) {
          results[+id[1]] = textOf(b.content);
          errors[+id[1]] = b.is_error === true;
        }
      }
    }
    const step = msgs.filter((m) => m.role === "assistant").length;
    maxStep = Math.max(maxStep, step + 1);
    const s = stepAt(step);
    const id = `toolu_s${step}_${++serial}`;
    if ("run" in s) {
      return {
        content: [{
          type: "tool_use",
          id,
          name: "Bash",
          input: { command: s.run, description: "scripted step" },
        }],
        stop: "tool_use",
        step,
      };
    }
    if ("write" in s) {
      return {
        content: [{ type: "tool_use", id, name: "Write", input: { file_path: s.write, content: s.content } }],
        stop: "tool_use",
        step,
      };
    }
    if ("fail" in s) return { content: [], stop: "end_turn", step, fail: s.fail };
    return { content: [{ type: "text", text: s.say }], stop: "end_turn", step };
  }

  function anthropicResponse(req: Json, out: { content: Json[]; stop: string }): Response {
    const msgId = `msg_${++serial}`;
    const model = req.model ?? "scripted";
    const usage = {
      input_tokens: 10,
      output_tokens: 5,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
    };
    if (!req.stream) {
      return Response.json({
        id: msgId,
        type: "message",
        role: "assistant",
        model,
        content: out.content,
        stop_reason: out.stop,
        stop_sequence: null,
        usage,
      });
    }
    const ev: [string, unknown][] = [[
      "message_start",
      {
        type: "message_start",
        message: {
          id: msgId,
          type: "message",
          role: "assistant",
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { ...usage, output_tokens: 1 },
        },
      },
    ]];
    out.content.forEach((b, index) => {
      if (b.type === "text") {
        ev.push(["content_block_start", {
          type: "content_block_start",
          index,
          content_block: { type: "text", text: "" },
        }]);
        ev.push(["content_block_delta", {
          type: "content_block_delta",
          index,
          delta: { type: "text_delta", text: b.text },
        }]);
      } else {
        ev.push([
          "content_block_start",
          {
            type: "content_block_start",
            index,
            content_block: { type: "tool_use", id: b.id, name: b.name, input: {} },
          },
        ]);
        ev.push([
          "content_block_delta",
          {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: JSON.stringify(b.input) },
          },
        ]);
      }
      ev.push(["content_block_stop", { type: "content_block_stop", index }]);
    });
    ev.push(["message_delta", {
      type: "message_delta",
      delta: { stop_reason: out.stop, stop_sequence: null },
      usage: { output_tokens: 5 },
    }]);
    ev.push(["message_stop", { type: "message_stop" }]);
    return sse(ev);
  }

  // ---- OpenAI Responses (codex) ------------------------------------------------------------------------------
  function openaiTool(tools: Json[]): string | null {
    const names = tools.map((t) => t?.name ?? t?.function?.name).filter(Boolean);
    for (const n of ["shell_command", "exec_command", "shell", "local_shell"]) {
      if (names.includes(n)) return n;
    }
    return null;
  }

  function shellArgs(tool: string, cmd: string): string {
    if (tool === "shell_command") return JSON.stringify({ command: cmd });
    if (tool === "exec_command") return JSON.stringify({ cmd });
    return JSON.stringify({ command: ["bash", "-lc", cmd] });
  }

  function responses(req: Json): Response {
    const tools: Json[] = Array.isArray(req.tools) ? req.tools : [];
    const tool = openaiTool(tools);
    const input: Json[] = Array.isArray(req.input) ? req.input : [];
    for (const it of input) {
      const id = /^call_s(\d+)_/.exec(it?.call_id ?? "");
      if (it?.type === "function_call_output" && id) {
        let out = it.output;
        if (typeof out === "string") {
          try {
            const j = JSON.parse(out);
            if (j && typeof j === "object" && "output" in j) out = j.output;
          } catch { /* plain text */ }
        }
        results[+id[1]] = textOf(out);
      }
    }
    const step = tool === null ? -1 : input.filter((it) => it?.type === "function_call").length;
    if (step >= 0) maxStep = Math.max(maxStep, step + 1);
    const s: Step = step < 0 ? { say: "ok" } : stepAt(step);
    if ("fail" in s) {
      requests[requests.length - 1].step = step;
      return Response.json({ error: { type: "invalid_request_error", message: s.fail, code: null } }, {
        status: 400,
      });
    }
    const respId = `resp_${++serial}`;
    const items: Json[] = [];
    if ("say" in s) {
      items.push({
        type: "message",
        role: "assistant",
        id: `msg_${serial}`,
        content: [{ type: "output_text", text: s.say, annotations: [] }],
      });
    } else {
      const cmd = "run" in s ? s.run : `printf '%s' ${shq(s.content)} > ${shq(s.write)}`;
      items.push({
        type: "function_call",
        id: `fc_${serial}`,
        call_id: `call_s${step}_${serial}`,
        name: tool,
        arguments: shellArgs(tool!, cmd),
      });
    }
    const usage = {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 15,
    };
    const ev: [string, unknown][] = [[
      "response.created",
      { type: "response.created", response: { id: respId, status: "in_progress", output: [] } },
    ]];
    items.forEach((item, output_index) => {
      ev.push(["response.output_item.added", { type: "response.output_item.added", output_index, item }]);
      ev.push(["response.output_item.done", { type: "response.output_item.done", output_index, item }]);
    });
    ev.push([
      "response.completed",
      { type: "response.completed", response: { id: respId, status: "completed", output: items, usage } },
    ]);
    requests[requests.length - 1].step = step >= 0 ? step : undefined;
    return sse(ev);
  }

  const ac = new AbortController();
  let resolveListen: (port: number) => void = () => {};
  const listening = new Promise<number>((r) => (resolveListen = r));
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: ac.signal,
    onListen: ({ port }) => resolveListen(port),
  }, async (r) => {
    const url = new URL(r.url);
    requests.push({ method: r.method, path: url.pathname });
    opts.log?.(`${r.method} ${url.pathname}`);
    let body: Json = {};
    if (r.method === "POST") {
      try {
        body = await r.json();
      } catch {
        body = {};
      }
    }
    if (url.pathname.endsWith("/messages/count_tokens")) return Response.json({ input_tokens: 10 });
    if (url.pathname.endsWith("/messages")) {
      const out = anthropic(body);
      requests[requests.length - 1].step = out.step;
      if (out.fail !== undefined) {
        return Response.json({ type: "error", error: { type: "invalid_request_error", message: out.fail } }, {
          status: 400,
        });
      }
      return anthropicResponse(body, out);
    }
    if (url.pathname.endsWith("/responses")) return responses(body);
    if (url.pathname.endsWith("/models")) {
      return Response.json({ object: "list", data: [{ id: "scripted", object: "model" }], models: [] });
    }
    return new Response("{}", { status: 404, headers: { "content-type": "application/json" } });
  });
  // Deno.serve's onListen runs synchronously before it returns.
  const port = (server.addr as Deno.NetAddr).port;
  void listening;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    results,
    errors,
    requests,
    served: () => maxStep,
    close: async () => {
      ac.abort();
      await server.finished.catch(() => {});
    },
  };
}
