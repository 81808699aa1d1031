/**
 * Leasing over HTTP end to end (DESIGN §1, §2, §7): lease and long-poll, ack, nack, extend and
 * checkpoint, and the job lifecycle they drive (order, expiry, attempts, retention), with time
 * moved by the test server's manual clock.
 */

import assert from "node:assert/strict";
import {
  deadJob,
  type DeliveryBody,
  enqueue,
  getJob,
  hasSettled,
  JOB_FIELDS,
  lease,
  leaseOne,
  queueStats as stats,
  untilConsumers,
} from "../helpers/http_calls.ts";
import { startTestServer, within } from "../helpers/test_server.ts";

/** A delivery is the job (every field) plus `attempt` and `lease` (DESIGN §2). */
const DELIVERY_FIELDS = [...JOB_FIELDS, "attempt", "lease"].sort();

// ---- lease ----

Deno.test("POST /v1/queues/{q}/leases answers one delivery by default", async () => {
  await using server = await startTestServer({ config: { leaseMs: 20_000 } });
  const now = server.clock.now();
  const id = await enqueue(server, "q", { payload: { n: 1 }, key: "k", priority: 3 });
  await enqueue(server, "q", { payload: { n: 2 } });
  const answer = await server.request("POST", "/v1/queues/q/leases");
  assert.equal(answer.status, 200);
  assert.deepEqual(Object.keys(answer.body), ["jobs"]);
  assert.equal(answer.body.jobs.length, 1);
  const [delivery] = answer.body.jobs;
  assert.deepEqual(Object.keys(delivery).sort(), DELIVERY_FIELDS);
  const { lease: _lease, ...fields } = delivery;
  assert.deepEqual(
    {
      id: fields.id,
      queue: fields.queue,
      payload: fields.payload,
      priority: fields.priority,
      key: fields.key,
      attempt: fields.attempt,
      max_attempts: fields.max_attempts,
      checkpoint: fields.checkpoint,
      created_at: fields.created_at,
    },
    {
      id,
      queue: "q",
      payload: { n: 1 },
      priority: 3,
      key: "k",
      attempt: 1,
      max_attempts: 5,
      checkpoint: null,
      created_at: now,
    },
  );
  assert.deepEqual(Object.keys(delivery.lease).sort(), ["expires_at", "token"]);
  assert.equal(delivery.lease.expires_at, now + 20_000, "the server's lease length");
  assert.ok(delivery.lease.token.length >= 16, "an unguessable token");
  const job = await getJob(server, id);
  assert.equal(job.state, "leased");
  assert.equal(job.attempts, 1);
  assert.equal(job.lease_expires_at, now + 20_000);
});

Deno.test("POST /v1/queues/{q}/leases takes up to max jobs", async () => {
  await using server = await startTestServer();
  for (let i = 0; i < 5; i++) await enqueue(server, "q", { payload: i });
  const three = await lease(server, "q", { max: 3 });
  assert.deepEqual(three.map((d) => d.payload), [0, 1, 2]);
  const rest = await lease(server, "q", { max: 100 });
  assert.deepEqual(rest.map((d) => d.payload), [3, 4]);
  const tokens = new Set([...three, ...rest].map((d) => d.lease.token));
  assert.equal(tokens.size, 5, "every delivery has its own token");
});

Deno.test("POST /v1/queues/{q}/leases answers an empty list at once when nothing is ready", async () => {
  await using server = await startTestServer();
  await enqueue(server, "q", { payload: 1, delay_ms: 1000 });
  const answer = await server.request("POST", "/v1/queues/q/leases", { max: 10 });
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body, { jobs: [] });
  const unknown = await server.request("POST", "/v1/queues/never-used/leases", {});
  assert.deepEqual([unknown.status, unknown.body], [200, { jobs: [] }]);
});

Deno.test("POST /v1/queues/{q}/leases uses the call's lease_ms, else the job's, else the server's", async () => {
  await using server = await startTestServer({ config: { leaseMs: 20_000 } });
  const now = server.clock.now();
  await enqueue(server, "plain", { payload: 1 });
  await enqueue(server, "own", { payload: 1, lease_ms: 5000 });
  await enqueue(server, "both", { payload: 1, lease_ms: 5000 });
  assert.equal((await leaseOne(server, "plain")).lease.expires_at, now + 20_000);
  assert.equal((await leaseOne(server, "own")).lease.expires_at, now + 5000);
  const both = await leaseOne(server, "both", { lease_ms: 7000 });
  assert.equal(both.lease.expires_at, now + 7000);
});

Deno.test("POST /v1/queues/{q}/leases delivers by priority, then in order of enqueue", async () => {
  await using server = await startTestServer();
  const jobs: [string, number][] = [["a", 0], ["b", 5], ["c", 0], ["d", 5], ["e", -1], ["f", 9]];
  for (const [payload, priority] of jobs) await enqueue(server, "q", { payload, priority });
  const order: string[] = [];
  for (let i = 0; i < jobs.length; i++) order.push((await leaseOne(server, "q")).payload as string);
  assert.deepEqual(order, ["f", "b", "d", "a", "c", "e"]);
  for (const [payload, priority] of jobs) await enqueue(server, "batch", { payload, priority });
  assert.deepEqual((await lease(server, "batch", { max: 10 })).map((d) => d.payload), order);
});

// ---- long-poll ----

Deno.test("a long-poll is answered at once when a job is enqueued", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  assert.equal(await hasSettled(poll), false, "still waiting before the enqueue");
  const id = await enqueue(server, "q", { payload: "wake" });
  const answer = await poll;
  assert.equal(answer.status, 200);
  assert.deepEqual(answer.body.jobs.map((d: DeliveryBody) => [d.id, d.attempt]), [[id, 1]]);
  assert.equal((await stats(server, "q")).consumers, 0, "the long-poll left the rotation");
});

Deno.test("a long-poll is answered when a delayed job becomes due", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, delay_ms: 5000 });
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  await server.advance(4999);
  assert.equal(await hasSettled(poll), false, "not due yet");
  await server.advance(1);
  const answer = await poll;
  assert.deepEqual(answer.body.jobs.map((d: DeliveryBody) => d.id), [id]);
});

Deno.test("a long-poll is answered when another consumer's lease expires", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const first = await leaseOne(server, "q", { lease_ms: 1000 });
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  await server.advance(1000);
  const answer = await poll;
  assert.equal(answer.body.jobs.length, 1);
  const [second] = answer.body.jobs;
  assert.equal(second.id, id);
  assert.equal(second.attempt, 2);
  assert.notEqual(second.lease.token, first.lease.token);
});

Deno.test("a long-poll is answered when its paused queue is resumed", async () => {
  await using server = await startTestServer();
  await server.request("POST", "/v1/queues/q/pause");
  const id = await enqueue(server, "q", { payload: 1 });
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  assert.equal(await hasSettled(poll), false, "a paused queue delivers nothing");
  const resume = await server.request("POST", "/v1/queues/q/resume");
  assert.deepEqual(resume.body, { name: "q", paused: false });
  const answer = await poll;
  assert.deepEqual(answer.body.jobs.map((d: DeliveryBody) => d.id), [id]);
});

Deno.test("a long-poll answers an empty list once wait_ms has passed", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 2000 });
  await untilConsumers(server, "q", 1);
  await server.advance(1999);
  assert.equal(await hasSettled(poll), false);
  await server.advance(1);
  const answer = await poll;
  assert.deepEqual([answer.status, answer.body], [200, { jobs: [] }]);
  // A job enqueued after the poll ended stays pending for the next caller.
  const id = await enqueue(server, "q", { payload: 1 });
  assert.equal((await getJob(server, id)).state, "pending");
});

Deno.test("a long-poll cut short by shutdown answers 200 with no jobs", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  const stopping = server.stop();
  const answer = await poll;
  await stopping;
  assert.deepEqual([answer.status, answer.body], [200, { jobs: [] }]);
});

Deno.test("a job goes to one of two waiting long-polls only", async () => {
  await using server = await startTestServer();
  const polls = [0, 1].map(() =>
    server.request("POST", "/v1/queues/q/leases", { wait_ms: 60_000 }).then((a) => a.body.jobs)
  );
  await untilConsumers(server, "q", 2);
  const first = await enqueue(server, "q", { payload: 1 });
  await untilConsumers(server, "q", 1);
  const second = await enqueue(server, "q", { payload: 2 });
  const answers: DeliveryBody[][] = await Promise.all(polls);
  assert.deepEqual(answers.map((jobs) => jobs.length), [1, 1]);
  assert.deepEqual(answers.flat().map((d) => d.id).sort((a, b) => a - b), [first, second]);
});

Deno.test("a long-poll takes at most max jobs of a batch and leaves the rest pending", async () => {
  await using server = await startTestServer();
  const poll = server.request("POST", "/v1/queues/q/leases", { max: 3, wait_ms: 60_000 });
  await untilConsumers(server, "q", 1);
  const batch = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [1, 2, 3, 4, 5].map((n) => ({ payload: n })),
  });
  assert.equal(batch.status, 201);
  const answer = await poll;
  assert.deepEqual(answer.body.jobs.map((d: DeliveryBody) => d.payload), [1, 2, 3]);
  const counts = (await stats(server, "q")).counts;
  assert.deepEqual([counts.leased, counts.pending], [3, 2]);
});

Deno.test("a long-poll whose caller goes away leaves the rotation and takes no job", async () => {
  await using server = await startTestServer();
  const caller = new AbortController();
  const poll = fetch(`${server.url}/v1/queues/q/leases`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ wait_ms: 60_000 }),
    signal: caller.signal,
  }).catch((error) => error);
  await untilConsumers(server, "q", 1);
  caller.abort();
  assert.ok(await poll instanceof Error);
  await untilConsumers(server, "q", 0);
  const id = await enqueue(server, "q", { payload: 1 });
  assert.equal((await getJob(server, id)).state, "pending");
  assert.equal((await leaseOne(server, "q")).attempt, 1);
});

// ---- ack ----

Deno.test("POST /v1/jobs/{id}/ack completes the job and keeps its result", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const ack = await server.request("POST", `/v1/jobs/${id}/ack`, { token, result: { sent: 3 } });
  assert.deepEqual([ack.status, ack.body], [200, { id, state: "done" }]);
  const job = await getJob(server, id);
  assert.equal(job.state, "done");
  assert.deepEqual(job.result, { sent: 3 });
  assert.equal(job.finished_at, server.clock.now());
  assert.equal(job.lease_expires_at, null);
  assert.equal((await stats(server, "q")).counts.done, 1);
});

Deno.test("POST /v1/jobs/{id}/ack without a result stores null", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  assert.equal((await server.request("POST", `/v1/jobs/${id}/ack`, { token })).status, 200);
  assert.equal((await getJob(server, id)).result, null);
});

Deno.test("POST /v1/jobs/{id}/ack repeated with the same token answers the same 200", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const first = await server.request("POST", `/v1/jobs/${id}/ack`, { token, result: 1 });
  const again = await server.request("POST", `/v1/jobs/${id}/ack`, { token, result: 1 });
  assert.deepEqual([again.status, again.body], [first.status, first.body]);
  assert.deepEqual((await getJob(server, id)).result, 1);
});

Deno.test("POST /v1/jobs/{id}/ack with a stale token answers 409 lease_lost and changes nothing", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const old = await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(1000);
  const current = await leaseOne(server, "q");
  assert.equal(current.attempt, 2);
  const stale = await server.request("POST", `/v1/jobs/${id}/ack`, { token: old.lease.token });
  assert.equal(stale.status, 409);
  assert.equal(stale.body.error.code, "lease_lost");
  const job = await getJob(server, id);
  assert.equal(job.state, "leased", "the current holder keeps the job");
  const ack = await server.request("POST", `/v1/jobs/${id}/ack`, { token: current.lease.token });
  assert.equal(ack.status, 200);
});

Deno.test("POST /v1/jobs/{id}/ack after the lease expired answers 409 even before a redelivery", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(1000);
  const ack = await server.request("POST", `/v1/jobs/${id}/ack`, { token });
  assert.deepEqual([ack.status, ack.body.error.code], [409, "lease_lost"]);
  assert.equal((await getJob(server, id)).state, "pending");
});

Deno.test("POST /v1/jobs/{id}/ack of another job's token answers 409", async () => {
  await using server = await startTestServer();
  const a = await enqueue(server, "q", { payload: 1 });
  await enqueue(server, "q", { payload: 2 });
  const [, second] = await lease(server, "q", { max: 2 });
  const ack = await server.request("POST", `/v1/jobs/${a}/ack`, { token: second.lease.token });
  assert.equal(ack.status, 409);
});

Deno.test("POST /v1/jobs/{id}/ack of an unknown id answers 404", async () => {
  await using server = await startTestServer();
  const ack = await server.request("POST", "/v1/jobs/424242/ack", { token: "whatever-token" });
  assert.equal(ack.status, 404);
  assert.equal(ack.body.error.code, "not_found");
});

// ---- nack ----

Deno.test("POST /v1/jobs/{id}/nack with delay_ms delays the retry by exactly that", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const now = server.clock.now();
  const nack = await server.request("POST", `/v1/jobs/${id}/nack`, {
    token,
    error: "smtp timeout",
    delay_ms: 2500,
  });
  assert.deepEqual([nack.status, nack.body], [200, { id, state: "delayed", run_at: now + 2500 }]);
  const job = await getJob(server, id);
  assert.equal(job.state, "delayed");
  assert.equal(job.last_error, "smtp timeout");
  assert.deepEqual(await lease(server, "q"), []);
  await server.advance(2500);
  const again = await leaseOne(server, "q");
  assert.deepEqual([again.id, again.attempt], [id, 2]);
});

Deno.test("POST /v1/jobs/{id}/nack with delay_ms 0 makes the job pending at once", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const nack = await server.request("POST", `/v1/jobs/${id}/nack`, { token, delay_ms: 0 });
  assert.deepEqual(nack.body, { id, state: "pending", run_at: server.clock.now() });
  assert.equal((await leaseOne(server, "q")).attempt, 2);
});

Deno.test("POST /v1/jobs/{id}/nack without delay_ms backs off from the server's base", async () => {
  await using server = await startTestServer({ config: { backoffBaseMs: 1000 } });
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const now = server.clock.now();
  const nack = await server.request("POST", `/v1/jobs/${id}/nack`, { token });
  assert.equal(nack.body.state, "delayed");
  const wait = nack.body.run_at - now;
  assert.ok(wait >= 500 && wait <= 1000, `first retry after 0.5–1 s, got ${wait} ms`);
  assert.equal((await getJob(server, id)).last_error, null);
});

Deno.test("POST /v1/jobs/{id}/nack without delay_ms doubles the job's own backoff per attempt", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, backoff: { base_ms: 4000, max_ms: 6000 } });
  const first = await leaseOne(server, "q");
  let now = server.clock.now();
  const nack1 = await server.request("POST", `/v1/jobs/${id}/nack`, { token: first.lease.token });
  const wait1 = nack1.body.run_at - now;
  assert.ok(wait1 >= 2000 && wait1 <= 4000, `attempt 1: base·[0.5, 1], got ${wait1}`);
  await server.advance(wait1);
  const second = await leaseOne(server, "q");
  assert.equal(second.attempt, 2);
  now = server.clock.now();
  const nack2 = await server.request("POST", `/v1/jobs/${id}/nack`, { token: second.lease.token });
  const wait2 = nack2.body.run_at - now;
  assert.ok(wait2 >= 3000 && wait2 <= 6000, `attempt 2: capped at max_ms, got ${wait2}`);
});

Deno.test("POST /v1/jobs/{id}/nack with dead:true sends the job to dead", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  const nack = await server.request("POST", `/v1/jobs/${id}/nack`, {
    token,
    error: "bad address",
    dead: true,
  });
  assert.deepEqual([nack.status, nack.body], [200, {
    id,
    state: "dead",
    run_at: server.clock.now(),
  }]);
  const job = await getJob(server, id);
  assert.equal(job.state, "dead");
  assert.equal(job.last_error, "bad address");
  assert.equal(job.attempts, 1);
  assert.equal((await stats(server, "q")).counts.dead, 1);
});

Deno.test("POST /v1/jobs/{id}/nack on the last attempt sends the job to dead", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, max_attempts: 2 });
  const first = await leaseOne(server, "q");
  const nack1 = await server.request("POST", `/v1/jobs/${id}/nack`, {
    token: first.lease.token,
    delay_ms: 0,
  });
  assert.equal(nack1.body.state, "pending");
  const second = await leaseOne(server, "q");
  const nack2 = await server.request("POST", `/v1/jobs/${id}/nack`, {
    token: second.lease.token,
    error: "still failing",
    delay_ms: 0,
  });
  assert.equal(nack2.body.state, "dead");
  assert.equal((await getJob(server, id)).last_error, "still failing");
});

Deno.test("POST /v1/jobs/{id}/nack with a stale token answers 409 and an unknown id 404", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${id}/ack`, { token });
  const stale = await server.request("POST", `/v1/jobs/${id}/nack`, { token });
  assert.deepEqual([stale.status, stale.body.error.code], [409, "lease_lost"]);
  assert.equal((await getJob(server, id)).state, "done");
  const unknown = await server.request("POST", "/v1/jobs/424242/nack", { token });
  assert.deepEqual([unknown.status, unknown.body.error.code], [404, "not_found"]);
});

// ---- extend ----

Deno.test("POST /v1/jobs/{id}/extend moves expiry to now plus lease_ms", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(900);
  const extend = await server.request("POST", `/v1/jobs/${id}/extend`, { token, lease_ms: 5000 });
  const expected = server.clock.now() + 5000;
  assert.deepEqual([extend.status, extend.body], [200, { id, expires_at: expected }]);
  assert.equal((await getJob(server, id)).lease_expires_at, expected);
  await server.advance(4999);
  assert.equal((await getJob(server, id)).state, "leased", "the old expiry no longer applies");
  assert.equal((await server.request("POST", `/v1/jobs/${id}/ack`, { token })).status, 200);
});

Deno.test("POST /v1/jobs/{id}/extend without lease_ms renews the lease length in force", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 3000 });
  await server.advance(2000);
  const renewed = await server.request("POST", `/v1/jobs/${id}/extend`, { token });
  assert.equal(renewed.body.expires_at, server.clock.now() + 3000);
  await server.request("POST", `/v1/jobs/${id}/extend`, { token, lease_ms: 8000 });
  await server.advance(1000);
  const again = await server.request("POST", `/v1/jobs/${id}/extend`, { token });
  assert.equal(again.body.expires_at, server.clock.now() + 8000, "the last extend's length");
});

Deno.test("POST /v1/jobs/{id}/extend after expiry answers 409 lease_lost", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(1000);
  const extend = await server.request("POST", `/v1/jobs/${id}/extend`, { token });
  assert.deepEqual([extend.status, extend.body.error.code], [409, "lease_lost"]);
  const unknown = await server.request("POST", "/v1/jobs/424242/extend", { token });
  assert.equal(unknown.status, 404);
});

// ---- checkpoint ----

Deno.test("POST /v1/jobs/{id}/checkpoint is carried to the next delivery", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const first = await leaseOne(server, "q", { lease_ms: 1000 });
  assert.equal(first.checkpoint, null);
  const saved = await server.request("POST", `/v1/jobs/${id}/checkpoint`, {
    token: first.lease.token,
    data: { step: "called-api", external_id: "X-9" },
  });
  assert.deepEqual([saved.status, saved.body], [200, { id }]);
  assert.deepEqual((await getJob(server, id)).checkpoint, {
    step: "called-api",
    external_id: "X-9",
  });
  await server.advance(1000); // the consumer "crashed": its lease runs out
  const second = await leaseOne(server, "q");
  assert.equal(second.attempt, 2);
  assert.deepEqual(second.checkpoint, { step: "called-api", external_id: "X-9" });
});

Deno.test("POST /v1/jobs/{id}/checkpoint keeps only the latest value, even a null one", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${id}/checkpoint`, { token, data: 1 });
  await server.request("POST", `/v1/jobs/${id}/checkpoint`, { token, data: [2] });
  assert.deepEqual((await getJob(server, id)).checkpoint, [2]);
  await server.request("POST", `/v1/jobs/${id}/nack`, { token, delay_ms: 0 });
  assert.deepEqual((await leaseOne(server, "q")).checkpoint, [2], "carried across a nack too");
});

Deno.test("POST /v1/jobs/{id}/checkpoint with a stale token answers 409 and stores nothing", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const old = await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(1000);
  await leaseOne(server, "q");
  const late = await server.request("POST", `/v1/jobs/${id}/checkpoint`, {
    token: old.lease.token,
    data: "late",
  });
  assert.deepEqual([late.status, late.body.error.code], [409, "lease_lost"]);
  assert.equal((await getJob(server, id)).checkpoint, null);
  const unknown = await server.request("POST", "/v1/jobs/424242/checkpoint", {
    token: old.lease.token,
    data: 1,
  });
  assert.equal(unknown.status, 404);
});

// ---- lifecycle ----

Deno.test("an expired lease puts the job back to pending at once, and the next delivery is attempt 2", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(999);
  assert.equal((await getJob(server, id)).state, "leased");
  await server.advance(1);
  const job = await getJob(server, id);
  assert.equal(job.state, "pending", "no backoff after an expiry");
  assert.equal(job.attempts, 1);
  assert.equal(job.lease_expires_at, null);
  const again = await leaseOne(server, "q");
  assert.deepEqual([again.id, again.attempt], [id, 2]);
});

Deno.test("an expired lease on the last attempt sends the job to dead", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, max_attempts: 1 });
  await leaseOne(server, "q", { lease_ms: 1000 });
  await server.advance(1000);
  const job = await getJob(server, id);
  assert.equal(job.state, "dead");
  assert.match(job.last_error, /expired/);
  assert.deepEqual(await lease(server, "q"), []);
  const dead = await server.request("GET", "/v1/queues/q/dead");
  assert.deepEqual(dead.body.jobs.map((j: { id: number }) => j.id), [id]);
});

Deno.test("a done job is kept for retainDoneMs, then swept", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 60_000 } });
  const id = await enqueue(server, "q", { payload: 1, key: "once" });
  const { lease: { token } } = await leaseOne(server, "q");
  await server.request("POST", `/v1/jobs/${id}/ack`, { token });
  for (let elapsed = 0; elapsed < 60_000; elapsed += 10_000) {
    await server.advance(10_000);
    assert.equal((await getJob(server, id)).state, "done", `kept after ${elapsed + 10_000} ms`);
  }
  // The sweep runs every quarter of the retention: two more rounds are enough.
  await server.advance(15_000);
  await server.advance(15_000);
  assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 404);
  assert.equal((await stats(server, "q")).counts.done, 0);
  assert.equal(await enqueue(server, "q", { payload: 2, key: "once" }) > id, true, "key freed");
});

Deno.test("with retainDoneMs 0, an ack deletes its job at once, but one waited on is read first", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 0 } });
  const id = await enqueue(server, "q", { payload: 1, key: "once" });
  const { lease: { token } } = await leaseOne(server, "q");
  assert.equal((await server.request("POST", `/v1/jobs/${id}/ack`, { token })).status, 200);
  // No sweep ran: the clock did not move.
  assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 404);
  const repeated = await server.request("POST", `/v1/jobs/${id}/ack`, { token });
  assert.equal(repeated.status, 404);
  assert.equal(repeated.body.error.code, "not_found");
  assert.equal(await enqueue(server, "q", { payload: 2, key: "once" }) > id, true, "key freed");

  const waited = await enqueue(server, "q", { payload: 3 });
  const waiting = server.request("GET", `/v1/jobs/${waited}?wait_ms=5000`);
  const next = await leaseOne(server, "q");
  assert.equal(next.id, id + 1, "the job of key once, first in line");
  const mine = await leaseOne(server, "q");
  assert.equal(mine.id, waited);
  await server.request("POST", `/v1/jobs/${waited}/ack`, {
    token: mine.lease.token,
    result: { ok: true },
  });
  const answer = await waiting;
  assert.equal(answer.body.state, "done");
  assert.deepEqual(answer.body.result, { ok: true });
  // Kept for the waiter, then swept as --retain-done 0 says (the sweep runs every second).
  for (let i = 0; i < 3; i++) await server.advance(1000);
  assert.equal((await server.request("GET", `/v1/jobs/${waited}`)).status, 404);
});

Deno.test("a GET waiting on a job a sweep deletes answers 404 then, not when its wait runs out", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 4000 } });
  const put = await server.request("PUT", "/v1/queues/q/settings", { retain_pending_ms: 1000 });
  assert.equal(put.status, 200);
  const id = await enqueue(server, "q", { payload: 1 });
  const waiting = server.request("GET", `/v1/jobs/${id}?wait_ms=60000`);
  for (let i = 0; i < 3; i++) await server.advance(1000);
  const answer = await within(waiting, 5000);
  assert.ok(answer !== "timed out", "still waiting for a job that is gone");
  assert.equal(answer.status, 404);
  assert.equal(answer.body.error.code, "not_found");
});

Deno.test("a cancelled job is swept after retainDoneMs like a done one", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 4000 } });
  const id = await enqueue(server, "q", { payload: 1, key: "k" });
  await server.request("DELETE", `/v1/jobs/${id}`);
  await server.advance(3000);
  assert.equal((await getJob(server, id)).state, "cancelled");
  for (let i = 0; i < 3; i++) await server.advance(1000);
  assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 404);
});

Deno.test("a dead job is not swept by the done retention", async () => {
  await using server = await startTestServer({ config: { retainDoneMs: 1000 } });
  const id = await deadJob(server, "q", 1);
  for (let i = 0; i < 5; i++) await server.advance(1000);
  assert.equal((await getJob(server, id)).state, "dead");
});

// Both of the following fail today because of lib/core/broker.ts (not this suite's to fix): the broker
// keeps one timer for the earliest deadline, but arms it from `jobs[0].lease.expires_at` of a
// claim (in lease() and #handOver()) and never re-arms on extend(), so a lease ending earlier
// than the armed time stays "leased" until some later tick.

Deno.test("a lease call taking jobs with different lease lengths returns each at its own expiry", async () => {
  await using server = await startTestServer();
  const long = await enqueue(server, "q", { payload: 1, lease_ms: 30_000, priority: 1 });
  const short = await enqueue(server, "q", { payload: 2, lease_ms: 1000 });
  const jobs = await lease(server, "q", { max: 2 });
  assert.deepEqual(jobs.map((d) => d.id), [long, short]);
  await server.advance(1000);
  assert.equal((await getJob(server, short)).state, "pending", "the short lease expired at once");
  assert.equal((await getJob(server, long)).state, "leased");
  assert.deepEqual([(await leaseOne(server, "q")).id], [short]);
});

Deno.test("a lease shortened by extend expires at its new, earlier time", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  const { lease: { token } } = await leaseOne(server, "q", { lease_ms: 30_000 });
  const extend = await server.request("POST", `/v1/jobs/${id}/extend`, { token, lease_ms: 1000 });
  assert.equal(extend.body.expires_at, server.clock.now() + 1000);
  await server.advance(1000);
  assert.equal((await getJob(server, id)).state, "pending", "returned at once, not after 30 s");
  assert.equal((await leaseOne(server, "q")).attempt, 2);
});
