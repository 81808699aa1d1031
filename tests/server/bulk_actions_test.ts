/**
 * Bulk actions by filter over the HTTP API, on a real server with real SQLite and, when it is
 * reachable, real PostgreSQL: a dry run counts, each action does what its single-job twin does
 * to exactly the jobs the filter takes, a task can be stopped, and the record says who did what.
 */

import assert from "node:assert/strict";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { dropPgTestDatabaseAfterwards, pgServerConfig, pgTestDatabase } from "../helpers/pg.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";

const pg = await pgTestDatabase();

/** Registers `fn` on SQLite and on PostgreSQL (ignored when it is not reachable). */
function onEveryStore(title: string, fn: (config: Partial<ServeConfig>) => Promise<void>): void {
  Deno.test(`sqlite: ${title}`, () => fn({}));
  Deno.test({
    name: `postgres: ${title}`,
    ignore: pg === null,
    fn: async () => {
      const schema = pg!.schema();
      try {
        await fn(pgServerConfig(pg!, schema));
      } finally {
        await pg!.dropSchema(schema);
      }
    },
  });
}

async function enqueue(server: TestServer, queue: string, jobs: unknown[]): Promise<number[]> {
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, { jobs });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body.jobs.map((j: { id: number }) => j.id);
}

/** Leases `n` jobs of `queue` and settles each with `settle` (ack, or nack dead with `error`). */
async function leaseAnd(
  server: TestServer,
  queue: string,
  n: number,
  settle: { ack: true } | { error: string },
): Promise<number[]> {
  const answer = await server.request("POST", `/v1/queues/${queue}/leases`, { max: n });
  assert.equal(answer.body.jobs.length, n);
  const ids: number[] = [];
  for (const job of answer.body.jobs) {
    const path = `/v1/jobs/${job.id}/${"ack" in settle ? "ack" : "nack"}`;
    const body = "ack" in settle
      ? { token: job.lease.token }
      : { token: job.lease.token, error: settle.error, dead: true };
    assert.equal((await server.request("POST", path, body)).status, 200);
    ids.push(job.id);
  }
  return ids;
}

/** Starts a bulk action and waits for it to end; answers the ended task. */
async function bulk(server: TestServer, queue: string, body: unknown) {
  const started = await server.request("POST", `/v1/queues/${queue}/bulk`, body);
  assert.equal(started.status, 202, JSON.stringify(started.body));
  assert.equal(started.body.state, "running");
  return await ended(server, started.body.id);
}

async function ended(server: TestServer, id: number, headers?: HeadersInit) {
  for (let i = 0; i < 2000; i++) {
    const answer = await server.request("GET", `/v1/bulk/${id}`, undefined, headers);
    assert.equal(answer.status, 200);
    if (answer.body.state !== "running") return answer.body;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`bulk action ${id} did not end`);
}

async function stateOf(server: TestServer, id: number): Promise<string | null> {
  const answer = await server.request("GET", `/v1/jobs/${id}`);
  return answer.status === 404 ? null : answer.body.state;
}

onEveryStore("a dry run counts what a requeue by error text then takes", async (config) => {
  await using server = await startTestServer({ config });
  await enqueue(server, "q", Array.from({ length: 6 }, (_, i) => ({ payload: { i } })));
  const timeouts = await leaseAnd(server, "q", 3, { error: "timeout calling billing" });
  const others = await leaseAnd(server, "q", 2, { error: "bad input" });
  const filter = { error_contains: "timeout" };

  const dry = await bulk(server, "q", { filter, action: "requeue", dry_run: true });
  assert.equal(dry.state, "done");
  assert.equal(dry.matched, 3);
  assert.equal(dry.done, 0);
  assert.equal(dry.examined, 6, "every job of the queue is read once");
  for (const id of timeouts) assert.equal(await stateOf(server, id), "dead");

  const task = await bulk(server, "q", { filter, action: "requeue" });
  assert.deepEqual([task.state, task.matched, task.done, task.skipped], ["done", 3, 3, 0]);
  assert.deepEqual(task.filter.states, ["dead"]);
  assert.equal(task.filter.error_contains, "timeout");
  assert.equal(task.by, "anonymous");
  assert.ok(task.ended_at !== null && task.ended_at >= task.started_at);
  for (const id of timeouts) {
    const job = (await server.request("GET", `/v1/jobs/${id}`)).body;
    assert.deepEqual([job.state, job.attempts], ["pending", 0]);
  }
  for (const id of others) assert.equal(await stateOf(server, id), "dead");

  const list = await server.request("GET", "/v1/bulk");
  assert.deepEqual(list.body.tasks.map((t: { id: number }) => t.id), [task.id, dry.id]);
});

onEveryStore(
  "a cancel by payload path takes one tenant's waiting and leased jobs",
  async (config) => {
    await using server = await startTestServer({ config });
    const acme = await enqueue(server, "q", [
      { payload: { tenant: { id: "acme" } } },
      { payload: { tenant: { id: "acme" } }, delay_ms: 60_000 },
    ]);
    const globex = await enqueue(server, "q", [{ payload: { tenant: { id: "globex" } } }]);
    const leased = await server.request("POST", "/v1/queues/q/leases", { max: 1 });
    assert.equal(leased.body.jobs[0].id, acme[0]);
    const acmeLate = await enqueue(server, "q", [{ payload: { tenant: { id: "acme" } } }]);

    const task = await bulk(server, "q", {
      filter: { payload: { path: "tenant.id", equals: "acme" } },
      action: "cancel",
    });
    assert.deepEqual([task.matched, task.done], [3, 3]);
    for (const id of [...acme, ...acmeLate]) assert.equal(await stateOf(server, id), "cancelled");
    assert.equal(await stateOf(server, globex[0]), "pending");
    // The revoked lease no longer settles the job.
    const ack = await server.request("POST", `/v1/jobs/${acme[0]}/ack`, {
      token: leased.body.jobs[0].lease.token,
    });
    assert.equal(ack.status, 409);
  },
);

onEveryStore("a delete by key prefix removes jobs in every state", async (config) => {
  await using server = await startTestServer({ config });
  const flood = await enqueue(
    server,
    "q",
    Array.from({ length: 4 }, (_, i) => ({ payload: i, key: `flood:${i}` })),
  );
  const kept = await enqueue(server, "q", [{ payload: "x", key: "order:1" }, { payload: "y" }]);
  await leaseAnd(server, "q", 1, { ack: true }); // flood:0 done
  await server.request("POST", "/v1/queues/q/leases", { max: 1 }); // flood:1 leased

  const task = await bulk(server, "q", { filter: { key_prefix: "flood:" }, action: "delete" });
  assert.deepEqual([task.matched, task.done], [4, 4]);
  for (const id of flood) assert.equal(await stateOf(server, id), null);
  for (const id of kept) assert.equal(await stateOf(server, id), "pending");
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.pending, 2);
  assert.equal(stats.body.counts.leased, 0);
});

onEveryStore(
  "a replay enqueues fresh copies of finished jobs once, without keys",
  async (config) => {
    await using server = await startTestServer({ config });
    const from = server.clock.now();
    const ids = await enqueue(server, "q", [
      { payload: { n: 1 }, key: "k1", priority: 5, group: "g" },
      { payload: { n: 2 } },
    ]);
    await server.advance(1000);
    await enqueue(server, "q", [{ payload: { n: 3 } }]);
    // Claim order: n=2 (ungrouped) may come before the grouped n=1; take all three.
    await leaseAnd(server, "q", 3, { ack: true });

    const task = await bulk(server, "q", {
      filter: { states: ["done"], created_from: from, created_to: from + 1000 },
      action: "replay",
    });
    assert.deepEqual([task.matched, task.done], [2, 2]);
    const pending = await server.request("GET", "/v1/queues/q/jobs?state=pending");
    const copies = pending.body.jobs;
    assert.equal(copies.length, 2);
    const byN = new Map(copies.map((j: { payload: { n: number } }) => [j.payload.n, j]));
    const one = byN.get(1) as Record<string, unknown>;
    assert.deepEqual([one.priority, one.group, one.key, one.attempts], [5, "g", null, 0]);
    assert.ok(byN.has(2));
    assert.ok((one.id as number) > ids[1]);
    for (const id of ids) assert.equal(await stateOf(server, id), "done");
    // Done copies are not replayed again by the same task, nor counted.
    const again = await bulk(server, "q", { filter: { states: ["done"] }, action: "replay" });
    assert.equal(again.done, 3);
  },
);

onEveryStore("a bulk action stops when cancelled, keeping what it did", async (config) => {
  await using server = await startTestServer({ config });
  for (let i = 0; i < 10; i++) {
    await enqueue(server, "q", Array.from({ length: 1000 }, () => ({ payload: {} })));
  }
  const started = await server.request("POST", "/v1/queues/q/bulk", { action: "cancel" });
  const stop = await server.request("DELETE", `/v1/bulk/${started.body.id}`);
  assert.equal(stop.status, 200);
  assert.equal(stop.body.cancelled_by, "anonymous");
  const task = await ended(server, started.body.id);
  assert.equal(task.state, "cancelled");
  assert.ok(task.done < 10_000, `it cancelled ${task.done}`);
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.cancelled, task.done);
  assert.equal(stats.body.counts.pending, 10_000 - task.done);
});

Deno.test("a bulk action is refused with the field at fault, and an unknown task is 404", async () => {
  await using server = await startTestServer();
  const refused = async (body: unknown, code: string, field: string) => {
    const answer = await server.request("POST", "/v1/queues/q/bulk", body);
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, code);
    assert.match(answer.body.error.message, new RegExp(`"${field.replaceAll(".", "\\.")}"`));
  };
  await refused({ action: "purge" }, "validation_failed", "action");
  await refused(
    { action: "requeue", filter: { states: ["done"] } },
    "validation_failed",
    "filter.states",
  );
  await refused(
    { action: "cancel", filter: { tenant: "acme" } },
    "validation_failed",
    "filter.tenant",
  );
  await refused({ action: "cancel", dry_run: "yes" }, "validation_failed", "dry_run");
  await refused(
    { action: "delete", filter: { payload: { path: "a..b", equals: 1 } } },
    "validation_failed",
    "filter.payload.path",
  );
  assert.equal((await server.request("GET", "/v1/bulk/99")).status, 404);
  assert.equal((await server.request("DELETE", "/v1/bulk/99")).status, 404);
  assert.equal((await server.request("GET", "/v1/bulk/x")).status, 404);
});

Deno.test("bulk actions need the admin scope and show a limited token only its queues", async () => {
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: "bulk-admin-token-0123456789abcdef", scopes: ["admin"] },
      {
        name: "billing-ops",
        token: "bulk-billing-token-0123456789abcd",
        scopes: ["admin"],
        queues: ["billing"],
      },
      { name: "workers", token: "bulk-produce-token-0123456789abcd", scopes: ["produce"] },
    ],
  });
  const as = (token: string) => ({ authorization: `Bearer ${token}` });
  const ops = as("bulk-admin-token-0123456789abcdef");
  const billing = as("bulk-billing-token-0123456789abcd");
  const workers = as("bulk-produce-token-0123456789abcd");
  const body = { action: "delete", dry_run: true };
  assert.equal((await server.request("POST", "/v1/queues/q/bulk", body, workers)).status, 403);
  assert.equal((await server.request("POST", "/v1/queues/q/bulk", body, billing)).status, 403);
  const started = await server.request("POST", "/v1/queues/q/bulk", body, ops);
  assert.equal(started.status, 202);
  assert.equal(started.body.by, "ops");
  assert.deepEqual((await server.request("GET", "/v1/bulk", undefined, billing)).body.tasks, []);
  assert.equal(
    (await server.request("GET", `/v1/bulk/${started.body.id}`, undefined, billing)).status,
    403,
  );
  assert.equal((await server.request("GET", "/v1/bulk", undefined, ops)).body.tasks.length, 1);
  assert.equal((await ended(server, started.body.id, ops)).state, "done");
});

dropPgTestDatabaseAfterwards(pg);
