/**
 * The SDK's requests written without the SDK (bench/peers/sqs.ts, `client: "raw"`): the server
 * takes them as the SDK's own, and W7 through them settles every job once, the queue left empty;
 * calls in flight together each have a connection.
 */

import assert from "node:assert/strict";
import { SQS_RAW_NAME, sqsPeer, SqsTarget } from "../../bench/peers/sqs.ts";
import { batchesOfTen } from "../../bench/workloads/batches_of_ten.ts";

Deno.test("W7 through the SDK's requests from a lean client settles every job once", async () => {
  const peer = sqsPeer({ client: "raw" });
  assert.equal(peer.key, "sqsraw");
  const target = await peer.start();
  assert.ok(target instanceof SqsTarget);
  assert.equal(target.name, SQS_RAW_NAME);
  try {
    const m = await batchesOfTen(target, { queue: "w7", jobs: 300, consumers: 3 });
    assert.equal(m.jobs, 300);
    assert.ok(!m.notes.some((note) => /redeliveries/.test(note)), m.notes.join("; "));
    const response = await fetch(`${target.inner.url}/v1/queues/w7`);
    const { counts } = await response.json();
    assert.equal(counts.done, 300);
    assert.equal(counts.pending + counts.leased + counts.delayed, 0);
    // A receipt handle from another queue fails its entry, as it would for the SDK.
    // Two sends in flight on one sender, as W7's producers have them.
    const sender = await target.batchSender("other");
    await Promise.all([sender.send([`{"n":0}`]), sender.send([`{"n":1}`, `{"n":2}`])]);
    await sender.close();
    const receiver = await target.batchReceiver("other");
    const [got, ...more] = await receiver.receive(1000);
    assert.equal(more.length, 2);
    await receiver.close();
    const w7 = await target.batchReceiver("w7");
    await assert.rejects(() => w7.settle([got]), /Cannot delete a batch: .*ReceiptHandleIsInvalid/);
    await w7.close();
  } finally {
    await target.stop();
  }
});
