/**
 * The question service's web page in a real browser (Debian's chromium, driven by puppeteer-core): the token
 * from the URL fragment, a question with its pod, container and target, "allow once" resolving the agent's ask
 * with `by: "web:NAME"`, a question arriving while the page is open, the scope chooser with "never", hostile
 * text staying text, the page working under its own CSP, and the "token needed" state without a token.
 *
 * Chromium missing is a failure, not a skip: `make deps` installs it (apt package `chromium`).
 */
import { deepStrictEqual as assertEquals, ok as assert } from "node:assert/strict";
// deno-lint-ignore no-import-prefix -- test-only packages are pinned here, not in deno.json (docs/development.md)
import puppeteer, { type Browser, type Page } from "npm:puppeteer-core@25.16.0";
import type { AnswerService } from "../../lib/agent/answer_service.ts";
import { podQuestion, startService } from "./answer_fixture.ts";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "dave-0123456789abcdefXYZ";

function haveChromium(): boolean {
  try {
    return Deno.statSync(CHROMIUM).isFile;
  } catch {
    return false;
  }
}

interface Ctx {
  svc: AnswerService;
  base: string;
  page: Page;
  /** Console messages and page errors (a CSP violation shows up here). */
  problems: string[];
  /** Every URL the page requested. */
  requests: string[];
}

async function withPage(fn: (c: Ctx) => Promise<void>): Promise<void> {
  if (!haveChromium()) {
    throw new Error(`${CHROMIUM} is not installed: run \`make deps\` (or apt-get install -y chromium)`);
  }
  const svc = await startService(TOKEN, "dave");
  const profile = await Deno.makeTempDir({ prefix: "hallpass-chromium-" });
  let browser: Browser | null = null;
  try {
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      userDataDir: profile,
      args: ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
      env: { ...Deno.env.toObject(), HOME: profile },
    });
    const page = await browser.newPage();
    const problems: string[] = [];
    const requests: string[] = [];
    page.on("console", (m) => {
      if (m.type() === "error" || m.type() === "warn") problems.push(m.text());
    });
    page.on("pageerror", (e) => problems.push(String(e)));
    page.on("request", (r) => requests.push(r.url()));
    await fn({ svc, base: `http://127.0.0.1:${svc.address.port}`, page, problems, requests });
  } finally {
    await browser?.close();
    await svc.close();
    await Deno.remove(profile, { recursive: true }).catch(() => {});
  }
}

const text = (page: Page, sel: string) => page.$eval(sel, (e) => e.textContent ?? "");

Deno.test("web page: the question with pod, container and target; allow once answers as web:NAME", async () => {
  await withPage(async ({ svc, base, page, problems, requests }) => {
    const ask = svc.backend();
    const hostile = "/tmp/<script>window.pwned=1</script><img src=x onerror=window.pwned=2>\x1b[2J\u202Eexe";
    const first = ask.ask(
      podQuestion({ target: hostile, reason: "<b>trust me</b>" }),
      new AbortController().signal,
    );
    await page.goto(`${base}/#token=${TOKEN}`);
    await page.waitForSelector(".q[data-id]", { timeout: 15_000 });
    assertEquals(await text(page, ".q .pod"), "shop/web-7d9f builder");
    assertEquals(await text(page, ".q .what"), "npm (pid 4242) wants to write");
    assertEquals(
      await text(page, ".q .target"),
      "/tmp/<script>window.pwned=1</script><img src=x onerror=window.pwned=2>^[[2J<U+202E>exe",
    );
    assertEquals(await text(page, ".q .chain"), "by: npm install ← sh -c npm install");
    assert((await text(page, ".q .reason")).includes("<b>trust me</b>"));
    // Hostile text stayed text: no element was made from it, no script ran; the HTML has it escaped.
    assertEquals(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined);
    assertEquals(await page.$$eval(".q img, .q script, .q b", (e) => e.length), 0);
    assert((await page.content()).includes("/tmp/&lt;script&gt;window.pwned=1&lt;/script&gt;&lt;img"));
    // The token left the address bar, and went to the server only as a header.
    assertEquals(await page.evaluate(() => location.hash), "");
    // (The fragment is the browser's: what goes to the server is the path and the query.)
    assert(
      requests.every((u) => !(new URL(u).pathname + new URL(u).search).includes(TOKEN)),
      requests.join("\n"),
    );
    assert(requests.some((u) => u.includes("/api/questions?wait=")), "it long-polls");
    assertEquals(
      await page.$$eval(".q select.scope option", (o) => o.map((x) => x.textContent)),
      podQuestion().scopes,
    );
    assertEquals(
      await page.$eval(".q select.scope", (s) => (s as unknown as { selectedIndex: number }).selectedIndex),
      1,
    );

    await page.waitForSelector('.q button[data-kind="once"]:not([disabled])', { timeout: 10_000 });
    await page.click('.q button[data-kind="once"]');
    assertEquals(await first, { kind: "once", by: "web:dave" });
    await page.waitForSelector(".q", { hidden: true, timeout: 10_000 });
    await page.waitForSelector("#empty:not([hidden])", { timeout: 10_000 });

    // A new question while the page is open appears without a reload (long-poll); a wider scope, then never.
    // Its buttons are armed only after a moment (a click meant for the last card must not answer it): seen
    // when the card is inserted (a MutationObserver runs before any timer), not after the test's own steps,
    // which a loaded machine can stretch past the arming delay.
    await page.evaluate(() => {
      type Node = {
        matches?: (s: string) => boolean;
        querySelectorAll: (s: string) => { disabled: boolean }[];
      };
      const g = globalThis as unknown as {
        armedAtInsert: boolean[];
        MutationObserver: new (cb: (ms: { addedNodes: Node[] }[]) => void) => {
          observe: (n: unknown, o: unknown) => void;
        };
        document: { body: unknown };
      };
      g.armedAtInsert = [];
      new g.MutationObserver((ms) => {
        for (const m of ms) {
          for (const n of m.addedNodes) {
            if (n.matches?.(".q[data-id]")) {
              for (const b of n.querySelectorAll("button")) g.armedAtInsert.push(!b.disabled);
            }
          }
        }
      }).observe(g.document.body, { childList: true, subtree: true });
    });
    const second = ask.ask(
      podQuestion({ pid: 77, container: { namespace: "ci", pod: "job-1", container: "runner", id: "beef" } }),
      new AbortController().signal,
    );
    await page.waitForSelector(".q[data-id]", { timeout: 10_000 });
    assertEquals(await text(page, ".q .pod"), "ci/job-1 runner");
    await page.select(".q select.scope", "3");
    const armed = await page.evaluate(() =>
      (globalThis as unknown as { armedAtInsert: boolean[] }).armedAtInsert
    );
    assert(armed.length > 0 && armed.every((a) => !a), `buttons armed when the card appeared: ${armed}`);
    await page.waitForSelector('.q button[data-kind="never"]:not([disabled])', { timeout: 10_000 });
    await page.click('.q button[data-kind="never"]');
    assertEquals(await second, { kind: "never", scope: "/home/app/**", by: "web:dave" });
    assertEquals(problems, [], "no console errors, no CSP violations");
  });
});

Deno.test("web page: without a token it says a token is needed and asks the server for nothing", async () => {
  await withPage(async ({ svc, base, page, requests }) => {
    const pending = svc.backend().ask(podQuestion(), new AbortController().signal);
    await page.goto(`${base}/`);
    await page.waitForSelector('body[data-state="token-needed"]', { timeout: 15_000 });
    assert((await text(page, "#needed")).startsWith("Token needed"));
    assertEquals(await page.$eval("#needed", (e) => (e as unknown as { hidden: boolean }).hidden), false);
    assertEquals(await page.$$eval(".q", (e) => e.length), 0);
    assert(!(await page.content()).includes("web-7d9f"), "no data");
    await new Promise((r) => setTimeout(r, 300));
    assert(requests.every((u) => !u.includes("/api/")), requests.join("\n"));

    // A wrong token: the agent refuses it and the page says so.
    await page.goto(`${base}/#token=wrong-token-0123456789`);
    await page.reload(); // a navigation to the same document with another fragment does not reload it
    await page.waitForSelector('body[data-state="token-refused"]', { timeout: 15_000 });
    assertEquals(await text(page, "#status"), "the agent refused the token");
    assertEquals(await page.$$eval(".q", (e) => e.length), 0);
    await svc.close();
    assertEquals((await pending).by, "agent-closed");
  });
});
