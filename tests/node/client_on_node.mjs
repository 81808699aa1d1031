// The client SDK on Node, run by tests/node/run.ts with Node's own test runner: the SDK bundled
// to one ES module (TEGAMI_CLIENT), against a real tegami server (TEGAMI_URL, started with
// --backoff-base 50ms). On Node the SDK sends through node:http and consumes ws:// on node:net
// (run.ts still gives Node 20 --experimental-websocket here, and checks it without the flag in
// no_websocket_on_node.mjs). `deno task contract` runs it
// too, with TEGAMI_HTTP_URL pointing the producer's calls through Prism's validating proxy.
import assert from "node:assert/strict";
import { test } from "node:test";

const { consume, JobFailure, TegamiClient, TegamiError } = await import(process.env.TEGAMI_CLIENT);
const url = process.env.TEGAMI_URL;
// The producer's calls may go another way (the contract run sends them through Prism's proxy);
// consumers' WebSockets always go to the server.
const client = new TegamiClient({ url: process.env.TEGAMI_HTTP_URL ?? url });
let queues = 0;
const queue = (name) => `node.${name}.${++queues}.${process.pid}`;

async function eventually(check, what, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test("TegamiClient covers every producer and admin call", async () => {
  const q = queue("p");
  const one = await client.enqueue(q, { n: 1 }, { priority: 3, key: "a", maxAttempts: 2 });
  assert.deepEqual(one, { id: one.id, deduplicated: false, duplicate: null });
  assert.equal((await client.enqueue(q, { n: 2 }, { key: "a" })).deduplicated, true);
  const batch = await client.enqueueBatch(q, [
    { payload: 1 },
    { payload: 2, delayMs: 60_000, backoff: { baseMs: 10, maxMs: 100 } },
  ]);
  assert.equal(batch.length, 2);
  const job = await client.get(one.id);
  assert.equal(job.priority, 3);
  assert.equal(job.max_attempts, 2);
  assert.deepEqual((await client.get(batch[1].id)).backoff, { base_ms: 10, max_ms: 100 });
  assert.equal((await client.stats(q)).counts.pending, 2);
  assert.equal((await client.stats(q)).counts.delayed, 1);
  assert.ok((await client.queues()).some((s) => s.name === q));
  assert.deepEqual(await client.pause(q), { name: q, paused: true });
  assert.deepEqual(await client.resume(q), { name: q, paused: false });
  assert.equal((await client.cancel(batch[0].id)).state, "cancelled");
  assert.deepEqual(await client.listDead(q), { jobs: [], next_after: null });
  assert.equal(await client.requeueDead(q), 0);
});

test("TegamiClient rebuilds server errors as TegamiError with the server's code", async () => {
  await assert.rejects(client.get(99_999_999), (error) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "not_found");
    return true;
  });
  await assert.rejects(client.enqueue("bad name!", 1), { code: "validation_failed" });
  const offline = new TegamiClient({ url: "http://127.0.0.1:1" });
  await assert.rejects(offline.get(1), { code: "unavailable" });
});

test("consume() acks with the handler's return value as the result", async () => {
  const q = queue("c");
  const worker = consume(q, (payload, ctx) => {
    assert.equal(ctx.attempt, 1);
    return { doubled: payload.n * 2 };
  }, { url, concurrency: 4 });
  await worker.ready();
  const ids = await Promise.all([1, 2, 3].map(async (n) => (await client.enqueue(q, { n })).id));
  await eventually(async () => (await client.stats(q)).counts.done === 3, "3 done");
  for (const [i, id] of ids.entries()) {
    assert.deepEqual((await client.get(id)).result, { doubled: (i + 1) * 2 });
  }
  await worker.close();
});

test("consume() turns handler errors into nacks with backoff, and JobFailure into dead", async () => {
  const q = queue("f");
  const attempts = [];
  const worker = consume(q, (payload, ctx) => {
    if (payload === "dead") throw new JobFailure("hopeless", { dead: true });
    attempts.push(ctx.attempt);
    if (ctx.attempt < 3) throw new Error(`failed on attempt ${ctx.attempt}`);
    return "finally";
  }, { url });
  await worker.ready();
  const { id } = await client.enqueue(q, "retry");
  const dead = await client.enqueue(q, "dead");
  await eventually(async () => (await client.get(id)).state === "done", "retried job done");
  assert.deepEqual(attempts, [1, 2, 3]);
  const job = await client.get(id);
  assert.equal(job.last_error, "failed on attempt 2");
  assert.equal(job.result, "finally");
  await eventually(async () => (await client.get(dead.id)).state === "dead", "dead job");
  assert.equal((await client.get(dead.id)).last_error, "hopeless");
  await worker.close();
});

test("consume() extends the lease: a 1.5 s job survives a 500 ms lease", async () => {
  const q = queue("slow");
  let runs = 0;
  const worker = consume(q, async () => {
    runs++;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    return "ok";
  }, { url, leaseMs: 500 });
  await worker.ready();
  const { id } = await client.enqueue(q, 1);
  await eventually(async () => (await client.get(id)).state === "done", "slow job done", 8000);
  assert.equal(runs, 1);
  assert.equal((await client.get(id)).attempts, 1);
  await worker.close();
});

test("consume() saves checkpoints that the next attempt sees", async () => {
  const q = queue("cp");
  const seen = [];
  const worker = consume(q, async (_payload, ctx) => {
    seen.push(ctx.checkpoint);
    if (ctx.attempt === 1) {
      await ctx.saveCheckpoint({ external: "task-42" });
      throw new Error("crash after calling out");
    }
    return ctx.checkpoint;
  }, { url });
  await worker.ready();
  const { id } = await client.enqueue(q, 1);
  await eventually(async () => (await client.get(id)).state === "done", "done");
  assert.deepEqual(seen, [null, { external: "task-42" }]);
  assert.deepEqual((await client.get(id)).result, { external: "task-42" });
  await worker.close();
});

test("consume() aborts the handler's signal when its job is cancelled", async () => {
  const q = queue("x");
  let aborted = null;
  let started;
  const running = new Promise((resolve) => started = resolve);
  const worker = consume(q, async (_payload, ctx) => {
    started();
    await new Promise((resolve) => {
      ctx.signal.addEventListener("abort", () => {
        aborted = ctx.signal.reason;
        resolve();
      });
    });
  }, { url });
  await worker.ready();
  const { id } = await client.enqueue(q, 1);
  await running;
  await client.cancel(id);
  await eventually(() => aborted !== null, "abort", 3000);
  assert.ok(aborted instanceof TegamiError);
  assert.equal((await client.get(id)).state, "cancelled");
  await worker.close();
});

test("close() stops taking jobs and waits for running handlers to ack", async () => {
  const q = queue("d");
  let started;
  const running = new Promise((resolve) => started = resolve);
  const worker = consume(q, async () => {
    started();
    await new Promise((resolve) => setTimeout(resolve, 300));
    return "drained";
  }, { url, prefetch: 5 });
  await worker.ready();
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await client.enqueue(q, i)).id);
  await running;
  await worker.close();
  const states = await Promise.all(ids.map(async (id) => (await client.get(id)).state));
  assert.equal(states.filter((s) => s === "done").length, 1, `states: ${states}`);
  assert.equal(states.filter((s) => s === "pending" || s === "delayed").length, 4);
  assert.equal(worker.running, 0);
});

test("watch() resolves each of several watches with its own job's end", async () => {
  const q = queue("watch");
  const direct = new TegamiClient({ url });
  const ids = [];
  for (let n = 0; n < 3; n++) ids.push((await direct.enqueue(q, { n })).id);
  const watched = ids.map((id) => direct.watch(id));
  const worker = consume(q, (payload) => payload.n + 100, { url });
  try {
    const ends = await Promise.all(watched);
    assert.deepEqual(ends.map((end) => [end.id, end.state, end.result]), [
      [ids[0], "done", 100],
      [ids[1], "done", 101],
      [ids[2], "done", 102],
    ]);
  } finally {
    await worker.close();
  }
});
