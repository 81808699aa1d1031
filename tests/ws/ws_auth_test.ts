/**
 * Who may open and use a WebSocket: bearer tokens on the upgrade or in a first `auth` frame,
 * scopes and queue globs per frame, and the `Origin` check. Real sockets throughout; refused
 * upgrades are read with the raw client to see their HTTP status.
 */

import assert from "node:assert/strict";
import { upgradeStatus } from "../helpers/raw_ws.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const ADMIN = "admin-token-0123456789abcdef";
const BILLING = "billing-consumer-token-0123456789";
const PRODUCER = "producer-token-0123456789abcdef";
const NOBODY = "not-a-known-token-0123456789";

/** A server with a tokens file: an admin, a consumer limited to `billing.*`, a producer. */
function startAuthServer(): Promise<TestServer> {
  return startTestServer({
    tokens: [
      { name: "ops", token: ADMIN, scopes: ["admin"] },
      { name: "billing-workers", token: BILLING, scopes: ["consume"], queues: ["billing.*"] },
      { name: "shop", token: PRODUCER, scopes: ["produce"] },
    ],
  });
}

function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

async function enqueueAs(
  server: TestServer,
  token: string,
  queue: string,
  payload: unknown,
): Promise<number> {
  const answer = await server.request("POST", `/v1/queues/${queue}/jobs`, { payload }, {
    authorization: `Bearer ${token}`,
  });
  assert.equal(answer.status, 201, JSON.stringify(answer.body));
  return answer.body.id;
}

Deno.test("an upgrade with a valid Authorization header needs no auth frame", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(BILLING) });
  await ws.subscribe("billing.eu", 1);
  const id = await enqueueAs(server, ADMIN, "billing.eu", 1);
  const job = await ws.nextJob();
  assert.equal(job.id, id);
  await ws.ok({ op: "ack", id, token: job.lease.token });
});

Deno.test("an upgrade with a bad Authorization header is refused with 401", async () => {
  await using server = await startAuthServer();
  for (const header of [`Bearer ${NOBODY}`, "Bearer", "Basic dXNlcjpwYXNz", ADMIN]) {
    const answer = await upgradeStatus(wsUrl(server.url), {
      headers: { Authorization: header },
    });
    assert.equal(answer.status, 401, header);
    assert.equal(answer.body.error.code, "unauthorized");
    assert.equal(answer.headers.get("www-authenticate"), "Bearer");
    assert.ok(!JSON.stringify(answer.body).includes(ADMIN), "the answer echoes the token");
  }
});

Deno.test("without a header, an auth frame first authenticates the socket", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const auth = await ws.request({ op: "auth", ref: "a", token: ADMIN });
  assert.deepEqual(auth, { op: "ok", ref: "a", name: "ops" });
  await ws.subscribe("anything", 1);
  const { id } = await ws.ok({ op: "enqueue", queue: "anything", payload: 1 });
  assert.equal((await ws.nextJob()).id, id);
});

Deno.test("without a header, any other first frame gets unauthorized and close 1008", async () => {
  await using server = await startAuthServer();
  const firsts: (Record<string, unknown> | string)[] = [
    { op: "subscribe", ref: 1, queue: "billing.eu", prefetch: 1 },
    { op: "enqueue", ref: 2, queue: "billing.eu", payload: 1 },
    { op: "ack", ref: 3, id: 1, token: "t" },
    { op: "fly", ref: 4 },
    "not json",
  ];
  for (const first of firsts) {
    await using ws = await WsClient.connect(wsUrl(server.url));
    ws.send(first);
    const error = await ws.next((f) => f.op === "error");
    assert.equal(error.code, "unauthorized", JSON.stringify(first));
    if (typeof first !== "string") assert.equal(error.ref, first.ref);
    assert.equal((await ws.closedWithin()).code, 1008);
  }
  assert.equal(
    (await server.request("GET", "/v1/queues/billing.eu", undefined, {
      authorization: `Bearer ${ADMIN}`,
    })).body.counts.pending,
    0,
  );
});

Deno.test("a socket that sends no auth frame within 10 s is closed with 1008", async () => {
  await using server = await startAuthServer();
  await using silent = await WsClient.connect(wsUrl(server.url));
  await using authed = await WsClient.connect(wsUrl(server.url));
  await authed.ok({ op: "auth", token: ADMIN });
  await using upgraded = await WsClient.connect(wsUrl(server.url), { headers: bearer(ADMIN) });
  await server.advance(10_000);
  const error = await silent.next((f) => f.op === "error");
  assert.equal(error.code, "unauthorized");
  assert.equal((await silent.closedWithin()).code, 1008);
  await authed.subscribe("w", 1);
  await upgraded.subscribe("w", 1);
});

Deno.test("an auth frame with a wrong or missing token gets unauthorized and close 1008", async () => {
  await using server = await startAuthServer();
  for (const frame of [{ op: "auth", ref: 1, token: NOBODY }, { op: "auth", ref: 2 }]) {
    await using ws = await WsClient.connect(wsUrl(server.url));
    const error = await ws.request(frame);
    assert.equal(error.code, "unauthorized", JSON.stringify(frame));
    assert.equal(error.ref, frame.ref);
    assert.ok(!error.message.includes(NOBODY), "the error echoes the token");
    assert.equal((await ws.closedWithin()).code, 1008);
  }
});

Deno.test("a token without the consume scope cannot subscribe, but the socket stays usable", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(PRODUCER) });
  const refused = await ws.request({ op: "subscribe", ref: 1, queue: "orders", prefetch: 1 });
  assert.equal(refused.code, "forbidden");
  assert.equal(refused.ref, 1);
  const { id } = await ws.ok({ op: "enqueue", queue: "orders", payload: 1 });
  assert.equal(typeof id, "number");
  assert.equal(
    (await server.request("GET", "/v1/queues/orders", undefined, {
      authorization: `Bearer ${ADMIN}`,
    })).body.consumers,
    0,
  );
});

Deno.test("a token without the produce scope cannot enqueue over the socket", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(BILLING) });
  const refused = await ws.request({ op: "enqueue", queue: "billing.eu", payload: 1 });
  assert.equal(refused.code, "forbidden");
  const batch = await ws.request({ op: "enqueue", queue: "billing.eu", jobs: [{ payload: 1 }] });
  assert.equal(batch.code, "forbidden");
});

Deno.test("a token limited to some queues cannot subscribe to or settle jobs of others", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(BILLING) });
  assert.equal(
    (await ws.request({ op: "subscribe", queue: "billing", prefetch: 1 })).code,
    "forbidden",
    "billing.* must not match billing",
  );
  assert.equal(
    (await ws.request({ op: "subscribe", queue: "orders", prefetch: 1 })).code,
    "forbidden",
  );
  await ws.subscribe("billing.eu.invoices", 1);

  // A job of another queue, leased by the admin over HTTP: its token is no use to this socket.
  const other = await enqueueAs(server, ADMIN, "orders", 1);
  const leased = await server.request("POST", "/v1/queues/orders/leases", {}, {
    authorization: `Bearer ${ADMIN}`,
  });
  const token = leased.body.jobs[0].lease.token;
  for (
    const frame of [
      { op: "ack", id: other, token },
      { op: "nack", id: other, token },
      { op: "extend", id: other, token },
      { op: "checkpoint", id: other, token, data: 1 },
    ]
  ) {
    const refused = await ws.request(frame);
    assert.equal(refused.code, "forbidden", frame.op);
  }
  const job = (await server.request("GET", `/v1/jobs/${other}`, undefined, {
    authorization: `Bearer ${ADMIN}`,
  })).body;
  assert.equal(job.state, "leased");
  assert.equal(job.checkpoint, null);
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
});

Deno.test("a token on the upgrade is not needed again, and a later auth frame is harmless", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(ADMIN) });
  await ws.subscribe("w", 1);
  const again = await ws.request({ op: "auth", token: ADMIN });
  assert.equal(again.op, "ok");
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
});

Deno.test("after auth, a malformed auth frame is refused as validation_failed and the socket stays", async () => {
  await using server = await startAuthServer();
  for (const opened of ["upgrade", "frame"]) {
    await using ws = await WsClient.connect(
      wsUrl(server.url),
      opened === "upgrade" ? { headers: bearer(BILLING) } : {},
    );
    if (opened === "frame") await ws.ok({ op: "auth", token: BILLING });
    const queue = `billing.${opened}`;
    await ws.subscribe(queue, 1);
    const frames = [
      { op: "auth", ref: 1 },
      { op: "auth", ref: 2, token: null },
      { op: "auth", ref: 3, token: 5 },
      { op: "auth", ref: 4, token: ["x"] },
    ];
    for (const frame of frames) {
      const error = await ws.request(frame);
      assert.equal(error.code, "validation_failed", `${opened}: ${JSON.stringify(frame)}`);
      assert.equal(error.ref, frame.ref);
      assert.match(error.message, /"token"/);
    }
    // Still the same socket, with the same name and subscription.
    const id = await enqueueAs(server, ADMIN, queue, opened);
    const job = await ws.nextJob();
    assert.equal(job.id, id);
    assert.equal((await ws.ok({ op: "auth", token: BILLING })).name, "billing-workers");
    assert.equal(ws.socket.readyState, WebSocket.OPEN);
  }
});

Deno.test("before auth, an auth frame whose token is not a string ends the socket", async () => {
  await using server = await startAuthServer();
  for (const frame of [{ op: "auth", ref: 1, token: 5 }, { op: "auth", ref: 2, token: null }]) {
    await using ws = await WsClient.connect(wsUrl(server.url));
    const error = await ws.request(frame);
    assert.equal(error.code, "unauthorized", JSON.stringify(frame));
    assert.equal((await ws.closedWithin()).code, 1008);
  }
});

Deno.test("an auth frame with another valid token switches the socket to that token", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), { headers: bearer(PRODUCER) });
  assert.equal(
    (await ws.request({ op: "subscribe", ref: 1, queue: "billing.eu", prefetch: 1 })).code,
    "forbidden",
  );
  assert.equal((await ws.ok({ op: "auth", token: BILLING })).name, "billing-workers");
  await ws.subscribe("billing.eu", 1);
  assert.equal(
    (await ws.request({ op: "enqueue", ref: 2, queue: "billing.eu", payload: 1 })).code,
    "forbidden",
    "the producer's scope went with its token",
  );
});

Deno.test("with auth off, an auth frame is accepted with or without a token, but types are strict", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  assert.equal((await ws.ok({ op: "auth", token: "anything" })).name, "anonymous");
  assert.equal((await ws.ok({ op: "auth" })).name, "anonymous");
  assert.equal((await ws.ok({ op: "auth", token: null })).name, "anonymous");
  const refused = await ws.request({ op: "auth", ref: 7, token: 5 });
  assert.equal(refused.code, "validation_failed");
  assert.equal(refused.ref, 7);
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
});

Deno.test("an upgrade from the same origin is accepted", async () => {
  await using server = await startTestServer();
  const answer = await upgradeStatus(wsUrl(server.url), { headers: { Origin: server.url } });
  assert.equal(answer.status, 101);
});

Deno.test("an upgrade from a foreign origin is refused with 403", async () => {
  await using server = await startTestServer();
  for (const origin of ["http://evil.example", "null", "http://127.0.0.1:1"]) {
    const answer = await upgradeStatus(wsUrl(server.url), { headers: { Origin: origin } });
    assert.equal(answer.status, 403, origin);
    assert.equal(answer.body.error.code, "forbidden");
  }
});

Deno.test("an upgrade from an origin listed in allowedOrigins is accepted, others are not", async () => {
  await using server = await startTestServer({
    config: { allowedOrigins: ["https://app.example"] },
  });
  const listed = await upgradeStatus(wsUrl(server.url), {
    headers: { Origin: "https://app.example" },
  });
  assert.equal(listed.status, 101);
  const other = await upgradeStatus(wsUrl(server.url), {
    headers: { Origin: "https://app.example.evil" },
  });
  assert.equal(other.status, 403);
});

Deno.test("allowedOrigins * accepts any origin", async () => {
  await using server = await startTestServer({ config: { allowedOrigins: "*" } });
  const answer = await upgradeStatus(wsUrl(server.url), {
    headers: { Origin: "https://anywhere.example" },
  });
  assert.equal(answer.status, 101);
});
