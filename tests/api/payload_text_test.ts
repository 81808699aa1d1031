/**
 * Payloads are stored and delivered as the text the producer sent, over HTTP and WebSocket,
 * one job or a batch: what a JSON parse and re-serialisation would change (integers past 2^53,
 * `1.0`, spacing, key order) reaches the consumer unchanged.
 */

import assert from "node:assert/strict";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { eventually, wsUrl } from "../helpers/ws_client.ts";

const PAYLOAD = '{ "id": 12345678901234567890, "ratio": 1.0, "z": 1, "a": [ "x" ] }';

/** Opens a socket that records every frame's raw text. */
async function rawSocket(server: TestServer): Promise<{ ws: WebSocket; frames: string[] }> {
  const ws = new WebSocket(wsUrl(server.url));
  const frames: string[] = [];
  ws.onmessage = (event) => frames.push(event.data as string);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  return { ws, frames };
}

async function closed(ws: WebSocket): Promise<void> {
  const done = new Promise((resolve) => ws.onclose = resolve);
  ws.close();
  await done;
}

async function post(server: TestServer, queue: string, text: string): Promise<Response> {
  return await fetch(`${server.url}/v1/queues/${queue}/jobs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: text,
  });
}

Deno.test("an HTTP-enqueued payload reaches GET and the consumer's frame as it was sent", async () => {
  await using server = await startTestServer();
  const { ws, frames } = await rawSocket(server);
  try {
    ws.send(JSON.stringify({ op: "subscribe", ref: "s", queue: "t", prefetch: 5 }));
    await eventually(() => frames.length === 1, "frame 1");
    const answer = await post(server, "t", `{"priority": 2,\n "payload":${PAYLOAD}\n}`);
    assert.equal(answer.status, 201);
    const { id } = await answer.json();
    await eventually(() => frames.length === 2, "frame 2");
    assert.ok(frames[1].includes(`"payload":${PAYLOAD}`), frames[1]);
    const job = await (await fetch(`${server.url}/v1/jobs/${id}`)).text();
    assert.ok(job.includes(`"payload":${PAYLOAD}`), job);
  } finally {
    await closed(ws);
  }
});

Deno.test("a batch keeps each payload's text, and a WebSocket enqueue does too", async () => {
  await using server = await startTestServer();
  const second = '[1.50, "é\\u00e9"]';
  const answer = await post(
    server,
    "b",
    `{"jobs": [ {"payload": ${PAYLOAD}}, { "priority":1, "payload":${second} } ]}`,
  );
  assert.equal(answer.status, 201);
  const { jobs } = await answer.json();
  const texts = await Promise.all(
    jobs.map(async (j: { id: number }) =>
      await (await fetch(`${server.url}/v1/jobs/${j.id}`)).text()
    ),
  );
  assert.ok(texts[0].includes(`"payload":${PAYLOAD}`), texts[0]);
  assert.ok(texts[1].includes(`"payload":${second}`), texts[1]);

  const { ws, frames } = await rawSocket(server);
  try {
    ws.send(`{"op":"enqueue","ref":7,"queue":"w","payload":${PAYLOAD}}`);
    await eventually(() => frames.length === 1, "frame 1");
    const { id } = JSON.parse(frames[0]);
    const job = await (await fetch(`${server.url}/v1/jobs/${id}`)).text();
    assert.ok(job.includes(`"payload":${PAYLOAD}`), job);
  } finally {
    await closed(ws);
  }
});

Deno.test("the payload limit counts the payload's text as sent", async () => {
  await using server = await startTestServer({ config: { maxPayload: 64 } });
  const compact = JSON.stringify({ a: "x".repeat(40) });
  assert.equal((await post(server, "l", `{"payload":${compact}}`)).status, 201);
  const spaced = `{ "a" :${" ".repeat(30)}"${"x".repeat(40)}" }`;
  const refused = await post(server, "l", `{"payload":${spaced}}`);
  assert.equal(refused.status, 413);
  assert.equal((await refused.json()).error.code, "payload_too_large");
});
