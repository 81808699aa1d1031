/**
 * The dashboard's flows in a real browser (headless Chromium through `playwright-core`, see
 * tests/helpers/browser.ts) against a real server on the real clock: the list of flows, a flow
 * page that draws its nodes in columns by depth coloured by state and its edges styled by
 * `on_failure`, follows the flow as its jobs end, cancels it, and stays quick on a flow of
 * 10,000 nodes by drawing part of it and saying so; and a job of a flow links to its flow.
 *
 * Skipped, with the reason printed, only when `/usr/bin/chromium` is missing.
 */

import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { browserMissing, openDashboard, textOf, until, untilText } from "../helpers/browser.ts";
import { getJob, leaseOne } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

const missing = browserMissing("flows_test.ts");

/** Creates a flow (`POST /v1/flows`) and answers its id and its jobs' ids by ref. */
async function createFlow(
  server: TestServer,
  body: Record<string, unknown>,
  headers?: HeadersInit,
): Promise<{ id: number; jobs: Record<string, number> }> {
  const answer = await server.request("POST", "/v1/flows", body, headers);
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body;
}

/** Every drawn node, by ref: its job id and its state class. */
function drawnNodes(page: Page): Promise<Record<string, { id: number; state: string }>> {
  return page.evaluate(`Object.fromEntries([...document.querySelectorAll("#flow-view g.fnode")]
    .map((g) => [g.dataset.ref, {
      id: Number(g.dataset.id),
      state: [...g.classList].find((c) => c.startsWith("s-")),
    }]))`) as Promise<Record<string, { id: number; state: string }>>;
}

/** Every drawn edge as `from>to` and its on_failure class. */
function drawnEdges(page: Page): Promise<Record<string, string>> {
  return page.evaluate(`Object.fromEntries([...document.querySelectorAll("#flow-view path.edge")]
    .map((p) => [p.dataset.from + ">" + p.dataset.to,
      [...p.classList].find((c) => c.startsWith("on-"))]))`) as Promise<Record<string, string>>;
}

async function untilNodeState(page: Page, ref: string, state: string): Promise<void> {
  await until(
    `node ${ref} drawn ${state}`,
    async () => (await drawnNodes(page))[ref]?.state,
    (got) => got === "s-" + state,
  );
}

Deno.test({
  name: "flow page draws a flow's nodes by state and edges by rule, and a job links to its flow",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const key = "order-<i>42</i>";
    const flow = await createFlow(server, {
      key,
      nodes: [
        { ref: "fetch", queue: "img", payload: { url: "cat.png" } },
        { ref: "resize", queue: "img", payload: 1, depends_on: ["fetch"] },
        {
          ref: "thumb",
          queue: "img",
          payload: 2,
          depends_on: [{ ref: "fetch", on_failure: "ignore" }],
        },
        {
          ref: "upload",
          queue: "img",
          payload: 3,
          depends_on: ["resize", { ref: "thumb", on_failure: "run" }],
        },
      ],
    });
    const ids = flow.jobs;
    const fetch = await leaseOne(server, "img");
    assert.equal(fetch.id, ids.fetch);
    const acked = await server.request("POST", `/v1/jobs/${ids.fetch}/ack`, {
      token: fetch.lease.token,
    });
    assert.equal(acked.status, 200);

    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;

    // The list: the flow's key as text, its nodes by state, not finished.
    const row = `#flows-body tr[data-flow="${flow.id}"]`;
    await page.waitForSelector(row);
    assert.equal(await textOf(page, `${row} td.key`), key);
    assert.equal(await textOf(page, `${row} td.c-nodes`), "4");
    assert.equal(await textOf(page, `${row} .states-text`), "1 blocked · 2 pending · 1 done");
    assert.equal(await textOf(page, `${row} td.c-finished`), "running");
    assert.equal(await page.locator(`${row} svg.statebar rect`).count(), 3);

    // The flow page: every node in its state with its job id, every edge with its rule.
    await page.click(`${row} button.open-flow`);
    await untilText(page, "#flow-title", `Flow #${flow.id}`);
    await until("four nodes", () => page.locator("#flow-view g.fnode").count(), (n) => n === 4);
    assert.deepEqual(await drawnNodes(page), {
      fetch: { id: ids.fetch, state: "s-done" },
      resize: { id: ids.resize, state: "s-pending" },
      thumb: { id: ids.thumb, state: "s-pending" },
      upload: { id: ids.upload, state: "s-blocked" },
    });
    assert.deepEqual(await drawnEdges(page), {
      "fetch>resize": "on-cancel",
      "fetch>thumb": "on-ignore",
      "resize>upload": "on-cancel",
      "thumb>upload": "on-run",
    });
    assert.equal(await textOf(page, "#flow-counts .flow-total"), "4 nodes");
    assert.equal(await textOf(page, '#flow-counts .badge[data-state="blocked"]'), "blocked 1");
    assert.equal(await textOf(page, '#flow-counts .badge[data-state="pending"]'), "pending 2");
    assert.equal(await page.isVisible("#flow-notice"), false);
    assert.equal(new URL(page.url()).hash, `#flow/${flow.id}`);
    assert.equal(await page.locator("#flow-card i, #flows-card i").count(), 0);
    // Columns by depth: fetch left of resize and thumb, which are left of upload.
    const x = (ref: string) =>
      page.evaluate(
        `document.querySelector('#flow-view g.fnode[data-ref="${ref}"]').getBoundingClientRect().x`,
      ) as Promise<number>;
    const [fx, rx, tx, ux] = [
      await x("fetch"),
      await x("resize"),
      await x("thumb"),
      await x("upload"),
    ];
    assert.ok(fx < rx && rx === tx && tx < ux, JSON.stringify([fx, rx, tx, ux]));

    // Hovering a node lights its edges.
    await page.hover('#flow-view g.fnode[data-ref="upload"]');
    assert.deepEqual(
      await page.evaluate(`[...document.querySelectorAll("#flow-view path.edge.lit")]
        .map((p) => p.dataset.from + ">" + p.dataset.to).sort()`),
      ["resize>upload", "thumb>upload"],
    );
    await page.mouse.move(0, 0);
    assert.equal(await page.locator("#flow-view path.edge.lit").count(), 0);

    // The page follows the flow: a node that ends is redrawn in its new state.
    const next = await leaseOne(server, "img");
    await untilNodeState(page, next.id === ids.resize ? "resize" : "thumb", "leased");

    // A node opens its job.
    await page.click('#flow-view g.fnode[data-ref="upload"]');
    await untilText(page, "#job-view .title", `Job #${ids.upload}`);
    assert.equal(await textOf(page, "#job-view .badge"), "blocked");
    assert.match(await textOf(page, "#job-view .timeline"), /Waiting for its prerequisites/);

    // The job view links back to the flow, the job's node marked.
    await page.click("#flow-close");
    assert.equal(await page.isVisible("#flow-card"), false);
    assert.equal(new URL(page.url()).hash, "");
    assert.match(await textOf(page, "#job-view dl.kv"), /Flow#\d+ as upload/);
    await page.click("#job-view button.job-flow");
    await page.waitForSelector(`#flow-view g.fnode.focus[data-id="${ids.upload}"]`);
    assert.equal(await page.isVisible("#flow-card"), true);
    assert.equal(new URL(page.url()).hash, `#flow/${flow.id}`);
    assert.equal(await page.locator("#flow-view g.fnode.focus").count(), 1);

    // So does the job browser's row of a flow's job, on the Blocked tab.
    await page.click('tr[data-queue="img"] button.browse-open');
    await page.click('#browse-states button[data-state="blocked"]');
    const browsed = `#browse-body tr[data-id="${ids.upload}"] button.row-flow`;
    await untilText(page, browsed, `flow ${flow.id}`);
    // Bulk actions take blocked jobs: counting the tab's finds the flow's one.
    await page.click("#bulk-box summary");
    assert.deepEqual(
      await page.evaluate(
        `[...document.querySelectorAll("#bulk-action option")].map((o) => o.value)`,
      ),
      ["cancel", "delete"],
    );
    await page.click("#bulk-count");
    await page.waitForSelector("#bulk-matched");
    assert.equal(await page.getAttribute("#bulk-matched", "data-count"), "1");
    await page.click("#flow-close");
    await page.click(browsed);
    await page.waitForSelector(`#flow-view g.fnode.focus[data-id="${ids.upload}"]`);

    // Back in the browser's history opens the flow page closed last.
    await page.click("#flow-close");
    await page.goBack();
    await page.waitForSelector(`#flow-view g.fnode[data-id="${ids.upload}"]`);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "flow page cancels a flow's waiting jobs after a second click, and opens from its address",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const flow = await createFlow(server, {
      nodes: [
        { ref: "a", queue: "work", payload: 1 },
        { ref: "b", queue: "work", payload: 2, depends_on: ["a"] },
      ],
    });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.goto("about:blank");
    await page.goto(`${server.url}/#flow/${flow.id}`);
    await until("two nodes", () => page.locator("#flow-view g.fnode").count(), (n) => n === 2);
    assert.equal(await page.isVisible("#flow-card"), true);

    await page.click("#flow-actions button.flow-cancel");
    assert.equal(await textOf(page, "#flow-actions button.flow-cancel"), "Cancel every job of it?");
    assert.equal((await getJob(server, flow.jobs.a)).state, "pending");
    await page.click("#flow-actions button.flow-cancel");
    await untilNodeState(page, "a", "cancelled");
    await untilNodeState(page, "b", "cancelled");
    assert.equal((await getJob(server, flow.jobs.a)).state, "cancelled");
    assert.equal((await getJob(server, flow.jobs.b)).state, "cancelled");
    await untilText(page, "#flow-caption .flow-status", /^finished/);
    assert.equal(await page.locator("#flow-actions button.flow-cancel").count(), 0);
    await untilText(page, `#flows-body tr[data-flow="${flow.id}"] .states-text`, "2 cancelled");
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "flow page draws part of a 10,000-node flow at once and counts all of it",
  ignore: missing !== null,
  fn: async () => {
    await using server = await startTestServer({ realTime: true });
    const nodes = [];
    for (let layer = 0; layer < 100; layer++) {
      for (let k = 0; k < 100; k++) {
        nodes.push({
          ref: `n${layer}.${k}`,
          queue: "big",
          payload: k,
          depends_on: layer === 0 ? [] : [`n${layer - 1}.${k}`],
        });
      }
    }
    const flow = await createFlow(server, { nodes });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector(`#flows-body tr[data-flow="${flow.id}"]`);
    const started = Date.now();
    await page.click(`#flows-body tr[data-flow="${flow.id}"] button.open-flow`);
    await page.waitForSelector("#flow-view g.fnode", { timeout: 10_000 });
    const tookMs = Date.now() - started;
    assert.equal(await page.locator("#flow-view g.fnode").count(), 400);
    assert.equal(await page.locator("#flow-view path.edge").count(), 300);
    assert.equal(
      await textOf(page, "#flow-notice"),
      "Drawn: the first 400 nodes by depth and 300 of their edges. Not drawn: 9,600 nodes and " +
        "9,600 edges (the counts above include them; the job browser lists them by state).",
    );
    assert.equal(await textOf(page, "#flow-counts .flow-total"), "10,000 nodes");
    assert.equal(await textOf(page, '#flow-counts .badge[data-state="pending"]'), "pending 100");
    assert.equal(await textOf(page, '#flow-counts .badge[data-state="blocked"]'), "blocked 9,900");
    // The page still answers at once: the drawing did not hold its thread.
    const answered = Date.now();
    assert.equal(await page.evaluate("1 + 1"), 2);
    assert.ok(Date.now() - answered < 1000);
    assert.ok(tookMs < 10_000, `drawn in ${tookMs} ms`);

    // A node not drawn is found by its ref and opens in the job lookup.
    const last = flow.jobs["n99.5"];
    await page.fill("#flow-find", "n99.5");
    await page.press("#flow-find", "Enter");
    await untilText(page, "#job-view .title", `Job #${last}`);
    assert.match(await textOf(page, "#flow-notice"), new RegExp(`Job #${last} is not drawn\\.$`));
    // A drawn one, by its job id, is marked.
    const first = flow.jobs["n0.7"];
    await page.fill("#flow-find", String(first));
    await page.press("#flow-find", "Enter");
    await page.waitForSelector(`#flow-view g.fnode.focus[data-ref="n0.7"]`);
    assert.doesNotMatch(await textOf(page, "#flow-notice"), /is not drawn\./);
    assert.deepEqual(errors, []);
  },
});

Deno.test({
  name: "flow page shows a flow to a token without admin, whose Cancel flow is refused",
  ignore: missing !== null,
  fn: async () => {
    const admin = "flows-admin-token-0123456789";
    const worker = "flows-worker-token-0123456789";
    await using server = await startTestServer({
      realTime: true,
      tokens: [
        { name: "ops", token: admin, scopes: ["admin"] },
        { name: "workers", token: worker, scopes: ["consume"] },
      ],
    });
    const flow = await createFlow(server, {
      nodes: [
        { ref: "a", queue: "work", payload: 1 },
        { ref: "b", queue: "work", payload: 2, depends_on: ["a"] },
      ],
    }, { authorization: `Bearer ${admin}` });
    await using dashboard = await openDashboard(server);
    const { page, errors } = dashboard;
    await page.waitForSelector("#token-overlay.open");
    await page.fill("#token-input", worker);
    await page.click('#token-form button[type="submit"]');
    await page.click(`#flows-body tr[data-flow="${flow.id}"] button.open-flow`);
    await untilNodeState(page, "b", "blocked");
    await page.click("#flow-actions button.flow-cancel");
    await page.click("#flow-actions button.flow-cancel");
    await untilText(page, "#toasts .toast.error", /lacks the admin scope/);
    const job = await server.request("GET", `/v1/jobs/${flow.jobs.a}`, undefined, {
      authorization: `Bearer ${admin}`,
    });
    assert.equal(job.body.state, "pending");
    assert.equal((await drawnNodes(page)).a.state, "s-pending");
    assert.deepEqual(errors, []);
  },
});
