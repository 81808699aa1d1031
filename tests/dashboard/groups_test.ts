/**
 * The dashboard shows a queue's limits in a real browser (headless Chromium, as the other
 * dashboard tests): its concurrency and rate, how many ordering groups wait, are leased and are
 * at their limit, and a badge when a limit holds consumers back.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until } from "../helpers/browser.ts";
import { enqueue, lease } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("groups_test.ts");

Deno.test({
  name: "dashboard shows a queue's groups, its limits and the limit holding consumers back",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const q = "orders";
    const put = await server.request("PUT", `/v1/queues/${q}/settings`, {
      concurrency: 2,
      rate: "100/1s",
    });
    assert.equal(put.status, 200);
    for (const group of ["a", "a", "b", "c"]) await enqueue(server, q, { payload: 1, group });
    assert.equal((await lease(server, q, { max: 5, lease_ms: 600_000 })).length, 2);
    // A consumer waiting while the queue is at its concurrency.
    const waiting = server.request("POST", `/v1/queues/${q}/leases`, { max: 1, wait_ms: 20_000 });

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    const row = `tr[data-queue="${q}"]`;
    await page.waitForSelector(row);
    const line = await until(
      "the limits line",
      () => textOf(page, `${row} .limits`),
      (text) => text.includes("groups"),
    );
    assert.match(line, /leased 2 of 2/);
    assert.match(line, /groups: 2 waiting · 2 leased · 1 at limit 1/);
    await until(
      "the held badge",
      () => textOf(page, `${row} .badge.held`),
      (text) => text === "held by concurrency",
    );
    assert.deepEqual(errors, []);
    await server.stop();
    await waiting;
  },
});
