/**
 * Several `tegami serve` processes on one PostgreSQL schema. Three: producers on one, WebSocket
 * consumers (the client SDK) on the other two; every job is done exactly once from the
 * consumers' view, and the stats agree on every server. Two, one of them SIGKILLed while its
 * consumer holds a lease: what it answered is kept, the lease ends at its expiry through the other
 * server, and its consumer ages out of the other's stats.
 */

import assert from "node:assert/strict";
import { consume, TegamiClient } from "../../lib/client/mod.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { type ServerProcess, spawnServer } from "../helpers/process_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";
import { send } from "../helpers/test_server.ts";
import { PRESENCE_TTL_MS } from "../../lib/store/postgres/pg_events.ts";

const db = await pgTestDatabase();

/** Starts a `tegami serve` process on the schema. */
function serveOn(schema: string, ...args: string[]): Promise<ServerProcess> {
  return spawnServer(["--db", db!.url, "--pg-schema", schema, "--pg-pool", "4", ...args]);
}

Deno.test({
  name: "three servers on one database: jobs from one are done exactly once by the others",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    try {
      await runCluster(schema);
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

/** Producer, two consumer servers, and the checks. */
async function runCluster(schema: string): Promise<void> {
  // The first start creates the schema; the others find it migrated.
  await using producer = await serveOn(schema);
  const [one, two] = await Promise.all([serveOn(schema), serveOn(schema)]);
  await using _one = one;
  await using _two = two;
  const total = 3_000;
  const seen = new Map<number, number>();
  const byServer = [0, 0];
  const consumers = [one, two].map((server, i) =>
    consume<{ n: number }>("work", (payload) => {
      seen.set(payload.n, (seen.get(payload.n) ?? 0) + 1);
      byServer[i]++;
    }, { url: server.url, concurrency: 8, prefetch: 16 })
  );
  try {
    await Promise.all(consumers.map((c) => c.ready()));
    const client = new TegamiClient({ url: producer.url });
    for (let start = 0; start < total; start += 100) {
      await client.enqueueBatch(
        "work",
        Array.from({ length: 100 }, (_, i) => ({ payload: { n: start + i } })),
      );
    }
    const until = Date.now() + 60_000;
    for (;;) {
      const stats = await client.stats("work");
      if (stats.counts.done === total) break;
      if (Date.now() > until) assert.fail(`only ${stats.counts.done} of ${total} done`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(seen.size, total);
    const twice = [...seen].filter(([, n]) => n !== 1);
    assert.deepEqual(twice, [], "jobs handled more than once");
    assert.ok(byServer[0] > 0 && byServer[1] > 0, `one server did all: ${byServer}`);
    for (const server of [producer, one, two]) {
      const stats = await new TegamiClient({ url: server.url }).stats("work");
      assert.deepEqual(stats.counts, {
        blocked: 0,
        pending: 0,
        delayed: 0,
        leased: 0,
        done: total,
        dead: 0,
        cancelled: 0,
      });
    }
  } finally {
    await Promise.all(consumers.map((c) => c.close()));
  }
}

Deno.test({
  name: "a server SIGKILLed with a lease out: its answers are kept, the lease ends through the " +
    "other server, and its consumer ages out of the other's stats",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    try {
      await using survivor = await serveOn(schema, "--lease", "1s");
      const doomed = await serveOn(schema, "--lease", "1s");
      let killed = false;
      try {
        const ws = await WsClient.connect(wsUrl(doomed.url));
        await ws.subscribe("work", 1);
        const first = await send(survivor.url, "POST", "/v1/queues/work/jobs", { payload: 1 });
        assert.equal(first.status, 201);
        const job = await ws.nextJob("work");
        assert.equal(job.id, first.body.id);
        // A write the doomed server answered, made while its consumer holds the lease.
        const answered = await send(doomed.url, "POST", "/v1/queues/other/jobs", { payload: 2 });
        assert.equal(answered.status, 201);
        assert.equal((await send(survivor.url, "GET", "/v1/queues/work")).body.consumers, 1);

        doomed.kill("SIGKILL");
        killed = true;
        await doomed.exited();
        const diedAt = Date.now();

        // The lease ends at its expiry (1 s) through the survivor: the job is pending again.
        let state = "";
        while (state !== "pending") {
          assert.ok(Date.now() - diedAt < 10_000, `job still ${state} 10 s after the kill`);
          await new Promise((resolve) => setTimeout(resolve, 100));
          state = (await send(survivor.url, "GET", `/v1/jobs/${job.id}`)).body.state;
        }
        // The dead server's token is refused wherever it goes.
        const late = await send(survivor.url, "POST", `/v1/jobs/${job.id}/ack`, {
          token: job.lease.token,
        });
        assert.equal(late.status, 409);
        assert.equal(late.body.error.code, "lease_lost");
        // Its consumer ages out of the survivor's stats within the presence TTL (and a poll).
        let consumers = 1;
        while (consumers !== 0) {
          assert.ok(
            Date.now() - diedAt < PRESENCE_TTL_MS + 5_000,
            `the dead server's consumer still counted ${Date.now() - diedAt} ms after the kill`,
          );
          await new Promise((resolve) => setTimeout(resolve, 200));
          consumers = (await send(survivor.url, "GET", "/v1/queues/work")).body.consumers;
        }
        // What it answered before dying is there.
        const kept = await send(survivor.url, "GET", `/v1/jobs/${answered.body.id}`);
        assert.equal(kept.status, 200);
        assert.equal(kept.body.state, "pending");
        ws.close();
      } finally {
        if (!killed) await doomed[Symbol.asyncDispose]();
      }
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
