/**
 * W7, batches of ten (bench/workloads/batches_of_ten.ts), on both of its doors: tegami's own API
 * (bench/peers/native_batches.ts) and its SQS API through `@aws-sdk/client-sqs`
 * (bench/peers/sqs.ts), each against a real server process, as `deno task bench` runs them; and
 * the SQS target's own producer, consumer and fill, which its warm-up uses.
 */

import assert from "node:assert/strict";
import { nativeBatchDoor } from "../../bench/peers/native_batches.ts";
import { SQS_NAME, sqsPeer, SqsTarget } from "../../bench/peers/sqs.ts";
import { TegamiTarget } from "../../bench/peers/tegami.ts";
import { batchesOfTen } from "../../bench/workloads/batches_of_ten.ts";
import { endToEnd } from "../../bench/workloads/end_to_end.ts";

/** The counts of `queue` on the server at `url`. */
async function counts(url: string, queue: string): Promise<Record<string, number>> {
  const response = await fetch(`${url}/v1/queues/${queue}`);
  return (await response.json()).counts;
}

Deno.test("batchesOfTen() settles every job once through tegami's own API", async () => {
  const target = await TegamiTarget.start();
  try {
    const m = await batchesOfTen(nativeBatchDoor(target), { queue: "w7", jobs: 195 });
    assert.equal(m.jobs, 200, "rounded up to whole batches");
    assert.ok(m.cpu !== undefined && Number.isFinite(m.cpu.server));
    assert.ok(!m.notes.some((note) => /redeliveries/.test(note)), m.notes.join("; "));
    const c = await counts(target.url, "w7");
    assert.equal(c.done, 200);
    assert.equal(c.pending + c.leased + c.delayed, 0);
  } finally {
    await target.stop();
  }
});

Deno.test("batchesOfTen() settles every job once through the SQS API, paced at its rate", async () => {
  const target = await sqsPeer().start();
  assert.ok(target instanceof SqsTarget);
  assert.equal(target.name, SQS_NAME);
  try {
    const m = await batchesOfTen(target, { queue: "w7", jobs: 200, rate: 400 });
    assert.equal(m.jobs, 200);
    assert.ok(m.seconds >= 0.4, `200 jobs at 400/s took ${m.seconds} s`);
    assert.match(m.notes[0], /paced at 400 jobs\/s/);
    const c = await counts(target.inner.url, "w7");
    assert.equal(c.done, 200);
    assert.equal(c.pending + c.leased + c.delayed, 0);
  } finally {
    await target.stop();
  }
});

Deno.test("SqsTarget's producer, consumer and fill carry jobs through the SQS API", async () => {
  const target = await sqsPeer().start();
  assert.ok(target instanceof SqsTarget);
  try {
    const w1 = await endToEnd(target, { queue: "w1", jobs: 300 });
    assert.equal(w1.jobs, 300);
    assert.equal(w1.latency?.count, 300);
    await target.fill("filled", 25, `{"filler":true}`);
    assert.equal((await counts(target.inner.url, "filled")).pending, 25);
  } finally {
    await target.stop();
  }
});
