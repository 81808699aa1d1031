/**
 * The dashboard shows a job's progress live, in a real browser (headless Chromium through
 * `playwright-core`) against a real server on the real clock: the job view draws a bar for a
 * report that reads as a fraction, shows the value as JSON (as text, never as markup), and follows
 * new reports while the job is leased.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until } from "../helpers/browser.ts";
import { enqueue, leaseOne } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("progress_test.ts");

Deno.test({
  name: "job view shows a leased job's progress and follows new reports live",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const id = await enqueue(server, "encode", { payload: { video: "cat.mp4" } });
    const { lease } = await leaseOne(server, "encode", { lease_ms: 600_000 });
    const report = async (progress: unknown) => {
      const answer = await server.request("POST", `/v1/jobs/${id}/progress`, {
        token: lease.token,
        progress,
      });
      assert.equal(answer.status, 200);
    };
    await report({ done: 1, of: 4 });

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector('tr[data-queue="encode"]');
    await page.fill("#job-id", String(id));
    await page.press("#job-id", "Enter");
    await until(
      "the progress bar at 25%",
      () => textOf(page, "#job-view .progress-pct"),
      (t) => t === "25%",
    );
    assert.equal(
      await page.evaluate(`document.querySelector("#job-view progress.job-progress").value`),
      0.25,
    );
    assert.match(await textOf(page, "#job-view .progress-value"), /"done": 1/);
    assert.match(await textOf(page, "#job-view .progress-at"), /reported/);

    // A new report appears without any click: the view follows the leased job.
    await report(0.75);
    await until(
      "the progress bar at 75%",
      () => textOf(page, "#job-view .progress-pct"),
      (t) => t === "75%",
    );

    // A report that is no fraction is shown as it is, as text, without a bar.
    const html = "<img src=x onerror=window.pwned=1>";
    await report({ stage: html });
    await until(
      "the report as text",
      () => textOf(page, "#job-view .progress-value"),
      (t) => t.includes(html),
    );
    assert.equal(await page.locator("#job-view progress.job-progress").count(), 0);
    assert.equal(await page.locator("#job-view img").count(), 0);
    assert.equal(await page.evaluate("window.pwned"), undefined);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "job view shows no progress block for a job that never reported any",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const id = await enqueue(server, "encode", { payload: 1 });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector('tr[data-queue="encode"]');
    await page.fill("#job-id", String(id));
    await page.press("#job-id", "Enter");
    await until("the job view", () => textOf(page, "#job-view .title"), (t) => t === `Job #${id}`);
    assert.doesNotMatch(await textOf(page, "#job-view"), /Progress/);
    assert.deepEqual(errors, []);
  },
});
