/**
 * Every counter-example the fuzzers (fuzz_http_test.ts, fuzz_ws_test.ts, fuzz_parsers_test.ts)
 * found, kept as a named test with the input fast-check shrank it to, so it stays fixed even if
 * a later change to the generators would no longer find it.
 */

import assert from "node:assert/strict";
import { rawExchange } from "../helpers/fuzz.ts";
import { RawWs } from "../helpers/raw_ws.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { WsClient, wsUrl } from "../helpers/ws_client.ts";

const ADMIN = "regression-admin-token-0123";

function startAuthServer(): Promise<TestServer> {
  return startTestServer({ tokens: [{ name: "ops", token: ADMIN, scopes: ["admin"] }] });
}

// Found by "valid calls with any payload, key, checkpoint, error and result store them
// exactly": counter-example `["true", "a\u0000b"]`. SQLite kept the key but read it back cut at
// the NUL, so the job showed key "a", and "a\0b" and "a\0c" looked like the same key.
Deno.test("an enqueue whose key holds a NUL is refused with 400, not stored cut short", async () => {
  await using server = await startTestServer();
  for (const key of ["a\u0000b", "\u0000", "key\u0000"]) {
    const answer = await server.request("POST", "/v1/queues/q/jobs", { payload: true, key });
    assert.equal(answer.status, 400, JSON.stringify(answer.body));
    assert.equal(answer.body.error.code, "validation_failed");
    assert.match(answer.body.error.message, /"key".*NUL/);
  }
  const batch = await server.request("POST", "/v1/queues/q/jobs", {
    jobs: [{ payload: 1, key: "ok" }, { payload: 2, key: "bad\u0000" }],
  });
  assert.equal(batch.status, 400);
  assert.match(batch.body.error.message, /"jobs\[1\]\.key"/);
  assert.equal((await server.request("GET", "/v1/queues/q")).body.counts.pending, 0);
});

// Found by the same property once it nacked: an error "a\u0000b" read back as "a"; a lone
// surrogate became U+FFFD only on the way into SQLite.
Deno.test("a nack error holding NUL or a lone surrogate is kept whole, with U+FFFD for each", async () => {
  await using server = await startTestServer();
  const id = (await server.request("POST", "/v1/queues/q/jobs", { payload: 1 })).body.id;
  const cases: [string, string][] = [
    ["a\u0000b", "a\uFFFDb"],
    ["\ud800x", "\uFFFDx"],
    ["ok \u{1F600}", "ok \u{1F600}"],
    // The 8192-character cut falls inside a surrogate pair here.
    ["x".repeat(8191) + "\u{1F600}", "x".repeat(8191) + "\uFFFD…[cut]"],
  ];
  for (const [error, stored] of cases) {
    const [job] = (await server.request("POST", "/v1/queues/q/leases", {})).body.jobs;
    const nack = await server.request("POST", `/v1/jobs/${id}/nack`, {
      token: job.lease.token,
      error,
      delay_ms: 0,
    });
    assert.equal(nack.status, 200, JSON.stringify(nack.body));
    const got = (await server.request("GET", `/v1/jobs/${id}`)).body.last_error;
    assert.equal(got, stored, JSON.stringify(error.slice(-10)));
  }
});

// Found by "fuzzed frames before auth get unauthorized and close 1008": counter-example a
// binary frame of the single byte 0x80. It got invalid_json and the socket stayed open, so a
// client without a token could keep sending until the auth timeout.
Deno.test("a binary frame that is not UTF-8 before auth gets unauthorized and close 1008", async () => {
  await using server = await startAuthServer();
  await using ws = await RawWs.connect(wsUrl(server.url));
  await ws.sendFrame(0x2, new Uint8Array([0x80]));
  const error = await ws.next((f) => f.op === "error");
  assert.equal(error.code, "unauthorized");
  assert.equal((await ws.closed()).code, 1008);
});

Deno.test("a binary frame that is not UTF-8 after auth gets invalid_json and keeps the socket", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), {
    headers: { Authorization: `Bearer ${ADMIN}` },
  });
  ws.send(new Uint8Array([0x80]));
  assert.equal((await ws.next((f) => f.op === "error")).code, "invalid_json");
  await ws.subscribe("q", 1);
});

// Found by "fuzzed frames with auth on each get one 4xx-coded reply": an auth frame with an
// unknown field, on a socket authenticated at the upgrade, got validation_failed and then the
// socket was closed with 1008 — a malformed frame dropping the connection, which protocol.md
// rules out. (With auth off every auth frame of the wrong shape did the same.)
Deno.test("a malformed auth frame on an authenticated socket gets validation_failed and keeps it", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url), {
    headers: { Authorization: `Bearer ${ADMIN}` },
  });
  const reply = await ws.request({ op: "auth", token: ADMIN, "\u0000": 43199999 });
  assert.equal(reply.code, "validation_failed");
  await ws.subscribe("q", 1);
  assert.equal(ws.socket.readyState, WebSocket.OPEN);
  // A wrong token still ends the session, as documented.
  const wrong = await ws.request({ op: "auth", token: "wrong-token-0123456789" });
  assert.equal(wrong.code, "unauthorized");
  assert.equal((await ws.closedWithin()).code, 1008);
});

Deno.test("a malformed auth frame with auth off gets validation_failed and keeps the socket", async () => {
  await using server = await startTestServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  assert.equal((await ws.request({ op: "auth", x: 1 })).code, "validation_failed");
  assert.equal((await ws.request({ op: "auth", token: "any" })).op, "ok");
  await ws.subscribe("q", 1);
});

Deno.test("a malformed auth frame before auth gets validation_failed and close 1008", async () => {
  await using server = await startAuthServer();
  await using ws = await WsClient.connect(wsUrl(server.url));
  const reply = await ws.request({ op: "auth", token: ADMIN, extra: true });
  assert.equal(reply.code, "validation_failed");
  assert.equal((await ws.closedWithin()).code, 1008);
});

// Found by the WebSocket fuzzer: a frame with `"ref":-0` is answered with `"ref":0`. Not a
// fault (JSON writes one zero), but clients matching refs with Object.is would miss it.
Deno.test("a ref of -0 comes back as 0", async () => {
  await using server = await startTestServer();
  await using ws = await RawWs.connect(wsUrl(server.url));
  await ws.send('{"op":"unsubscribe","ref":-0,"queue":"q"}');
  const reply = await ws.next();
  assert.ok(Object.is(reply.ref, 0));
});

// Found by "fuzzed raw HTTP/1.1 bytes get an answer or a close, never a 5xx" once it was given
// handshakes with headers missing: counter-example
// "GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\n" answered 500. The runtime's
// upgrade throws without `Connection: Upgrade` or `Sec-WebSocket-Key`, and that became internal.
Deno.test("a WebSocket handshake missing Connection: Upgrade or its key answers 400, not 500", async () => {
  await using server = await startTestServer();
  const heads = [
    "Upgrade: websocket",
    "Upgrade: websocket\r\nConnection: Upgrade",
    "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\nSec-WebSocket-Version: 13",
  ];
  for (const head of heads) {
    const { statuses, text } = await rawExchange(
      server.server.port,
      new TextEncoder().encode(`GET /v1/ws HTTP/1.1\r\nHost: 127.0.0.1\r\n${head}\r\n\r\n`),
    );
    assert.deepEqual(statuses, [400], text);
    assert.match(
      text,
      /"code":"validation_failed".*Cannot upgrade: not a valid WebSocket handshake/,
    );
  }
  const metrics = await server.request("GET", "/metrics");
  assert.doesNotMatch(metrics.body, /status="5\d\d"/);
});
