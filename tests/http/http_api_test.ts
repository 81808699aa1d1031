/**
 * The HTTP API v1 end to end (DESIGN §2, §7): enqueue, jobs, queues, dead letters and the
 * operational routes, each with its answer and status. Leasing and the job lifecycle are in
 * http_leases_test.ts, errors in http_errors_test.ts, auth in http_auth_test.ts.
 */

import assert from "node:assert/strict";
import {
  deadJob,
  type DeliveryBody,
  enqueue,
  getJob,
  JOB_FIELDS,
  lease,
  leaseOne,
  queueStats as stats,
  untilConsumers,
} from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { DEFAULT_SETTINGS_JSON } from "../helpers/settings_json.ts";

// ---- enqueue ----
Deno.test("POST /v1/queues/{q}/jobs answers 201 with the new job's id", async () => {
  await using server = await startTestServer();
  const first = await server.request("POST", "/v1/queues/mail/jobs", { payload: { to: "a@b" } });
  assert.equal(first.status, 201);
  assert.deepEqual(Object.keys(first.body).sort(), ["deduplicated", "duplicate", "id"]);
  assert.equal(first.body.deduplicated, false);
  assert.ok(Number.isSafeInteger(first.body.id) && first.body.id > 0);
  assert.match(first.headers.get("content-type") ?? "", /^application\/json/);
  const second = await server.request("POST", "/v1/queues/mail/jobs", { payload: null });
  assert.equal(second.status, 201);
  assert.ok(second.body.id > first.body.id, "ids increase");
});

Deno.test("POST /v1/queues/{q}/jobs stores every field it is given", async () => {
  await using server = await startTestServer();
  const now = server.clock.now();
  const id = await enqueue(server, "mail", {
    payload: { nested: [1, "two", { three: null }] },
    attributes: null,
    priority: 7,
    key: "order-1",
    group: "customer-9",
    delay_ms: 5000,
    max_attempts: 3,
    lease_ms: 2000,
    backoff: { base_ms: 100, max_ms: 1000 },
  });
  const job = await getJob(server, id);
  assert.deepEqual(Object.keys(job).sort(), JOB_FIELDS);
  assert.deepEqual(job, {
    id,
    queue: "mail",
    state: "delayed",
    payload: { nested: [1, "two", { three: null }] },
    attributes: null,
    priority: 7,
    key: "order-1",
    key_expires_at: null,
    group: "customer-9",
    attempts: 0,
    max_attempts: 3,
    run_at: now + 5000,
    lease_ms: 2000,
    backoff: { base_ms: 100, max_ms: 1000 },
    created_at: now,
    checkpoint: null,
    progress: null,
    progress_at: null,
    result: null,
    last_error: null,
    lease_expires_at: null,
    finished_at: null,
    dead_lettered_from: null,
  });
});

Deno.test("POST /v1/queues/{q}/jobs fills the defaults of a bare job", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "mail", { payload: "hi" });
  const job = await getJob(server, id);
  assert.equal(job.state, "pending");
  assert.equal(job.priority, 0);
  assert.equal(job.key, null);
  assert.equal(job.max_attempts, 5);
  assert.equal(job.lease_ms, null);
  assert.equal(job.backoff, null);
  assert.equal(job.run_at, server.clock.now());
});

Deno.test("POST /v1/queues/{q}/jobs treats a run_at in the past as now", async () => {
  await using server = await startTestServer();
  const now = server.clock.now();
  const past = await enqueue(server, "mail", { payload: 1, run_at: now - 60_000 });
  const future = await enqueue(server, "mail", { payload: 2, run_at: now + 60_000 });
  assert.equal((await getJob(server, past)).state, "pending");
  assert.equal((await getJob(server, past)).run_at, now);
  assert.equal((await getJob(server, future)).state, "delayed");
  assert.equal((await getJob(server, future)).run_at, now + 60_000);
});

Deno.test("POST /v1/queues/{q}/jobs with a known key answers 200 and the existing id", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "mail", { payload: 1, key: "k" });
  const again = await server.request("POST", "/v1/queues/mail/jobs", { payload: 2, key: "k" });
  assert.equal(again.status, 200);
  assert.deepEqual(again.body, { id, deduplicated: true, duplicate: "ignored" });
  assert.deepEqual((await getJob(server, id)).payload, 1, "the first job is kept unchanged");
  assert.equal((await stats(server, "mail")).counts.pending, 1, "nothing new was stored");
});

Deno.test("POST /v1/queues/{q}/jobs deduplicates by key within one queue only", async () => {
  await using server = await startTestServer();
  const a = await enqueue(server, "mail", { payload: 1, key: "k" });
  const b = await enqueue(server, "sms", { payload: 1, key: "k" });
  assert.notEqual(a, b);
});

Deno.test("POST /v1/queues/{q}/jobs deduplicates against done, dead and cancelled jobs", async () => {
  await using server = await startTestServer();
  const done = await enqueue(server, "q", { payload: 1, key: "done" });
  const delivery = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${done}/ack`, { token: delivery.lease.token });
  const dead = await enqueue(server, "q", { payload: 1, key: "dead", max_attempts: 1 });
  const d2 = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${dead}/nack`, { token: d2.lease.token });
  const cancelled = await enqueue(server, "q", { payload: 1, key: "cancelled" });
  await server.request("DELETE", `/v1/jobs/${cancelled}`);
  for (const [key, id] of [["done", done], ["dead", dead], ["cancelled", cancelled]] as const) {
    const again = await server.request("POST", "/v1/queues/q/jobs", { payload: 2, key });
    assert.deepEqual([again.status, again.body], [200, {
      id,
      deduplicated: true,
      duplicate: "ignored",
    }], key);
  }
});

// ---- batch enqueue ----

Deno.test("POST /v1/queues/{q}/jobs with {jobs} answers 201 and one entry per job", async () => {
  await using server = await startTestServer();
  const existing = await enqueue(server, "q", { payload: 0, key: "old" });
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { payload: 2, key: "old" }, { payload: 3, priority: 2 }],
  });
  assert.equal(answer.status, 201);
  assert.equal(answer.body.jobs.length, 3);
  assert.deepEqual(answer.body.jobs[1], { id: existing, deduplicated: true, duplicate: "ignored" });
  assert.equal(answer.body.jobs[0].deduplicated, false);
  assert.equal(answer.body.jobs[2].deduplicated, false);
  assert.ok(answer.body.jobs[2].id > answer.body.jobs[0].id);
  assert.deepEqual((await getJob(server, answer.body.jobs[2].id)).payload, 3);
  assert.equal((await stats(server, "q")).counts.pending, 3);
});

Deno.test("POST /v1/queues/{q}/jobs answers 200 when every job of a batch was a duplicate", async () => {
  await using server = await startTestServer();
  const a = await enqueue(server, "q", { payload: 0, key: "a" });
  const b = await enqueue(server, "q", { payload: 0, key: "b" });
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1, key: "a" }, { payload: 1, key: "b" }],
  });
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, {
    jobs: [{ id: a, deduplicated: true, duplicate: "ignored" }, {
      id: b,
      deduplicated: true,
      duplicate: "ignored",
    }],
  });
});

Deno.test("POST /v1/queues/{q}/jobs deduplicates a key repeated inside one batch", async () => {
  await using server = await startTestServer();
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1, key: "same" }, { payload: 2, key: "same" }],
  });
  assert.equal(answer.status, 201);
  const [first, second] = answer.body.jobs;
  assert.deepEqual(second, { id: first.id, deduplicated: true, duplicate: "ignored" });
  assert.equal((await stats(server, "q")).counts.pending, 1);
});

Deno.test("POST /v1/queues/{q}/jobs stores nothing of a batch with one invalid job", async () => {
  await using server = await startTestServer();
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { payload: 2, key: "k" }, { payload: 3, priority: "high" }],
  });
  assert.equal(answer.status, 400);
  assert.equal(answer.body.error.code, "validation_failed");
  assert.match(answer.body.error.message, /jobs\[2\]\.priority/);
  const counts = (await stats(server, "q")).counts;
  assert.deepEqual(counts, {
    blocked: 0,
    pending: 0,
    delayed: 0,
    leased: 0,
    done: 0,
    dead: 0,
    cancelled: 0,
  });
  // The key of the refused batch was not taken either.
  assert.equal(await enqueue(server, "q", { payload: 4, key: "k" }) > 0, true);
});

Deno.test("POST /v1/queues/{q}/jobs accepts a batch of exactly max_batch jobs", async () => {
  await using server = await startTestServer({ config: { maxBatch: 3 } });
  const answer = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { payload: 2 }, { payload: 3 }],
  });
  assert.equal(answer.status, 201);
  assert.equal(answer.body.jobs.length, 3);
});

// ---- GET job ----

Deno.test("GET /v1/jobs/{id} shows a leased job without its lease token", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: { secret: false } });
  const { lease: { token, expires_at } } = await leaseOne(server, "q");
  const answer = await server.request("GET", `/v1/jobs/${id}`);
  assert.equal(answer.status, 200);
  assert.deepEqual(Object.keys(answer.body).sort(), JOB_FIELDS);
  assert.equal(answer.body.state, "leased");
  assert.equal(answer.body.lease_expires_at, expires_at);
  const text = JSON.stringify(answer.body);
  assert.ok(!text.includes(token), "the lease token is not exposed");
  assert.ok(!("token" in answer.body) && !("lease_token" in answer.body));
});

Deno.test("GET /v1/jobs/{id} of an unknown id answers 404", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/v1/jobs/424242");
  assert.equal(answer.status, 404);
  assert.equal(answer.body.error.code, "not_found");
  assert.match(answer.body.error.message, /424242/);
});

// ---- DELETE job ----

Deno.test("DELETE /v1/jobs/{id} cancels a pending job and the key stays taken", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, key: "k" });
  const answer = await server.request("DELETE", `/v1/jobs/${id}`);
  assert.equal(answer.status, 200);
  assert.equal(answer.body.id, id);
  assert.equal(answer.body.state, "cancelled");
  const job = await getJob(server, id);
  assert.equal(job.state, "cancelled");
  assert.equal(job.finished_at, server.clock.now());
  assert.deepEqual(await lease(server, "q"), [], "a cancelled job is never delivered");
  assert.equal((await stats(server, "q")).counts.cancelled, 1);
});

Deno.test("DELETE /v1/jobs/{id} cancels a delayed job so it never becomes due", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, delay_ms: 1000 });
  const answer = await server.request("DELETE", `/v1/jobs/${id}`);
  assert.deepEqual([answer.body.id, answer.body.state], [id, "cancelled"]);
  await server.advance(1000);
  assert.equal((await getJob(server, id)).state, "cancelled");
  assert.deepEqual(await lease(server, "q"), []);
});

Deno.test("DELETE /v1/jobs/{id} cancels a leased job and its token then gets 409", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 1000 });
  const answer = await server.request("DELETE", `/v1/jobs/${id}`);
  assert.deepEqual([answer.status, answer.body.state], [200, "cancelled"]);
  for (const op of ["ack", "nack", "extend"]) {
    const late = await server.request("POST", `/v1/jobs/${id}/${op}`, { token });
    assert.deepEqual([late.status, late.body.error.code], [409, "lease_lost"], op);
  }
  const cp = await server.request("POST", `/v1/jobs/${id}/checkpoint`, { token, data: 1 });
  assert.equal(cp.status, 409);
  await server.advance(1000);
  assert.equal((await getJob(server, id)).state, "cancelled", "expiry does not revive it");
  assert.equal((await stats(server, "q")).counts.leased, 0);
});

Deno.test("DELETE /v1/jobs/{id} removes a done, dead or cancelled job, which then is 404", async () => {
  await using server = await startTestServer();
  const done = await enqueue(server, "q", { payload: 1 });
  const d = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${done}/ack`, { token: d.lease.token });
  const dead = await deadJob(server, "q", 2);
  const cancelled = await enqueue(server, "q", { payload: 3 });
  await server.request("DELETE", `/v1/jobs/${cancelled}`);
  for (const [id, state] of [[done, "done"], [dead, "dead"], [cancelled, "cancelled"]] as const) {
    const answer = await server.request("DELETE", `/v1/jobs/${id}`);
    assert.equal(answer.status, 200, state);
    assert.equal(answer.body.id, id);
    assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 404, state);
    const twice = await server.request("DELETE", `/v1/jobs/${id}`);
    assert.deepEqual([twice.status, twice.body.error.code], [404, "not_found"], state);
  }
  const counts = (await stats(server, "q")).counts;
  assert.deepEqual([counts.done, counts.dead, counts.cancelled], [0, 0, 0]);
});

Deno.test("DELETE /v1/jobs/{id} of an unknown id answers 404", async () => {
  await using server = await startTestServer();
  const answer = await server.request("DELETE", "/v1/jobs/424242");
  assert.deepEqual([answer.status, answer.body.error.code], [404, "not_found"]);
});

// ---- queue stats, pause, resume ----

Deno.test("GET /v1/queues/{q} counts jobs per state", async () => {
  await using server = await startTestServer();
  await enqueue(server, "q", { payload: 1 });
  await enqueue(server, "q", { payload: 2 });
  await enqueue(server, "q", { payload: 3, delay_ms: 1000 });
  const done = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${done.id}/ack`, { token: done.lease.token });
  await leaseOne(server, "q");
  await deadJob(server, "q", 4);
  const cancelled = await enqueue(server, "q", { payload: 5 });
  await server.request("DELETE", `/v1/jobs/${cancelled}`);
  await enqueue(server, "q", { payload: 6 });
  const answer = await server.request("GET", "/v1/queues/q");
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, {
    name: "q",
    paused: false,
    counts: { blocked: 0, pending: 1, delayed: 1, leased: 1, done: 1, dead: 1, cancelled: 1 },
    oldest_pending_age_ms: 0,
    consumers: 0,
    settings: DEFAULT_SETTINGS_JSON,
    groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
    held: null,
  });
});

Deno.test("GET /v1/queues/{q} of an unknown queue answers zeros", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/v1/queues/nobody.home");
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, {
    name: "nobody.home",
    paused: false,
    counts: { blocked: 0, pending: 0, delayed: 0, leased: 0, done: 0, dead: 0, cancelled: 0 },
    oldest_pending_age_ms: 0,
    consumers: 0,
    settings: DEFAULT_SETTINGS_JSON,
    groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
    held: null,
  });
});

Deno.test("GET /v1/queues/{q} ages the oldest pending job from when it became available", async () => {
  await using server = await startTestServer();
  await enqueue(server, "q", { payload: 1, delay_ms: 1000 });
  assert.equal((await stats(server, "q")).oldest_pending_age_ms, 0, "a delayed job is not pending");
  await server.advance(1000);
  await enqueue(server, "q", { payload: 2 });
  await server.advance(1500);
  assert.equal((await stats(server, "q")).oldest_pending_age_ms, 1500);
  await lease(server, "q", { max: 2 });
  assert.equal((await stats(server, "q")).oldest_pending_age_ms, 0, "0 when none is pending");
});

Deno.test("GET /v1/queues lists every known queue's stats", async () => {
  await using server = await startTestServer();
  await enqueue(server, "b", { payload: 1 });
  await enqueue(server, "a", { payload: 1 });
  await enqueue(server, "a", { payload: 2, delay_ms: 10 });
  await server.request("POST", "/v1/queues/c/pause");
  const answer = await server.request("GET", "/v1/queues");
  assert.equal(answer.status, 200);
  assert.deepEqual(Object.keys(answer.body), ["queues", "next_after"]);
  const byName = new Map(answer.body.queues.map((s: { name: string }) => [s.name, s]));
  assert.deepEqual([...byName.keys()].sort(), ["a", "b", "c"]);
  assert.deepEqual(byName.get("a"), {
    name: "a",
    paused: false,
    counts: { blocked: 0, pending: 1, delayed: 1, leased: 0, done: 0, dead: 0, cancelled: 0 },
    oldest_pending_age_ms: 0,
    consumers: 0,
    settings: DEFAULT_SETTINGS_JSON,
    groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
    held: null,
  });
  assert.equal((byName.get("c") as { paused: boolean }).paused, true);
});

Deno.test("GET /v1/queues answers an empty list on a new server", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/v1/queues");
  assert.deepEqual([answer.status, answer.body], [200, { queues: [], next_after: null }]);
});

Deno.test("POST /v1/queues/{q}/pause stops delivery but not enqueue, and resume restarts it", async () => {
  await using server = await startTestServer();
  const pause = await server.request("POST", "/v1/queues/q/pause");
  assert.deepEqual([pause.status, pause.body], [200, { name: "q", paused: true }]);
  const again = await server.request("POST", "/v1/queues/q/pause", {});
  assert.deepEqual([again.status, again.body], [200, { name: "q", paused: true }], "idempotent");
  const id = await enqueue(server, "q", { payload: 1 });
  assert.deepEqual(await lease(server, "q", { max: 10 }), []);
  assert.equal((await stats(server, "q")).paused, true);
  const resume = await server.request("POST", "/v1/queues/q/resume");
  assert.deepEqual([resume.status, resume.body], [200, { name: "q", paused: false }]);
  assert.equal((await stats(server, "q")).paused, false);
  assert.equal((await leaseOne(server, "q")).id, id);
});

Deno.test("POST /v1/queues/{q}/pause lets leased jobs be acked", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  await server.request("POST", "/v1/queues/q/pause");
  assert.equal((await server.request("POST", `/v1/jobs/${id}/ack`, { token })).status, 200);
});

// ---- dead letters ----

Deno.test("GET /v1/queues/{q}/dead pages through dead jobs by id with limit and after", async () => {
  await using server = await startTestServer();
  const ids: number[] = [];
  for (let i = 0; i < 5; i++) ids.push(await deadJob(server, "q", i));
  await deadJob(server, "other", "elsewhere");
  await enqueue(server, "q", { payload: "alive" });

  const page1 = await server.request("GET", "/v1/queues/q/dead?limit=2");
  assert.equal(page1.status, 200);
  assert.deepEqual(Object.keys(page1.body).sort(), ["jobs", "next_after"]);
  assert.deepEqual(page1.body.jobs.map((j: { id: number }) => j.id), ids.slice(0, 2));
  assert.equal(page1.body.next_after, ids[1]);
  assert.deepEqual(Object.keys(page1.body.jobs[0]).sort(), JOB_FIELDS);
  assert.equal(page1.body.jobs[0].state, "dead");

  const page2 = await server.request("GET", `/v1/queues/q/dead?limit=2&after=${ids[1]}`);
  assert.deepEqual(page2.body.jobs.map((j: { id: number }) => j.id), ids.slice(2, 4));
  assert.equal(page2.body.next_after, ids[3]);

  const page3 = await server.request("GET", `/v1/queues/q/dead?limit=2&after=${ids[3]}`);
  assert.deepEqual(page3.body.jobs.map((j: { id: number }) => j.id), [ids[4]]);
  assert.equal(page3.body.next_after, null, "a short page is the last");

  const all = await server.request("GET", "/v1/queues/q/dead");
  assert.deepEqual(all.body.jobs.map((j: { id: number }) => j.id), ids);
  assert.equal(all.body.next_after, null);
});

Deno.test("GET /v1/queues/{q}/dead of a queue without dead jobs answers an empty page", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/v1/queues/q/dead");
  assert.deepEqual([answer.status, answer.body], [200, { jobs: [], next_after: null }]);
});

Deno.test("POST /v1/queues/{q}/dead/requeue makes every dead job pending with attempts reset", async () => {
  await using server = await startTestServer();
  const a = await deadJob(server, "q", 1);
  const b = await deadJob(server, "q", 2);
  const elsewhere = await deadJob(server, "other", 3);
  const answer = await server.request("POST", "/v1/queues/q/dead/requeue");
  assert.deepEqual([answer.status, answer.body], [200, { requeued: 2 }]);
  for (const id of [a, b]) {
    const job = await getJob(server, id);
    assert.equal(job.state, "pending");
    assert.equal(job.attempts, 0);
    assert.equal(job.finished_at, null);
  }
  assert.equal((await getJob(server, elsewhere)).state, "dead", "other queues are untouched");
  const again = await leaseOne(server, "q");
  assert.deepEqual([again.id, again.attempt], [a, 1]);
  const none = await server.request("POST", "/v1/queues/q/dead/requeue", {});
  assert.deepEqual(none.body, { requeued: 0 });
});

Deno.test("POST /v1/queues/{q}/dead/requeue with ids requeues only those dead jobs", async () => {
  await using server = await startTestServer();
  const a = await deadJob(server, "q", 1);
  const b = await deadJob(server, "q", 2);
  const elsewhere = await deadJob(server, "other", 3);
  const alive = await enqueue(server, "q", { payload: 4 });
  const answer = await server.request("POST", "/v1/queues/q/dead/requeue", {
    ids: [b, elsewhere, alive, 424242],
  });
  assert.deepEqual([answer.status, answer.body], [200, { requeued: 1 }]);
  assert.equal((await getJob(server, a)).state, "dead");
  assert.equal((await getJob(server, b)).state, "pending");
  assert.equal((await getJob(server, elsewhere)).state, "dead");
  assert.equal((await getJob(server, alive)).state, "pending");
});

Deno.test("a long-poll is answered when a dead job is requeued", async () => {
  await using server = await startTestServer();
  const id = await deadJob(server, "q", 1);
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  await server.request("POST", "/v1/queues/q/dead/requeue", { ids: [id] });
  const answer = await poll;
  assert.deepEqual(answer.body.jobs.map((d: DeliveryBody) => [d.id, d.attempt]), [[id, 1]]);
});

// ---- operations ----

Deno.test("GET /healthz and GET /readyz answer 200", async () => {
  await using server = await startTestServer();
  const health = await server.request("GET", "/healthz");
  assert.deepEqual([health.status, health.body], [200, { status: "ok" }]);
  const ready = await server.request("GET", "/readyz");
  assert.deepEqual([ready.status, ready.body], [200, { status: "ready" }]);
});

Deno.test("GET /metrics answers Prometheus text with per-queue gauges", async () => {
  await using server = await startTestServer();
  await enqueue(server, "mail", { payload: 1 });
  await enqueue(server, "mail", { payload: 2, delay_ms: 100 });
  await server.request("POST", "/v1/queues/mail/pause");
  const answer = await server.request("GET", "/metrics");
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get("content-type") ?? "", /^text\/plain; version=0\.0\.4/);
  const text: string = answer.body;
  assert.match(text, /^# HELP tegami_jobs /m);
  assert.match(text, /^# TYPE tegami_jobs gauge$/m);
  assert.match(text, /^tegami_jobs\{queue="mail",state="pending"\} 1$/m);
  assert.match(text, /^tegami_jobs\{queue="mail",state="delayed"\} 1$/m);
  assert.match(text, /^tegami_queue_paused\{queue="mail"\} 1$/m);
  assert.match(
    text,
    /^tegami_http_requests_total\{route="\/v1\/queues\/:queue\/jobs",status="201"\} 2$/m,
  );
  for (const line of text.trimEnd().split("\n")) {
    assert.match(line, /^(# (HELP|TYPE) \w+ .+|\w+(\{[^}]*\})? -?[0-9.e+Inf]+)$/, line);
  }
});

Deno.test("GET / answers the dashboard page as HTML", async () => {
  await using server = await startTestServer();
  const answer = await server.request("GET", "/");
  assert.equal(answer.status, 200);
  assert.match(answer.headers.get("content-type") ?? "", /^text\/html/);
  assert.match(answer.body, /^<!doctype html>/i);
  assert.match(answer.body, /<title>tegami<\/title>/);
  assert.equal(answer.headers.get("content-security-policy"), "default-src 'self'");
  assert.doesNotMatch(answer.body, /<script>|<style>| on[a-z]+="/, "nothing inline");
});

Deno.test("GET /dashboard.js and /dashboard.css answer the page's script and styles", async () => {
  await using server = await startTestServer();
  const script = await server.request("GET", "/dashboard.js");
  assert.equal(script.status, 200);
  assert.equal(script.headers.get("content-type"), "text/javascript; charset=utf-8");
  assert.match(script.body, /getElementById/);
  const css = await server.request("GET", "/dashboard.css");
  assert.equal(css.status, 200);
  assert.equal(css.headers.get("content-type"), "text/css; charset=utf-8");
  assert.match(css.body, /--accent:/);
});
