/**
 * Watching jobs over the WebSocket, on a real server and real sockets: `watch` answers the job's
 * state now, then the connection is sent `progressed` frames as the job reports progress and
 * one `ended` frame with its outcome (or `gone`, when the job is deleted first); `unwatch` stops them; the watches of one connection are
 * bounded. Every frame received is checked against the AsyncAPI document by `WsClient`.
 */

import assert from "node:assert/strict";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";
import { MAX_WATCHES } from "../../lib/ws/connection.ts";

/** How long "nothing more arrives" is watched, ms of real time. */
const QUIET_MS = 100;

function connect(server: TestServer): Promise<WsClient> {
  return WsClient.connect(wsUrl(server.url));
}

const about = (op: string, id: number) => (f: Frame) => f.op === op && f.id === id;

Deno.test("watch sends each progress report and then the outcome once the job ends", async () => {
  await using server = await startTestServer();
  await using watcher = await connect(server);
  await using worker = await connect(server);
  const id = await enqueue(server, "w", { payload: "resize" });
  const reply = await watcher.request({ op: "watch", ref: "w1", id });
  assert.deepEqual(reply, {
    op: "ok",
    ref: "w1",
    id,
    state: "pending",
    progress: null,
    progress_at: null,
  });

  await worker.subscribe("w", 1);
  const job = await worker.nextJob("w");
  await worker.ok({ op: "progress", id, token: job.lease.token, progress: { done: 1, of: 3 } });
  const first = await watcher.next(about("progressed", id));
  assert.deepEqual(first, {
    op: "progressed",
    id,
    progress: { done: 1, of: 3 },
    at: server.clock.now(),
  });
  await server.advance(10);
  await worker.ok({ op: "progress", id, token: job.lease.token, progress: { done: 2, of: 3 } });
  assert.deepEqual((await watcher.next(about("progressed", id))).progress, { done: 2, of: 3 });

  await worker.ok({ op: "ack", id, token: job.lease.token, result: { width: 640 } });
  const ended = await watcher.next(about("ended", id));
  assert.deepEqual(ended, {
    op: "ended",
    id,
    queue: "w",
    state: "done",
    result: { width: 640 },
    last_error: null,
    attempts: 1,
    finished_at: server.clock.now(),
  });
  // The watch is over: a later report of a requeued job is not sent.
  assert.deepEqual(await watcher.quietFor(QUIET_MS, (f) => f.id === id), []);
});

Deno.test("watch tells a dead or cancelled end with its last error", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const dies = await enqueue(server, "w", { payload: 1, max_attempts: 1 });
  const cancelled = await enqueue(server, "w", { payload: 2, delay_ms: 60_000 });
  await ws.ok({ op: "watch", id: dies });
  await ws.ok({ op: "watch", id: cancelled });
  await ws.subscribe("w", 1);
  const job = await ws.nextJob("w");
  await ws.ok({ op: "nack", id: dies, token: job.lease.token, error: "no such image" });
  const dead = await ws.next(about("ended", dies));
  assert.equal(dead.state, "dead");
  assert.equal(dead.last_error, "no such image");
  assert.equal(dead.result, null);

  assert.equal((await server.request("DELETE", `/v1/jobs/${cancelled}`)).status, 200);
  const gone = await ws.next(about("ended", cancelled));
  assert.equal(gone.state, "cancelled");
});

Deno.test("watch of a job that has ended answers its state and sends the outcome at once", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  await ws.ok({ op: "enqueue", queue: "w", payload: 1 });
  await ws.subscribe("w", 1);
  const job = await ws.nextJob("w");
  await ws.ok({ op: "progress", id: job.id, token: job.lease.token, progress: 99 });
  await ws.ok({ op: "ack", id: job.id, token: job.lease.token, result: "ok" });
  const reply = await ws.ok({ op: "watch", id: job.id });
  assert.equal(reply.state, "done");
  assert.equal(reply.progress, 99, "the last report is kept after the end");
  const ended = await ws.next(about("ended", job.id));
  assert.equal(ended.result, "ok");
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "ended"), [], "sent once");
});

Deno.test("watch of a job a sweep deletes gets gone, and the watch is over", async () => {
  // Done jobs kept 4 s: the sweep runs every second.
  await using server = await startTestServer({ config: { retainDoneMs: 4000 } });
  await using watcher = await connect(server);
  const put = await server.request("PUT", "/v1/queues/w/settings", { retain_pending_ms: 1000 });
  assert.equal(put.status, 200);
  const id = await enqueue(server, "w", { payload: "never taken" });
  assert.equal((await watcher.request({ op: "watch", ref: "w1", id })).state, "pending");
  // The sweep deletes the job that waited past its queue's retain_pending_ms.
  for (let i = 0; i < 3; i++) await server.advance(1000);
  assert.deepEqual(await watcher.next(about("gone", id)), { op: "gone", id });
  assert.equal((await server.request("GET", `/v1/jobs/${id}`)).status, 404);
  // Over: watching it again is refused as for any unknown job.
  const again = await watcher.request({ op: "watch", ref: "w2", id });
  assert.deepEqual([again.op, again.code], ["error", "not_found"]);
});

Deno.test("watch of an unknown job answers not_found with its id", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.request({ op: "watch", ref: 5, id: 4242 });
  assert.equal(reply.op, "error");
  assert.equal(reply.ref, 5);
  assert.equal(reply.code, "not_found");
  assert.equal(reply.id, 4242);
});

Deno.test("watch refuses what the protocol refuses: bad ids and unknown fields", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  for (
    const [frame, field] of [
      [{ op: "watch" }, /"id"/],
      [{ op: "watch", id: "7" }, /"id"/],
      [{ op: "watch", id: 7, token: "x" }, /"token"/],
      [{ op: "unwatch", id: 0 }, /"id"/],
    ] as const
  ) {
    const reply = await ws.request(frame);
    assert.equal(reply.code, "validation_failed", JSON.stringify(frame));
    assert.match(reply.message, field);
  }
});

Deno.test("unwatch stops the frames about a job; unwatching one not watched is no error", async () => {
  await using server = await startTestServer();
  await using watcher = await connect(server);
  await using worker = await connect(server);
  const id = await enqueue(server, "w", { payload: 1 });
  await watcher.ok({ op: "watch", id });
  assert.deepEqual(await watcher.ok({ op: "unwatch", ref: 3, id }), { op: "ok", ref: 3, id });
  assert.deepEqual(await watcher.ok({ op: "unwatch", ref: 4, id: 999 }), {
    op: "ok",
    ref: 4,
    id: 999,
  });
  await worker.subscribe("w", 1);
  const job = await worker.nextJob("w");
  await worker.ok({ op: "progress", id, token: job.lease.token, progress: 1 });
  await worker.ok({ op: "ack", id, token: job.lease.token });
  assert.deepEqual(await watcher.quietFor(QUIET_MS, (f) => f.id === id), []);
});

Deno.test("watching a job twice answers twice and sends each frame once", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const id = await enqueue(server, "w", { payload: 1 });
  await ws.ok({ op: "watch", id });
  await ws.ok({ op: "watch", id });
  await ws.subscribe("w", 1);
  const job = await ws.nextJob("w");
  await ws.ok({ op: "ack", id, token: job.lease.token });
  await ws.next(about("ended", id));
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "ended"), []);
});

Deno.test(`a connection watches at most ${MAX_WATCHES} jobs; an ended watch frees its place`, async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const ids: number[] = [];
  for (let start = 0; start <= MAX_WATCHES; start += 1000) {
    const n = Math.min(1000, MAX_WATCHES + 1 - start);
    const answer = await server.request("POST", "/v1/queues/w/jobs", {
      jobs: Array.from({ length: n }, (_, i) => ({ payload: start + i })),
    });
    ids.push(...answer.body.jobs.map((j: { id: number }) => j.id));
  }
  for (let start = 0; start < MAX_WATCHES; start += 1000) {
    const frames = ids.slice(start, Math.min(start + 1000, MAX_WATCHES))
      .map((id) => ({ op: "watch", id }));
    const reply = await ws.ok({ op: "batch", frames });
    assert.ok(reply.replies.every((r: Frame) => r.op === "ok"));
  }
  const last = ids[MAX_WATCHES];
  const refused = await ws.request({ op: "watch", id: last });
  assert.equal(refused.code, "conflict", JSON.stringify(refused));
  assert.match(refused.message, new RegExp(`at most ${MAX_WATCHES} jobs`));

  // The first job ends: its watch is over, and there is room for one more.
  await ws.subscribe("w", 1);
  const job = await ws.nextJob("w");
  assert.equal(job.id, ids[0]);
  await ws.ok({ op: "ack", id: job.id, token: job.lease.token });
  await ws.next(about("ended", job.id));
  assert.equal((await ws.ok({ op: "watch", id: last })).state, "pending");
});

Deno.test("a watch is kept to the job's queues a token may use", async () => {
  const admin = "watch-admin-token-0123456789";
  const billing = "watch-billing-token-0123456789";
  await using server = await startTestServer({
    tokens: [
      { name: "ops", token: admin, scopes: ["admin"] },
      { name: "billing", token: billing, scopes: ["consume"], queues: ["billing.*"] },
    ],
  });
  const headers = { authorization: `Bearer ${admin}` };
  const other = await enqueue(server, "shop", { payload: 1 }, headers);
  const own = await enqueue(server, "billing.eu", { payload: 2 }, headers);
  await using ws = await WsClient.connect(wsUrl(server.url), {
    headers: { authorization: `Bearer ${billing}` },
  });
  const refused = await ws.request({ op: "watch", id: other });
  assert.equal(refused.code, "forbidden", JSON.stringify(refused));
  assert.equal((await ws.ok({ op: "watch", id: own })).state, "pending");
  // The refused watch was dropped: the other queue's end is not sent.
  const ended = await server.request("DELETE", `/v1/jobs/${other}`, undefined, headers);
  assert.equal(ended.status, 200);
  assert.deepEqual(await ws.quietFor(QUIET_MS, (f) => f.op === "ended"), []);
});
