/**
 * A job's attributes through tegami's own doors: stored as sent (names sorted), given back by
 * every read and delivery, over HTTP and the WebSocket, and a bad one refused before anything is
 * stored, naming the attribute.
 */

import assert from "node:assert/strict";
import { startTestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const ATTRIBUTES = {
  traceparent: { type: "String", value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
  "retries.max": { type: "Number", value: "3" },
  avatar: { type: "Binary.png", value: "iVBORw0KGgo=" },
};

/** The same attributes, in the stored order: names sorted. */
const SORTED = {
  avatar: ATTRIBUTES.avatar,
  "retries.max": ATTRIBUTES["retries.max"],
  traceparent: ATTRIBUTES.traceparent,
};

Deno.test("POST /v1/queues/{queue}/jobs stores attributes that reads and leases give back", async () => {
  await using server = await startTestServer();
  const made = await server.request("POST", "/v1/queues/q/jobs", {
    payload: { n: 1 },
    attributes: ATTRIBUTES,
  });
  assert.equal(made.status, 201);
  const plain = await server.request("POST", "/v1/queues/q/jobs", { payload: 2, attributes: null });
  const job = await server.request("GET", `/v1/jobs/${made.body.id}`);
  assert.deepEqual(job.body.attributes, SORTED);
  assert.equal(JSON.stringify(job.body.attributes), JSON.stringify(SORTED), "names sorted");
  assert.equal((await server.request("GET", `/v1/jobs/${plain.body.id}`)).body.attributes, null);
  const leased = await server.request("POST", "/v1/queues/q/leases", { max: 2 });
  assert.deepEqual(leased.body.jobs.map((j: { attributes: unknown }) => j.attributes), [
    SORTED,
    null,
  ]);
});

Deno.test("a WebSocket enqueue carries attributes, and the pushed job gives them back", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  await ws.ok({ op: "enqueue", queue: "w", payload: 1, attributes: ATTRIBUTES });
  const job = await ws.nextJob("w");
  assert.deepEqual(job.attributes, SORTED);
  const refused = await ws.request({
    op: "enqueue",
    queue: "w",
    payload: 1,
    attributes: { "AWS.trace": { type: "String", value: "x" } },
  });
  assert.equal(refused.op, "error");
  assert.equal(refused.code, "validation_failed");
  assert.match(String(refused.message), /attributes\.AWS\.trace/);
});

Deno.test("a bad attribute is refused naming it, and nothing is stored", async () => {
  await using server = await startTestServer();
  const eleven = Object.fromEntries(
    Array.from({ length: 11 }, (_, i) => [`a${i}`, { type: "String", value: "x" }]),
  );
  const cases: [unknown, RegExp][] = [
    [eleven, /"attributes": at most 10 attributes, not 11/],
    [[], /"attributes": expected a JSON object/],
    [{ "a..b": { type: "String", value: "x" } }, /"attributes\.a\.\.b"/],
    [{ ".a": { type: "String", value: "x" } }, /"attributes\.\.a"/],
    [{ "amazon.x": { type: "String", value: "x" } }, /reserved/],
    [{ "a b": { type: "String", value: "x" } }, /"attributes\.a b"/],
    [{ a: { type: "Str", value: "x" } }, /"attributes\.a\.type"/],
    [{ a: { type: "String" } }, /"attributes\.a\.value": expected a string/],
    [{ a: { type: "String", value: 7 } }, /"attributes\.a\.value": expected a string/],
    [{ a: { type: "Number", value: "seven" } }, /"attributes\.a\.value": is not a number/],
    [{ a: { type: "Binary", value: "not base64!" } }, /"attributes\.a\.value": is not base64/],
    [{ a: { type: "String", value: "bell\u0007" } }, /control character/],
    [{ a: { type: "String", value: "x", extra: 1 } }, /"attributes\.a\.extra": unknown field/],
    [{ a: "x" }, /"attributes\.a": expected a JSON object/],
  ];
  for (const [attributes, message] of cases) {
    const answer = await server.request("POST", "/v1/queues/q/jobs", { payload: 1, attributes });
    assert.equal(answer.status, 400, JSON.stringify(attributes));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, message);
  }
  const big = { a: { type: "String", value: "x".repeat(4096) } };
  const tooBig = await server.request("POST", "/v1/queues/q/jobs", { payload: 1, attributes: big });
  assert.equal(tooBig.status, 413);
  assert.equal(tooBig.body.error.code, "payload_too_large");
  const batch = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1 }, { payload: 2, attributes: { a: { type: "Number", value: "x" } } }],
  });
  assert.equal(batch.status, 400);
  assert.match(batch.body.error.message, /"jobs\[1\]\.attributes\.a\.value"/);
  const stats = await server.request("GET", "/v1/queues/q");
  assert.equal(stats.body.counts.pending, 0, "no job of q was stored");
});
