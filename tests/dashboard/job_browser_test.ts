/**
 * The dashboard's job browser in a real browser (headless Chromium through `playwright-core`,
 * as the dashboard test does), against a real server on the real clock: list a queue's jobs by
 * state, newest or oldest first, page on; open a job to see its payload, result, checkpoint,
 * last error, attempts and lease; act on it (run a delayed job now, retry a dead one, cancel,
 * delete a finished one); and show user data as text, never as markup. A token without the
 * admin scope gets told why the list is empty.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { browserMissing, openDashboard, textOf, until } from "../helpers/browser.ts";
import { deadJob, enqueue, getJob, leaseOne } from "../helpers/http_calls.ts";
import { newJob } from "../helpers/new_job.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("job_browser_test.ts");

/** The ids of the rows the browser lists, in order. */
function listedIds(page: Page): Promise<number[]> {
  return page.evaluate(
    `[...document.querySelectorAll("#browse-body tr")].map((tr) => Number(tr.dataset.id))`,
  ) as Promise<number[]>;
}

function untilListed(page: Page, ids: number[]): Promise<number[]> {
  return until("the listed jobs", () => listedIds(page), (got) => got.join() === ids.join());
}

async function untilJobView(page: Page, id: number, state: string): Promise<void> {
  await until(
    `job #${id} shown as ${state}`,
    async () =>
      `${await textOf(page, "#job-view .title")} ${await textOf(page, "#job-view .badge")}`,
    (text) => text === `Job #${id} ${state}`,
  );
}

Deno.test({
  name: "job browser lists each state both ways, opens a job and acts on it",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const q = "mail";
    const html = '<img src=x onerror="window.pwned=1"><b>bold</b>';
    const dead = await deadJob(server, q, "hopeless");
    const pending = [
      await enqueue(server, q, { payload: { n: 1 } }),
      await enqueue(server, q, { payload: { html }, key: "<i>k</i>", priority: 7 }),
    ];
    const delayed = await enqueue(server, q, { payload: "later", delay_ms: 3_600_000 });
    const done = await enqueue(server, q, { payload: "to finish", priority: 100 });
    const first = await leaseOne(server, q);
    assert.equal(first.id, done);
    await server.request("POST", `/v1/jobs/${done}/checkpoint`, {
      token: first.lease.token,
      data: { step: "sent" },
    });
    await server.request("POST", `/v1/jobs/${done}/ack`, {
      token: first.lease.token,
      result: { smtp: "250 ok" },
    });
    const leased = await enqueue(server, q, { payload: "busy", priority: 100 });
    assert.equal((await leaseOne(server, q, { lease_ms: 600_000 })).id, leased);

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector(`tr[data-queue="${q}"] button.browse-open`);

    // Pending, newest first by default, then oldest first; user data stays text.
    await page.click(`tr[data-queue="${q}"] button.browse-open`);
    await untilListed(page, [...pending].reverse());
    assert.equal(await page.locator("#browse-view img, #browse-view b, #browse-view i").count(), 0);
    assert.equal(await page.evaluate("window.pwned"), undefined);
    assert.equal(
      await textOf(page, `#browse-body tr[data-id="${pending[1]}"] td.key`),
      "<i>k</i>",
    );
    await page.selectOption("#browse-order", "oldest");
    await untilListed(page, pending);

    // A delayed job runs now, and leaves the delayed list for the pending one.
    await page.click('#browse-states button[data-state="delayed"]');
    await untilListed(page, [delayed]);
    await page.click(`#browse-body tr[data-id="${delayed}"] button.run-now`);
    await untilListed(page, []);
    const ran = await getJob(server, delayed);
    assert.ok(ran.state === "pending" || ran.state === "leased", ran.state);
    assert.ok(ran.run_at <= Date.now());

    // A dead job is retried (requeued, as everywhere else on the page).
    await page.click('#browse-states button[data-state="dead"]');
    await untilListed(page, [dead]);
    assert.match(await textOf(page, `#browse-body tr[data-id="${dead}"] td.tries`), /1 \/ 1/);
    await page.click(`#browse-body tr[data-id="${dead}"] button.requeue`);
    await untilListed(page, []);
    assert.equal((await getJob(server, dead)).state, "pending");

    // A done job opens with its payload, checkpoint and result, and is deleted (two clicks).
    await page.click('#browse-states button[data-state="done"]');
    await untilListed(page, [done]);
    await page.click(`#browse-body tr[data-id="${done}"] button.open-job`);
    await untilJobView(page, done, "done");
    const view = await textOf(page, "#job-view");
    assert.match(view, /Payload/);
    assert.match(view, /"to finish"/);
    assert.match(view, /Checkpoint[\s\S]*"step": "sent"/);
    assert.match(view, /Result[\s\S]*"smtp": "250 ok"/);
    assert.match(view, /1 of 5/, "attempts");
    await page.click(`#browse-body tr[data-id="${done}"] button.delete`);
    await page.click(`#browse-body tr[data-id="${done}"] button.delete`);
    await untilListed(page, []);
    assert.equal((await server.request("GET", `/v1/jobs/${done}`)).status, 404);

    // A leased job shows its lease, and is cancelled from the job view.
    await page.click('#browse-states button[data-state="leased"]');
    await untilListed(page, [leased]);
    await page.click(`#browse-body tr[data-id="${leased}"] button.open-job`);
    await untilJobView(page, leased, "leased");
    assert.match(await textOf(page, "#job-view .timeline"), /Lease of attempt 1 ends/);
    await page.click("#job-view button.job-cancel");
    await page.click("#job-view button.job-cancel");
    await untilJobView(page, leased, "cancelled");
    await untilListed(page, []);
    await page.click('#browse-states button[data-state="cancelled"]');
    await untilListed(page, [leased]);

    // A delayed job opened in the job view runs now from there too, with its last error shown.
    const retried = await enqueue(server, q, { payload: "retry me", priority: 1000 });
    const lease = await leaseOne(server, q);
    assert.equal(lease.id, retried);
    await server.request("POST", `/v1/jobs/${retried}/nack`, {
      token: lease.lease.token,
      error: "SMTP 451 <try later>",
      delay_ms: 3_600_000,
    });
    await page.click('#browse-states button[data-state="delayed"]');
    await untilListed(page, [retried]);
    await page.click(`#browse-body tr[data-id="${retried}"] button.open-job`);
    await untilJobView(page, retried, "delayed");
    assert.match(await textOf(page, "#job-view"), /Last error[\s\S]*SMTP 451 <try later>/);
    await page.click("#job-view button.job-run");
    await untilJobView(page, retried, "pending");
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "job browser opens a queue on the first state that holds jobs",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const id = await enqueue(server, "finished", { payload: "sent" });
    const leased = await leaseOne(server, "finished");
    await server.request("POST", `/v1/jobs/${id}/ack`, { token: leased.lease.token, result: 1 });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await until(
      "the done count",
      () => textOf(page, 'tr[data-queue="finished"] td.c-done'),
      (text) => text === "1",
    );
    await page.click('tr[data-queue="finished"] button.browse-open');
    await untilListed(page, [id]);
    assert.equal(
      await page.evaluate(`document.querySelector("#browse-states button.tab.on").dataset.state`),
      "done",
    );
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "job browser pages on with Load more",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const jobs = Array.from({ length: 30 }, (_, i) => ({ payload: i }));
    const ids = (await server.request("POST", "/v1/queues/bulk/jobs", { jobs })).body.jobs.map((
      j: { id: number },
    ) => j.id);
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector('tr[data-queue="bulk"] button.browse-open');
    await page.click('tr[data-queue="bulk"] button.browse-open');
    await untilListed(page, ids.slice(5).reverse());
    assert.equal(await textOf(page, "#browse-count"), "Showing 25 of 30");
    await page.click("#browse-view button.browse-more");
    await untilListed(page, [...ids].reverse());
    assert.equal(await textOf(page, "#browse-count"), "Showing 30 of 30");
    assert.equal(await page.locator("#browse-view button.browse-more").count(), 0);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "job browser tells a token without the admin scope why it shows nothing",
  ignore: missing !== null,
  fn: async () => {
    const token = "browser-consume-token-0123456789";
    await using server = await startTestServer({
      realTime: true,
      tokens: [{ name: "workers", token, scopes: ["consume"] }],
    });
    await server.server.broker.enqueue("work", [newJob("1", Date.now())]);
    await using dashboard = await openDashboard(server);
    const { page } = dashboard;
    await page.waitForSelector("#token-overlay.open");
    await page.fill("#token-input", token);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('tr[data-queue="work"] button.browse-open');
    await page.click('tr[data-queue="work"] button.browse-open');
    await until(
      "the scope message",
      () => textOf(page, "#browse-view"),
      (text) => /takes the admin scope/.test(text),
    );
  },
});
