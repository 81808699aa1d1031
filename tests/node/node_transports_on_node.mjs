// The client's Node transports, run by tests/node/run.ts on every Node with Node's test runner:
// NodeWebSocket (lib/client/node_websocket.ts, bundled as TEGAMI_NODE_WEBSOCKET) against a bare
// node:net server that writes exact RFC 6455 bytes, and the producer's node:http transport
// (lib/client/node_http.ts, node_http1.ts) through the bundled client (TEGAMI_CLIENT), against
// node:http and bare node:net servers that write exact HTTP/1.1 bytes.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpsServer } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { test } from "node:test";

const { NodeWebSocket } = await import(process.env.TEGAMI_NODE_WEBSOCKET);
const { TegamiClient } = await import(process.env.TEGAMI_CLIENT);
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/**
 * A server that answers one upgrade (with `protocol` chosen, or the status line `refuse`), then
 * hands the socket and what the client sent to `talk`.
 */
async function rawServer(talk, { protocol = "tegami.v2", refuse } = {}) {
  const server = createServer((socket) => {
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) return;
      socket.off("data", onData);
      const text = head.subarray(0, end).toString();
      if (refuse !== undefined) {
        socket.end(`${refuse}\r\ncontent-length: 0\r\n\r\n`);
        return;
      }
      const key = /sec-websocket-key: (.*)/i.exec(text)[1].trim();
      const accept = createHash("sha1").update(key + GUID).digest("base64");
      socket.write(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
          `Sec-WebSocket-Accept: ${accept}\r\nSec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
      );
      talk(socket, text, frames(socket, head.subarray(end + 4)));
    };
    socket.on("data", onData);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `ws://127.0.0.1:${server.address().port}/v1/ws`, close: () => server.close() };
}

/** The client's frames as they arrive, unmasked: `next()` answers `{ fin, op, masked, data }`. */
function frames(socket, first) {
  let buffer = first;
  const queue = [];
  let wake = null;
  const parse = () => {
    for (;;) {
      if (buffer.length < 2) return;
      let length = buffer[1] & 127;
      let at = 2;
      if (length === 126) [length, at] = [buffer.readUInt16BE(2), 4];
      else if (length === 127) [length, at] = [Number(buffer.readBigUInt64BE(2)), 10];
      const masked = (buffer[1] & 128) !== 0;
      if (buffer.length < at + (masked ? 4 : 0) + length) return;
      const key = masked ? buffer.subarray(at, at + 4) : null;
      if (masked) at += 4;
      const data = Buffer.from(buffer.subarray(at, at + length));
      if (key) { for (let i = 0; i < data.length; i++) data[i] ^= key[i % 4]; }
      queue.push({ fin: (buffer[0] & 128) !== 0, op: buffer[0] & 15, masked, data });
      buffer = buffer.subarray(at + length);
      wake?.();
    }
  };
  socket.on("data", (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    parse();
  });
  parse();
  return {
    async next() {
      while (queue.length === 0) await new Promise((resolve) => wake = resolve);
      return queue.shift();
    },
  };
}

/** An unmasked server frame with FIN `fin`, opcode `op` and `data`. */
function frame(op, data, fin = true) {
  const payload = Buffer.from(data);
  const length = payload.length;
  const head = length < 126
    ? Buffer.from([(fin ? 128 : 0) | op, length])
    : length < 65536
    ? Buffer.from([(fin ? 128 : 0) | op, 126, length >> 8, length & 255])
    : Buffer.concat([Buffer.from([(fin ? 128 : 0) | op, 127]), bigLength(length)]);
  return Buffer.concat([head, payload]);
}

function bigLength(length) {
  const bytes = Buffer.alloc(8);
  bytes.writeBigUInt64BE(BigInt(length));
  return bytes;
}

/** Opens a NodeWebSocket and collects what it sees. */
function open(url) {
  const ws = new NodeWebSocket(url, "tegami.v2");
  const messages = [];
  let wake = null;
  const opened = new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = () => reject(new Error("the socket failed"));
  });
  const closed = new Promise((resolve) => ws.onclose = resolve);
  ws.onmessage = (event) => {
    messages.push(event.data);
    wake?.();
  };
  const next = async () => {
    while (messages.length === 0) await new Promise((resolve) => wake = resolve);
    return messages.shift();
  };
  return { ws, opened, closed, next };
}

test("NodeWebSocket opens with the subprotocol and sends masked text frames (RFC 6455 §5.3)", async () => {
  let server;
  const got = new Promise((resolve) => {
    server = rawServer(async (_socket, request, incoming) => {
      resolve({ request, frame: await incoming.next() });
    });
  });
  const { url, close } = await server;
  const client = open(url);
  await client.opened;
  assert.equal(client.ws.protocol, "tegami.v2");
  client.ws.send("héllo");
  const { request, frame: sent } = await got;
  assert.match(request, /^GET \/v1\/ws HTTP\/1\.1\r\n/);
  assert.match(request, /sec-websocket-protocol: tegami\.v2/i);
  assert.match(request, /sec-websocket-version: 13/i);
  assert.deepEqual([sent.fin, sent.op, sent.masked], [true, 1, true]);
  assert.equal(sent.data.toString(), "héllo");
  client.ws.close();
  close();
});

test("NodeWebSocket reassembles a fragmented message and answers a ping between its fragments (RFC 6455 §5.4, §5.5.2)", async () => {
  const pongs = [];
  const { url, close } = await rawServer(async (socket, _request, incoming) => {
    // Three fragments with a ping between, all in one write: the client must split them itself.
    socket.write(Buffer.concat([
      frame(1, "one ", false),
      frame(9, "are you there"),
      frame(0, "two ", false),
      frame(0, "three"),
    ]));
    pongs.push(await incoming.next());
  });
  const client = open(url);
  await client.opened;
  assert.equal(await client.next(), "one two three");
  while (pongs.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual([pongs[0].op, pongs[0].data.toString()], [10, "are you there"]);
  client.ws.close();
  close();
});

test("NodeWebSocket reads frames with 16-bit and 64-bit lengths split across writes (RFC 6455 §5.2)", async () => {
  const medium = "m".repeat(60_000);
  const large = "l".repeat(70_000);
  const { url, close } = await rawServer((socket) => {
    const bytes = Buffer.concat([frame(1, medium), frame(1, large)]);
    // One byte, then the rest in uneven pieces.
    socket.write(bytes.subarray(0, 1));
    setTimeout(() => socket.write(bytes.subarray(1, 3)), 5);
    setTimeout(() => socket.write(bytes.subarray(3, 70_000)), 10);
    setTimeout(() => socket.write(bytes.subarray(70_000)), 15);
  });
  const client = open(url);
  await client.opened;
  assert.equal(await client.next(), medium);
  assert.equal(await client.next(), large);
  client.ws.close();
  close();
});

test("NodeWebSocket echoes the server's close and reports its code and reason (RFC 6455 §5.5.1, §7.1.5)", async () => {
  let echoed;
  const { url, close } = await rawServer(async (socket, _request, incoming) => {
    socket.write(frame(8, Buffer.concat([Buffer.from([0x03, 0xe9]), Buffer.from("going away")])));
    echoed = await incoming.next();
  });
  const client = open(url);
  await client.opened;
  const event = await client.closed;
  assert.deepEqual([event.code, event.reason, event.wasClean], [1001, "going away", true]);
  while (echoed === undefined) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.deepEqual([echoed.op, echoed.data.readUInt16BE(0)], [8, 1001]);
  close();
});

test("NodeWebSocket fails with 1006 when the upgrade is refused (RFC 6455 §4.1)", async () => {
  const { url, close } = await rawServer(() => {}, { refuse: "HTTP/1.1 403 Forbidden" });
  const ws = new NodeWebSocket(url, "tegami.v2");
  let failed = false;
  ws.onerror = () => failed = true;
  const event = await new Promise((resolve) => ws.onclose = resolve);
  assert.equal(failed, true);
  assert.equal(event.code, 1006);
  assert.equal(ws.readyState, NodeWebSocket.CLOSED);
  close();
});

test("TegamiClient on Node sends through node:net, not fetch, and reads a chunked answer", async () => {
  const server = createHttpServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => body += chunk);
    request.on("end", () => {
      // No content-length: Node answers chunked, as a proxy may.
      response.writeHead(201, { "content-type": "application/json" });
      response.write(`{"id":7,"dedup`);
      response.end(`licated":false,"duplicate":null,"echo":${JSON.stringify(body)}}`);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const fetched = globalThis.fetch;
  globalThis.fetch = () => Promise.reject(new Error("fetch was used"));
  try {
    const client = new TegamiClient({ url: `http://127.0.0.1:${server.address().port}` });
    const answer = await client.enqueue("q", { n: 1 });
    assert.equal(answer.id, 7);
    assert.equal(answer.echo, `{"payload":{"n":1}}`);
  } finally {
    globalThis.fetch = fetched;
    server.close();
  }
});

test("TegamiClient on Node uses the fetch it is given", async () => {
  const calls = [];
  const client = new TegamiClient({
    url: "http://tegami.invalid",
    fetch: (url, init) => {
      calls.push([url, init.method]);
      return Promise.resolve(new Response(`{"id":1,"deduplicated":false,"duplicate":null}`));
    },
  });
  assert.deepEqual(await client.enqueue("q", 1), { id: 1, deduplicated: false, duplicate: null });
  assert.deepEqual(calls, [["http://tegami.invalid/v1/queues/q/jobs", "POST"]]);
});

test("TegamiClient on Node rejects with unavailable when it cannot connect", async () => {
  const client = new TegamiClient({ url: "http://127.0.0.1:1" });
  await assert.rejects(client.enqueue("q", 1), { code: "unavailable" });
});

/**
 * A bare HTTP server on node:net: for the n-th request (counted over all connections) it writes
 * `answers[n]` as exact bytes, in the pieces given when it is an array, and closes the connection
 * after it when `closeAfter` has n. Answers its URL and the connections it accepted.
 */
async function rawHttpServer(answers, { closeAfter = [] } = {}) {
  let served = 0;
  const connections = [];
  const requests = [];
  const server = createServer((socket) => {
    connections.push(socket);
    let buffer = "";
    socket.on("data", (chunk) => {
      buffer += chunk.toString("latin1");
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (buffer.length < end + 4 + length) return;
        requests.push(buffer.slice(0, end + 4 + length));
        buffer = buffer.slice(end + 4 + length);
        const n = served++;
        const pieces = [answers[n]].flat();
        pieces.forEach((piece, i) => setTimeout(() => socket.write(piece), i * 5));
        if (closeAfter.includes(n)) setTimeout(() => socket.end(), pieces.length * 5 + 5);
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    connections,
    requests,
    close: () => {
      for (const socket of connections) socket.destroy();
      server.close();
    },
  };
}

const JOB = (id) => `{"id":${id},"deduplicated":false,"duplicate":null}`;
const answer = (id, extra = "") =>
  `HTTP/1.1 201 Created\r\ncontent-type: application/json\r\n${extra}content-length: ${
    JOB(id).length
  }\r\n\r\n${JOB(id)}`;

test("TegamiClient on Node sends a request with its length, and reuses the connection (RFC 9112 §6.2, §9.3)", async () => {
  const server = await rawHttpServer([answer(1), answer(2)]);
  try {
    const client = new TegamiClient({ url: server.url });
    assert.equal((await client.enqueue("q", { n: 1 })).id, 1);
    assert.equal((await client.enqueue("q", { n: 2 })).id, 2);
    assert.equal(server.connections.length, 1);
    const [first] = server.requests;
    assert.match(first, /^POST \/v1\/queues\/q\/jobs HTTP\/1\.1\r\n/);
    assert.match(first, /\r\nhost: 127\.0\.0\.1:\d+\r\n/);
    assert.match(first, /\r\ncontent-length: 19\r\n\r\n\{"payload":\{"n":1\}\}$/);
  } finally {
    server.close();
  }
});

test("TegamiClient on Node reads chunks split anywhere, with extensions and trailers (RFC 9112 §7.1)", async () => {
  const body = JOB(3);
  const bytes = "HTTP/1.1 201 Created\r\ntransfer-encoding: chunked\r\n\r\n" +
    `5;ext=1\r\n${body.slice(0, 5)}\r\n${(body.length - 5).toString(16)}\r\n${body.slice(5)}\r\n` +
    "0\r\nx-trailer: 1\r\n\r\n";
  // In pieces of 3 bytes: heads, sizes and CRLFs all cut.
  const pieces = [];
  for (let i = 0; i < bytes.length; i += 3) pieces.push(bytes.slice(i, i + 3));
  const server = await rawHttpServer([pieces, answer(4)]);
  try {
    const client = new TegamiClient({ url: server.url });
    assert.equal((await client.enqueue("q", 1)).id, 3);
    assert.equal((await client.enqueue("q", 2)).id, 4);
    assert.equal(server.connections.length, 1);
  } finally {
    server.close();
  }
});

test("TegamiClient on Node reads an answer framed by the connection's end, then connects again (RFC 9112 §6.3)", async () => {
  const server = await rawHttpServer(
    [`HTTP/1.0 201 Created\r\n\r\n${JOB(5)}`, answer(6, "connection: close\r\n"), answer(7)],
    { closeAfter: [0, 1] },
  );
  try {
    const client = new TegamiClient({ url: server.url });
    assert.equal((await client.enqueue("q", 1)).id, 5);
    assert.equal((await client.enqueue("q", 2)).id, 6);
    assert.equal((await client.enqueue("q", 3)).id, 7);
    assert.equal(server.connections.length, 3);
  } finally {
    server.close();
  }
});

test("TegamiClient on Node opens a new connection once the server closed an idle one", async () => {
  const server = await rawHttpServer([answer(8), answer(9)]);
  try {
    const client = new TegamiClient({ url: server.url });
    assert.equal((await client.enqueue("q", 1)).id, 8);
    server.connections[0].end();
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal((await client.enqueue("q", 2)).id, 9);
    assert.equal(server.connections.length, 2);
  } finally {
    server.close();
  }
});

test("TegamiClient on Node rejects with unavailable when the connection ends mid-answer", async () => {
  const server = await rawHttpServer(
    ['HTTP/1.1 201 Created\r\ncontent-length: 100\r\n\r\n{"id":'],
    { closeAfter: [0] },
  );
  try {
    const client = new TegamiClient({ url: server.url });
    await assert.rejects(client.enqueue("q", 1), { code: "unavailable" });
  } finally {
    server.close();
  }
});

test("TegamiClient on Node takes an answer without a body (204) and an interim 100 (RFC 9110 §15.2)", async () => {
  const server = await rawHttpServer([
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
    answer(10),
  ]);
  try {
    const client = new TegamiClient({ url: server.url });
    assert.equal(await client.request("DELETE", "/v1/anything"), null);
    assert.equal((await client.enqueue("q", 1)).id, 10);
    assert.equal(server.connections.length, 1);
  } finally {
    server.close();
  }
});

test("TegamiClient on Node sends https:// requests through node:https", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "tegami-tls-"));
  try {
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-days",
      "1",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ], { stdio: "ignore" });
  } catch (error) {
    // CI installs openssl (.ci/run): there a missing one is a failure, not a skip.
    if (process.env.CI === "true") throw error;
    t.skip("openssl is not installed");
    return;
  }
  const server = createHttpsServer({
    key: readFileSync(join(dir, "key.pem")),
    cert: readFileSync(join(dir, "cert.pem")),
  }, (request, response) => {
    let body = "";
    request.on("data", (chunk) => body += chunk);
    request.on("end", () => {
      response.writeHead(201, { "content-type": "application/json" });
      response.end(
        `{"id":11,"deduplicated":false,"duplicate":null,"echo":${JSON.stringify(body)}}`,
      );
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  // The test's own certificate: trusted through the agent's default CA list is not possible, so
  // this test alone turns verification off.
  const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0";
  const fetched = globalThis.fetch;
  globalThis.fetch = () => Promise.reject(new Error("fetch was used"));
  try {
    const client = new TegamiClient({ url: `https://127.0.0.1:${server.address().port}` });
    const answer = await client.enqueue("q", { n: 2 });
    assert.equal(answer.id, 11);
    assert.equal(answer.echo, `{"payload":{"n":2}}`);
  } finally {
    globalThis.fetch = fetched;
    if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
    server.close();
    rmSync(dir, { recursive: true });
  }
});
