import assert from "node:assert/strict";
import { TickBatch } from "../../lib/client/tick_batch.ts";

function recorder(): { batch: TickBatch<number>; flushed: number[][] } {
  const flushed: number[][] = [];
  return { batch: new TickBatch<number>((items) => flushed.push(items)), flushed };
}

const macrotask = () => new Promise((resolve) => setTimeout(resolve, 0));

Deno.test("TickBatch hands over the calls of one tick together, in order", async () => {
  const { batch, flushed } = recorder();
  for (let i = 0; i < 5; i++) batch.add(i);
  assert.equal(batch.size, 5);
  assert.deepEqual(flushed, []);
  await macrotask();
  assert.deepEqual(flushed, [[0, 1, 2, 3, 4]]);
  assert.equal(batch.size, 0);
});

Deno.test("TickBatch keeps calls of different macrotasks apart", async () => {
  const { batch, flushed } = recorder();
  batch.add(1);
  await macrotask();
  batch.add(2);
  batch.add(3);
  await macrotask();
  assert.deepEqual(flushed, [[1], [2, 3]]);
});

Deno.test("TickBatch joins calls a few awaits apart, and flushes within microtasks", async () => {
  const { batch, flushed } = recorder();
  const later = async (n: number, depth: number) => {
    for (let i = 0; i < depth; i++) await null;
    batch.add(n);
  };
  await Promise.all([later(1, 0), later(2, 2), later(3, 5)]);
  // Still inside the same macrotask: only microtasks have run.
  for (let i = 0; i < 50 && flushed.length === 0; i++) await null;
  assert.deepEqual(flushed, [[1, 2, 3]]);
});
