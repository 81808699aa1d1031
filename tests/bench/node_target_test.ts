/**
 * The bench's clients on Node (bench/peers/node_target.ts and bench/node/driver.mjs): a tegami
 * server driven through the client library in a Node process, with the driver's CPU read from
 * /proc while it runs. Needs `node` on PATH, as the bench does.
 */

import assert from "node:assert/strict";
import { nodePeer, NodeTarget } from "../../bench/peers/node_target.ts";
import { tegamiSdkPeer } from "../../bench/peers/tegami.ts";

Deno.test("NodeTarget.run() measures W1, W2 and W3 through the client library on Node", async () => {
  const target = await nodePeer(tegamiSdkPeer(), "tegami", "sdknode", "node").start();
  assert.ok(target instanceof NodeTarget);
  try {
    const w1 = await target.run("W1", "w1", 500);
    assert.equal(w1.jobs, 500);
    assert.ok(w1.latency !== undefined && w1.latency.count === 500);
    assert.ok(w1.cpu !== undefined && Number.isFinite(w1.cpu.driver));
    assert.ok(Number.isFinite(w1.cpu.server));
    await target.fill("w2", 300, `{"filler":true}`);
    const w2 = await target.run("W2", "w2", 300);
    assert.equal(w2.jobs, 300);
    const w3 = await target.run("W3", "w3", 300);
    assert.equal(w3.jobs, 300);
    assert.equal(w3.latency, undefined);
    assert.match(w3.notes[0], /^clients on Node \d+\./);
  } finally {
    await target.stop();
  }
});
