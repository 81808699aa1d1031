/**
 * Queues stay cheap: their number is bounded (--max-queues), empty ones are forgotten, and
 * /metrics and the dashboard feed show the busiest (--metrics-queues) plus totals, so a scrape
 * stays small and fast with 20,000 queues.
 */

import assert from "node:assert/strict";
import type { NewJob } from "../../lib/core/job.ts";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

function job(now: number): NewJob {
  return {
    payload: "1",
    priority: 0,
    key: null,
    run_at: now,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
  };
}

/** The stores the --max-queues cases run on: SQLite, and a fresh schema of the test database. */
const STORES: { name: string; config: () => Partial<ServeConfig>; ignore: boolean }[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

/** Polls `check` (a server that reads the database on its own schedule) for up to 5 s. */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

for (const store of STORES) {
  Deno.test({
    name:
      `${store.name}: past --max-queues an enqueue to a new queue answers 409 conflict; known queues still take jobs`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: { ...store.config(), maxQueues: 2 } });
      for (const q of ["a", "b"]) {
        assert.equal(
          (await server.request("POST", `/v1/queues/${q}/jobs`, { payload: 1 })).status,
          201,
        );
      }
      const refused = await server.request("POST", "/v1/queues/c/jobs", { payload: 1 });
      assert.equal(refused.status, 409);
      assert.match(JSON.stringify(refused.body), /"code":"conflict".*--max-queues/);
      assert.equal(
        (await server.request("POST", "/v1/queues/a/jobs", { payload: 2 })).status,
        201,
      );
    },
  });

  Deno.test({
    name:
      `${store.name}: a queue whose last job is gone is forgotten, and frees its place under --max-queues`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: { ...store.config(), maxQueues: 1 } });
      const made = await server.request("POST", "/v1/queues/a/jobs", { payload: 1 });
      const id = (made.body as { id: number }).id;
      assert.equal((await server.request("DELETE", `/v1/jobs/${id}`)).status, 200); // cancelled
      assert.equal((await server.request("DELETE", `/v1/jobs/${id}`)).status, 200); // removed
      const listed = await server.request("GET", "/v1/queues");
      assert.deepEqual((listed.body as { queues: unknown[] }).queues, []);
      // SQLite forgets at the commit; PostgreSQL at its next count of the database's queues.
      await eventually(
        async () =>
          (await server.request("POST", "/v1/queues/b/jobs", { payload: 1 })).status === 201,
        "queue b to be accepted",
      );
    },
  });

  Deno.test({
    name: `${store.name}: a queue with settings and no jobs counts against --max-queues`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: { ...store.config(), maxQueues: 1 } });
      const put = await server.request("PUT", "/v1/queues/a/settings", { concurrency: 2 });
      assert.equal(put.status, 200, JSON.stringify(put.body));
      assert.equal(
        (await server.request("POST", "/v1/queues/b/jobs", { payload: 1 })).status,
        409,
      );
    },
  });

  Deno.test({
    name:
      `${store.name}: past --max-queues a pause or a schedule that would make a new queue answers 409; known queues still take them`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: { ...store.config(), maxQueues: 1 } });
      assert.equal(
        (await server.request("POST", "/v1/queues/a/jobs", { payload: 1 })).status,
        201,
      );
      const pause = await server.request("POST", "/v1/queues/b/pause");
      assert.equal(pause.status, 409, JSON.stringify(pause.body));
      assert.match(JSON.stringify(pause.body), /"code":"conflict".*--max-queues/);
      const schedule = { cron: "0 * * * *", payload: 1 };
      const put = await server.request("PUT", "/v1/schedules/s", { ...schedule, queue: "b" });
      assert.equal(put.status, 409, JSON.stringify(put.body));
      assert.equal((await server.request("GET", "/v1/schedules/s")).status, 404);
      const listed = await server.request("GET", "/v1/queues");
      assert.deepEqual(
        (listed.body as { queues: { name: string }[] }).queues.map((q) => q.name),
        ["a"],
      );
      assert.equal((await server.request("POST", "/v1/queues/a/pause")).status, 200);
      assert.equal(
        (await server.request("PUT", "/v1/schedules/s", { ...schedule, queue: "a" })).status,
        201,
      );
      assert.equal((await server.request("POST", "/v1/queues/b/resume")).status, 200);
    },
  });

  Deno.test({
    name: `${store.name}: a paused queue with no jobs is kept: its setting is state`,
    ignore: store.ignore,
    fn: async () => {
      await using server = await startTestServer({ config: { ...store.config(), maxQueues: 1 } });
      assert.equal((await server.request("POST", "/v1/queues/a/pause")).status, 200);
      const listed = await server.request("GET", "/v1/queues");
      assert.deepEqual(
        (listed.body as { queues: { name: string }[] }).queues.map((q) => q.name),
        ["a"],
      );
      assert.equal(
        (await server.request("POST", "/v1/queues/b/jobs", { payload: 1 })).status,
        409,
      );
    },
  });
}

Deno.test({
  name: "postgres: --max-queues counts the queues other servers created, at their next count",
  ignore: pg === null,
  fn: async () => {
    const config = { ...pgServerConfig(pg!, pg!.schema()), maxQueues: 2 };
    await using first = await startTestServer({ config });
    await using second = await startTestServer({ config });
    for (const q of ["a", "b"]) {
      assert.equal(
        (await first.request("POST", `/v1/queues/${q}/jobs`, { payload: 1 })).status,
        201,
      );
    }
    // The second server opened before a and b existed: it learns of them at its next count.
    const known = second.server.store.knownQueues!();
    assert.equal(known.size, 0);
    await eventually(() => Promise.resolve(known.has("a") && known.has("b")), "the next count");
    assert.equal((await second.request("POST", "/v1/queues/c/jobs", { payload: 1 })).status, 409);
    // A server that opens now counts them at once.
    await using third = await startTestServer({ config });
    assert.equal((await third.request("POST", "/v1/queues/c/jobs", { payload: 1 })).status, 409);
    assert.equal((await second.request("POST", "/v1/queues/a/jobs", { payload: 2 })).status, 201);
  },
});

Deno.test("with 20,000 queues /metrics shows the busiest --metrics-queues and totals, fast", async () => {
  await using server = await startTestServer({ config: { maxQueues: 30_000, sync: "normal" } });
  const now = server.clock.now();
  for (let start = 0; start < 20_000; start += 1000) {
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) => {
        const n = start + i;
        // Queue q00000 gets the most jobs, so the busiest are known.
        const jobs = n < 5 ? Array.from({ length: 10 - n }, () => job(now)) : [job(now)];
        return server.server.broker.enqueue(`q${String(n).padStart(5, "0")}`, jobs);
      }),
    );
  }
  const times: number[] = [];
  let text = "";
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    const response = await fetch(`${server.url}/metrics`);
    text = await response.text();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  console.log(
    `/metrics with 20,000 queues: ${(text.length / 1024).toFixed(0)} KiB, median ${
      times[2].toFixed(1)
    } ms, max ${times[4].toFixed(1)} ms`,
  );
  assert.match(text, /^tegami_queues 20000$/m);
  assert.match(text, /^tegami_all_queues_jobs\{state="pending"\} 20035$/m);
  assert.match(text, /tegami_jobs\{queue="q00000",state="pending"\} 10/);
  const shown = new Set([...text.matchAll(/queue="([^"]+)"/g)].map((m) => m[1]));
  assert.equal(shown.size, 100, "per-queue series for the busiest 100 only");
  assert.ok(text.length < 512 * 1024, `${text.length} bytes`);
  assert.ok(times[2] < 250, `median scrape ${times[2].toFixed(0)} ms`);
});

dropPgTestDatabaseAfterwards(pg);
