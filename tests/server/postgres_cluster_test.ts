/**
 * Three `tegami serve` processes on one PostgreSQL schema: producers on one, WebSocket
 * consumers (the client SDK) on the other two. Every job is done exactly once from the
 * consumers' view, and the stats agree on every server.
 */

import assert from "node:assert/strict";
import { consume, TegamiClient } from "../../lib/client/mod.ts";
import { dropPgTestDatabaseAfterwards, pgTestDatabase } from "../helpers/pg.ts";
import { type ServerProcess, spawnServer } from "../helpers/process_server.ts";

const db = await pgTestDatabase();

/** Starts a `tegami serve` process on the schema. */
function serveOn(schema: string): Promise<ServerProcess> {
  return spawnServer(["--db", db!.url, "--pg-schema", schema, "--pg-pool", "4"]);
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

dropPgTestDatabaseAfterwards(db);
