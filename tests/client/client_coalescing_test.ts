/**
 * The client library carries many per request and frame by default: enqueue calls of one tick
 * share one request, a consumer's acks of one tick share one `batch` frame, and every call still
 * resolves on its own answer, after its own commit.
 */

import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { consume, TegamiClient, TegamiError } from "../../lib/client/mod.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually } from "../helpers/ws_client.ts";

/** A fetch that records each request's path and body. */
function recordingFetch(): { fetch: typeof fetch; bodies: string[] } {
  const bodies: string[] = [];
  return {
    bodies,
    fetch: (input, init) => {
      bodies.push(String(init?.body ?? ""));
      return fetch(input, init);
    },
  };
}

/** Rows visible to a second connection to the file: only committed ones. */
function committedStates(dbPath: string): Map<number, string> {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const rows = db.prepare("SELECT id, state FROM jobs").all() as { id: number; state: string }[];
    return new Map(rows.map((r) => [r.id, r.state]));
  } finally {
    db.close();
  }
}

Deno.test("enqueue() calls of one tick go out in one request, each answered with its own id", async () => {
  await using server = await startTestServer();
  const { fetch, bodies } = recordingFetch();
  const client = new TegamiClient({ url: server.url, fetch });
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, n) => client.enqueue("q", { n })),
  );
  assert.equal(bodies.length, 1);
  assert.match(bodies[0], /"atomic":false/);
  const ids = results.map((r) => r.id);
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b), "ids follow the order of the calls");
  for (const [n, { id }] of results.entries()) {
    assert.deepEqual((await client.get(id)).payload, { n });
  }
});

Deno.test("enqueue() calls made at different await depths of one tick still share a request", async () => {
  await using server = await startTestServer();
  const { fetch, bodies } = recordingFetch();
  const client = new TegamiClient({ url: server.url, fetch });
  const deep = async (n: number, depth: number): Promise<unknown> => {
    for (let i = 0; i < depth; i++) await Promise.resolve();
    return await client.enqueue("q", n);
  };
  await Promise.all([deep(1, 0), deep(2, 3), deep(3, 6)]);
  assert.equal(bodies.length, 1);
});

Deno.test("enqueue() alone in its tick sends a plain single-job request", async () => {
  await using server = await startTestServer();
  const { fetch, bodies } = recordingFetch();
  const client = new TegamiClient({ url: server.url, fetch });
  const first = await client.enqueue("q", 1, { key: "k" });
  const again = await client.enqueue("q", 2, { key: "k" });
  assert.deepEqual(bodies, ['{"payload":1,"key":"k"}', '{"payload":2,"key":"k"}']);
  assert.deepEqual(again, { id: first.id, deduplicated: true, duplicate: "ignored" });
});

Deno.test("an invalid enqueue() in a shared request fails alone with its own error", async () => {
  await using server = await startTestServer({ config: { maxPayload: 64 } });
  const { fetch, bodies } = recordingFetch();
  const client = new TegamiClient({ url: server.url, fetch });
  const calls = [
    client.enqueue("q", "small"),
    client.enqueue("q", "x".repeat(100)),
    client.enqueue("q", "fine", { priority: 1.5 }),
    client.enqueue("q", "also small", { key: "k" }),
    client.enqueue("q", "same key", { key: "k" }),
  ];
  const outcomes = await Promise.allSettled(calls);
  assert.equal(bodies.length, 1);
  assert.equal(outcomes[0].status, "fulfilled");
  assert.equal(outcomes[1].status, "rejected");
  const tooBig = (outcomes[1] as PromiseRejectedResult).reason;
  assert.ok(tooBig instanceof TegamiError);
  assert.equal(tooBig.code, "payload_too_large");
  assert.equal((outcomes[2] as PromiseRejectedResult).reason.code, "validation_failed");
  const keyed = (outcomes[3] as PromiseFulfilledResult<{ id: number }>).value;
  assert.deepEqual((outcomes[4] as PromiseFulfilledResult<unknown>).value, {
    id: keyed.id,
    deduplicated: true,
    duplicate: "ignored",
  });
});

Deno.test("enqueue() coalesces per queue and within maxCoalesced", async () => {
  await using server = await startTestServer();
  const { fetch, bodies } = recordingFetch();
  const client = new TegamiClient({ url: server.url, fetch, maxCoalesced: 3 });
  await Promise.all([
    ...Array.from({ length: 7 }, (_, n) => client.enqueue("a", n)),
    client.enqueue("b", "x"),
  ]);
  // a: 3 + 3 + 1 (that last one alone, so a plain request); b: 1.
  assert.equal(bodies.length, 4);
  assert.equal(bodies.filter((b) => b.includes('"atomic":false')).length, 2);
  assert.equal((await client.stats("a")).counts.pending, 7);
  assert.equal((await client.stats("b")).counts.pending, 1);
});

Deno.test("enqueue() resolves only once its job is committed to the file", async () => {
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const results = await Promise.all(
    Array.from({ length: 5 }, (_, n) =>
      client.enqueue("q", n).then((r) => {
        assert.equal(committedStates(server.dbPath).get(r.id), "pending");
        return r;
      })),
  );
  assert.equal(results.length, 5);
});

Deno.test("enqueue() calls of a request that cannot be sent all reject with unavailable", async () => {
  const client = new TegamiClient({ url: "http://127.0.0.1:1" });
  const outcomes = await Promise.allSettled([client.enqueue("q", 1), client.enqueue("q", 2)]);
  for (const outcome of outcomes) {
    assert.equal(outcome.status, "rejected");
    assert.equal((outcome as PromiseRejectedResult).reason.code, "unavailable");
  }
});

/** A WebSocket class that records every frame the client sends and the subprotocol it got. */
function recordingSocket(): { Socket: typeof WebSocket; sent: string[]; protocols: string[] } {
  const sent: string[] = [];
  const protocols: string[] = [];
  class Recording extends WebSocket {
    constructor(url: string | URL, offered?: string | string[] | WebSocketOptions) {
      super(url, offered);
      this.addEventListener("open", () => protocols.push(this.protocol));
    }
    override send(data: string | ArrayBufferLike | Blob | ArrayBufferView): void {
      sent.push(String(data));
      super.send(data);
    }
  }
  return { Socket: Recording, sent, protocols };
}

Deno.test("consume() speaks tegami.v2 and sends the acks of one tick in one batch frame", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const ids =
    (await client.enqueueBatch("c", Array.from({ length: 10 }, (_, n) => ({ payload: n }))))
      .map((r) => r.id);
  const { Socket, sent, protocols } = recordingSocket();
  const seen: number[] = [];
  const worker = consume<number>("c", (payload) => {
    seen.push(payload);
    return payload * 10;
  }, { url: server.url, prefetch: 10, concurrency: 10, WebSocket: Socket });
  await eventually(async () => (await client.stats("c")).counts.done === 10, "10 done", 5000);
  await worker.close();
  assert.deepEqual(protocols, ["tegami.v2"]);
  assert.deepEqual(seen.sort((a, b) => a - b), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const frames = sent.map((text) => JSON.parse(text));
  const batches = frames.filter((f) => f.op === "batch");
  assert.ok(batches.length >= 1, JSON.stringify(frames));
  const acks = frames.flatMap((f) => f.op === "batch" ? f.frames : [f]).filter((f) =>
    f.op === "ack"
  );
  assert.equal(acks.length, 10);
  assert.ok(frames.length < 10, `${frames.length} frames for 10 acks`);
  for (const id of ids) {
    assert.equal((await client.get(id)).result, (await client.get<number>(id)).payload * 10);
  }
});

Deno.test("consume() answers each ack of a batch on its own: a lost lease fails only its job", async () => {
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  await client.enqueueBatch("c", [{ payload: "keep" }, { payload: "cancel" }]);
  const errors: unknown[] = [];
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const started: number[] = [];
  const worker = consume<string>("c", async (_payload, ctx) => {
    started.push(ctx.id);
    await gate;
    return "ok";
  }, { url: server.url, prefetch: 2, concurrency: 2, onError: (e) => errors.push(e) });
  await eventually(() => started.length === 2, "both started", 5000);
  // Cancelling one job revokes its lease: its ack, sent in the same batch as the other's, fails.
  const cancelled = (await client.get(started[1])).payload === "cancel" ? started[1] : started[0];
  const kept = cancelled === started[0] ? started[1] : started[0];
  await client.cancel(cancelled);
  release();
  await eventually(async () => (await client.get(kept)).state === "done", "kept job done", 5000);
  await worker.close();
  assert.equal((await client.get(cancelled)).state, "cancelled");
  assert.ok(
    errors.every((e) => e instanceof TegamiError && e.code === "lease_lost"),
    String(errors),
  );
});
