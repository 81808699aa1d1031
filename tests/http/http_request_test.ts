/**
 * The front door's own request (http_request.ts): header lookups as `Headers` answers them, the
 * body whole or streamed, read once, a signal that reports the caller leaving whenever it is
 * asked for — and, through a real server, a Host the URL parser refuses answered 400.
 */

import assert from "node:assert/strict";
import { ArrivedRequest } from "../../lib/http/http_request.ts";
import { readToClose } from "../helpers/raw_http.ts";
import { startTestServer } from "../helpers/test_server.ts";

const encoder = new TextEncoder();

Deno.test("ArrivedRequest.headers finds fields in any case and joins repeated ones", () => {
  const request = new ArrivedRequest("GET", "http://h/x", [
    ["accept", "a"],
    ["x-two", "1"],
    ["x-two", "2"],
  ], null);
  assert.equal(request.headers.get("Accept"), "a");
  assert.equal(request.headers.get("X-TWO"), "1, 2");
  assert.equal(request.headers.get("missing"), null);
  assert.ok(request.headers.has("x-Two"));
  assert.ok(!request.headers.has("missing"));
  assert.equal(request.body, null);
});

Deno.test("ArrivedRequest.bytes() answers a whole body once, then refuses", async () => {
  const request = new ArrivedRequest("POST", "http://h/", [], encoder.encode("{}"));
  assert.deepEqual(await request.bytes(), encoder.encode("{}"));
  await assert.rejects(() => request.bytes(), TypeError);
  const empty = new ArrivedRequest("POST", "http://h/", [], null);
  assert.equal((await empty.bytes()).length, 0);
});

Deno.test("ArrivedRequest.takeArrived() answers a body that arrived whole, once; never a streamed one", async () => {
  const whole = new ArrivedRequest("POST", "http://h/", [], encoder.encode("{}"));
  assert.deepEqual(whole.takeArrived(), encoder.encode("{}"));
  assert.equal(whole.takeArrived(), null);
  await assert.rejects(() => whole.bytes(), TypeError, "taken counts as read");
  const streamed = new ArrivedRequest(
    "POST",
    "http://h/",
    [],
    new ReadableStream({
      start(controller) {
        controller.enqueue(encoder.encode("[1]"));
        controller.close();
      },
    }),
  );
  assert.equal(streamed.takeArrived(), null);
  assert.deepEqual(await streamed.bytes(), encoder.encode("[1]"), "nothing was taken");
  const read = new ArrivedRequest("POST", "http://h/", [], encoder.encode("{}"));
  await read.bytes();
  assert.equal(read.takeArrived(), null);
  assert.equal(new ArrivedRequest("GET", "http://h/", [], null).takeArrived(), null);
});

Deno.test("ArrivedRequest.body is a stream of a whole body, and bytes() reads a streamed one", async () => {
  const whole = new ArrivedRequest("POST", "http://h/", [], encoder.encode("abc"));
  assert.equal(await new Response(whole.body).text(), "abc");
  const parts = ["ab", "cd", "e"];
  const streamed = new ArrivedRequest(
    "POST",
    "http://h/",
    [],
    new ReadableStream({
      pull(controller) {
        const next = parts.shift();
        if (next === undefined) controller.close();
        else controller.enqueue(encoder.encode(next));
      },
    }),
  );
  assert.equal(new TextDecoder().decode(await streamed.bytes()), "abcde");
});

Deno.test("ArrivedRequest.signal is aborted when the caller leaves, asked for before or after", () => {
  const early = new ArrivedRequest("GET", "http://h/", [], null);
  const signal = early.signal;
  assert.ok(!signal.aborted);
  early.abort();
  assert.ok(signal.aborted);
  const late = new ArrivedRequest("GET", "http://h/", [], null);
  late.abort();
  assert.ok(late.signal.aborted);
});

Deno.test("a plain request whose Host has a port past 65535 is answered 400", async () => {
  await using server = await startTestServer();
  const conn = await Deno.connect({
    hostname: "127.0.0.1",
    port: Number(new URL(server.url).port),
  });
  await conn.write(
    encoder.encode("GET /healthz HTTP/1.1\r\nHost: h:99999\r\nConnection: close\r\n\r\n"),
  );
  const { text } = await readToClose(conn);
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.match(text, /validation_failed/);
});
