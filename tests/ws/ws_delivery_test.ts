/**
 * WebSocket push delivery over real sockets: subscriptions, credit, fairness, and how leases
 * end (ack, cancel, expiry, a consumer going away). Time moves with the test clock; real waits
 * are only for frames crossing the socket.
 */

import assert from "node:assert/strict";
import { enqueue, getJob } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { eventually, type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";

/** How long "nothing more arrives" is watched, ms of real time. */
const QUIET_MS = 100;

async function enqueueMany(server: TestServer, queue: string, n: number): Promise<number[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({ payload: i }));
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, { jobs });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body.jobs.map((j: { id: number }) => j.id);
}

async function counts(server: TestServer, queue: string): Promise<Record<string, number>> {
  return (await server.request("GET", `/v1/queues/${queue}`)).body.counts;
}

function connect(server: TestServer): Promise<WsClient> {
  return WsClient.connect(wsUrl(server.url));
}

const isJob = (f: Frame) => f.op === "job";

/** A server, a socket subscribed to "w" with prefetch 1, and one job enqueued and pushed to it. */
async function pushedJob(
  body: Record<string, unknown> = { payload: 1 },
  subscription: Record<string, unknown> = {},
): Promise<{ server: TestServer; ws: WsClient; id: number; job: Frame } & AsyncDisposable> {
  const server = await startTestServer();
  try {
    const ws = await connect(server);
    try {
      await ws.subscribe("w", 1, subscription);
      const id = await enqueue(server, "w", body);
      const job = await ws.nextJob();
      const dispose = async () => {
        await ws[Symbol.asyncDispose]();
        await server[Symbol.asyncDispose]();
      };
      return { server, ws, id, job, [Symbol.asyncDispose]: dispose };
    } catch (error) {
      await ws[Symbol.asyncDispose]();
      throw error;
    }
  } catch (error) {
    await server[Symbol.asyncDispose]();
    throw error;
  }
}

Deno.test("subscribe answers ok with the queue and prefetch, echoing the ref", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const numeric = await ws.request({ op: "subscribe", ref: 7, queue: "w", prefetch: 3 });
  assert.deepEqual(numeric, { op: "ok", ref: 7, queue: "w", prefetch: 3 });
  const text = await ws.request({ op: "subscribe", ref: "again", queue: "v", prefetch: 1000 });
  assert.deepEqual(text, { op: "ok", ref: "again", queue: "v", prefetch: 1000 });
});

Deno.test("a job enqueued after subscribing is pushed without polling, with its lease", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 2);
  const id = await enqueue(server, "w", { payload: { to: "a@b" }, priority: 3, key: "k1" });
  const job = await ws.nextJob();
  const now = server.clock.now();
  assert.equal(typeof job.lease.token, "string");
  assert.ok(job.lease.token.length >= 16);
  assert.deepEqual(job, {
    op: "job",
    id,
    queue: "w",
    state: "leased",
    payload: { to: "a@b" },
    attributes: null,
    priority: 3,
    key: "k1",
    key_expires_at: null,
    group: null,
    attempts: 1,
    max_attempts: 5,
    run_at: now,
    lease_ms: null,
    backoff: null,
    created_at: now,
    checkpoint: null,
    progress: null,
    progress_at: null,
    result: null,
    last_error: null,
    lease_expires_at: now + 30_000,
    finished_at: null,
    dead_lettered_from: null,
    attempt: 1,
    lease: { token: job.lease.token, expires_at: now + 30_000 },
  });
  assert.equal((await getJob(server, id)).state, "leased");
});

Deno.test("jobs waiting before the subscribe are pushed at once, highest priority first", async () => {
  await using server = await startTestServer();
  const low = await enqueue(server, "w", { payload: "low" });
  const high = await enqueue(server, "w", { payload: "high", priority: 10 });
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  const first = await ws.nextJob();
  assert.equal(first.id, high);
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  assert.equal((await getJob(server, low)).state, "pending");
  await ws.ok({ op: "ack", id: high, token: first.lease.token });
  assert.equal((await ws.nextJob()).id, low);
});

Deno.test("a subscription never holds more jobs than its prefetch; each ack frees one credit", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 2);
  await enqueueMany(server, "w", 10);
  const [a, b] = await ws.jobs(2);
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), [], "a third job came past the credit");
  assert.deepEqual(await counts(server, "w"), {
    blocked: 0,
    pending: 8,
    delayed: 0,
    leased: 2,
    done: 0,
    dead: 0,
    cancelled: 0,
  });

  await ws.ok({ op: "ack", id: a.id, token: a.lease.token });
  const c = await ws.nextJob();
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), [], "one ack brought more than one job");

  await ws.ok({ op: "nack", id: b.id, token: b.lease.token, delay_ms: 60_000 });
  await ws.nextJob();
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  assert.notEqual(c.id, a.id);
  assert.equal((await counts(server, "w")).leased, 2);
});

Deno.test("consumers of a queue take turns when jobs arrive one by one", async () => {
  await using server = await startTestServer();
  await using a = await connect(server);
  await using b = await connect(server);
  await a.subscribe("w", 10);
  await b.subscribe("w", 10);
  // A first job settles the subscriptions' own dispatch passes before turns are counted.
  await enqueue(server, "w", { payload: "warm-up" });
  await eventually(() => a.frames.length + b.frames.length === 1, "the warm-up job delivered");
  const owners: string[] = [];
  for (let i = 0; i < 6; i++) {
    const before = a.frames.length;
    await enqueue(server, "w", { payload: i });
    await eventually(() => a.frames.length + b.frames.length === i + 2, `job ${i} delivered`);
    owners.push(a.frames.length > before ? "a" : "b");
  }
  // Strict alternation, whoever starts.
  for (let i = 1; i < owners.length; i++) {
    assert.notEqual(owners[i], owners[i - 1], `not round-robin: ${owners.join(",")}`);
  }
});

Deno.test("a burst of jobs is spread over idle consumers, not all given to the first", async () => {
  // Fewer jobs than credit: they spread across consumers instead of filling the first one's
  // prefetch (docs/protocol.md, "Flow control").
  await using server = await startTestServer();
  await using a = await connect(server);
  await using b = await connect(server);
  await a.subscribe("w", 10);
  await b.subscribe("w", 10);
  await enqueueMany(server, "w", 10);
  await eventually(() => a.frames.length + b.frames.length === 10, "10 jobs delivered");
  const split = [a.frames.length, b.frames.length];
  assert.ok(Math.abs(split[0] - split[1]) <= 1, `unfair split of a burst: ${split.join(" / ")}`);
});

Deno.test("one connection holds several subscriptions, each with its own prefetch and lease_ms", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("short", 1, { lease_ms: 5000 });
  await ws.subscribe("long", 3, { lease_ms: 60_000 });
  await enqueueMany(server, "short", 4);
  await enqueueMany(server, "long", 4);
  const now = server.clock.now();
  const short = await ws.jobs(1, "short");
  const long = await ws.jobs(3, "long");
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  for (const job of short) assert.equal(job.lease.expires_at, now + 5000);
  for (const job of long) assert.equal(job.lease.expires_at, now + 60_000);
  assert.equal((await getJob(server, short[0].id)).lease_expires_at, now + 5000);
});

Deno.test("without a subscription lease_ms, a job's own lease_ms wins over the server's", async () => {
  await using server = await startTestServer({ config: { leaseMs: 20_000 } });
  await using ws = await connect(server);
  await ws.subscribe("w", 2);
  const own = await enqueue(server, "w", { payload: 1, lease_ms: 7000 });
  const plain = await enqueue(server, "w", { payload: 2 });
  const now = server.clock.now();
  const jobs = await ws.jobs(2);
  const expiry = new Map(jobs.map((j) => [j.id, j.lease.expires_at]));
  assert.equal(expiry.get(own), now + 7000);
  assert.equal(expiry.get(plain), now + 20_000);
});

Deno.test("subscribing again to a queue changes its prefetch and pushes the new credit", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  await enqueueMany(server, "w", 5);
  await ws.jobs(1);
  assert.deepEqual(await ws.subscribe("w", 3), { op: "ok", ref: "r2", queue: "w", prefetch: 3 });
  await ws.jobs(2);
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  assert.equal((await counts(server, "w")).leased, 3);
});

Deno.test("unsubscribe stops pushes, and a job already held can still be acked", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  const [first, second] = await enqueueMany(server, "w", 2);
  const held = await ws.nextJob();
  assert.equal(held.id, first);
  assert.deepEqual(await ws.request({ op: "unsubscribe", ref: 1, queue: "w" }), {
    op: "ok",
    ref: 1,
    queue: "w",
  });
  await ws.ok({ op: "ack", id: held.id, token: held.lease.token });
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  assert.equal((await getJob(server, second)).state, "pending");
  assert.equal((await server.request("GET", "/v1/queues/w")).body.consumers, 0);
});

Deno.test("ack over the socket answers id and state, stores the result, and echoes the ref", async () => {
  await using pushed = await pushedJob();
  const { server, ws, id, job } = pushed;
  const reply = await ws.request({
    op: "ack",
    ref: "a1",
    id,
    token: job.lease.token,
    result: { sent: true },
  });
  assert.deepEqual(reply, { op: "ok", ref: "a1", id, state: "done" });
  const stored = await getJob(server, id);
  assert.equal(stored.state, "done");
  assert.deepEqual(stored.result, { sent: true });
  // Retrying the same ack answers the same (idempotent), a made-up token does not.
  assert.deepEqual(await ws.request({ op: "ack", ref: 2, id, token: job.lease.token }), {
    op: "ok",
    ref: 2,
    id,
    state: "done",
  });
  const stale = await ws.request({ op: "ack", ref: 3, id, token: "not-the-token" });
  assert.equal(stale.code, "lease_lost");
  assert.equal(stale.id, id);
});

Deno.test("nack over the socket answers id, state and run_at: delay, backoff, dead", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 3);
  await enqueueMany(server, "w", 3);
  const [a, b, c] = await ws.jobs(3);
  const now = server.clock.now();

  const delayed = await ws.request({
    op: "nack",
    ref: 1,
    id: a.id,
    token: a.lease.token,
    error: "smtp down",
    delay_ms: 5000,
  });
  assert.deepEqual(delayed, { op: "ok", ref: 1, id: a.id, state: "delayed", run_at: now + 5000 });
  assert.equal((await getJob(server, a.id)).last_error, "smtp down");

  const backoff = await ws.request({ op: "nack", ref: 2, id: b.id, token: b.lease.token });
  assert.equal(backoff.state, "delayed");
  // First retry: base 1 s scaled by a factor in [0.5, 1].
  assert.ok(backoff.run_at >= now + 500 && backoff.run_at <= now + 1000, `${backoff.run_at}`);

  const dead = await ws.request({ op: "nack", ref: 3, id: c.id, token: c.lease.token, dead: true });
  assert.deepEqual(dead, { op: "ok", ref: 3, id: c.id, state: "dead", run_at: now });
  assert.equal((await getJob(server, c.id)).state, "dead");
});

Deno.test("extend over the socket answers the new expiry and keeps the lease past the old one", async () => {
  await using pushed = await pushedJob({ payload: 1 }, { lease_ms: 1000 });
  const { server, ws, id, job } = pushed;
  await server.advance(500);
  const reply = await ws.request({
    op: "extend",
    ref: 9,
    id,
    token: job.lease.token,
    lease_ms: 5000,
  });
  assert.deepEqual(reply, { op: "ok", ref: 9, id, expires_at: server.clock.now() + 5000 });
  await server.advance(2000); // past the first expiry
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "expired"), []);
  assert.equal((await getJob(server, id)).state, "leased");
  // Without lease_ms, extend renews by the lease length in force.
  const again = await ws.ok({ op: "extend", id, token: job.lease.token });
  assert.equal(again.expires_at, server.clock.now() + 5000);
  await ws.ok({ op: "ack", id, token: job.lease.token });
});

Deno.test("a checkpoint saved over the socket is carried by the next delivery, with the error", async () => {
  await using pushed = await pushedJob();
  const { ws, id, job: first } = pushed;
  const saved = await ws.request({
    op: "checkpoint",
    ref: "c",
    id,
    token: first.lease.token,
    data: { step: "called", task: "X-42" },
  });
  assert.deepEqual(saved, { op: "ok", ref: "c", id });
  const nack = await ws.ok({
    op: "nack",
    id,
    token: first.lease.token,
    error: "timeout",
    delay_ms: 0,
  });
  assert.equal(nack.state, "pending");
  const second = await ws.nextJob();
  assert.equal(second.id, id);
  assert.equal(second.attempt, 2);
  assert.deepEqual(second.checkpoint, { step: "called", task: "X-42" });
  assert.equal(second.last_error, "timeout");
  assert.notEqual(second.lease.token, first.lease.token);
});

Deno.test("enqueue over the socket answers id and deduplicated, for one job and a batch", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const one = await ws.request({ op: "enqueue", ref: 1, queue: "w", payload: { n: 1 }, key: "k" });
  assert.equal(one.op, "ok");
  assert.deepEqual(one, { op: "ok", ref: 1, id: one.id, deduplicated: false, duplicate: null });
  const dup = await ws.request({ op: "enqueue", ref: 2, queue: "w", payload: { n: 2 }, key: "k" });
  assert.deepEqual(dup, { op: "ok", ref: 2, id: one.id, deduplicated: true, duplicate: "ignored" });
  const batch = await ws.request({
    op: "enqueue",
    ref: 3,
    queue: "w",
    jobs: [{ payload: 1 }, { payload: 2, key: "k" }, { payload: 3, delay_ms: 1000 }],
  });
  assert.equal(batch.op, "ok");
  assert.equal(batch.ref, 3);
  assert.equal(batch.jobs.length, 3);
  assert.deepEqual(batch.jobs[1], { id: one.id, deduplicated: true, duplicate: "ignored" });
  assert.equal(batch.jobs[0].deduplicated, false);
  assert.equal(batch.jobs[2].deduplicated, false);
  assert.equal((await getJob(server, batch.jobs[0].id)).payload, 1);
  assert.equal((await getJob(server, batch.jobs[2].id)).state, "delayed");
  assert.deepEqual(await counts(server, "w"), {
    blocked: 0,
    pending: 2,
    delayed: 1,
    leased: 0,
    done: 0,
    dead: 0,
    cancelled: 0,
  });
});

Deno.test("a job enqueued over one socket is pushed to a subscriber on another", async () => {
  await using server = await startTestServer();
  await using producer = await connect(server);
  await using consumer = await connect(server);
  await consumer.subscribe("w", 1);
  const { id } = await producer.ok({ op: "enqueue", queue: "w", payload: "hi" });
  const job = await consumer.nextJob();
  assert.equal(job.id, id);
  assert.equal(job.payload, "hi");
});

Deno.test("cancelling a held job sends cancel, fails its ack with lease_lost, and frees its credit", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  const [first, second] = await enqueueMany(server, "w", 2);
  const held = await ws.nextJob();
  assert.equal(held.id, first);
  const cancel = await server.request("DELETE", `/v1/jobs/${first}`);
  assert.equal(cancel.status, 200);
  assert.equal(cancel.body.state, "cancelled");
  assert.deepEqual(await ws.next((f) => f.op === "cancel"), { op: "cancel", id: first });
  assert.equal((await ws.nextJob()).id, second);
  const ack = await ws.request({ op: "ack", id: first, token: held.lease.token });
  assert.equal(ack.op, "error");
  assert.equal(ack.code, "lease_lost");
  assert.equal(ack.id, first);
  assert.equal((await getJob(server, first)).state, "cancelled");
});

Deno.test("an expired lease sends expired and the job comes back with attempt 2", async () => {
  await using pushed = await pushedJob({ payload: 1 }, { lease_ms: 1000 });
  const { server, ws, id, job: first } = pushed;
  await server.advance(999);
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "expired"), []);
  await server.advance(1);
  assert.deepEqual(await ws.next((f) => f.op === "expired"), { op: "expired", id });
  const second = await ws.nextJob();
  assert.equal(second.id, id);
  assert.equal(second.attempt, 2);
  assert.equal(second.lease.expires_at, server.clock.now() + 1000);
  const stale = await ws.request({ op: "ack", id, token: first.lease.token });
  assert.equal(stale.code, "lease_lost");
  await ws.ok({ op: "ack", id, token: second.lease.token });
});

Deno.test("an ack over HTTP of a job pushed over the socket frees the subscription's credit", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  const [first, second] = await enqueueMany(server, "w", 2);
  const held = await ws.nextJob();
  assert.equal(held.id, first);
  const ack = await server.request("POST", `/v1/jobs/${first}/ack`, { token: held.lease.token });
  assert.equal(ack.status, 200);
  assert.equal((await ws.nextJob()).id, second);
});

Deno.test("closing a consumer returns its leases at once to another consumer, attempt 2", async () => {
  await using server = await startTestServer();
  await using b = await connect(server);
  const ids = await enqueueMany(server, "w", 2);
  {
    await using a = await connect(server);
    await a.subscribe("w", 2);
    const held = await a.jobs(2);
    assert.deepEqual(held.map((j) => j.id).sort(), ids);
    await b.subscribe("w", 2);
    assert.deepEqual(await b.quietFor(QUIET_MS, isJob), []);
  } // a closes here; no time passes on the clock
  const again = await b.jobs(2);
  assert.deepEqual(again.map((j) => j.id).sort(), ids);
  for (const job of again) assert.equal(job.attempt, 2);
});

Deno.test("a consumer's leases return to pending when it closes and nobody else listens", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "w", { payload: 1 });
  {
    await using ws = await connect(server);
    await ws.subscribe("w", 1);
    await ws.nextJob();
  }
  await eventually(async () => (await getJob(server, id)).state === "pending", "the release");
  const job = await getJob(server, id);
  assert.equal(job.attempts, 1);
  assert.equal(job.lease_expires_at, null);
});

Deno.test("delivery stops while a queue is paused and resumes when it is resumed", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  assert.equal((await server.request("POST", "/v1/queues/w/pause")).status, 200);
  await ws.subscribe("w", 1);
  const id = await enqueue(server, "w", { payload: 1 });
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  assert.equal((await server.request("POST", "/v1/queues/w/resume")).status, 200);
  assert.equal((await ws.nextJob()).id, id);
});

Deno.test("a dead job requeued over HTTP is pushed again with attempt 1", async () => {
  await using pushed = await pushedJob({ payload: 1, max_attempts: 1 });
  const { server, ws, id, job: first } = pushed;
  const nack = await ws.ok({ op: "nack", id, token: first.lease.token, error: "boom" });
  assert.equal(nack.state, "dead"); // attempts used up
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  const requeue = await server.request("POST", "/v1/queues/w/dead/requeue", {});
  assert.deepEqual(requeue.body, { requeued: 1 });
  const again = await ws.nextJob();
  assert.equal(again.id, id);
  assert.equal(again.attempt, 1);
});

Deno.test("a delayed job is pushed when it becomes due, not before", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.subscribe("w", 1);
  const id = await enqueue(server, "w", { payload: 1, delay_ms: 5000 });
  await server.advance(4999);
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  await server.advance(1);
  const job = await ws.nextJob();
  assert.equal(job.id, id);
  assert.equal(job.attempt, 1);
});

Deno.test("a job nacked with a delay is pushed again when the delay is over", async () => {
  await using pushed = await pushedJob();
  const { server, ws, id, job: first } = pushed;
  await ws.ok({ op: "nack", id, token: first.lease.token, delay_ms: 3000 });
  assert.deepEqual(await ws.quietFor(QUIET_MS, isJob), []);
  await server.advance(3000);
  const again = await ws.nextJob();
  assert.equal(again.id, id);
  assert.equal(again.attempt, 2);
});
