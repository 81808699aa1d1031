import assert from "node:assert/strict";
import { consume, JobFailure, TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";
import { tempDir } from "../helpers/temp_dir.ts";

Deno.test("TegamiClient covers every producer and admin call", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const one = await client.enqueue("p", { n: 1 }, { priority: 3, key: "a", maxAttempts: 2 });
  assert.deepEqual(one, { id: one.id, deduplicated: false, duplicate: null });
  assert.equal((await client.enqueue("p", { n: 2 }, { key: "a" })).deduplicated, true);
  const batch = await client.enqueueBatch("p", [
    { payload: 1 },
    { payload: 2, delayMs: 60_000, backoff: { baseMs: 10, maxMs: 100 } },
  ]);
  assert.equal(batch.length, 2);
  const job = await client.get(one.id);
  assert.equal(job.priority, 3);
  assert.equal(job.max_attempts, 2);
  assert.deepEqual((await client.get(batch[1].id)).backoff, { base_ms: 10, max_ms: 100 });
  assert.equal((await client.stats("p")).counts.pending, 2);
  assert.equal((await client.stats("p")).counts.delayed, 1);
  assert.deepEqual((await client.queues()).map((q) => q.name), ["p"]);
  assert.deepEqual(await client.pause("p"), { name: "p", paused: true });
  assert.deepEqual(await client.resume("p"), { name: "p", paused: false });
  assert.equal((await client.cancel(batch[0].id)).state, "cancelled");
  assert.deepEqual(await client.listDead("p"), { jobs: [], next_after: null });
  assert.equal(await client.requeueDead("p"), 0);
});

Deno.test("TegamiClient rebuilds server errors as TegamiError with the server's code", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  await assert.rejects(client.get(999), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "not_found");
    return true;
  });
  await assert.rejects(client.enqueue("bad name!", 1), { code: "validation_failed" });
  const offline = new TegamiClient({ url: "http://127.0.0.1:1" });
  await assert.rejects(offline.get(1), { code: "unavailable" });
});

Deno.test("consume() acks with the handler's return value as the result", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const worker = consume<{ n: number }>("c", (payload, ctx) => {
    assert.equal(ctx.attempt, 1);
    return { doubled: payload.n * 2 };
  }, { url: server.url, concurrency: 4 });
  await worker.ready();
  const ids = await Promise.all([1, 2, 3].map(async (n) => (await client.enqueue("c", { n })).id));
  await eventually(async () => (await client.stats("c")).counts.done === 3, "3 done", 5000);
  for (const [i, id] of ids.entries()) {
    assert.deepEqual((await client.get(id)).result, { doubled: (i + 1) * 2 });
  }
  await worker.close();
});

Deno.test("consume() turns handler errors into nacks with backoff, and JobFailure into dead", async () => {
  await using server = await startTestServer({ realTime: true, config: { backoffBaseMs: 50 } });
  const client = new TegamiClient({ url: server.url });
  const attempts: number[] = [];
  const worker = consume("f", (payload, ctx) => {
    if (payload === "dead") throw new JobFailure("hopeless", { dead: true });
    attempts.push(ctx.attempt);
    if (ctx.attempt < 3) throw new Error(`failed on attempt ${ctx.attempt}`);
    return "finally";
  }, { url: server.url });
  await worker.ready();
  const { id } = await client.enqueue("f", "retry");
  const dead = await client.enqueue("f", "dead");
  await eventually(async () => (await client.get(id)).state === "done", "retried job done", 5000);
  assert.deepEqual(attempts, [1, 2, 3]);
  const job = await client.get(id);
  assert.equal(job.last_error, "failed on attempt 2");
  assert.equal(job.result, "finally");
  await eventually(async () => (await client.get(dead.id)).state === "dead", "dead job", 5000);
  assert.equal((await client.get(dead.id)).last_error, "hopeless");
  await worker.close();
});

Deno.test("consume() extends the lease: a 3 s job survives a 1 s lease", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  let runs = 0;
  const worker = consume("slow", async () => {
    runs++;
    await new Promise((resolve) => setTimeout(resolve, 3000));
    return "ok";
  }, { url: server.url, leaseMs: 1000 });
  await worker.ready();
  const { id } = await client.enqueue("slow", 1);
  await eventually(async () => (await client.get(id)).state === "done", "slow job done", 8000);
  assert.equal(runs, 1);
  assert.equal((await client.get(id)).attempts, 1);
  await worker.close();
});

Deno.test("consume() saves checkpoints that the next attempt sees", async () => {
  await using server = await startTestServer({ realTime: true, config: { backoffBaseMs: 10 } });
  const client = new TegamiClient({ url: server.url });
  const seen: unknown[] = [];
  const worker = consume("cp", async (_payload, ctx) => {
    seen.push(ctx.checkpoint);
    if (ctx.attempt === 1) {
      await ctx.saveCheckpoint({ external: "task-42" });
      throw new Error("crash after calling out");
    }
    return ctx.checkpoint;
  }, { url: server.url });
  await worker.ready();
  const { id } = await client.enqueue("cp", 1);
  await eventually(async () => (await client.get(id)).state === "done", "done", 5000);
  assert.deepEqual(seen, [null, { external: "task-42" }]);
  assert.deepEqual((await client.get(id)).result, { external: "task-42" });
  await worker.close();
});

Deno.test("consume() aborts the handler's signal when its job is cancelled", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  let aborted: unknown = null;
  const started = Promise.withResolvers<void>();
  const worker = consume("x", async (_payload, ctx) => {
    started.resolve();
    await new Promise<void>((resolve) => {
      ctx.signal.addEventListener("abort", () => {
        aborted = ctx.signal.reason;
        resolve();
      });
    });
  }, { url: server.url });
  await worker.ready();
  const { id } = await client.enqueue("x", 1);
  await started.promise;
  await client.cancel(id);
  await eventually(() => aborted !== null, "abort", 3000);
  assert.ok(aborted instanceof TegamiError);
  assert.equal((await client.get(id)).state, "cancelled");
  await worker.close();
});

Deno.test("close() stops taking jobs and waits for running handlers to ack", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const started = Promise.withResolvers<void>();
  const worker = consume("d", async () => {
    started.resolve();
    await new Promise((resolve) => setTimeout(resolve, 300));
    return "drained";
  }, { url: server.url, prefetch: 5 });
  await worker.ready();
  const ids = [];
  for (let i = 0; i < 5; i++) ids.push((await client.enqueue("d", i)).id);
  await started.promise;
  await worker.close();
  const states = await Promise.all(ids.map(async (id) => (await client.get(id)).state));
  assert.equal(states.filter((s) => s === "done").length, 1, `states: ${states}`);
  assert.equal(states.filter((s) => s === "pending" || s === "delayed").length, 4);
  assert.equal(worker.running, 0);
});

Deno.test("consume() survives a server restart mid-stream without losing or double-acking", async () => {
  await using tmp = await tempDir("tegami-client-restart-");
  const dir = tmp.path;
  let server = await startTestServer({ dir, realTime: true });
  const url = server.url;
  const port = Number(new URL(url).port);
  const client = new TegamiClient({ url });
  const handled = new Map<number, number>();
  const worker = consume<number>("r", async (n) => {
    handled.set(n, (handled.get(n) ?? 0) + 1);
    await new Promise((resolve) => setTimeout(resolve, 5));
    return n;
  }, { url, concurrency: 4, reconnectInitialMs: 20, reconnectMaxMs: 200 });
  await worker.ready();
  await client.enqueueBatch("r", Array.from({ length: 200 }, (_, n) => ({ payload: n })));
  await eventually(() => handled.size > 20, "some progress", 5000);
  await server.stop();
  server = await startTestServer({ dir, realTime: true, config: { port } });
  try {
    try {
      await eventually(
        async () => (await client.stats("r")).counts.done === 200,
        "all 200 done after the restart",
        15_000,
      );
    } catch (error) {
      const stuck = [];
      for (let id = 1; id <= 200; id++) {
        const job = await client.get(id);
        if (job.state !== "done") {
          stuck.push(`${id}:${job.state}:${job.attempts}:${handled.get(job.payload as number)}`);
        }
      }
      console.log(
        "STUCK",
        stuck.join(" "),
        "running",
        worker.running,
        "connected",
        worker.connected,
      );
      throw error;
    }
    assert.equal(handled.size, 200);
    const stats = await client.stats("r");
    assert.equal(stats.counts.pending + stats.counts.leased + stats.counts.dead, 0);
    await worker.close();
  } finally {
    await server.stop();
  }
});

Deno.test("consume() takes an ack sent again and answered not_found, its job deleted by the first, as acked", async () => {
  await using server = await startTestServer({ realTime: true, config: { retainDoneMs: 0 } });
  const client = new TegamiClient({ url: server.url });
  const sent: string[] = [];
  let cut = false;
  /** Sends the first ack, then hears nothing more and drops the connection: its reply is lost. */
  class CuttingSocket extends WebSocket {
    #deaf = false;
    constructor(url: string | URL, protocols?: string | string[] | WebSocketOptions) {
      super(url, protocols);
      // Ahead of the consumer's own handler, which it set later.
      this.addEventListener("message", (event) => {
        if (this.#deaf) event.stopImmediatePropagation();
      });
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      sent.push(String(data));
      super.send(data);
      if (!cut && String(data).includes('"op":"ack"')) {
        cut = true;
        this.#deaf = true;
        setTimeout(() => this.close(), 100);
      }
    }
  }
  const errors: unknown[] = [];
  let runs = 0;
  const worker = consume("cut", () => {
    runs++;
    return "ok";
  }, {
    url: server.url,
    WebSocket: CuttingSocket,
    reconnectInitialMs: 20,
    onError: (error) => errors.push(error),
  });
  try {
    await worker.ready();
    const { id } = await client.enqueue("cut", 1);
    await eventually(() => sent.filter((f) => f.includes('"op":"ack"')).length === 2, "resent");
    await eventually(() => worker.running === 0, "settled");
    assert.equal(runs, 1);
    await assert.rejects(client.get(id), (e) => e instanceof TegamiError && e.code === "not_found");
    assert.deepEqual(errors, []);
  } finally {
    await worker.close();
  }
});
