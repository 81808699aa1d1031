/**
 * The dashboard's schedules card in a real browser (headless Chromium through `playwright-core`,
 * as the other dashboard tests do), against a real server: schedules listed with their queue,
 * cron, zone, next and last tick and last job; paused and resumed from the page with an admin
 * token; a token without the admin scope sees them but is told it cannot pause.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("schedules_test.ts");

const ADMIN = "schedules-dash-admin-token-012345";
const READER = "schedules-dash-reader-token-01234";

Deno.test({
  name: "dashboard lists schedules with their next tick and pauses and resumes them",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({
      realTime: true,
      tokens: [
        { name: "ops", token: ADMIN, scopes: ["admin"] },
        { name: "watcher", token: READER, scopes: ["produce"] },
      ],
    });
    const admin = { authorization: `Bearer ${ADMIN}` };
    const put = (name: string, body: unknown) =>
      server.request("PUT", `/v1/schedules/${name}`, body, admin);
    assert.equal(
      (await put("nightly-report", {
        queue: "reports",
        cron: "0 3 * * *",
        timezone: "Europe/Berlin",
        payload: { report: "sales" },
      })).status,
      201,
    );
    assert.equal(
      (await put("every-second", { queue: "ticks", cron: "* * * * * *", payload: null })).status,
      201,
    );
    await using dash = await openDashboard(server);
    const { page } = dash;
    await page.waitForSelector("#token-overlay.open");
    await page.fill("#token-input", ADMIN);
    await page.click('#token-form button[type="submit"]');

    const row = 'tr[data-schedule="nightly-report"]';
    await page.waitForSelector(row);
    assert.deepEqual(
      await page.evaluate(
        `[...document.querySelectorAll("#schedules-body tr")].map((tr) => tr.dataset.schedule)`,
      ),
      ["every-second", "nightly-report"],
    );
    assert.equal(await textOf(page, `${row} td:nth-child(2)`), "reports");
    assert.equal(await textOf(page, `${row} td:nth-child(3)`), "0 3 * * *");
    assert.equal(await textOf(page, `${row} td:nth-child(4)`), "Europe/Berlin");
    assert.match(await textOf(page, `${row} .c-next`), /^in \d+/);
    assert.equal(await textOf(page, `${row} .c-last`), "—");
    await untilText(page, "#schedules-caption", "2 schedules");

    // The per-second schedule ticks: a refresh shows its last tick and job.
    const ticking = 'tr[data-schedule="every-second"]';
    await until("a tick of every-second", async () => {
      await page.click("#schedules-refresh");
      return await textOf(page, `${ticking} td:nth-child(7)`);
    }, (text) => /^#\d+$/.test(text));
    // Its last job opens in the job lookup. The card refreshes itself while the schedule ticks
    // every second, so the job shown can be newer than the one read before the click: the id is
    // read from the job view, and the server says that job is one of this schedule's.
    await page.click(`${ticking} td:nth-child(7) button.link`);
    const title = await until(
      "text of #job-view .title",
      () => textOf(page, "#job-view .title"),
      (text) => /^Job #\d+$/.test(text.trim()),
    );
    const jobId = Number(title.trim().slice("Job #".length));
    const job = await server.request("GET", `/v1/jobs/${jobId}`, undefined, admin);
    assert.match(job.body.key, /^schedule:every-second:/);

    // Pause from the page: the server's schedule is paused, the row says so.
    await page.click(`${row} button.schedule-toggle`);
    await untilText(page, `${row} button.schedule-toggle`, "Resume");
    assert.equal(await page.isVisible(`${row} .badge.paused`), true);
    assert.equal(await textOf(page, `${row} .c-next`), "paused");
    const paused = await server.request("GET", "/v1/schedules/nightly-report", undefined, admin);
    assert.equal(paused.body.paused, true);
    await untilText(page, "#schedules-caption", "2 schedules · 1 paused");

    // And resume.
    await page.click(`${row} button.schedule-toggle`);
    await untilText(page, `${row} button.schedule-toggle`, "Pause");
    const resumed = await server.request("GET", "/v1/schedules/nightly-report", undefined, admin);
    assert.equal(resumed.body.paused, false);
    assert.match(await textOf(page, `${row} .c-next`), /^in \d+/);
    assert.deepEqual(dash.errors, []);
  },
});

Deno.test({
  name: "dashboard shows schedules to a token without admin, which cannot pause them",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({
      realTime: true,
      tokens: [
        { name: "ops", token: ADMIN, scopes: ["admin"] },
        { name: "watcher", token: READER, scopes: ["produce"] },
      ],
    });
    await server.request("PUT", "/v1/schedules/weekly", {
      queue: "digest",
      cron: "0 9 * * MON",
      payload: null,
    }, { authorization: `Bearer ${ADMIN}` });
    await using dash = await openDashboard(server);
    const { page } = dash;
    await page.waitForSelector("#token-overlay.open");
    await page.fill("#token-input", READER);
    await page.click('#token-form button[type="submit"]');
    const row = 'tr[data-schedule="weekly"]';
    await page.waitForSelector(row);
    await page.click(`${row} button.schedule-toggle`);
    await untilText(page, "#toasts", /lacks the admin scope/);
    assert.equal(await textOf(page, `${row} button.schedule-toggle`), "Pause");
    const still = await server.request("GET", "/v1/schedules/weekly", undefined, {
      authorization: `Bearer ${READER}`,
    });
    assert.equal(still.body.paused, false);
    assert.deepEqual(dash.errors, []);
  },
});
