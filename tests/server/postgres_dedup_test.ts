/**
 * Dedup windows, duplicate modes and progress across two tegami servers on one PostgreSQL schema
 * (in this process, sharing one manual clock): a replace or a key window decided on one server is
 * seen by the other, a replace that makes a job due wakes the other's consumer, and progress
 * reported through one is read through the other.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { pgPairTest } from "../helpers/pg_pair.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const db = await pgTestDatabase();

pgPairTest(
  db,
  "a replace through one server wakes the other's consumer with the new payload",
  async (a, b) => {
    const first = await a.request("POST", "/v1/queues/q/jobs", {
      payload: "v1",
      key: "k",
      delay_ms: 600_000,
    });
    assert.equal(first.status, 201);
    await using ws = await WsClient.connect(wsUrl(b.url));
    await ws.subscribe("q", 1);
    const replaced = await a.request("POST", "/v1/queues/q/jobs", {
      payload: "v2",
      key: "k",
      on_duplicate: "replace",
    });
    assert.deepEqual(replaced.body, {
      id: first.body.id,
      deduplicated: true,
      duplicate: "replaced",
    });
    const job = await ws.nextJob("q");
    assert.deepEqual([job.id, job.payload], [first.body.id, "v2"]);

    // Progress reported through the server that pushed the job is read through the other.
    const token = job.lease.token;
    const progress = await a.request("POST", `/v1/jobs/${job.id}/progress`, {
      token,
      progress: { done: 2, of: 5 },
    });
    assert.equal(progress.status, 200);
    assert.deepEqual((await b.request("GET", `/v1/jobs/${job.id}`)).body.progress, {
      done: 2,
      of: 5,
    });
    const stale = await b.request("POST", `/v1/jobs/${job.id}/progress`, {
      token: "x",
      progress: 1,
    });
    assert.equal(stale.body.error.code, "lease_lost");
  },
);

pgPairTest(
  db,
  "a key window passed on the shared clock frees the key on both servers",
  async (a, b) => {
    const first = await a.request("POST", "/v1/queues/q/jobs", {
      payload: 1,
      key: "k",
      key_ttl_ms: 1_000,
    });
    const held = await b.request("POST", "/v1/queues/q/jobs", { payload: 2, key: "k" });
    assert.deepEqual(held.body, { id: first.body.id, deduplicated: true, duplicate: "ignored" });
    await a.advance(1_000);
    const [x, y] = await Promise.all([
      a.request("POST", "/v1/queues/q/jobs", { payload: 3, key: "k" }),
      b.request("POST", "/v1/queues/q/jobs", { payload: 4, key: "k" }),
    ]);
    // Exactly one of the two made the new job; the other is its duplicate.
    assert.equal(x.body.id, y.body.id);
    assert.notEqual(x.body.id, first.body.id);
    assert.deepEqual([x.body.duplicate, y.body.duplicate].sort(), ["ignored", null].sort());
    const old = (await b.request("GET", `/v1/jobs/${first.body.id}`)).body;
    assert.deepEqual([old.key, old.state], ["k", "pending"]);
  },
);

dropPgTestDatabaseAfterwards(db);
