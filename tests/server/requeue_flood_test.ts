/**
 * Requeueing 100,000 dead jobs (two queues' at once; `deno task soak:requeue` requeues 200,000)
 * runs in bounded transactions on every engine, so the server keeps answering everyone else
 * meanwhile: an enqueue to another queue never waits long, and `/healthz` stays fast. The dead
 * jobs are put into the database behind the server's back (between two starts on it), as a
 * long-running deployment would have gathered them. The count is what lets the test fail: a
 * requeue of each queue's jobs in one transaction must hold the others' requests well past the
 * limit below.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** How many dead jobs are requeued: `TEGAMI_REQUEUE_FLOOD_JOBS` (the soak task's), else 100,000. */
const DEAD = Number(Deno.env.get("TEGAMI_REQUEUE_FLOOD_JOBS") ?? 100_000);
/** The test names' count. */
const COUNT = DEAD.toLocaleString("en-US");
/** The slowest another client's enqueue or `/healthz` may be while the requeue runs, ms. */
const SLOWEST_MS = 250;

/** The queues the dead jobs are in, half each. */
const KEPT = ["kept1", "kept2"];

/**
 * Starts a server on the prepared database, requeues every dead job of both queues at once while
 * another client enqueues to "other" and reads `/healthz` back to back, and checks the slowest of
 * those.
 */
async function requeueWhileServing(config: Partial<ServeConfig>, dir: string): Promise<void> {
  await using server = await startTestServer({ config, dir, realTime: true });
  let done = false;
  const slowest = { enqueue: 0, health: 0 };
  const timed = async (what: "enqueue" | "health", call: () => Promise<unknown>) => {
    while (!done) {
      const started = performance.now();
      await call();
      slowest[what] = Math.max(slowest[what], performance.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  };
  const others = Promise.all([
    timed("enqueue", async () => {
      const answer = await server.request("POST", "/v1/queues/other/jobs", { payload: 1 });
      assert.equal(answer.status, 201);
    }),
    timed("health", async () => {
      assert.equal((await server.request("GET", "/healthz")).status, 200);
    }),
  ]);
  const started = performance.now();
  const answers = await Promise.all(
    KEPT.map((queue) => server.request("POST", `/v1/queues/${queue}/dead/requeue`)),
  );
  const took = performance.now() - started;
  done = true;
  await others;
  for (const [i, queue] of KEPT.entries()) {
    assert.equal(answers[i].status, 200);
    assert.deepEqual(answers[i].body, { requeued: DEAD / 2 });
    const stats = await server.request("GET", `/v1/queues/${queue}`);
    assert.equal(stats.body.counts.pending, DEAD / 2);
    assert.equal(stats.body.counts.dead, 0);
  }
  assert.ok(
    slowest.enqueue < SLOWEST_MS && slowest.health < SLOWEST_MS,
    `while a requeue took ${took.toFixed(0)} ms: slowest enqueue ${
      slowest.enqueue.toFixed(1)
    } ms, slowest /healthz ${slowest.health.toFixed(1)} ms`,
  );
}

Deno.test(`sqlite: a requeue of ${COUNT} dead jobs keeps other clients' requests fast`, async () => {
  await using tmp = await tempDir();
  // The first start makes the schema; the dead jobs go in while no server runs.
  await (await startTestServer({ dir: tmp.path }))[Symbol.asyncDispose]();
  const db = new DatabaseSync(`${tmp.path}/tegami.db`);
  try {
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${DEAD})
      INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at, finished_at)
      SELECT 'kept' || (i % 2 + 1), 'dead', '{}', 3, 0, 1, 1 FROM n`);
  } finally {
    db.close();
  }
  await requeueWhileServing({}, tmp.path);
});

const pg = await pgTestDatabase();

Deno.test({
  name: `postgres: a requeue of ${COUNT} dead jobs keeps other clients' requests fast`,
  ignore: pg === null,
  fn: async () => {
    await using tmp = await tempDir();
    const schema = pg!.schema();
    const config = pgServerConfig(pg!, schema);
    try {
      await (await startTestServer({ dir: tmp.path, config }))[Symbol.asyncDispose]();
      const jobs = `"${schema}".jobs`;
      await pg!.admin.unsafe(`
        INSERT INTO ${jobs} (queue, state, payload, max_attempts, run_at, created_at, finished_at)
        SELECT 'kept' || (i % 2 + 1), 'dead', '{}', 3, 0, 1, 1 FROM generate_series(1, ${DEAD}) i`);
      await pg!.admin.unsafe(`ANALYZE ${jobs}`);
      await requeueWhileServing(config, tmp.path);
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
