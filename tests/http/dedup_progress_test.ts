/**
 * Dedup windows (`key_ttl_ms`), duplicate modes (`on_duplicate`) and progress reports end to end:
 * over HTTP and the WebSocket protocol, on a real server with a manual clock, every answer
 * checked against the served API documents.
 */

import assert from "node:assert/strict";
import { enqueue, getJob, leaseOne } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

function post(server: TestServer, path: string, body: unknown) {
  return server.request("POST", path, body);
}

Deno.test("POST /v1/queues/{q}/jobs with key_ttl_ms makes a new job once the window passes", async () => {
  await using server = await startTestServer();
  const now = server.clock.now();
  const first = await enqueue(server, "q", { payload: "a", key: "k", key_ttl_ms: 1_000 });
  assert.equal((await getJob(server, first)).key_expires_at, now + 1_000);
  await server.advance(999);
  const inside = await post(server, "/v1/queues/q/jobs", { payload: "b", key: "k" });
  assert.deepEqual([inside.status, inside.body], [200, {
    id: first,
    deduplicated: true,
    duplicate: "ignored",
  }]);
  await server.advance(1);
  const after = await post(server, "/v1/queues/q/jobs", { payload: "c", key: "k" });
  assert.equal(after.status, 201);
  assert.deepEqual(after.body, { id: after.body.id, deduplicated: false, duplicate: null });
  assert.notEqual(after.body.id, first);
  const old = await getJob(server, first);
  assert.deepEqual([old.key, old.payload, old.state], ["k", "a", "pending"]);
});

Deno.test("on_duplicate replace debounces a delayed job, and a consumer gets it when due now", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: "v1", key: "k", delay_ms: 60_000 });
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("q", 1);
  const replaced = await post(server, "/v1/queues/q/jobs", {
    payload: "v2",
    key: "k",
    on_duplicate: "replace",
    priority: 3,
  });
  assert.deepEqual([replaced.status, replaced.body], [200, {
    id,
    deduplicated: true,
    duplicate: "replaced",
  }]);
  // The delayed job became pending: the idle consumer is woken without polling.
  const [job] = await ws.jobs(1, "q");
  assert.deepEqual([job.id, job.payload, job.priority], [id, "v2", 3]);
});

Deno.test("on_duplicate extend pushes run_at, and the job runs only then", async () => {
  await using server = await startTestServer();
  const now = server.clock.now();
  const id = await enqueue(server, "q", { payload: "x", key: "k", delay_ms: 1_000 });
  const extended = await post(server, "/v1/queues/q/jobs", {
    jobs: [{ payload: "ignored", key: "k", delay_ms: 5_000, on_duplicate: "extend" }],
  });
  assert.deepEqual([extended.status, extended.body], [200, {
    jobs: [{ id, deduplicated: true, duplicate: "extended" }],
  }]);
  const job = await getJob(server, id);
  assert.deepEqual([job.run_at, job.payload, job.state], [now + 5_000, "x", "delayed"]);
  await server.advance(1_000);
  assert.deepEqual((await post(server, "/v1/queues/q/leases", { max: 1 })).body, { jobs: [] });
  await server.advance(4_000);
  assert.equal((await leaseOne(server, "q")).id, id);
});

Deno.test("a leased job is never replaced: the duplicate is ignored", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: "v1", key: "k" });
  await leaseOne(server, "q");
  const again = await post(server, "/v1/queues/q/jobs", {
    payload: "v2",
    key: "k",
    on_duplicate: "replace",
  });
  assert.deepEqual(again.body, { id, deduplicated: true, duplicate: "ignored" });
  assert.equal((await getJob(server, id)).payload, "v1");
});

Deno.test("bad key_ttl_ms and on_duplicate answer 400 validation_failed naming the field", async () => {
  await using server = await startTestServer();
  const cases: [Record<string, unknown>, string, RegExp][] = [
    [{ payload: 1, key_ttl_ms: 1_000 }, "key_ttl_ms", /needs a key/],
    [{ payload: 1, key: "k", key_ttl_ms: 0 }, "key_ttl_ms", /integer from 1/],
    [{ payload: 1, key: "k", key_ttl_ms: "1s" }, "key_ttl_ms", /integer/],
    [{ payload: 1, key: "k", on_duplicate: "merge" }, "on_duplicate", /ignore, replace, extend/],
    [{ payload: 1, key: "k", on_duplicate: true }, "on_duplicate", /ignore, replace, extend/],
    [{ payload: 1, on_duplicate: "replace" }, "on_duplicate", /needs a key/],
    [
      { jobs: [{ payload: 1 }, { payload: 2, on_duplicate: "extend" }] },
      "jobs[1].on_duplicate",
      /needs a key/,
    ],
  ];
  for (const [body, field, why] of cases) {
    const answer = await post(server, "/v1/queues/q/jobs", body);
    assert.equal(answer.status, 400, JSON.stringify(body));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.ok(answer.body.error.message.includes(`"${field}"`), answer.body.error.message);
    assert.match(answer.body.error.message, why);
  }
  const fine = await post(server, "/v1/queues/q/jobs", { payload: 1, on_duplicate: "ignore" });
  assert.equal(fine.status, 201, "ignore (the default) needs no key");
});

Deno.test("the enqueue frame takes key_ttl_ms and on_duplicate, single and in jobs", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const one = await ws.ok({ op: "enqueue", queue: "q", payload: 1, key: "k", key_ttl_ms: 50 });
  assert.equal(one.duplicate, null);
  const batch = await ws.ok({
    op: "enqueue",
    queue: "q",
    jobs: [
      { payload: 2, key: "k", key_ttl_ms: 50, on_duplicate: "replace", delay_ms: 10 },
      { payload: 3, key: "k", on_duplicate: "extend", delay_ms: 20 },
      { payload: 4, key: "other" },
    ],
  });
  assert.deepEqual(batch.jobs.map((j: { duplicate: string | null }) => j.duplicate), [
    "replaced",
    "extended",
    null,
  ]);
  const job = await getJob(server, one.id);
  assert.deepEqual([job.payload, job.run_at], [2, server.clock.now() + 20]);
  const bad = await ws.request({ op: "enqueue", queue: "q", payload: 1, on_duplicate: "nope" });
  assert.equal(bad.code, "validation_failed");
  assert.match(bad.message, /"on_duplicate"/);
  // Past the window (50 ms, the replacing job's) the key is free again.
  await server.advance(50);
  const fresh = await ws.ok({ op: "enqueue", queue: "q", payload: 5, key: "k" });
  assert.notEqual(fresh.id, one.id);
  assert.equal(fresh.deduplicated, false);
});

// ---- progress ----

Deno.test("POST /v1/jobs/{id}/progress records the report, shown by GET", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const delivery = await leaseOne(server, "q", { lease_ms: 1_000 });
  const token = delivery.lease.token;
  await server.advance(10);
  const ok = await post(server, `/v1/jobs/${id}/progress`, { token, progress: { done: 3, of: 7 } });
  assert.deepEqual([ok.status, ok.body], [200, { id }]);
  const job = await getJob(server, id);
  assert.deepEqual(job.progress, { done: 3, of: 7 });
  assert.equal(job.progress_at, server.clock.now());

  const wrong = await post(server, `/v1/jobs/${id}/progress`, { token: "nope", progress: 1 });
  assert.deepEqual([wrong.status, wrong.body.error.code], [409, "lease_lost"]);
  const checkpoint = await post(server, `/v1/jobs/${id}/checkpoint`, { token: "nope", data: 1 });
  assert.equal(checkpoint.body.error.code, wrong.body.error.code, "fenced like a checkpoint");
  const unknown = await post(server, "/v1/jobs/424242/progress", { token, progress: 1 });
  assert.equal(unknown.status, 404);
  const big = await post(server, `/v1/jobs/${id}/progress`, { token, progress: "x".repeat(4095) });
  assert.deepEqual([big.status, big.body.error.code], [413, "payload_too_large"]);
  assert.match(big.body.error.message, /"progress"/);
  const missing = await post(server, `/v1/jobs/${id}/progress`, { token });
  assert.deepEqual([missing.status, missing.body.error.code], [400, "validation_failed"]);
  assert.match(missing.body.error.message, /"progress": is required/);
  const extra = await post(server, `/v1/jobs/${id}/progress`, { token, progress: 1, data: 2 });
  assert.match(extra.body.error.message, /"data": unknown field/);
  assert.deepEqual((await getJob(server, id)).progress, { done: 3, of: 7 });

  await server.advance(1_000); // the lease runs out
  const late = await post(server, `/v1/jobs/${id}/progress`, { token, progress: 9 });
  assert.deepEqual([late.status, late.body.error.code], [409, "lease_lost"]);
});

Deno.test("the progress frame records a report, fenced like a checkpoint", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("q", 1);
  const [job] = await ws.jobs(1, "q");
  assert.equal(job.progress, null);
  const ok = await ws.ok({ op: "progress", id, token: job.lease.token, progress: 0.5 });
  assert.equal(ok.id, id);
  assert.equal((await getJob(server, id)).progress, 0.5);
  const stale = await ws.request({ op: "progress", id, token: "stale", progress: 1 });
  assert.deepEqual([stale.op, stale.code, stale.id], ["error", "lease_lost", id]);
  const unknown = await ws.request({ op: "progress", id: 424242, token: "x", progress: 1 });
  assert.equal(unknown.code, "not_found");
  const bad = await ws.request({ op: "progress", id, token: job.lease.token });
  assert.equal(bad.code, "validation_failed");
  assert.equal((await getJob(server, id)).progress, 0.5);
});
