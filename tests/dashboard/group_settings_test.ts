/**
 * The dashboard sets an ordering group's settings through its form (headless Chromium, as the
 * other dashboard tests, against a real server with auth on): the group is listed with them, a
 * value the server refuses says why and changes nothing, and Reset brings the defaults back.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";

const missing = browserMissing("group_settings_test.ts");

const TOKEN = "ops-token-0123456789abcdef";
const AUTH = { authorization: `Bearer ${TOKEN}` };

Deno.test({
  name: "dashboard sets a group's weight through the form and lists the group with it",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({
      realTime: true,
      tokens: [{ name: "ops", token: TOKEN, scopes: ["admin"] }],
    });
    const q = "orders";
    // A name that needs percent-encoding in the path.
    const group = "eu/west ü";
    await enqueue(server, q, { payload: 1, group }, AUTH);
    await enqueue(server, q, { payload: 2, group: "plain" }, AUTH);
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector("#token-overlay.open");
    await page.fill("#token-input", TOKEN);
    await page.click('#token-form button[type="submit"]');

    await page.click(`tr[data-queue="${q}"] button.groups-open`);
    const row = `#groups-body tr[data-group="${group}"]`;
    await page.waitForSelector(row);
    assert.equal(await textOf(page, `${row} td.c-weight`), "1");
    assert.match(await textOf(page, row), /defaults/);

    // Naming the group fills the form with its settings; then the weight changes.
    await page.fill("#group-name", group);
    await page.press("#group-name", "Tab");
    await until("the form's weight", () => page.inputValue("#group-weight"), (v) => v === "1");
    await page.fill("#group-weight", "5");
    await page.fill("#group-rate", "50/1s");
    await page.click("#group-save");
    await untilText(page, `${row} td.c-weight`, "5");
    assert.equal(await textOf(page, `${row} td.c-rate`), "50/1s");
    assert.doesNotMatch(await textOf(page, row), /defaults/);
    assert.match(await textOf(page, "#groups-caption"), /2 groups · 1 with settings of their own/);
    const stored = await server.request(
      "GET",
      `/v1/queues/${q}/groups/${encodeURIComponent(group)}`,
      undefined,
      AUTH,
    );
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body.settings, { weight: 5, concurrency: null, rate: "50/1s" });
    assert.equal(stored.body.configured, true);

    // A weight the server refuses: its message shows, and nothing changes.
    await page.fill("#group-weight", "5000");
    await page.click("#group-save");
    await untilText(page, "#toasts .toast.error", /weight/);
    assert.equal(await textOf(page, `${row} td.c-weight`), "5");

    // Reset, from the group's row: armed by the first click, done by the second.
    await page.click(`${row} button.group-reset`);
    await untilText(page, `${row} button.group-reset`, "Reset?");
    await page.click(`${row} button.group-reset`);
    await untilText(page, `${row} td.c-weight`, "1");
    assert.match(await textOf(page, row), /defaults/);
    assert.equal(await textOf(page, `${row} td.c-rate`), "—");
    const reset = await server.request(
      "GET",
      `/v1/queues/${q}/groups/${encodeURIComponent(group)}`,
      undefined,
      AUTH,
    );
    assert.equal(reset.body.configured, false);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "dashboard lists a queue's groups a page at a time",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const q = "fanout";
    // 101 groups, one job each: one more than a page (names sort as g000 … g100).
    const jobs = Array.from({ length: 101 }, (_, i) => ({
      payload: i,
      group: `g${String(i).padStart(3, "0")}`,
    }));
    const batch = await server.request("POST", `/v1/queues/${q}/jobs`, { jobs });
    assert.equal(batch.status, 201, JSON.stringify(batch.body));
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.click(`tr[data-queue="${q}"] button.groups-open`);
    await untilText(page, "#groups-count", "Showing 100 (more after)");
    assert.equal(await page.locator("#groups-body tr").count(), 100);
    assert.equal(await page.locator('#groups-body tr[data-group="g100"]').count(), 0);
    await page.click("#groups-view button.groups-more");
    await untilText(page, "#groups-count", "Showing 101");
    assert.equal(await page.locator("#groups-body tr").count(), 101);
    assert.equal(await textOf(page, '#groups-body tr[data-group="g100"] td.c-pending'), "1");
    assert.equal(await page.locator("#groups-view button.groups-more").count(), 0);
    assert.deepEqual(errors, []);
  },
});
