/**
 * The SDK's flows and waits against a real server: `createFlow()` and a handler's
 * `ctx.prerequisites` and `ctx.addNodes()`, `getFlow()`/`listFlows()`/`cancelFlow()`,
 * `enqueueAndWait()` and `waitFor()`, and `watch()` hearing progress and the end over a
 * WebSocket.
 */

import assert from "node:assert/strict";
import { consume, type JobContext, TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

Deno.test("a flow's jobs run in order, each handler seeing its prerequisites' results", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const seen: { ref: string | undefined; prerequisites: unknown }[] = [];
  const worker = consume<{ n: number }>("steps", (payload, ctx) => {
    seen.push({
      ref: ctx.flow?.ref,
      prerequisites: ctx.prerequisites.map((p) => [p.ref, p.state, p.result]),
    });
    return { doubled: payload.n * 2 };
  }, { url: server.url });
  try {
    await worker.ready();
    const created = await client.createFlow({
      key: "order-1",
      nodes: [
        { ref: "a", queue: "steps", payload: { n: 1 } },
        { ref: "b", queue: "steps", payload: { n: 2 }, dependsOn: ["a"] },
        {
          ref: "c",
          queue: "steps",
          payload: { n: 3 },
          dependsOn: ["a", { ref: "b", onFailure: "run" }],
        },
      ],
    });
    assert.equal(created.deduplicated, false);
    const c = await client.waitFor(created.jobs.c, { timeoutMs: 10_000 });
    assert.equal(c.state, "done");
    assert.deepEqual(seen, [
      { ref: "a", prerequisites: [] },
      { ref: "b", prerequisites: [["a", "done", { doubled: 2 }]] },
      { ref: "c", prerequisites: [["a", "done", { doubled: 2 }], ["b", "done", { doubled: 4 }]] },
    ]);
    const again = await client.createFlow({
      key: "order-1",
      nodes: [{ ref: "x", queue: "steps", payload: 0 }],
    });
    assert.deepEqual(again, { ...created, deduplicated: true });
    const flow = await client.getFlow(created.id);
    assert.equal(flow.counts.done, 3);
    assert.notEqual(flow.finished_at, null);
    assert.deepEqual(flow.nodes?.map((n) => n.ref), ["a", "b", "c"]);
    assert.deepEqual((await client.listFlows({ newest: true })).map((f) => f.id), [created.id]);
  } finally {
    await worker.close();
  }
});

Deno.test("a running job adds nodes to its flow; cancelFlow cancels what has not ended", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const pieces: number[] = [];
  const worker = consume<{ parts?: number; piece?: number }>("split", async (payload, ctx) => {
    if (payload.parts !== undefined && ctx.flow !== null) {
      const nodes = Array.from({ length: payload.parts }, (_, i) => ({
        ref: `piece-${i}`,
        queue: "split",
        payload: { piece: i },
      }));
      const added = await ctx.addNodes([
        ...nodes,
        { ref: "merge", queue: "merge", payload: {}, dependsOn: nodes.map((n) => n.ref) },
      ]);
      assert.equal(added.id, ctx.flow.id);
      return { added: Object.keys(added.jobs).length };
    }
    if (payload.piece !== undefined) pieces.push(payload.piece);
  }, { url: server.url, concurrency: 4 });
  try {
    await worker.ready();
    const created = await client.createFlow({
      nodes: [{ ref: "split", queue: "split", payload: { parts: 3 } }],
    });
    await eventually(() => pieces.length === 3, "the added pieces ran");
    const flow = await client.getFlow(created.id);
    const merge = flow.nodes?.find((n) => n.ref === "merge");
    assert.ok(merge);
    await eventually(
      async () => (await client.get(merge.id)).state === "pending",
      "merge released",
    );
    const cancelled = await client.cancelFlow(created.id);
    assert.deepEqual(cancelled, { id: created.id, cancelled: 1 });
    assert.equal((await client.get(merge.id)).state, "cancelled");
  } finally {
    await worker.close();
  }
});

Deno.test("enqueueAndWait() answers the job once it has ended; waitFor() times out with its state", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const lonely = await client.enqueue("idle", { x: 1 });
  const still = await client.waitFor(lonely.id, { timeoutMs: 200 });
  assert.equal(still.state, "pending");
  const worker = consume<{ a: number; b: number }>("sum", (p) => p.a + p.b, { url: server.url });
  try {
    await worker.ready();
    const job = await client.enqueueAndWait("sum", { a: 2, b: 3 }, { timeoutMs: 10_000 });
    assert.equal(job.state, "done");
    assert.equal(job.result, 5);
  } finally {
    await worker.close();
  }
});

Deno.test("watch() hears a job's progress as it is made, then how it ended", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const { id } = await client.enqueue("slow", { steps: 3 });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const worker = consume("slow", async (_payload, ctx: JobContext) => {
    for (let i = 1; i <= 3; i++) await ctx.progress({ step: i });
    await gate;
    return "finished";
  }, { url: server.url });
  const progress: unknown[] = [];
  try {
    const watched = client.watch(id, { onProgress: (value) => progress.push(value) });
    await worker.ready();
    await eventually(() => progress.length > 0, "a progress report");
    release();
    const end = await watched;
    assert.equal(end.id, id);
    assert.equal(end.state, "done");
    assert.equal(end.result, "finished");
    assert.deepEqual(progress.at(-1), { step: 3 });
    await assert.rejects(client.watch(999_999), (error: unknown) => {
      assert.ok(error instanceof TegamiError);
      assert.equal(error.code, "not_found");
      return true;
    });
  } finally {
    await worker.close();
  }
});
