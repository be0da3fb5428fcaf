/**
 * `hallpass answer` in a real terminal (tmux) against a real question service: the bar with the pod line,
 * `[o]` and `[n]` (with a widened scope) resolving the agent's ask with `by: "answer:NAME"`, the idle status
 * line, an unreachable agent, a refused token, and `q` giving the terminal back as it was.
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
import type { AnswerService } from "../../lib/agent/answer_service.ts";
import { podQuestion, startService } from "./answer_fixture.ts";
import type { Answer } from "../../lib/types.ts";
import { HALLPASS, q, Tmux, withPane } from "./tmux.ts";
import { test, tool } from "../helpers/skip.ts";

const ignore = tool("tmux");
const TOKEN = "carol-0123456789abcdefXYZ";
/** `hallpass answer`, run from source as the pane's `hp` is. */
const ENTRY = `${HALLPASS} answer`;

/** A service, a token file for "carol", and a pane running `hallpass answer` (then `stty -a` into a file, then rc=). */
async function withAnswer(
  fn: (t: Tmux, svc: AnswerService) => Promise<void>,
  o: { agent?: string; token?: string; agents?: string[] } = {},
): Promise<void> {
  const svc = await startService(TOKEN, "carol");
  const dir = await Deno.makeTempDir({ prefix: "hallpass-answer-tty-" });
  try {
    await Deno.writeTextFile(`${dir}/token`, `carol ${o.token ?? TOKEN}\n`, { mode: 0o600 });
    const agent = o.agent ?? `http://127.0.0.1:${svc.address.port}`;
    const more = (o.agents ?? []).map((a) => ` --agent ${q(a)}`).join("");
    await withPane({
      script: `stty -a > "$DIR/stty-before.txt"; ${ENTRY} --agent ${q(agent)}${more} --token-file ${
        q(dir + "/token")
      }; rc=$?; stty -a > "$DIR/stty.txt"; echo "rc=$rc"`, // rc= shown once stty.txt is written
      cols: 100,
      rows: 24,
    }, (t) => fn(t, svc));
  } finally {
    await svc.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** The bar from its pod line down. */
function bar(screen: string): string[] {
  const rows = screen.split("\n");
  const i = rows.findLastIndex((l) => l.startsWith("pod: "));
  return i < 0 ? [] : rows.slice(i).map((l) => l.trimEnd());
}

/** After q: the exit status, and the terminal modes as they were before. */
async function quitAndCheck(t: Tmux): Promise<void> {
  await t.keys("q");
  const s = await t.waitText(/^rc=\d+$/m);
  assert(/^rc=0$/m.test(s), s);
  assertEquals(await t.waitExit(), 0);
  const before = await Deno.readTextFile(`${t.dir}/stty-before.txt`);
  const after = await Deno.readTextFile(`${t.dir}/stty.txt`);
  assertEquals(after, before, "the terminal modes are restored");
  assert(/(^|\s)icanon(\s|$)/.test(after) && /(^|\s)echo(\s|$)/.test(after), after);
  assert(!s.includes("[o] allow once") && !s.includes("hallpass answer ·"), "back on the main screen");
}

test(
  { name: "hallpass answer: the bar names the pod; [o] answers once as answer:NAME", ignore },
  async () => {
    await withAnswer(async (t, svc) => {
      await t.waitText("hallpass answer: connected to http://127.0.0.1:");
      await t.waitText("no questions");
      const asked = svc.backend().ask(podQuestion(), new AbortController().signal);
      const s = await t.waitBar();
      const lines = bar(s);
      assertEquals(lines.length, 6, s);
      assert(/^pod: shop\/web-7d9f builder {2}\(denied in (\d+m)?\d+s\)$/.test(lines[0]), lines[0]);
      assertEquals(lines[1], "hallpass: npm (pid 4242) wants to write");
      assertEquals(lines[2], "/home/app/.npm/_cacache/tmp/x");
      assertEquals(lines[3], "by: npm install ← sh -c npm install");
      assertEquals(lines[4], "[t] [a] [n] apply to: /home/app/.npm/_cacache/**");
      assertEquals(lines[5], "[o] allow once  [t] for 5m0s  [a] always  [d] deny  [n] never  [?] help");
      // The same look as the workstation bar: reverse video.
      // The same look as the workstation bar: reverse video from the pod line to the keys (tmux writes an
      // attribute only where it changes).
      const esc = await t.screenEsc();
      const from = esc.indexOf("\x1b[7mpod: shop/web-7d9f builder");
      const to = esc.indexOf("[d] deny  [n] never  [?] help");
      assert(from >= 0 && to > from && !esc.slice(from + 4, to).includes("\x1b["), JSON.stringify(esc));
      await t.keys("o");
      assertEquals(await asked, { kind: "once", by: "answer:carol" } satisfies Answer);
      // The answer is noted above; the status line is back.
      await t.waitText(
        /^\d\d:\d\d:\d\d {2}once {2}shop\/web-7d9f builder {2}write \/home\/app\/\.npm\/_cacache\/tmp\/x$/m,
      );
      await t.waitText("no questions");
      await quitAndCheck(t);
    });
  },
);

test(
  { name: "hallpass answer: queued questions, a widened scope and [n] never; hostile text", ignore },
  async () => {
    await withAnswer(async (t, svc) => {
      await t.waitText("no questions");
      const ask = svc.backend();
      const s1 = new AbortController().signal;
      const first = ask.ask(
        podQuestion({ pid: 10, name: "x\x1b[2Jevil", target: "/home/app/.npm/a\x1b]0;t\x07" }),
        s1,
      );
      const second = ask.ask(
        podQuestion({
          pid: 11,
          op: "exec",
          target: "/tmp/build/run.sh",
          argv: ["run.sh", "--fast"],
          syscall: "execve",
          suggestedScope: "/tmp/build/run.sh",
          scopes: ["/tmp/build/run.sh", "/tmp/build/**", "/tmp/**"],
          warning: "the sandbox can write /tmp/build/run.sh",
          container: { namespace: "ci", pod: "job-1", container: "runner", id: "beef" },
        }),
        s1,
      );
      let s = await t.waitBar();
      let lines = bar(s);
      assertEquals(lines[1], "hallpass: x^[[2Jevil (pid 10) wants to write (+1 more)", s);
      assertEquals(lines[2], "/home/app/.npm/a^[]0;t^G");
      await t.keys("d");
      assertEquals(await first, { kind: "deny", by: "answer:carol" });
      s = await t.waitText("pod: ci/job-1 runner");
      await Tmux.pastArmDelay();
      lines = bar(s);
      assertEquals(lines[1], "warning: the sandbox can write /tmp/build/run.sh");
      assertEquals(lines[2], "hallpass: npm (pid 11) wants to run");
      assertEquals(lines[3], "/tmp/build/run.sh --fast");
      assertEquals(Tmux.scope(s), "/tmp/build/run.sh");
      await t.keys("Left");
      s = await t.waitFor((x) => Tmux.scope(x) === "/tmp/build/**", "the wider scope");
      await t.keys("n");
      assertEquals(await second, { kind: "never", scope: "/tmp/build/**", by: "answer:carol" });
      await t.waitText("no questions");
      await quitAndCheck(t);
    });
  },
);

test({
  name: "hallpass answer: an answer elsewhere takes the question off the bar; Ctrl-C quits",
  ignore,
}, async () => {
  await withAnswer(async (t, svc) => {
    await t.waitText("no questions");
    const asked = svc.backend().ask(podQuestion(), new AbortController().signal);
    await t.waitBar();
    const port = svc.address.port;
    const list = await (await fetch(`http://127.0.0.1:${port}/api/questions`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    })).json();
    const r = await fetch(`http://127.0.0.1:${port}/api/answer`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "x-hallpass-client": "web" },
      body: JSON.stringify({ id: list.questions[0].id, digest: list.questions[0].digest, kind: "deny" }),
    });
    assertEquals(r.status, 200);
    await r.body?.cancel();
    assertEquals((await asked).by, "web:carol");
    await t.waitNoBar();
    await t.waitText("no questions");
    await t.keys("C-c");
    await t.waitText(/^rc=0$/m);
    assertEquals(await t.waitExit(), 0);
    assertEquals(
      await Deno.readTextFile(`${t.dir}/stty.txt`),
      await Deno.readTextFile(`${t.dir}/stty-before.txt`),
    );
  });
});

test(
  { name: "hallpass answer: an unreachable agent is one clear line, retried; q still quits", ignore },
  async () => {
    // A port nobody listens on: bind one, note it, close it.
    const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (l.addr as Deno.NetAddr).port;
    l.close();
    await withAnswer(async (t) => {
      const s = await t.waitText(
        `cannot reach http://127.0.0.1:${port} (connection refused); retrying every 2s`,
      );
      assert(!/error:|at .*\.ts:\d+/.test(s), s);
      await quitAndCheck(t);
    }, { agent: `http://127.0.0.1:${port}` });
  },
);

test({ name: "hallpass answer: a refused token ends it with exit 1 and one line", ignore }, async () => {
  await withAnswer(async (t) => {
    const s = await t.waitText(/^rc=\d+$/m);
    assert(/^rc=1$/m.test(s), s);
    assert(
      /^hallpass answer: the agent at http:\/\/127\.0\.0\.1:\d+ refused the token \(HTTP 401\)/m.test(s),
      s,
    );
    assert(!/\.ts:\d+/.test(s), "no stack trace");
    assertEquals(
      await Deno.readTextFile(`${t.dir}/stty.txt`),
      await Deno.readTextFile(`${t.dir}/stty-before.txt`),
    );
  }, { token: "wrong-token-0123456789" });
});

test(
  { name: "hallpass answer: three agents in one bar, oldest first, each answer to its own agent", ignore },
  async () => {
    const services = [await startService(TOKEN, "carol"), await startService(TOKEN, "carol")];
    try {
      await withAnswer(async (t, first) => {
        const all = [first, ...services];
        await t.waitText("hallpass answer: connected to 3 agents");
        const pods = ["pod-a", "pod-b", "pod-c"];
        const asks: Promise<Answer>[] = [];
        for (let i = 0; i < 3; i++) {
          asks.push(
            all[i].backend().ask(
              podQuestion({
                pid: 100 + i,
                container: { namespace: "ns", pod: pods[i], container: "c", id: `id${i}` },
              }),
              new AbortController().signal,
            ),
          );
          // Asked in this order, each once the last is on screen: the bar shows them oldest first.
          await t.waitText(i === 0 ? "wants to write" : `wants to write (+${i} more)`);
        }
        const kinds = ["o", "d", "o"];
        for (let i = 0; i < 3; i++) {
          const s = await t.waitBar();
          const podLine = bar(s)[0];
          assert(podLine.startsWith(`pod: ns/${pods[i]} c  node: `), podLine);
          await t.keys(kinds[i]);
          assertEquals(await asks[i], { kind: kinds[i] === "o" ? "once" : "deny", by: "answer:carol" });
          if (i < 2) await t.waitText(new RegExp(`pod: ns/${pods[i + 1]} c`));
        }
        await t.waitText("no questions");
        await quitAndCheck(t);
      }, {
        agents: services.map((s) => `http://127.0.0.1:${s.address.port}`),
      });
    } finally {
      for (const s of services) await s.close();
    }
  },
);
