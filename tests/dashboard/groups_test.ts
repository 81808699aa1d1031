/**
 * The dashboard shows a queue's limits in a real browser (headless Chromium, as the other
 * dashboard tests): its concurrency and rate, how many ordering groups wait, are leased and are
 * at their limit, and a badge when a limit holds consumers back.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
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

Deno.test({
  name: "dashboard shows the groups that hold jobs back, and why",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const q = "mail";
    assert.equal(
      (await server.request("PUT", `/v1/queues/${q}/settings`, { group_limit: 5 })).status,
      200,
    );
    // acme may have one job leased at once; beta gets one delivery an hour.
    const acme = await server.request("PUT", `/v1/queues/${q}/groups/acme`, { concurrency: 1 });
    assert.equal(acme.status, 200, JSON.stringify(acme.body));
    const beta = await server.request("PUT", `/v1/queues/${q}/groups/beta`, { rate: "1/1h" });
    assert.equal(beta.status, 200, JSON.stringify(beta.body));
    for (const group of ["acme", "acme", "acme", "beta", "beta", "free"]) {
      await enqueue(server, q, { payload: 1, group });
    }
    // One of acme's (its concurrency), one of beta's (its one token), free's one.
    assert.equal((await lease(server, q, { max: 10, lease_ms: 600_000 })).length, 3);

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    const row = `tr[data-queue="${q}"]`;
    await untilText(page, `${row} .groups-held`, "2 groups held");
    assert.match(
      String(await page.getAttribute(`${row} .groups-held`, "title")),
      /held because of group acme \(slots\): 2 pending, 1 of 1 leased/,
    );
    assert.match(
      await textOf(page, `${row} .limits`),
      /groups: 2 waiting · 3 leased · 1 at their limit · 1 held by their rate/,
    );

    // The badge opens the queue's groups: the held ones first, most pending first.
    await page.click(`${row} .groups-held`);
    await untilText(
      page,
      "#groups-held-text",
      "Jobs held because of 2 groups (1 without a free slot, 1 waiting for their rate), " +
        "most pending first:",
    );
    const held = await page.locator("#groups-held-table tbody tr").evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent).join(" "))
    );
    assert.deepEqual(held, ["acme slots 2 1 1", "beta rate 1 1 5"]);
    // The list shows each group's settings and what holds it.
    await untilText(page, '#groups-body tr[data-group="acme"] td.c-held', "slots");
    assert.match(await textOf(page, '#groups-body tr[data-group="beta"] td.c-held'), /^rate/);
    assert.equal(await textOf(page, '#groups-body tr[data-group="beta"] td.c-rate'), "1/1h");
    assert.equal(await textOf(page, '#groups-body tr[data-group="free"] td.c-held'), "—");
    assert.deepEqual(errors, []);
  },
});
