/**
 * Ordering groups and queue limits end to end: the `group` field on HTTP and WebSocket enqueues,
 * its validation, and long-polls and pushed deliveries that obey `group_limit`, `concurrency`
 * and `rate`. Every answer is checked against the API documents.
 */

import assert from "node:assert/strict";
import { enqueue, getJob, lease } from "../helpers/http_calls.ts";
import { settle, startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

Deno.test("POST /v1/queues/{q}/jobs stores a job's group, single and batch", async () => {
  await using server = await startTestServer();
  const id = await enqueue(server, "q", { payload: 1, group: "acct-1" });
  assert.equal((await getJob(server, id)).group, "acct-1");
  const batch = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 2, group: "acct-2" }, { payload: 3 }],
  });
  assert.equal(batch.status, 201);
  const [a, b] = batch.body.jobs.map((j: { id: number }) => j.id);
  assert.equal((await getJob(server, a)).group, "acct-2");
  assert.equal((await getJob(server, b)).group, null);
});

Deno.test("POST /v1/queues/{q}/jobs refuses a bad group, naming the field", async () => {
  await using server = await startTestServer();
  const cases: [unknown, string][] = [
    [{ payload: 1, group: "" }, "group"],
    [{ payload: 1, group: 7 }, "group"],
    [{ payload: 1, group: "x".repeat(513) }, "group"],
    [{ payload: 1, group: "a\u0000b" }, "group"],
    [{ jobs: [{ payload: 1 }, { payload: 2, group: "" }] }, "jobs[1].group"],
  ];
  for (const [body, field] of cases) {
    const answer = await server.request("POST", "/v1/queues/q/jobs", body);
    assert.equal(answer.status, 400, JSON.stringify(body).slice(0, 60));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.ok(answer.body.error.message.includes(field), answer.body.error.message);
  }
  const longest = await server.request("POST", "/v1/queues/q/jobs", {
    payload: 1,
    group: "é".repeat(256),
  });
  assert.equal(longest.status, 201, "512 bytes of UTF-8 is allowed");
});

Deno.test("POST /v1/queues/{q}/leases leases one job of a group at a time", async () => {
  await using server = await startTestServer();
  const a1 = await enqueue(server, "q", { payload: 1, group: "a" });
  const a2 = await enqueue(server, "q", { payload: 2, group: "a" });
  const b1 = await enqueue(server, "q", { payload: 3, group: "b" });
  const first = await lease(server, "q", { max: 10 });
  assert.deepEqual(first.map((d) => d.id).sort((x, y) => x - y), [a1, b1]);
  assert.deepEqual(await lease(server, "q", { max: 10 }), []);
  const held = first.find((d) => d.id === a1)!;
  const ack = await server.request("POST", `/v1/jobs/${a1}/ack`, { token: held.lease.token });
  assert.equal(ack.status, 200);
  assert.deepEqual((await lease(server, "q", { max: 10 })).map((d) => d.id), [a2]);
});

Deno.test("a long-poll waits for a slot of the queue's concurrency and gets it at the ack", async () => {
  await using server = await startTestServer();
  const put = await server.request("PUT", "/v1/queues/q/settings", { concurrency: 1 });
  assert.equal(put.status, 200);
  await enqueue(server, "q", { payload: 1 });
  await enqueue(server, "q", { payload: 2 });
  const [first] = await lease(server, "q", { max: 5 });
  const waiting = server.request("POST", "/v1/queues/q/leases", { max: 5, wait_ms: 10_000 });
  await settle();
  await server.request("POST", `/v1/jobs/${first.id}/ack`, { token: first.lease.token });
  const answer = await waiting;
  assert.equal(answer.status, 200);
  assert.equal(answer.body.jobs.length, 1);
});

Deno.test("WebSocket enqueue takes a group; a subscriber gets a group's jobs one at a time", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const one = await ws.ok({ op: "enqueue", queue: "q", payload: 1, group: "g" });
  const many = await ws.ok({
    op: "enqueue",
    queue: "q",
    jobs: [{ payload: 2, group: "g" }, { payload: 3, group: "h" }],
  });
  await ws.subscribe("q", 10);
  const pushed = await ws.jobs(2, "q");
  assert.deepEqual(pushed.map((j) => j.group).sort(), ["g", "h"]);
  assert.equal(pushed.find((j) => j.group === "g")!.id, one.id);
  assert.deepEqual(await ws.quietFor(100, (f) => f.op === "job"), []);
  await ws.ok({ op: "ack", id: one.id, token: pushed.find((j) => j.id === one.id)!.lease.token });
  const next = await ws.nextJob("q");
  assert.equal(next.id, many.jobs[0].id);
  assert.equal(next.group, "g");
});

Deno.test("a subscriber under a rate gets a job per token as the clock moves", async () => {
  await using server = await startTestServer();
  await server.request("PUT", "/v1/queues/q/settings", { rate: "10/1s" });
  for (let i = 0; i < 5; i++) await enqueue(server, "q", { payload: i });
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("q", 10);
  await ws.nextJob("q");
  assert.deepEqual(await ws.quietFor(100, (f) => f.op === "job"), []);
  server.clock.advance(100);
  await ws.nextJob("q");
});

Deno.test("GET /v1/queues/{q} shows the groups and the limit holding consumers back", async () => {
  await using server = await startTestServer();
  await server.request("PUT", "/v1/queues/q/settings", { concurrency: 1 });
  await enqueue(server, "q", { payload: 1, group: "a" });
  await enqueue(server, "q", { payload: 2, group: "a" });
  await enqueue(server, "q", { payload: 3, group: "b" });
  await lease(server, "q", { max: 5 });
  const idle = (await server.request("GET", "/v1/queues/q")).body;
  assert.deepEqual(idle.groups, {
    waiting: 2,
    leased: 1,
    full: 1,
    rate_held: 0,
    top_held: [{ group: "a", held: "concurrency", pending: 1, leased: 1, limit: 1 }],
  });
  assert.equal(idle.held, null, "nobody consumes: nothing is held back");
  const waiting = server.request("POST", "/v1/queues/q/leases", { max: 5, wait_ms: 5_000 });
  await settle();
  const held = (await server.request("GET", "/v1/queues/q")).body;
  assert.equal(held.held, "concurrency");
  await server.stop();
  await waiting;
});
