/**
 * The life of WebSocket connections over real sockets: restarts and shutdown, heartbeats, slow
 * readers, the connection and frame limits. The heartbeat tests wait real time (pings are the
 * runtime's), kept to a few hundred ms.
 */

import assert from "node:assert/strict";
import { ManualClock } from "../../lib/core/clock.ts";
import { RawWs, upgradeStatus } from "../helpers/raw_ws.ts";
import { enqueue, getJob } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { eventually, WsClient, wsUrl } from "../helpers/ws_client.ts";

/** A temp directory that outlives one server, for restarts. */
async function tempDir(): Promise<{ path: string } & AsyncDisposable> {
  const path = await Deno.makeTempDir({ prefix: "tegami-ws-restart-" });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

Deno.test("a lease token from before a restart still acks over a new connection", async () => {
  await using dir = await tempDir();
  const clock = new ManualClock();
  let id: number;
  let token: string;
  {
    await using first = await startTestServer({ dir: dir.path, clock });
    await using ws = await WsClient.connect(wsUrl(first.url));
    await ws.subscribe("w", 1, { lease_ms: 60_000 });
    id = await enqueue(first, "w", { payload: 1 });
    ({ lease: { token } } = await ws.nextJob());
    await first.stop();
  }
  await using second = await startTestServer({ dir: dir.path, clock });
  await second.advance(10_000); // still inside the lease
  await using ws = await WsClient.connect(wsUrl(second.url));
  assert.deepEqual(await ws.request({ op: "ack", ref: 1, id, token }), {
    op: "ok",
    ref: 1,
    id,
    state: "done",
  });
  assert.equal((await getJob(second, id)).state, "done");
});

Deno.test("shutdown closes sockets with 1001 and keeps their leases until they expire", async () => {
  await using dir = await tempDir();
  const clock = new ManualClock();
  let id: number;
  let token: string;
  let expiresAt: number;
  {
    await using first = await startTestServer({ dir: dir.path, clock });
    await using ws = await WsClient.connect(wsUrl(first.url));
    await ws.subscribe("w", 1, { lease_ms: 60_000 });
    id = await enqueue(first, "w", { payload: 1 });
    ({ lease: { token, expires_at: expiresAt } } = await ws.nextJob());
    await first.stop();
    assert.equal((await ws.closedWithin()).code, 1001);
  }
  await using second = await startTestServer({ dir: dir.path, clock });
  const kept = await getJob(second, id);
  assert.equal(kept.state, "leased");
  assert.equal(kept.lease_expires_at, expiresAt);
  await second.advance(60_000);
  const expired = await getJob(second, id);
  assert.equal(expired.state, "pending");
  assert.equal(expired.attempts, 1);
  await using ws = await WsClient.connect(wsUrl(second.url));
  const late = await ws.request({ op: "ack", id, token });
  assert.equal(late.code, "lease_lost");
});

Deno.test("a client that never answers pings is closed and its lease returns to pending", async () => {
  await using server = await startTestServer({ config: { pingIntervalMs: 100 } });
  const id = await enqueue(server, "w", { payload: 1 });
  await using raw = await RawWs.connect(wsUrl(server.url));
  await raw.send({ op: "subscribe", ref: 1, queue: "w", prefetch: 1 });
  assert.equal((await raw.next((f) => f.op === "job")).id, id);
  const started = Date.now();
  const { pings } = await raw.closed(2000); // throws if the server keeps the socket open
  assert.ok(pings >= 1, "closed without pinging first");
  assert.ok(Date.now() - started < 1500, "closed too late for a 100 ms ping interval");
  await eventually(async () => (await getJob(server, id)).state === "pending", "the release");
  assert.equal((await getJob(server, id)).attempts, 1);
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  assert.equal((await ws.nextJob()).attempt, 2);
});

Deno.test("a client that answers pings stays connected and keeps its lease while idle", async () => {
  await using server = await startTestServer({ config: { pingIntervalMs: 100 } });
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  const id = await enqueue(server, "w", { payload: 1 });
  const job = await ws.nextJob();
  await new Promise((resolve) => setTimeout(resolve, 450)); // over four ping intervals, idle
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
  assert.equal((await getJob(server, id)).state, "leased");
  await ws.ok({ op: "ack", id, token: job.lease.token });
});

/** How long the 90 MB slow-consumer case may take to claim, frame and give up. */
const SLOW_MS = 15_000;

Deno.test("a consumer that never reads is cut off and its leases go back to pending", async () => {
  // Its pushes stop half way to the 32 MiB cut; what cuts it then is the heartbeat (no pong for
  // two intervals) or its buffer not shrinking for 5 s, whichever comes first.
  await using server = await startTestServer({ config: { pingIntervalMs: 1000 } });
  const big = "x".repeat(900_000);
  const ids: number[] = [];
  for (let i = 0; i < 10; i++) {
    const jobs = Array.from({ length: 10 }, () => ({ payload: big }));
    const answer = await server.request("POST", "/v1/queues/w/jobs", { jobs });
    assert.equal(answer.status, 201);
    ids.push(...answer.body.jobs.map((j: { id: number }) => j.id));
  }
  await using raw = await RawWs.connect(wsUrl(server.url));
  await raw.send({ op: "subscribe", queue: "w", prefetch: 1000 });
  // The consumer reads nothing; the server must give up on it rather than buffer 90 MB. Claiming
  // and framing the jobs takes seconds on a loaded machine, hence the longer waits.
  await eventually(
    async () => (await getJob(server, ids[0])).attempts === 1,
    "a delivery",
    SLOW_MS,
  );
  await eventually(
    async () => {
      const { counts, consumers } = (await server.request("GET", "/v1/queues/w")).body;
      return counts.pending === 100 && counts.leased === 0 && consumers === 0;
    },
    "the slow consumer's leases to come back",
    SLOW_MS,
  );
  assert.equal((await getJob(server, ids[99])).state, "pending");
});

Deno.test("a consumer that reads gets a claim larger than the 32 MiB cut, without being cut", async () => {
  await using server = await startTestServer();
  const big = "x".repeat(900_000);
  for (let i = 0; i < 5; i++) {
    const jobs = Array.from({ length: 10 }, () => ({ payload: big }));
    assert.equal((await server.request("POST", "/v1/queues/w/jobs", { jobs })).status, 201);
  }
  // 50 jobs of 900 kB in flight at once: 45 MB, over the 32 MiB a client may leave unread.
  await using consumer = await WsClient.connect(wsUrl(server.url));
  await consumer.subscribe("w", 50);
  const jobs = await consumer.jobs(50, "w", SLOW_MS);
  assert.equal(new Set(jobs.map((j) => j.id)).size, 50);
  for (const job of jobs) assert.equal(job.attempt, 1, "each pushed once");
  assert.equal(consumer.socket.readyState, WebSocket.OPEN);
});

Deno.test("the connection limit refuses a further upgrade with 503", async () => {
  await using server = await startTestServer({ config: { maxConnections: 2 } });
  await using a = await WsClient.connect(wsUrl(server.url));
  {
    await using b = await WsClient.connect(wsUrl(server.url));
    const refused = await upgradeStatus(wsUrl(server.url));
    assert.equal(refused.status, 503);
    assert.equal(refused.body.error.code, "unavailable");
    assert.equal(b.socket.readyState, WebSocket.OPEN);
  }
  // Once one closes, there is room again.
  await eventually(async () => {
    const answer = await upgradeStatus(wsUrl(server.url));
    return answer.status === 101;
  }, "a free connection slot");
  await a.subscribe("w", 1);
});

Deno.test("a frame over the size limit closes the connection with 1009 and releases its leases", async () => {
  await using server = await startTestServer({ config: { maxBody: 4096, maxPayload: 1024 } });
  const id = await enqueue(server, "w", { payload: 1 });
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  await ws.nextJob();
  ws.send(JSON.stringify({ op: "enqueue", queue: "w", payload: "x".repeat(5000) }));
  assert.equal((await ws.closedWithin()).code, 1009);
  await eventually(async () => (await getJob(server, id)).state === "pending", "the release");
});

Deno.test("the frame limit counts UTF-8 bytes, not characters", async () => {
  await using server = await startTestServer({ config: { maxBody: 4096, maxPayload: 1024 } });
  await using ws = await WsClient.connect(wsUrl(server.url));
  // 2000 characters, 6000 bytes.
  ws.send(JSON.stringify({ op: "enqueue", queue: "w", payload: "€".repeat(2000) }));
  assert.equal((await ws.closedWithin()).code, 1009);
});

Deno.test("a frame exactly at the size limit is read and answered", async () => {
  await using server = await startTestServer({ config: { maxBody: 4096, maxPayload: 1024 } });
  await using ws = await WsClient.connect(wsUrl(server.url));
  const head = JSON.stringify({ op: "enqueue", ref: 1, queue: "w", payload: "" });
  const frame = head.replace('""', JSON.stringify("y".repeat(4096 - head.length)));
  assert.equal(new TextEncoder().encode(frame).length, 4096);
  const reply = await ws.request(JSON.parse(frame));
  assert.equal(reply.code, "payload_too_large"); // read and judged, not cut off
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
});
