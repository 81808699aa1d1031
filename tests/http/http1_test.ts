/**
 * The front door's own HTTP/1.1 (lib/http/http1.ts): which requests it reads itself and which
 * it leaves to the relay's server, and what it answers on a real socket — keep-alive, requests
 * sent back to back, bodies that arrive late or never, callers that go away, streamed answers.
 */

import assert from "node:assert/strict";
import { parsePlainRequest, writeResponse } from "../../lib/http/http1.ts";
import { jsonText } from "../../lib/http/respond.ts";
import { untilConsumers } from "../helpers/http_calls.ts";
import { readToClose } from "../helpers/raw_http.ts";
import { startTestServer } from "../helpers/test_server.ts";

const encoder = new TextEncoder();

function parse(text: string) {
  const bytes = encoder.encode(text);
  return parsePlainRequest(bytes, 0, bytes.length);
}

Deno.test("a plain request is read here: method, target, host, fields and where its body ends", () => {
  const parsed = parse(
    "POST /v1/queues/q/jobs?x=1 HTTP/1.1\r\nHost: h:1\r\nContent-Length: 2\r\n" +
      "Content-Type: application/json\r\n\r\n{}GET",
  );
  assert.equal(parsed.kind, "request");
  for (const host of ["127.0.0.1:8080", "[::1]:80", "queue.example"]) {
    assert.equal(parse(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`).kind, "request", host);
  }
  if (parsed.kind !== "request") return;
  const r = parsed.request;
  assert.equal(r.method, "POST");
  assert.equal(r.target, "/v1/queues/q/jobs?x=1");
  assert.equal(r.host, "h:1");
  assert.deepEqual(r.headers, [
    ["host", "h:1"],
    ["content-length", "2"],
    ["content-type", "application/json"],
  ]);
  assert.equal(r.bodyEnd - r.bodyStart, 2);
  assert.equal(r.keepAlive, true);
  const body = parse('POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\n"\u00e9\n"');
  assert.equal(body.kind, "request", "a body is not held to the head's rules");
  const close = parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n");
  assert.ok(close.kind === "request" && !close.request.keepAlive);
});

Deno.test("a WebSocket handshake is read here and marked; other requests are not", () => {
  const handshake = parse(
    "GET /v1/ws HTTP/1.1\r\nHost: h\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n" +
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
  );
  assert.ok(handshake.kind === "request" && handshake.request.websocket);
  const plain = parse("GET / HTTP/1.1\r\nHost: h\r\n\r\n");
  assert.ok(plain.kind === "request" && !plain.request.websocket);
});

Deno.test("a head not all here is incomplete; a body still arriving is not", () => {
  for (const part of ["", "POST / HTTP/1.1\r\nHost: h\r", "GET / HTTP/1.1\r\nHost: h\r\n\r"]) {
    assert.equal(part === "" ? "incomplete" : parse(part).kind, "incomplete", part);
  }
  const late = parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc");
  assert.ok(late.kind === "request" && late.request.bodyEnd - late.request.bodyStart === 10);
});

Deno.test("a head read in pieces is found whatever the cut, each byte checked once", () => {
  const text = "POST /j HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n{}";
  const bytes = encoder.encode(text);
  for (let cut = 1; cut < bytes.length; cut++) {
    const first = parsePlainRequest(bytes, 0, cut);
    if (first.kind !== "incomplete") {
      assert.ok(cut >= text.indexOf("\r\n\r\n") + 4, `found early at ${cut}`);
      continue;
    }
    assert.equal(first.scanned, cut);
    const whole = parsePlainRequest(bytes, 0, bytes.length, first.scanned);
    assert.ok(whole.kind === "request" && whole.request.bodyEnd === bytes.length, `cut ${cut}`);
  }
  // A bare LF or CR is still refused when it arrived in an earlier piece.
  const bare = encoder.encode("GET / HTTP/1.1\r\nHost: h\nX: y\r\n\r\n");
  const part = parsePlainRequest(bare, 0, 20);
  assert.equal(part.kind, "incomplete");
  if (part.kind === "incomplete") {
    assert.equal(parsePlainRequest(bare, 0, bare.length, part.scanned).kind, "other");
  }
});

Deno.test("anything this parser is not sure of is left to the relay's server", () => {
  const others = [
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nUpgrade: websocket\r\n" +
    "Connection: Upgrade\r\n\r\n",
    "GET / HTTP/1.0\r\nHost: h\r\n\r\n",
    "HEAD / HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET http://h/ HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", // obs-fold
    "GET / HTTP/1.1\r\nHost : h\r\n\r\n",
    "GET / HTTP/1.1\nHost: h\n\n", // bare LF
    "GET / HTTP/1.1\r\nHost: h\rX\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nX: \u00e9\r\n\r\n", // not ASCII
    "GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", // a GET with a body
    "get / HTTP/1.1\r\nHost: h\r\n\r\n",
    `GET / HTTP/1.1\r\nHost: h\r\n${"X-A: b\r\n".repeat(1200)}\r\n`, // a head over 8 KiB
    "GET / HTTP/1.1\r\nHost: my_service:8080\r\n\r\n", // valid, past the quick check
  ];
  for (const text of others) assert.equal(parse(text).kind, "other", JSON.stringify(text));
  // A head over 8 KiB is left even before its end arrives.
  assert.equal(parse(`GET / HTTP/1.1\r\n${"X-A: b\r\n".repeat(1200)}`).kind, "other");
});

/** The status a head is refused with here, or its kind when it is not refused. */
function refusedWith(text: string): number | string {
  const parsed = parse(text);
  return parsed.kind === "refused" ? parsed.refusal.status : parsed.kind;
}

Deno.test("RFC 9112 §3.2: an HTTP/1.1 request without Host is refused here with 400", () => {
  assert.equal(refusedWith("GET / HTTP/1.1\r\n\r\n"), 400);
  assert.equal(refusedWith("POST /v1/queues/q/jobs HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"), 400);
});

Deno.test("RFC 9112 §3.2: two Host fields or an invalid one are refused here with 400", () => {
  const bad = [
    "Host: a\r\nHost: b",
    "Host: a\r\nHost: a",
    "Host: evil/x", // a path
    "Host: 127.0.0.1:1/v1/queues/rerouted/jobs#",
    "Host: 127.0.0.1/healthz?",
    "Host: u@h", // userinfo
    "Host: h#f", // a fragment
    "Host: h?q", // a query
    "Host:", // empty
    "Host: a b",
  ];
  for (const field of bad) {
    assert.equal(refusedWith(`GET / HTTP/1.1\r\n${field}\r\n\r\n`), 400, field);
  }
});

Deno.test("RFC 9112 §3: a request line past 8 KiB is refused with 414, even before it ends", () => {
  assert.equal(refusedWith(`GET /${"a".repeat(9000)} HTTP/1.1\r\nHost: h\r\n\r\n`), 414);
  assert.equal(refusedWith(`GET /${"a".repeat(9000)}`), 414);
  // Bytes that do not begin a request line are the relay's server's to refuse.
  assert.equal(refusedWith("\x01".repeat(9000)), "other");
});

/** Writes `text` to the server and reads what it answers until it closes or `ms` pass. */
async function exchange(
  url: string,
  parts: string[],
  options: { ms?: number; gapMs?: number; halfClose?: boolean } = {},
): Promise<string> {
  const { hostname, port } = new URL(url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  for (const part of parts) {
    await conn.write(encoder.encode(part));
    if (options.gapMs) await new Promise((resolve) => setTimeout(resolve, options.gapMs));
  }
  if (options.halfClose) await conn.closeWrite();
  const { text } = await readToClose(conn, options.ms ?? 2000);
  try {
    conn.close();
  } catch { /* already closed */ }
  return text;
}

const job = (n: number) => {
  const body = JSON.stringify({ payload: { n } });
  return `POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${body.length}\r\n\r\n${body}`;
};

Deno.test("requests sent back to back on one connection are answered in order", async () => {
  await using s = await startTestServer({ realTime: true });
  const text = await exchange(s.url, [job(1) + job(2) + job(3)], { halfClose: true });
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
  assert.deepEqual(statuses, ["201", "201", "201"], text);
  const ids = [...text.matchAll(/"id":(\d+)/g)].map((m) => Number(m[1]));
  assert.deepEqual(ids, [...ids].sort((a, b) => a - b));
  assert.match(text, /content-length: \d+\r\n/);
  assert.match(text, /date: \w{3}, \d\d \w{3} \d{4}/);
});

Deno.test("a body that arrives in pieces is read whole; one request after it still works", async () => {
  await using s = await startTestServer({ realTime: true });
  const first = job(1);
  const cut = first.indexOf("\r\n\r\n") + 6;
  const text = await exchange(s.url, [first.slice(0, cut), first.slice(cut) + job(2)], {
    gapMs: 100,
    halfClose: true,
  });
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
  assert.deepEqual(statuses, ["201", "201"], text);
  const listed = await s.request("GET", "/v1/queues/q/jobs?state=pending");
  assert.equal((listed.body as { jobs: unknown[] }).jobs.length, 2);
});

Deno.test("a body cut short by the caller's close stores nothing and is answered 400", async () => {
  await using s = await startTestServer({ realTime: true });
  const text = await exchange(s.url, [
    'POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 50\r\n\r\n{"payl',
  ], { halfClose: true });
  assert.match(text, /^HTTP\/1\.1 400 /, text);
  const listed = await s.request("GET", "/v1/queues/q/jobs?state=pending");
  assert.equal((listed.body as { jobs: unknown[] }).jobs.length, 0);
});

Deno.test("a request the parser leaves goes on through the relay, and so does the rest", async () => {
  await using s = await startTestServer({ realTime: true });
  const chunked =
    "POST /v1/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n" +
    'Content-Type: application/json\r\n\r\n10\r\n{"payload":{"n":\r\n2\r\n1}\r\n2\r\n}\n\r\n0\r\n\r\n';
  const text = await exchange(s.url, [job(1) + chunked + job(3)], { ms: 1000 });
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
  assert.deepEqual(statuses, ["201", "201", "201"], text);
});

Deno.test("a long-poll whose caller closes its connection is ended at once", async () => {
  await using s = await startTestServer({ realTime: true });
  const body = JSON.stringify({ max: 1, wait_ms: 5000 });
  const started = performance.now();
  await exchange(s.url, [
    `POST /v1/queues/q/leases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  ], { ms: 200 });
  // Its caller gone, the poll must leave the queue's consumers well before its 5 s wait.
  await untilConsumers(s, "q", 0);
  assert.ok(performance.now() - started < 3000, "the poll outlived its caller");
  await s.request("POST", "/v1/queues/q/jobs", { payload: 1 });
  const pending = await s.request("GET", "/v1/queues/q/jobs?state=pending");
  assert.equal((pending.body as { jobs: unknown[] }).jobs.length, 1, "no job went to the gone");
});

Deno.test("a long-poll whose caller sent stray bytes before closing is still ended at once", async () => {
  await using s = await startTestServer({ realTime: true });
  const body = JSON.stringify({ max: 1, wait_ms: 5000 });
  const { hostname, port } = new URL(s.url);
  const conn = await Deno.connect({ hostname, port: Number(port) });
  const started = performance.now();
  await conn.write(encoder.encode(
    `POST /v1/queues/q/leases HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  ));
  await untilConsumers(s, "q", 1);
  await conn.write(encoder.encode("\r\n"));
  await new Promise((resolve) => setTimeout(resolve, 100));
  conn.close();
  await untilConsumers(s, "q", 0);
  assert.ok(performance.now() - started < 3000, "the poll outlived its caller");
});

Deno.test("a request sent a byte at a time is answered", async () => {
  await using s = await startTestServer({ realTime: true });
  const request = job(1);
  const parts = [...request].map((c) => c); // ASCII: one byte each
  const text = await exchange(s.url, parts, { ms: 3000, gapMs: 1 });
  assert.match(text, /^HTTP\/1\.1 201 /, text);
});

/**
 * A connected pair on loopback: `server` to write answers to, and `received`, which closes it and
 * reads everything the client side received.
 */
async function answerSocket(): Promise<{ server: Deno.Conn; received: () => Promise<string> }> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const client = await Deno.connect({ hostname: "127.0.0.1", port: listener.addr.port });
  const server = await listener.accept();
  listener.close();
  const received = async () => {
    server.close();
    const { text } = await readToClose(client, 2000);
    client.close();
    return text;
  };
  return { server, received };
}

Deno.test("a streamed answer is written chunked: what was ready at once, then each chunk", async () => {
  const { server, received } = await answerSocket();
  let later: (chunk: string) => void = () => {};
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("one"));
      later = (chunk) => {
        controller.enqueue(encoder.encode(chunk));
        controller.close();
      };
    },
  });
  const writing = writeResponse(server, new Response(body, { status: 200 }), true);
  setTimeout(() => later("two!"), 50);
  await writing;
  const text = await received();
  assert.match(text, /^HTTP\/1\.1 200 OK\r\n/);
  assert.match(text, /transfer-encoding: chunked\r\n/);
  assert.match(text, /connection: close\r\n/);
  assert.ok(text.endsWith("\r\n\r\n3\r\none\r\n4\r\ntwo!\r\n0\r\n\r\n"), JSON.stringify(text));
});

Deno.test("a JSON answer is written whole: its fields, the byte length of its UTF-8 body", async () => {
  const { server, received } = await answerSocket();
  const body = JSON.stringify({ name: "größe ✓ 🦕" });
  const plain = jsonText(429, body);
  plain.headers.set("retry-after", "3");
  await writeResponse(server, plain, false);
  // A field value that is not ASCII (none of tegami's are) still gets a well-framed answer.
  const odd = jsonText(200, body);
  odd.headers.set("x-note", "größe");
  await writeResponse(server, odd, true);
  const text = await received();
  const answers = text.split(/(?=HTTP\/1\.1 )/);
  assert.equal(answers.length, 2, text);
  const length = encoder.encode(body).length;
  assert.match(answers[0], /^HTTP\/1\.1 429 Too Many Requests\r\n/);
  assert.match(answers[0], /content-type: application\/json; charset=utf-8\r\n/);
  assert.match(answers[0], /retry-after: 3\r\n/);
  assert.match(answers[0], new RegExp(`content-length: ${length}\r\n`));
  assert.doesNotMatch(answers[0], /connection: close/);
  assert.ok(answers[0].endsWith(`\r\n\r\n${body}`), answers[0]);
  assert.match(answers[1], /x-note: größe\r\n/);
  assert.match(answers[1], /connection: close\r\n/);
  assert.ok(answers[1].endsWith(`\r\n\r\n${body}`), answers[1]);
});

Deno.test("a JSON answer of a bodiless status has no body, and its fields refuse what would split it", async () => {
  const { server, received } = await answerSocket();
  await writeResponse(server, jsonText(204, "{}"), false);
  // An empty body after a head with a field that is not ASCII: the head is still whole.
  const odd = jsonText(200, "");
  odd.headers.set("X-Note", "ü");
  await writeResponse(server, odd, true);
  const text = await received();
  const [none, empty] = text.split(/(?=HTTP\/1\.1 )/);
  assert.match(none, /^HTTP\/1\.1 204 No Content\r\n/);
  assert.doesNotMatch(none, /content-length/);
  assert.ok(none.endsWith("\r\n\r\n"), JSON.stringify(none));
  assert.match(empty, /x-note: ü\r\n/);
  assert.match(empty, /content-length: 0\r\n/);
  assert.ok(empty.endsWith("\r\n\r\n"), JSON.stringify(empty));
  const answer = jsonText(200, "{}");
  assert.throws(() => answer.headers.set("x-a", "b\r\nx-injected: 1"), TypeError);
  assert.throws(() => answer.headers.set("bad name", "v"), TypeError);
  assert.equal(answer.headers.get("Content-Type"), "application/json; charset=utf-8");
});

Deno.test("the event stream is relayed, and arrives as it comes", async () => {
  await using s = await startTestServer({ realTime: true });
  const text = await exchange(s.url, ["GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"], {
    ms: 1500,
  });
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.match(text, /transfer-encoding: chunked\r\n/);
  assert.match(text, /content-type: text\/event-stream/);
  assert.match(text, /\r\n[0-9a-f]+\r\nevent: /, "events arrive as chunks");
});
