/**
 * A bulk replay of finished jobs (25,000 in the suite; `deno task soak:bulk` runs 100,000) runs in
 * windows with the event loop free between them, so
 * the server keeps answering: `/healthz`, read back to back meanwhile, keeps its p99 under 150 ms on
 * every engine. The finished jobs are put into the database behind the server's back (between two
 * starts on it), as a long-running deployment would have gathered them. Each run prints its
 * figures.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { tempDir } from "../helpers/temp_dir.ts";

/** How many jobs are replayed: `TEGAMI_BULK_REPLAY_JOBS` (the soak task's), else 25,000. */
const JOBS = Number(Deno.env.get("TEGAMI_BULK_REPLAY_JOBS") ?? 25_000);
const shown = JOBS.toLocaleString("en-US");
/** When the jobs finished: now, so the retention sweep leaves them while the replay runs. */
const now = Date.now();
/** The p99 of `/healthz` while the replay runs may not reach this, ms. */
const P99_MS = 150;

/** The p-th percentile of `values` (nearest rank). */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** Replays every done job of "q" while reading `/healthz` back to back; checks the p99. */
async function replayWhileServing(engine: string, config: Partial<ServeConfig>, dir: string) {
  await using server = await startTestServer({ config, dir, realTime: true });
  const started = performance.now();
  const answer = await server.request("POST", "/v1/queues/q/bulk", {
    action: "replay",
    filter: { states: ["done"] },
  });
  assert.equal(answer.status, 202);
  const health: number[] = [];
  let task = answer.body;
  while (task.state === "running") {
    const before = performance.now();
    assert.equal((await server.request("GET", "/healthz")).status, 200);
    health.push(performance.now() - before);
    if (health.length % 20 === 0) task = (await server.request("GET", `/v1/bulk/${task.id}`)).body;
  }
  const took = performance.now() - started;
  assert.deepEqual([task.state, task.matched, task.done], ["done", JOBS, JOBS]);
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.pending, JOBS);
  assert.equal(stats.body.counts.done, JOBS);
  const p50 = percentile(health, 50);
  const p99 = percentile(health, 99);
  // Not Math.max(...health): a slow run reads /healthz too often to spread on the stack.
  const max = health.reduce((a, b) => Math.max(a, b), 0);
  console.log(
    `${engine}: replayed ${JOBS} jobs in ${(took / 1000).toFixed(1)} s ` +
      `(${Math.round(JOBS / (took / 1000))} jobs/s); /healthz ×${health.length}: ` +
      `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, max ${max.toFixed(1)} ms`,
  );
  assert.ok(p99 < P99_MS, `/healthz p99 ${p99.toFixed(1)} ms while replaying`);
}

Deno.test(`sqlite: a bulk replay of ${shown} jobs keeps /healthz p99 under 150 ms`, async () => {
  await using tmp = await tempDir();
  await (await startTestServer({ dir: tmp.path }))[Symbol.asyncDispose]();
  const db = new DatabaseSync(`${tmp.path}/tegami.db`);
  try {
    db.exec(`
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${JOBS})
      INSERT INTO jobs (queue, state, payload, max_attempts, run_at, created_at, finished_at)
      SELECT 'q', 'done', '{"tenant":{"id":"acme"},"n":' || i || '}', 3, 0, ${now}, ${now}
      FROM n`);
  } finally {
    db.close();
  }
  await replayWhileServing("sqlite", {}, tmp.path);
});

const pg = await pgTestDatabase();

Deno.test({
  name: `postgres: a bulk replay of ${shown} jobs keeps /healthz p99 under 150 ms`,
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
        SELECT 'q', 'done', '{"tenant":{"id":"acme"},"n":' || i || '}', 3, 0, ${now}, ${now}
        FROM generate_series(1, ${JOBS}) i`);
      await pg!.admin.unsafe(`ANALYZE ${jobs}`);
      await replayWhileServing("postgres", config, tmp.path);
    } finally {
      await pg!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(pg);
