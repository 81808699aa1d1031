/**
 * Groups and limits across two servers on one PostgreSQL schema: a WebSocket consumer on one
 * server gets a group's next job when its first is acked on the other, and a concurrency set
 * through one server holds for leases taken through both.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { pgPairTest } from "../helpers/pg_pair.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";
import { enqueue, lease } from "../helpers/http_calls.ts";

const db = await pgTestDatabase();

pgPairTest(
  db,
  "an ack on one server pushes the group's next job to a consumer on the other",
  async (a, b) => {
    const first = await enqueue(a, "q", { payload: 1, group: "g" });
    const second = await enqueue(a, "q", { payload: 2, group: "g" });
    const [held] = await lease(a, "q", { max: 5 });
    assert.equal(held.id, first);
    await using ws = await WsClient.connect(wsUrl(b.url));
    await ws.subscribe("q", 5);
    assert.deepEqual(await ws.quietFor(200, (f) => f.op === "job"), []);
    const ack = await a.request("POST", `/v1/jobs/${first}/ack`, { token: held.lease.token });
    assert.equal(ack.status, 200);
    const pushed = await ws.nextJob("q", 5_000);
    assert.equal(pushed.id, second);
  },
);

pgPairTest(db, "a concurrency holds for leases taken through both servers", async (a, b) => {
  const put = await a.request("PUT", "/v1/queues/q/settings", { concurrency: 2 });
  assert.equal(put.status, 200);
  for (let i = 0; i < 6; i++) await enqueue(a, "q", { payload: i });
  const [x, y] = await Promise.all([lease(a, "q", { max: 5 }), lease(b, "q", { max: 5 })]);
  assert.equal(x.length + y.length, 2);
  assert.deepEqual(await lease(b, "q", { max: 5 }), []);
});

dropPgTestDatabaseAfterwards(db);
