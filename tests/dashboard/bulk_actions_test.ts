/**
 * "Act on all matching" in the dashboard's job browser, in a real browser (headless Chromium
 * through `playwright-core`) against a real server: a filter over the queue and state shown is
 * counted first (a dry run that changes nothing), then acted on after a confirmation, with the
 * progress shown and the list refreshed.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until } from "../helpers/browser.ts";
import { deadJob, getJob } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("bulk_actions_test.ts");

Deno.test({
  name: "job browser counts the dead jobs a filter takes, then requeues them after a confirm",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const q = "mail";
    const acme = [
      await deadJob(server, q, { tenant: { id: "acme" } }),
      await deadJob(server, q, { tenant: { id: "acme" } }),
    ];
    const other = await deadJob(server, q, { tenant: { id: "globex" } });

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector(`tr[data-queue="${q}"] button.browse-open`);
    await page.click(`tr[data-queue="${q}"] button.browse-open`);
    await until(
      "the dead tab",
      () => textOf(page, "#bulk-scope"),
      (t) => t === `The dead jobs of ${q}`,
    );

    await page.click("#bulk-box summary");
    assert.deepEqual(
      await page.evaluate(
        `[...document.querySelectorAll("#bulk-action option")].map((o) => o.value)`,
      ),
      ["requeue", "replay", "delete"],
    );
    await page.fill("#bulk-path", "tenant.id");
    await page.fill("#bulk-value", "acme");
    await page.click("#bulk-count");
    await page.waitForSelector("#bulk-matched");
    assert.equal(await page.getAttribute("#bulk-matched", "data-count"), "2");
    assert.match(await textOf(page, "#bulk-matched"), /^2 jobs match \(of 3 examined\)\.$/);
    // Counting changed nothing.
    for (const id of acme) assert.equal((await getJob(server, id)).state, "dead");

    // The first click arms the button; the second acts.
    assert.equal(await textOf(page, "#bulk-go"), "Requeue all 2 matching");
    await page.click("#bulk-go");
    assert.equal(await textOf(page, "#bulk-go"), "Requeue 2 jobs? Click again");
    await page.click("#bulk-go");
    await until(
      "the ended task",
      () => textOf(page, "#bulk-progress"),
      (t) => t === "requeue: 3 examined, 2 matched, 2 done (done)",
    );
    for (const id of acme) assert.equal((await getJob(server, id)).state, "pending");
    assert.equal((await getJob(server, other)).state, "dead");
    await until(
      "the refreshed list",
      () =>
        page.evaluate(
          `[...document.querySelectorAll("#browse-body tr")].map((tr) => Number(tr.dataset.id))`,
        ),
      (ids) => JSON.stringify(ids) === JSON.stringify([other]),
    );
    const tasks = (await server.request("GET", "/v1/bulk")).body.tasks;
    assert.deepEqual(tasks.map((t: { dry_run: boolean }) => t.dry_run), [false, true]);
    assert.deepEqual(errors, []);
  },
});
