/**
 * Queue settings with two tegami servers on one PostgreSQL schema: a change made through one is
 * what the other answers and applies from its commit on, and settings outlive every server.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";

const db = await pgTestDatabase();

const SETTINGS = {
  concurrency: 3,
  rate: "50/1s",
  group_limit: 2,
  max_attempts: 8,
  lease_ms: 20_000,
  backoff: { base_ms: 100, max_ms: 10_000 },
  retain_done_ms: 600_000,
  retain_dead_ms: null,
  retain_pending_ms: 3_600_000,
  dead_letter_queue: "billing.dead",
};

Deno.test({
  name: "settings put through one PostgreSQL server are answered and applied by the other",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    const clock = new ManualClock();
    try {
      await using a = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
      await using b = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
      const put = await a.request("PUT", "/v1/queues/billing/settings", SETTINGS);
      assert.deepEqual([put.status, put.body], [200, SETTINGS]);
      assert.deepEqual((await b.request("GET", "/v1/queues/billing/settings")).body, SETTINGS);
      const listed = await b.request("GET", "/v1/queues");
      assert.deepEqual(
        listed.body.queues.map((q: { name: string; settings: unknown }) => [q.name, q.settings]),
        [["billing", SETTINGS]],
      );
      const posted = await b.request("POST", "/v1/queues/billing/jobs", { payload: 1 });
      const job = (await a.request("GET", `/v1/jobs/${posted.body.id}`)).body;
      assert.equal(job.max_attempts, 8);
      assert.equal(job.lease_ms, 20_000);
      assert.deepEqual(job.backoff, { base_ms: 100, max_ms: 10_000 });
      // A change through the other server is in force at once on both.
      await b.request("PUT", "/v1/queues/billing/settings", { max_attempts: 2 });
      const next = await a.request("POST", "/v1/queues/billing/jobs", { payload: 2 });
      assert.equal((await b.request("GET", `/v1/jobs/${next.body.id}`)).body.max_attempts, 2);
      assert.equal((await a.request("GET", "/v1/queues/billing")).body.settings.concurrency, null);
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

Deno.test({
  name: "queue settings on PostgreSQL outlive every server",
  ignore: db === null,
  fn: async () => {
    const schema = db!.schema();
    const clock = new ManualClock();
    try {
      {
        await using a = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
        await a.request("PUT", "/v1/queues/quiet/settings", SETTINGS);
      }
      await using again = await startTestServer({ clock, config: pgServerConfig(db!, schema) });
      assert.deepEqual((await again.request("GET", "/v1/queues/quiet/settings")).body, SETTINGS);
      const listed = await again.request("GET", "/v1/queues");
      assert.deepEqual(listed.body.queues.map((q: { name: string }) => q.name), ["quiet"]);
    } finally {
      await db!.dropSchema(schema);
    }
  },
});

dropPgTestDatabaseAfterwards(db);
