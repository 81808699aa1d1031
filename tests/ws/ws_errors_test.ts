/**
 * Malformed and refused WebSocket frames over a real socket: each gets an `error` reply with the
 * right code (and the ref when one can be read), the connection stays usable, and no job is lost.
 */

import assert from "node:assert/strict";
import { enqueue } from "../helpers/http_calls.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { type Frame, WsClient, wsUrl } from "../helpers/ws_client.ts";

/** Sends raw text and answers the next error frame. */
async function errorFor(ws: WsClient, text: string | Uint8Array): Promise<Frame> {
  ws.send(text);
  return await ws.next((f) => f.op === "error");
}

Deno.test("a frame that is not JSON gets invalid_json and the connection stays usable", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  for (const text of ["not json", '{"op":"subscribe","ref":1,', "", "{'op':'ack'}"]) {
    const error = await errorFor(ws, text);
    assert.equal(error.code, "invalid_json", text);
    assert.equal(typeof error.message, "string");
    assert.equal(error.ref, undefined, "no ref can be read from broken JSON");
  }
  assert.deepEqual(await ws.subscribe("w", 1), { op: "ok", ref: "r1", queue: "w", prefetch: 1 });
});

Deno.test("a frame nesting deeper than 1000 levels gets invalid_json unparsed, and the connection stays usable", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const deep = `{"op":"enqueue","ref":9,"queue":"w","payload":${"[".repeat(1000)}1${
    "]".repeat(1000)
  }}`;
  const error = await errorFor(ws, deep);
  assert.equal(error.code, "invalid_json");
  assert.match(String(error.message), /deeper than 1000 levels/);
  assert.equal(error.ref, undefined, "a frame refused for its nesting is not parsed for its ref");
  const fine = `{"op":"enqueue","ref":10,"queue":"w","payload":${"[".repeat(998)}1${
    "]".repeat(998)
  }}`;
  ws.send(fine);
  assert.equal((await ws.next((f) => f.ref === 10)).op, "ok");
});

Deno.test("a binary frame of garbage gets invalid_json and the connection stays usable", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const notUtf8 = await errorFor(ws, new Uint8Array([0xff, 0xfe, 0x00, 0xc3, 0x28]));
  assert.equal(notUtf8.code, "invalid_json");
  const notJson = await errorFor(ws, new TextEncoder().encode("\u0001\u0002 binary"));
  assert.equal(notJson.code, "invalid_json");
  await ws.subscribe("w", 1);
});

Deno.test("frames of the wrong shape get validation_failed with the ref echoed", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const cases: [string, Record<string, unknown>][] = [
    ["an unknown op", { op: "fly", ref: 1 }],
    ["a missing op", { ref: 2, queue: "w" }],
    ["a non-string op", { op: 5, ref: 3 }],
    ["a prefetch as a string", { op: "subscribe", ref: 4, queue: "w", prefetch: "2" }],
    ["a prefetch of 0", { op: "subscribe", ref: 5, queue: "w", prefetch: 0 }],
    ["a prefetch over 1000", { op: "subscribe", ref: 6, queue: "w", prefetch: 1001 }],
    ["a lease_ms too short", { op: "subscribe", ref: 7, queue: "w", prefetch: 1, lease_ms: 50 }],
    ["a bad queue name", { op: "subscribe", ref: 8, queue: "no spaces!", prefetch: 1 }],
    ["a missing queue", { op: "subscribe", ref: 9, prefetch: 1 }],
    ["an unknown subscribe field", { op: "subscribe", ref: 10, queue: "w", prefetch: 1, x: 1 }],
    ["an unknown unsubscribe field", { op: "unsubscribe", ref: 11, queue: "w", prefetch: 1 }],
    ["a non-numeric id", { op: "ack", ref: 12, id: "abc", token: "t" }],
    ["a huge id", { op: "ack", ref: 13, id: 1e300, token: "t" }],
    ["an id given as a string", { op: "ack", ref: 131, id: "2003", token: "t" }],
    ["an id in a string on nack", { op: "nack", ref: 132, id: "1", token: "t" }],
    ["a fractional id", { op: "extend", ref: 133, id: 1.5, token: "t" }],
    ["a missing token", { op: "ack", ref: 14, id: 1 }],
    ["a non-string token", { op: "ack", ref: 15, id: 1, token: 42 }],
    ["a queue on a job op", { op: "ack", ref: 16, id: 1, token: "t", queue: "w" }],
    ["an id on a queue op", { op: "subscribe", ref: 17, id: 1, queue: "w", prefetch: 1 }],
    ["an unknown ack field", { op: "ack", ref: 18, id: 1, token: "t", reslt: 1 }],
    ["a negative delay", { op: "nack", ref: 19, id: 1, token: "t", delay_ms: -1 }],
    ["a non-boolean dead", { op: "nack", ref: 20, id: 1, token: "t", dead: "yes" }],
    ["an extend too short", { op: "extend", ref: 21, id: 1, token: "t", lease_ms: 1 }],
    ["a checkpoint without data", { op: "checkpoint", ref: 22, id: 1, token: "t" }],
    ["an enqueue without payload", { op: "enqueue", ref: 23, queue: "w" }],
    ["a misspelt job field", { op: "enqueue", ref: "s", queue: "w", payload: 1, priorty: 2 }],
    ["an empty batch", { op: "enqueue", ref: 24, queue: "w", jobs: [] }],
    ["a bad job in a batch", { op: "enqueue", ref: 25, queue: "w", jobs: [{ payload: 1 }, {}] }],
    ["delay_ms with run_at", {
      op: "enqueue",
      ref: 26,
      queue: "w",
      payload: 1,
      delay_ms: 1,
      run_at: 1,
    }],
  ];
  for (const [what, frame] of cases) {
    const error = await errorFor(ws, JSON.stringify(frame));
    assert.equal(error.code, "validation_failed", `${what}: ${JSON.stringify(error)}`);
    assert.equal(error.ref, frame.ref, `${what}: ref not echoed`);
  }
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
  assert.deepEqual((await server.request("GET", "/v1/queues/w")).body.counts.pending, 0);
});

Deno.test("frames that are JSON but not objects, or carry an unusable ref, get no ref back", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  for (const text of ["[1,2]", '"hello"', "null", "42", '{"op":"ack","ref":{"a":1},"id":1}']) {
    const error = await errorFor(ws, text);
    assert.equal(error.code, "validation_failed", text);
    assert.equal(error.ref, undefined, text);
  }
  const long = await errorFor(ws, JSON.stringify({ op: "fly", ref: "x".repeat(300) }));
  assert.equal(long.code, "validation_failed");
  assert.equal(long.ref, undefined);
});

Deno.test("a ref given as null is no ref, and optional fields given as null are absent", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  ws.send({ op: "subscribe", ref: null, queue: "w", prefetch: 1, lease_ms: null });
  const ok = await ws.next((f) => f.op === "ok");
  assert.deepEqual(ok, { op: "ok", queue: "w", prefetch: 1 });
  const error = await errorFor(ws, JSON.stringify({ op: "fly", ref: null }));
  assert.equal(error.code, "validation_failed");
  assert.equal("ref" in error, false);
  const id = (await ws.ok({ op: "enqueue", queue: "w", payload: 1, key: null, backoff: null })).id;
  const job = await ws.nextJob("w");
  assert.equal(job.id, id);
  const nack = await ws.ok({
    op: "nack",
    id,
    token: job.lease.token,
    error: null,
    delay_ms: null,
    dead: null,
  });
  assert.equal(nack.state, "delayed");
});

Deno.test("a payload over the limit gets payload_too_large over the socket", async () => {
  await using server = await startTestServer({ config: { maxPayload: 1024 } });
  await using ws = await WsClient.connect(wsUrl(server.url));
  const error = await ws.request({ op: "enqueue", queue: "w", payload: "x".repeat(2000) });
  assert.equal(error.code, "payload_too_large");
  assert.equal((await server.request("GET", "/v1/queues/w")).body.counts.pending, 0);
});

Deno.test("ack, nack, extend and checkpoint of an unknown job get not_found with the id", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  for (const op of ["ack", "nack", "extend"]) {
    const error = await ws.request({ op, id: 999, token: "t" });
    assert.deepEqual([error.op, error.code, error.id], ["error", "not_found", 999], op);
  }
  const error = await ws.request({ op: "checkpoint", id: 999, token: "t", data: 1 });
  assert.deepEqual([error.code, error.id], ["not_found", 999]);
});

Deno.test("a wrong token gets lease_lost for every lease operation and changes nothing", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  const id = await enqueue(server, "w", { payload: 1 });
  const job = await ws.nextJob();
  const frames = [
    { op: "ack", id, token: "wrong-token" },
    { op: "nack", id, token: "wrong-token", dead: true },
    { op: "extend", id, token: "wrong-token", lease_ms: 60_000 },
    { op: "checkpoint", id, token: "wrong-token", data: { x: 1 } },
  ];
  for (const frame of frames) {
    const error = await ws.request(frame);
    assert.deepEqual([error.code, error.id], ["lease_lost", id], frame.op);
  }
  const stored = (await server.request("GET", `/v1/jobs/${id}`)).body;
  assert.equal(stored.state, "leased");
  assert.equal(stored.checkpoint, null);
  assert.equal(stored.lease_expires_at, job.lease.expires_at);
  await ws.ok({ op: "ack", id, token: job.lease.token });
});

Deno.test("after a storm of bad frames, a held job still acks and no job is lost", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  await ws.subscribe("w", 1);
  const ids = [
    await enqueue(server, "w", { payload: 1 }),
    await enqueue(server, "w", { payload: 2 }),
  ];
  const held = await ws.nextJob();
  const garbage: (string | Uint8Array)[] = [
    "}",
    "[]",
    '{"op":"ack"}',
    '{"op":"subscribe","queue":"w","prefetch":-1}',
    '{"op":"unsubscribe"}',
    new Uint8Array([0x80, 0x81]),
    JSON.stringify({ op: "ack", id: held.id, token: held.lease.token, extra: true }),
    JSON.stringify({ op: "nack", id: held.id, token: held.lease.token, delay_ms: "soon" }),
  ];
  for (const frame of garbage) ws.send(frame);
  for (let i = 0; i < garbage.length; i++) await ws.next((f) => f.op === "error");
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
  // The held job is untouched: still leased with its token, and no second job came past credit.
  assert.equal((await server.request("GET", `/v1/jobs/${held.id}`)).body.state, "leased");
  assert.deepEqual(ws.frames.filter((f) => f.op === "job"), []);
  await ws.ok({ op: "ack", id: held.id, token: held.lease.token });
  const next = await ws.nextJob();
  assert.deepEqual([held.id, next.id].sort(), ids);
  await ws.ok({ op: "ack", id: next.id, token: next.lease.token });
  const { counts } = (await server.request("GET", "/v1/queues/w")).body;
  assert.equal(counts.done, 2);
  assert.equal(counts.pending + counts.leased + counts.dead, 0);
});
