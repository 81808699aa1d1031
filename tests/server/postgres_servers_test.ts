/**
 * Two tegami servers on one PostgreSQL schema, in this process, sharing one manual clock: what
 * one server does reaches the other's consumers (pushes, cancel and expired frames, credit,
 * consumer counts).
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { pgPairTest } from "../helpers/pg_pair.ts";
import { settle } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";
import { HANDOVER_GRACE_MS } from "../../lib/core/lifecycle.ts";
import { HANDED_NONE } from "../store/store_suite.ts";

const db = await pgTestDatabase();

/** Waits until `check` resolves true, trying every 20 ms for at most `ms`. */
async function eventually(what: string, check: () => Promise<boolean>, ms = 5_000) {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

pgPairTest(
  db,
  "a job enqueued through one server is pushed to a consumer of the other",
  async (a, b) => {
    await using ws = await WsClient.connect(wsUrl(b.url));
    await ws.subscribe("q", 10);
    const started = performance.now();
    const posted = await a.request("POST", "/v1/queues/q/jobs", { payload: { n: 1 } });
    assert.equal(posted.status, 201);
    const job = await ws.nextJob("q");
    assert.equal(job.id, posted.body.id);
    assert.deepEqual(job.payload, { n: 1 });
    // The notification, not the 100 ms poll, carried it (well under a poll interval is typical;
    // the bound is loose for a loaded machine).
    assert.ok(performance.now() - started < 2_000);
    const ack = await ws.ok({ op: "ack", id: job.id, token: job.lease.token });
    assert.equal(ack.state, "done");
    assert.equal((await a.request("GET", `/v1/jobs/${job.id}`)).body.state, "done");
  },
);

pgPairTest(
  db,
  "a cancel through one server sends the cancel frame on the other's socket",
  async (a, b) => {
    await using ws = await WsClient.connect(wsUrl(a.url));
    await ws.subscribe("q", 1);
    const posted = await a.request("POST", "/v1/queues/q/jobs", { payload: 1 });
    const job = await ws.nextJob("q");
    const cancelled = await b.request("DELETE", `/v1/jobs/${posted.body.id}`);
    assert.deepEqual(cancelled.body, { id: job.id, state: "cancelled", removed: false });
    const frame = await ws.next((f) => f.op === "cancel");
    assert.equal(frame.id, job.id);
    // Its credit came back: the next job reaches the same consumer.
    const next = await b.request("POST", "/v1/queues/q/jobs", { payload: 2 });
    assert.equal((await ws.nextJob("q")).id, next.body.id);
  },
);

pgPairTest(
  db,
  "a lease ended by the other server's expiry sends the expired frame",
  async (a, b, clock) => {
    await using ws = await WsClient.connect(wsUrl(a.url));
    await ws.subscribe("q", 1, { lease_ms: 1_000 });
    await a.request("POST", "/v1/queues/q/jobs", { payload: 1 });
    const job = await ws.nextJob("q");
    // Only b looks at time: a's own timer would end the lease too, so a is told nothing of the
    // clock moving and must learn the expiry from b, which ends a lease it did not hand over
    // only a grace after its end.
    await b.server.store.tick(clock.now() + 1_000 + HANDOVER_GRACE_MS, HANDED_NONE);
    const frame = await ws.next((f) => f.op === "expired");
    assert.equal(frame.id, job.id);
    const again = await ws.nextJob("q");
    assert.equal(again.id, job.id);
    assert.equal(again.attempt, 2);
  },
);

pgPairTest(
  db,
  "an HTTP ack through one server frees the credit of a consumer on the other",
  async (a, b) => {
    await using ws = await WsClient.connect(wsUrl(a.url));
    await ws.subscribe("q", 1);
    await b.request("POST", "/v1/queues/q/jobs", { payload: 1 });
    const first = await ws.nextJob("q");
    const acked = await b.request("POST", `/v1/jobs/${first.id}/ack`, { token: first.lease.token });
    assert.equal(acked.status, 200);
    const second = await b.request("POST", "/v1/queues/q/jobs", { payload: 2 });
    assert.equal((await ws.nextJob("q")).id, second.body.id);
  },
);

pgPairTest(db, "stats count the consumers of every server", async (a, b) => {
  await using one = await WsClient.connect(wsUrl(a.url));
  await using two = await WsClient.connect(wsUrl(b.url));
  await one.subscribe("q", 1);
  await two.subscribe("q", 1);
  for (const server of [a, b]) {
    await eventually("two consumers", async () => {
      const stats = await server.request("GET", "/v1/queues/q");
      return stats.body.consumers === 2;
    });
  }
  one.socket.close();
  await eventually("one consumer", async () => {
    const stats = await b.request("GET", "/v1/queues/q");
    return stats.body.consumers === 1;
  });
});

pgPairTest(
  db,
  "a delayed job enqueued through one server is promoted by either at its time",
  async (a, b, clock) => {
    await using ws = await WsClient.connect(wsUrl(b.url));
    await ws.subscribe("q", 1);
    const posted = await a.request("POST", "/v1/queues/q/jobs", { payload: 1, delay_ms: 5_000 });
    assert.equal(posted.status, 201);
    await a.advance(4_999);
    assert.deepEqual(await ws.quietFor(200, (f) => f.op === "job"), []);
    clock.advance(1);
    await settle();
    assert.equal((await ws.nextJob("q")).id, posted.body.id);
  },
);

dropPgTestDatabaseAfterwards(db);
