/**
 * Many per frame, over real sockets: `batch` frames answered with one reply holding each
 * frame's own, `jobs` push frames for clients that ask for `tegami.v2`, and `atomic: false`
 * batches of enqueues where each job stands alone.
 */

import assert from "node:assert/strict";
import { enqueue, getJob } from "../helpers/http_calls.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";

const V2 = "tegami.v2";

function connect(server: TestServer, version: 1 | 2 = 1): Promise<WsClient> {
  return WsClient.connect(wsUrl(server.url), { protocols: version === 2 ? V2 : undefined });
}

const isJobs = (f: Frame) => f.op === "jobs";

async function enqueueMany(server: TestServer, queue: string, n: number): Promise<number[]> {
  const jobs = Array.from({ length: n }, (_, i) => ({ payload: { n: i } }));
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, { jobs });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body.jobs.map((j: { id: number }) => j.id);
}

/** Takes `jobs` frames until `n` jobs came; answers the frames. */
async function jobsFrames(ws: WsClient, n: number): Promise<Frame[]> {
  const frames: Frame[] = [];
  let seen = 0;
  while (seen < n) {
    const frame = await ws.next(isJobs);
    frames.push(frame);
    seen += frame.jobs.length;
  }
  return frames;
}

Deno.test("the upgrade names tegami.v2 when the client offers it, and nothing otherwise", async () => {
  await using server = await startTestServer();
  await using v2 = await connect(server, 2);
  await using v1 = await connect(server, 1);
  assert.equal(v2.socket.protocol, V2);
  assert.equal(v1.socket.protocol, "");
});

Deno.test("a v2 subscription gets every job it is dealt at once in one jobs frame", async () => {
  await using server = await startTestServer();
  const ids = await enqueueMany(server, "q", 5);
  await using ws = await connect(server, 2);
  await ws.subscribe("q", 10);
  const frames = await jobsFrames(ws, 5);
  assert.equal(frames.length, 1, JSON.stringify(frames));
  const [frame] = frames;
  assert.equal(frame.queue, "q");
  assert.deepEqual(frame.jobs.map((j: Frame) => j.id), ids);
  for (const job of frame.jobs) {
    assert.equal(job.state, "leased");
    assert.equal(job.attempt, 1);
    assert.equal(typeof job.lease.token, "string");
    assert.equal(job.op, undefined);
  }
  assert.deepEqual((await ws.quietFor(50, (f) => f.op === "job")).length, 0);
});

Deno.test("a v2 subscription's jobs frames stay within its prefetch", async () => {
  await using server = await startTestServer();
  await enqueueMany(server, "q", 10);
  await using ws = await connect(server, 2);
  await ws.subscribe("q", 3);
  const [first] = await jobsFrames(ws, 3);
  assert.equal(first.jobs.length, 3);
  assert.deepEqual(await ws.quietFor(50, isJobs), []);
  const reply = await ws.ok({
    op: "batch",
    frames: first.jobs.map((j: Frame) => ({ op: "ack", id: j.id, token: j.lease.token })),
  });
  assert.equal(reply.replies.length, 3);
  const next = await jobsFrames(ws, 3);
  assert.equal(next.reduce((n, f) => n + f.jobs.length, 0), 3);
});

Deno.test("a v1 client still gets one job frame per job", async () => {
  await using server = await startTestServer();
  await enqueueMany(server, "q", 3);
  await using ws = await connect(server, 1);
  await ws.subscribe("q", 10);
  const jobs = await ws.jobs(3, "q");
  assert.deepEqual(jobs.map((j) => j.payload.n), [0, 1, 2]);
  assert.deepEqual(await ws.quietFor(50, isJobs), []);
});

Deno.test("batch acks many leases in one frame, one reply per ack in order", async () => {
  await using server = await startTestServer();
  await enqueueMany(server, "q", 3);
  await using ws = await connect(server, 2);
  await ws.subscribe("q", 3);
  const [frame] = await jobsFrames(ws, 3);
  const [a, b, c] = frame.jobs;
  const reply = await ws.ok({
    op: "batch",
    ref: "many",
    frames: [
      { op: "ack", ref: 1, id: a.id, token: a.lease.token, result: { ok: 1 } },
      { op: "ack", ref: 2, id: b.id, token: "not-the-token" },
      { op: "nack", ref: 3, id: c.id, token: c.lease.token, error: "boom", delay_ms: 1000 },
    ],
  });
  assert.equal(reply.ref, "many");
  assert.deepEqual(reply.replies[0], { op: "ok", ref: 1, id: a.id, state: "done" });
  assert.equal(reply.replies[1].op, "error");
  assert.equal(reply.replies[1].ref, 2);
  assert.equal(reply.replies[1].code, "lease_lost");
  assert.equal(reply.replies[1].id, b.id);
  assert.equal(reply.replies[2].op, "ok");
  assert.equal(reply.replies[2].state, "delayed");
  assert.equal((await getJob(server, a.id)).state, "done");
  assert.deepEqual((await getJob(server, a.id)).result, { ok: 1 });
  assert.equal((await getJob(server, b.id)).state, "leased");
  assert.equal((await getJob(server, c.id)).last_error, "boom");
});

Deno.test("a malformed frame inside a batch fails alone, with its ref", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.ok({
    op: "batch",
    frames: [
      { op: "enqueue", ref: "a", queue: "q", payload: 1 },
      { op: "enqueue", ref: "b", queue: "bad name!", payload: 2 },
      { op: "nope", ref: "c" },
      { op: "auth", ref: "d", token: "x" },
      { op: "batch", ref: "e", frames: [] },
      "not an object",
      { op: "enqueue", ref: "f", queue: "q", payload: 3 },
    ],
  });
  const codes = reply.replies.map((r: Frame) => r.op === "ok" ? "ok" : r.code);
  assert.deepEqual(codes, [
    "ok",
    "validation_failed",
    "validation_failed",
    "validation_failed",
    "validation_failed",
    "validation_failed",
    "ok",
  ]);
  assert.deepEqual(reply.replies.map((r: Frame) => r.ref), [
    "a",
    "b",
    "c",
    "d",
    "e",
    undefined,
    "f",
  ]);
  assert.ok(reply.replies[0].id < reply.replies[6].id, "frames run in order");
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.pending, 2);
});

Deno.test("a batch without a frames array, or with too many, is refused whole", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  for (const frames of [undefined, [], "x", Array.from({ length: 1001 }, () => ({ op: "x" }))]) {
    const reply = await ws.request({ op: "batch", ref: "whole", frames });
    assert.equal(reply.op, "error", JSON.stringify(frames)?.slice(0, 50));
    assert.equal(reply.code, "validation_failed");
    assert.equal(reply.ref, "whole");
  }
  const extra = await ws.request({ op: "batch", frames: [], extra: 1 });
  assert.equal(extra.code, "validation_failed");
});

Deno.test("enqueues in a batch store each payload as the text sent", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const text =
    `{"op":"batch","ref":"t","frames":[{"op":"enqueue","queue":"q","payload":{"big":12345678901234567890,"f":1.0}},` +
    `{"op":"enqueue","queue":"q","payload":[1, 2]}]}`;
  ws.send(text);
  const reply = await ws.next((f) => f.ref === "t");
  const [a, b] = reply.replies;
  const raw = await fetch(`${server.url}/v1/jobs/${a.id}`).then((r) => r.text());
  assert.match(raw, /"payload":\{"big":12345678901234567890,"f":1\.0\}/);
  const rawB = await fetch(`${server.url}/v1/jobs/${b.id}`).then((r) => r.text());
  assert.match(rawB, /"payload":\[1, 2\]/);
});

Deno.test("an atomic:false enqueue over WebSocket refuses a bad job alone", async () => {
  await using server = await startTestServer();
  await using ws = await connect(server);
  const reply = await ws.ok({
    op: "enqueue",
    queue: "q",
    atomic: false,
    jobs: [{ payload: 1, key: "k" }, { payload: 2, priority: "high" }, { payload: 3, key: "k" }],
  });
  assert.equal(reply.jobs.length, 3);
  assert.equal(reply.jobs[0].deduplicated, false);
  assert.equal(reply.jobs[1].error.code, "validation_failed");
  assert.match(reply.jobs[1].error.message, /jobs\[1\]\.priority/);
  assert.deepEqual(reply.jobs[2], {
    id: reply.jobs[0].id,
    deduplicated: true,
    duplicate: "ignored",
  });
});

Deno.test("an atomic:false enqueue over HTTP answers per job; all-or-nothing stays the default", async () => {
  await using server = await startTestServer();
  const each = await server.request("POST", "/v1/queues/q/jobs", {
    atomic: false,
    jobs: [{ payload: 1 }, { nope: 1 }],
  });
  assert.equal(each.status, 201);
  assert.equal(typeof each.body.jobs[0].id, "number");
  assert.equal(each.body.jobs[1].error.code, "validation_failed");
  const none = await server.request("POST", "/v1/queues/q/jobs", {
    atomic: false,
    jobs: [{ nope: 1 }],
  });
  assert.equal(none.status, 200);
  assert.equal(none.body.jobs[0].error.code, "validation_failed");
  const whole = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { nope: 1 }],
  });
  assert.equal(whole.status, 400);
  const badFlag = await server.request("POST", "/v1/queues/q/jobs", {
    atomic: "no",
    jobs: [{ payload: 1 }],
  });
  assert.equal(badFlag.status, 400);
  assert.equal((await server.request("GET", "/v1/queues/q")).body.counts.pending, 1);
});

Deno.test("every reply in a batch comes after its write is committed", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1 });
  await using ws = await connect(server, 2);
  await ws.subscribe("q", 1);
  const [frame] = await jobsFrames(ws, 1);
  const reply = await ws.ok({
    op: "batch",
    frames: [
      { op: "ack", id, token: frame.jobs[0].lease.token },
      { op: "enqueue", queue: "q", payload: 2 },
    ],
  });
  // Read from the file by a second connection: only committed rows are visible there.
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(server.dbPath, { readOnly: true });
  try {
    const rows = db.prepare("SELECT id, state FROM jobs ORDER BY id").all();
    assert.deepEqual(rows.map((r) => r.id), [id, reply.replies[1].id]);
    assert.equal(rows[0].state, "done");
  } finally {
    db.close();
  }
});
