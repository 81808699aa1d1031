// Run by tests/node/run.ts on Node 20 without --experimental-websocket: the producer works, a
// consumer of a ws:// URL works too (the client's own WebSocket on node:net needs no flag), and
// one of a wss:// URL, which needs the standard WebSocket, refuses at once naming the flag.
import assert from "node:assert/strict";
import { test } from "node:test";

const { consume, TegamiClient } = await import(process.env.TEGAMI_CLIENT);
const url = process.env.TEGAMI_URL;

test("without a WebSocket, the producer and a ws:// consumer work", async () => {
  assert.equal(typeof globalThis.WebSocket, "undefined");
  const client = new TegamiClient({ url });
  const queue = `node.noflag.${process.pid}`;
  const { id } = await client.enqueue(queue, 1);
  let seen;
  const done = new Promise((resolve) => seen = resolve);
  const worker = consume(queue, (payload, ctx) => {
    seen(ctx.id);
    return payload + 1;
  }, { url });
  assert.equal(await done, id);
  await worker.close();
  assert.equal((await client.get(id)).result, 2);
});

test("without a WebSocket, consume() of a wss:// URL names the missing flag", () => {
  assert.throws(() => consume("node.noflag", () => {}, { url: "https://127.0.0.1:1" }), {
    name: "TypeError",
    message: /--experimental-websocket/,
  });
});
