/**
 * The consumer's Deno WebSocket client (Nagle off), against a real tegami server and against a
 * bare Deno server: the handshake and subprotocol, messages both ways, large frames without the
 * 40 ms stall, the close handshake with the server's code, and a refused upgrade.
 */

import assert from "node:assert/strict";
import { DenoWebSocket } from "../../lib/client/deno_websocket.ts";
import { startTestServer } from "../helpers/test_server.ts";
import { wsUrl } from "../helpers/ws_client.ts";

/** Opens a client and collects what it sees. */
function open(url: string, protocols?: string) {
  const ws = new DenoWebSocket(url, protocols);
  const messages: (string | ArrayBuffer)[] = [];
  const opened = new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve();
    ws.onerror = () => reject(new Error("the socket failed"));
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    ws.onclose = (event) => resolve(event);
  });
  let wake: (() => void) | null = null;
  ws.onmessage = (event) => {
    messages.push(event.data);
    wake?.();
  };
  const next = async (): Promise<string | ArrayBuffer> => {
    while (messages.length === 0) await new Promise<void>((resolve) => wake = resolve);
    return messages.shift()!;
  };
  return { ws, opened, closed, next };
}

Deno.test("DenoWebSocket talks to tegami with tegami.v2, and sees the server's close code", async () => {
  await using server = await startTestServer();
  const client = open(wsUrl(server.url), "tegami.v2");
  await client.opened;
  assert.equal(client.ws.protocol, "tegami.v2");
  client.ws.send(JSON.stringify({ op: "subscribe", ref: 1, queue: "q", prefetch: 5 }));
  assert.deepEqual(JSON.parse(await client.next() as string), {
    op: "ok",
    ref: 1,
    queue: "q",
    prefetch: 5,
  });
  await server.request("POST", "/v1/queues/q/jobs", { jobs: [{ payload: 1 }, { payload: 2 }] });
  const pushed = JSON.parse(await client.next() as string);
  assert.equal(pushed.op, "jobs");
  assert.equal(pushed.jobs.length, 2);
  await server.stop();
  const { code } = await client.closed;
  assert.equal(code, 1001);
});

Deno.test("DenoWebSocket sends a frame over 1 KiB without waiting for a delayed ACK", async () => {
  const echo = Deno.serve({ port: 0, onListen() {} }, (request) => {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onmessage = (event) => socket.send(event.data);
    return response;
  });
  try {
    const client = open(`ws://127.0.0.1:${echo.addr.port}/`);
    await client.opened;
    assert.equal(client.ws.protocol, "");
    // Deno's own client takes 40 ms or more for every one of these; a loaded machine may slow one
    // round trip, so each size gets the best of three.
    for (const size of [10, 1500, 3000, 20_000]) {
      const text = "é".repeat(size);
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        client.ws.send(text);
        assert.equal(await client.next(), text);
        best = Math.min(best, performance.now() - started);
      }
      assert.ok(best < 20, `${size} characters took ${best.toFixed(1)} ms at best`);
    }
    const large = "x".repeat(300_000);
    client.ws.send(large);
    assert.equal(await client.next(), large);
    client.ws.send(new Uint8Array([1, 2, 3]));
    const bytes = await client.next();
    assert.ok(bytes instanceof ArrayBuffer);
    assert.deepEqual([...new Uint8Array(bytes)], [1, 2, 3]);
    client.ws.close(4000, "done");
    const closed = await client.closed;
    assert.equal(closed.code, 4000);
    assert.equal(client.ws.readyState, DenoWebSocket.CLOSED);
  } finally {
    await echo.shutdown();
  }
});

Deno.test("DenoWebSocket reports a refused upgrade as an error and a 1006 close", async () => {
  const plain = Deno.serve({ port: 0, onListen() {} }, () => new Response("no", { status: 403 }));
  try {
    const client = open(`ws://127.0.0.1:${plain.addr.port}/`);
    await assert.rejects(client.opened);
    assert.equal((await client.closed).code, 1006);
  } finally {
    await plain.shutdown();
  }
});

Deno.test("DenoWebSocket refuses wss:// (the consumer uses the runtime's WebSocket there)", () => {
  assert.throws(() => new DenoWebSocket("wss://127.0.0.1:1/"), TypeError);
});
