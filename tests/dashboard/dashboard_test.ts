/**
 * The dashboard in a real browser: headless Chromium (Debian's `/usr/bin/chromium`, which
 * `.ci/run` installs) driven by `playwright-core` against a real server on the real clock. The
 * page must follow the live feed, requeue a dead job, look jobs up without ever rendering user
 * data as markup, and ask for a token when auth is on, keeping it in the tab only.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { type Browser, chromium, type Page } from "playwright-core";
import { enqueue, getJob, leaseOne, queueStats } from "../helpers/http_calls.ts";
import { startTestServer, stopWithin, type TestServer } from "../helpers/test_server.ts";

const CHROMIUM = "/usr/bin/chromium";
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const TOKEN = "dashboard-admin-token-0123456789";

const missing = (() => {
  try {
    return Deno.statSync(CHROMIUM).isFile ? null : `${CHROMIUM} is not a file`;
  } catch {
    return `${CHROMIUM} is missing (apt-get install chromium; .ci/run installs it)`;
  }
})();
if (missing !== null) console.log(`dashboard_test.ts: skipping the browser tests: ${missing}`);

/** A browser, a page on the dashboard, and the page's uncaught errors. */
async function openDashboard(server: TestServer): Promise<
  { browser: Browser; page: Page; errors: string[] } & AsyncDisposable
> {
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(`${server.url}/`);
  return { browser, page, errors, [Symbol.asyncDispose]: () => browser.close() };
}

/** The text of the first element matching `selector`, or null when there is none. */
function textOf(page: Page, selector: string): Promise<string | null> {
  return page.evaluate(
    `(document.querySelector(${JSON.stringify(selector)}) || {}).textContent ?? null`,
  ) as Promise<string | null>;
}

/** Waits until `read` gives a value `ok` accepts; fails with the last value after `ms`. */
async function until<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  ms = 5000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) {
      assert.fail(`${what}: still ${JSON.stringify(value)} after ${ms} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function untilText(page: Page, selector: string, expected: string | RegExp): Promise<unknown> {
  return until(
    `text of ${selector}`,
    () => textOf(page, selector),
    (text) =>
      text !== null &&
      (typeof expected === "string" ? text.trim() === expected : expected.test(text)),
  );
}

const cell = (queue: string, column: string) => `tr[data-queue="${queue}"] td.c-${column}`;

Deno.test({
  name: "dashboard follows the live counts, requeues a dead job and looks jobs up",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await untilText(page, "#status-text", "live");
    assert.equal(await page.isVisible("#queues-empty"), true);

    // Counts move as jobs arrive, pushed by the feed (no reload, no polling).
    for (let i = 0; i < 3; i++) await enqueue(server, "email", { payload: { n: i } });
    await untilText(page, cell("email", "pending"), "3");
    await enqueue(server, "email", { payload: { n: 3 } });
    await untilText(page, cell("email", "pending"), "4");
    await until(
      "the chart's enqueued line",
      () => page.locator("#chart path.line.enq").count(),
      (n) => n === 1,
    );

    // A dead job shows up in the dead-letter browser and is requeued from there.
    const id = await enqueue(server, "email", { payload: { to: "ada@example.com" }, priority: 9 });
    const leased = await leaseOne(server, "email");
    assert.equal(leased.id, id);
    const error = "550 mailbox <b>full</b>";
    const nack = { token: leased.lease.token, error, dead: true };
    assert.equal((await server.request("POST", `/v1/jobs/${id}/nack`, nack)).body.state, "dead");
    await untilText(page, cell("email", "dead"), "1");
    await page.click('tr[data-queue="email"] button.dead-open');
    const row = `#dead-body tr[data-id="${id}"]`;
    await untilText(page, `${row} td.payload`, '{"to":"ada@example.com"}');
    assert.equal(await textOf(page, `${row} td.err`), error);
    await page.click(`${row} button.requeue`);
    await until("the requeued row", () => page.locator(row).count(), (n) => n === 0);
    const job = await getJob(server, id);
    assert.equal(job.state, "pending");
    assert.equal(job.attempts, 0);
    const dead = await server.request("GET", "/v1/queues/email/dead");
    assert.deepEqual(dead.body.jobs, []);
    await untilText(page, cell("email", "dead"), "0");
    await untilText(page, cell("email", "pending"), "5");

    // Job lookup shows user data as text, never as markup.
    const html = '<img src=x onerror="window.pwned=1"><b>bold</b>';
    const lookedUp = await enqueue(server, "email", { payload: { html }, key: "<i>key</i>" });
    await page.fill("#job-id", String(lookedUp));
    await page.click('#job-form button[type="submit"]');
    await untilText(page, "#job-view .title", `Job #${lookedUp}`);
    assert.equal(await textOf(page, "#job-view .badge"), "pending");
    assert.equal(await textOf(page, "#job-view pre"), JSON.stringify({ html }, null, 2));
    assert.equal(await textOf(page, "#job-view dd.mono"), "<i>key</i>");
    assert.equal(await page.locator("#job-view img, #job-view b, #job-view i").count(), 0);
    assert.equal(await page.evaluate("window.pwned"), undefined);
    assert.match(await textOf(page, "#job-view .timeline") ?? "", /Enqueued.*Now: Waiting/);

    // Cancel takes two clicks; then the job is cancelled for real.
    await page.click("#job-view button.job-cancel");
    await page.click("#job-view button.job-cancel");
    await untilText(page, "#job-view .badge", "cancelled");
    assert.equal((await getJob(server, lookedUp)).state, "cancelled");

    // Pause from the queue row.
    await page.click('tr[data-queue="email"] button.pause');
    await untilText(page, 'tr[data-queue="email"] button.pause', "Resume");
    assert.equal((await queueStats(server, "email")).paused, true);
    assert.equal(await page.isVisible('tr[data-queue="email"] .badge.paused'), true);

    // Shutdown ends the page's stream instead of waiting for it; the page says so.
    assert.equal(await stopWithin(server), "stopped");
    await untilText(page, "#status-text", /server closed the stream|disconnected/);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "dashboard asks for a token when auth is on and keeps it in the tab only",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({
      realTime: true,
      tokens: [{ name: "ops", token: TOKEN, scopes: ["admin"] }],
    });
    await enqueue(server, "billing", { payload: 1 }, { authorization: `Bearer ${TOKEN}` });
    await using dashboard = await openDashboard(server);
    const { browser, page, errors } = dashboard;
    await page.waitForSelector("#token-overlay.open");
    await untilText(page, "#status-text", "token needed");

    await page.fill("#token-input", "not-the-token");
    await page.click('#token-form button[type="submit"]');
    await untilText(page, "#token-error", /not accepted/);
    assert.equal(await page.isVisible("#token-overlay.open"), true);

    await page.fill("#token-input", TOKEN);
    await page.click('#token-form button[type="submit"]');
    await untilText(page, cell("billing", "pending"), "1");
    assert.equal(await page.isVisible("#token-overlay.open"), false);
    assert.equal(await page.evaluate('sessionStorage.getItem("tegami.token")'), TOKEN);
    assert.equal(await page.evaluate("localStorage.length"), 0);
    assert.deepEqual(await page.context().cookies(), []);
    assert.ok(!page.url().includes(TOKEN));

    // A reload keeps the tab's token; another tab has to ask again.
    await page.reload();
    await untilText(page, cell("billing", "pending"), "1");
    const other = await browser.newPage();
    await other.goto(`${server.url}/`);
    await other.waitForSelector("#token-overlay.open");

    // Forgetting the token asks again.
    await page.click("#signout");
    await page.waitForSelector("#token-overlay.open");
    assert.equal(await page.evaluate('sessionStorage.getItem("tegami.token")'), null);
    assert.deepEqual(errors, []);
  },
});
