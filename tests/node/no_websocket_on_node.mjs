// Run by tests/node/run.ts on Node 20 without --experimental-websocket: the producer works, and
// the consumer refuses at once with a message naming the flag.
import assert from "node:assert/strict";
import { test } from "node:test";

const { consume, TegamiClient } = await import(process.env.TEGAMI_CLIENT);
const url = process.env.TEGAMI_URL;

test("without a WebSocket, the producer works and consume() names the missing flag", async () => {
  assert.equal(typeof globalThis.WebSocket, "undefined");
  const client = new TegamiClient({ url });
  const { id } = await client.enqueue("node.noflag", 1);
  assert.equal((await client.get(id)).state, "pending");
  assert.throws(() => consume("node.noflag", () => {}, { url }), {
    name: "TypeError",
    message: /--experimental-websocket/,
  });
});
