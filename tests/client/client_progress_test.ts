/**
 * The SDK's share of dedup windows, duplicate modes and progress: `enqueue()` options
 * `keyTtlMs` and `onDuplicate` with the answer's `duplicate`, and `ctx.progress()` in a consumer,
 * coalesced so that a handler reporting in a tight loop sends few reports.
 */

import assert from "node:assert/strict";
import { consume, TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

Deno.test("enqueue() passes keyTtlMs and onDuplicate and answers what the duplicate did", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const first = await client.enqueue("q", "v1", { key: "k", keyTtlMs: 1_000, delayMs: 5_000 });
  assert.deepEqual(first, { id: first.id, deduplicated: false, duplicate: null });
  const [replaced, extended] = await Promise.all([
    client.enqueue("q", "v2", { key: "k", onDuplicate: "replace", delayMs: 6_000 }),
    client.enqueue("q", "v3", { key: "k", onDuplicate: "extend", delayMs: 9_000 }),
  ]);
  assert.deepEqual(replaced, { id: first.id, deduplicated: true, duplicate: "replaced" });
  assert.deepEqual(extended, { id: first.id, deduplicated: true, duplicate: "extended" });
  const job = await client.get(first.id);
  assert.equal(job.payload, "v2");
  assert.equal(job.run_at, server.clock.now() + 9_000);
  assert.equal(job.key_expires_at, null, "the replacing job had no window");
  const [batch] = await client.enqueueBatch("q", [{ payload: 1, key: "b", keyTtlMs: 10 }]);
  assert.equal((await client.get(batch.id)).key_expires_at, server.clock.now() + 10);
  await assert.rejects(client.enqueue("q", 1, { keyTtlMs: 10 }), (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "validation_failed");
    assert.match(error.message, /"key_ttl_ms"/);
    return true;
  });
});

Deno.test("ctx.progress() records the latest value, coalescing reports made meanwhile", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  let reports = 0;
  class CountingWebSocket extends WebSocket {
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      if (typeof data === "string") reports += data.split('"op":"progress"').length - 1;
      super.send(data);
    }
  }
  let seen: unknown = "unset";
  const worker = consume("p", async (_payload, ctx) => {
    const calls: Promise<void>[] = [];
    for (let i = 1; i <= 200; i++) calls.push(ctx.progress({ i, of: 200 }));
    await Promise.all(calls);
    seen = (await client.get(ctx.id)).progress;
    return "done";
  }, { url: server.url, WebSocket: CountingWebSocket });
  try {
    await worker.ready();
    const { id } = await client.enqueue("p", null);
    await eventually(async () => (await client.get(id)).state === "done", "job done", 5000);
    assert.deepEqual(seen, { i: 200, of: 200 }, "recorded before the calls resolved");
    assert.deepEqual((await client.get(id)).progress, { i: 200, of: 200 });
    // The first report went at once; the 199 made while it was in flight became one.
    assert.equal(reports, 2);
  } finally {
    await worker.close();
  }
});

Deno.test("ctx.progress() rejects with lease_lost once the lease is gone", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  let outcome: unknown = null;
  const worker = consume("p", async (_payload, ctx) => {
    await client.cancel(ctx.id);
    outcome = await ctx.progress(1).then(() => "ok", (error) => error);
  }, { url: server.url });
  try {
    await worker.ready();
    const { id } = await client.enqueue("p", null);
    await eventually(() => Promise.resolve(outcome !== null), "progress answered", 5000);
    assert.ok(outcome instanceof TegamiError);
    assert.equal(outcome.code, "lease_lost");
    assert.equal((await client.get(id)).progress, null);
  } finally {
    await worker.close();
  }
});
