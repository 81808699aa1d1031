/**
 * A queue's limits: its concurrency, its group_limit, and its rate, on one store and shared by
 * two.
 *
 * @module
 */

import assert from "node:assert/strict";
import { countsOf, enqueueOne, newJob, queueSettings, type SuiteCases, T0 } from "./fixtures.ts";

/** Registers the cases of this area. */
export function limitCases({ test, sharedTest }: SuiteCases): void {
  test("claim() never leases more of a queue than its concurrency", async (store) => {
    await store.putSettings("q", queueSettings({ concurrency: 2 }), T0);
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q");
    const first = await store.claim("q", 5, null, T0);
    assert.equal(first.length, 2);
    assert.deepEqual(await store.claim("q", 5, null, T0), []);
    const acked = await store.ack(first[0].job.id, first[0].lease.token, null, T0);
    assert.equal(acked.frees, true);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
    await store.nack(first[1].job.id, first[1].lease.token, {
      error: null,
      delay_ms: 5_000,
      dead: false,
    }, T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
    // Raising the limit lets more through at once.
    await store.putSettings("q", queueSettings({ concurrency: 10 }), T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
  });

  test("claim() leases up to the queue's group_limit of one group at once", async (store) => {
    await store.putSettings("q", queueSettings({ group_limit: 2 }), T0);
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q", { group: "g" });
    await enqueueOne(store, "q", { group: "h" });
    const got = await store.claim("q", 10, null, T0);
    assert.equal(got.filter((d) => d.job.group === "g").length, 2);
    assert.equal(got.filter((d) => d.job.group === "h").length, 1);
    assert.deepEqual(await store.claim("q", 10, null, T0), []);
  });

  test("claim() takes at most the rate's tokens, which come in evenly", async (store) => {
    // 10 per second: a token every 100 ms, and the bucket holds one.
    await store.putSettings("q", queueSettings({ rate: { limit: 10, per_ms: 1_000 } }), T0);
    for (let i = 0; i < 30; i++) await enqueueOne(store, "q");
    assert.equal((await store.claim("q", 10, null, T0)).length, 1);
    assert.deepEqual(await store.claim("q", 10, null, T0 + 50), []);
    assert.equal(store.claimHeldUntil?.("q"), T0 + 100);
    assert.equal((await store.claim("q", 10, null, T0 + 100)).length, 1);
    // A quiet spell fills the bucket to its capacity, no more.
    assert.equal((await store.claim("q", 10, null, T0 + 10_000)).length, 1);
    let taken = 0;
    for (let t = T0 + 10_000; t <= T0 + 11_000; t += 10) {
      taken += (await store.claim("q", 10, null, t)).length;
    }
    assert.ok(taken >= 9 && taken <= 11, `${taken} in one second at 10/s`);
  });

  test("claim() with a concurrency and groups holds both limits", async (store) => {
    await store.putSettings("q", queueSettings({ concurrency: 2, group_limit: 1 }), T0);
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "a" });
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "b" });
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "c" });
    const got = await store.claim("q", 10, null, T0);
    assert.equal(got.length, 2);
    assert.equal(new Set(got.map((d) => d.job.group)).size, 2);
  });

  sharedTest("two stores claiming at once never exceed the queue's concurrency", async (a, b) => {
    await a.putSettings("q", queueSettings({ concurrency: 3 }), T0);
    await a.enqueue("q", Array.from({ length: 40 }, () => newJob()), T0);
    let done = 0;
    while (done < 40) {
      const [x, y] = await Promise.all([a.claim("q", 5, null, T0), b.claim("q", 5, null, T0)]);
      const all = [...x, ...y];
      assert.ok(all.length <= 3, `${all.length} leased at once`);
      assert.equal((await countsOf(a, "q")).leased, all.length);
      assert.ok(all.length > 0);
      await Promise.all(all.map((d) => b.ack(d.job.id, d.lease.token, null, T0)));
      done += all.length;
    }
  });

  sharedTest("two stores share one rate bucket", async (a, b) => {
    await a.putSettings("q", queueSettings({ rate: { limit: 10, per_ms: 1_000 } }), T0);
    await a.enqueue("q", Array.from({ length: 40 }, () => newJob()), T0);
    let taken = 0;
    for (let t = T0; t < T0 + 1_000; t += 25) {
      const [x, y] = await Promise.all([a.claim("q", 5, null, t), b.claim("q", 5, null, t)]);
      taken += x.length + y.length;
    }
    assert.ok(taken >= 9 && taken <= 11, `${taken} in one second at 10/s`);
  });
}
