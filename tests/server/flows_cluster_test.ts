/**
 * A flow on two `tegami serve` processes sharing one PostgreSQL schema: the dependent waits on
 * one server while its prerequisite is acked through the other; the ack's commit releases it,
 * the waiting server hears the queue became ready and delivers it with the prerequisite's
 * outcome, and a caller waiting for the dependent's end on the first server is answered from
 * the second server's ack.
 */

import assert from "node:assert/strict";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { type ServerProcess, spawnServer } from "../helpers/process_server.ts";
import { send } from "../helpers/test_server.ts";

const db = await pgTestDatabase();

function serveOn(schema: string): Promise<ServerProcess> {
  return spawnServer(["--db", db!.url, "--pg-schema", schema, "--pg-pool", "4"]);
}

Deno.test({
  name: "a flow across two servers: released by one's ack, delivered and waited for on the other",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    try {
      await using a = await serveOn(schema);
      await using b = await serveOn(schema);
      const created = await send(a.url, "POST", "/v1/flows", {
        nodes: [
          { ref: "fetch", queue: "fetch", payload: { url: "x" } },
          { ref: "resize", queue: "resize", payload: { size: 64 }, depends_on: ["fetch"] },
        ],
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const ids = (created.body as { jobs: Record<string, number> }).jobs;
      // b long-polls the dependent's queue; a waits for the dependent's end.
      const polled = send(b.url, "POST", "/v1/queues/resize/leases", { max: 1, wait_ms: 20_000 });
      const waited = send(a.url, "GET", `/v1/jobs/${ids.resize}?wait_ms=20000`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const root = await send(a.url, "POST", "/v1/queues/fetch/leases", { max: 1 });
      const [fetch] = (root.body as { jobs: { id: number; lease: { token: string } }[] }).jobs;
      assert.equal(fetch.id, ids.fetch);
      const acked = await send(a.url, "POST", `/v1/jobs/${fetch.id}/ack`, {
        token: fetch.lease.token,
        result: { bytes: 1234 },
      });
      assert.equal(acked.status, 200, JSON.stringify(acked.body));
      const got = await polled;
      const [resize] = (got.body as {
        jobs: {
          id: number;
          flow: { id: number; ref: string };
          lease: { token: string };
          prerequisites: { ref: string; state: string; result: unknown }[];
        }[];
      }).jobs;
      assert.equal(resize.id, ids.resize);
      assert.equal(resize.flow.ref, "resize");
      assert.deepEqual(resize.prerequisites.map((p) => [p.ref, p.state, p.result]), [
        ["fetch", "done", { bytes: 1234 }],
      ]);
      const started = Date.now();
      await send(b.url, "POST", `/v1/jobs/${resize.id}/ack`, { token: resize.lease.token });
      const ended = await waited;
      assert.equal((ended.body as { state: string }).state, "done");
      assert.ok(Date.now() - started < 5_000, "the wait was not answered from the ack");
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
