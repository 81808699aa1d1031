/**
 * The dashboard shows each queue's settings under its name (headless Chromium, see
 * tests/helpers/browser.ts, against a real server on the real clock): the settings that differ
 * from the defaults, following changes through the live feed, as text only; nothing for a queue
 * with the defaults.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("settings_test.ts");

const settingsOf = (queue: string) => `tr[data-queue="${queue}"] .qsettings`;

/** The settings chips a queue's row shows, as `label value` strings. */
async function chips(page: import("playwright-core").Page, queue: string): Promise<string[]> {
  return await page.locator(`${settingsOf(queue)} .setting`).evaluateAll((els) =>
    els.map((el) =>
      `${el.querySelector(".k")?.textContent ?? ""} ${el.querySelector(".v")?.textContent ?? ""}`
    )
  );
}

Deno.test({
  name: "dashboard shows each queue's settings and follows their changes",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    await server.request("PUT", "/v1/queues/billing/settings", {
      concurrency: 5,
      rate: "100/1000ms",
      group_limit: 2,
      max_attempts: 3,
      lease_ms: 45_000,
      backoff: { base_ms: 500, max_ms: 60_000 },
      retain_done_ms: 3_600_000,
      retain_dead_ms: 500,
      retain_pending_ms: 86_400_000,
      dead_letter_queue: "billing.dead",
    });
    await enqueue(server, "plain", { payload: 1 });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await untilText(page, "#status-text", "live");

    // A queue with settings but no jobs is listed, its settings under its name.
    await untilText(page, `tr[data-queue="billing"] td.c-pending`, "0");
    assert.deepEqual(await chips(page, "billing"), [
      "concurrency 5",
      "rate 100/1s",
      "group limit 2",
      "attempts 3",
      "lease 45 s",
      "backoff 500 ms – 1 m 00 s",
      "keep done 1 h 00 m",
      "keep dead 500 ms",
      "keep pending 1 d 0 h",
      "dead letters to billing.dead",
    ]);
    assert.equal(
      await page.getAttribute(`${settingsOf("billing")} [data-setting="concurrency"]`, "title"),
      "most jobs leased at once",
    );
    // A queue with the defaults shows none.
    await untilText(page, `tr[data-queue="plain"] td.c-pending`, "1");
    assert.equal(await page.isVisible(settingsOf("plain")), false);
    assert.deepEqual(await chips(page, "plain"), []);

    // A change reaches the page through the live feed, without a reload.
    await server.request("PUT", "/v1/queues/plain/settings", { rate: "5/250ms" });
    await until("the new setting", () => chips(page, "plain"), (c) => c.join() === "rate 5/250ms");
    assert.equal(await page.isVisible(settingsOf("plain")), true);
    await server.request("PUT", "/v1/queues/plain/settings", {});
    await until("the reset", () => chips(page, "plain"), (c) => c.length === 0);
    assert.equal(await textOf(page, `tr[data-queue="plain"] td.c-pending`), "1");
    assert.deepEqual(errors, []);
  },
});
