/**
 * What a consumer writes while it holds a lease: extend(), checkpoint() and progress(), each
 * fenced by the lease's token, and what the next delivery carries.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  claimOne,
  enqueueOne,
  HANDED_ALL,
  rejectsWith,
  stateOf,
  SUITE_POLICY,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function leaseWriteCases({ test }: SuiteCases): void {
  test("extend() moves the expiry to now + lease_ms", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.extend(id, lease.token, 5_000, T0 + 500), {
      id,
      expires_at: T0 + 5_500,
    });
    assert.equal((await store.get(id))?.lease_expires_at, T0 + 5_500);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.equal(await stateOf(store, id), "leased");
    await store.ack(id, lease.token, null, T0 + 5_499);
    assert.equal(await stateOf(store, id), "done");
  });

  test("extend() without lease_ms uses the lease length in force", async (store) => {
    const claimed = await enqueueOne(store, "a");
    const own = await enqueueOne(store, "b", { lease_ms: 4_000 });
    const plain = await enqueueOne(store, "c");
    const a = await claimOne(store, "a", T0, 2_000);
    const b = await claimOne(store, "b", T0);
    const c = await claimOne(store, "c", T0);
    assert.equal(
      (await store.extend(claimed, a.lease.token, null, T0 + 1_500)).expires_at,
      T0 + 3_500,
    );
    assert.equal((await store.extend(own, b.lease.token, null, T0 + 100)).expires_at, T0 + 4_100);
    assert.equal(
      (await store.extend(plain, c.lease.token, null, T0 + 100)).expires_at,
      T0 + 100 + SUITE_POLICY.defaultLeaseMs,
    );
  });

  test("extend() with a stale token fails with lease_lost", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await rejectsWith(store.extend(id, "wrong", 1_000, T0 + 1), "lease_lost");
    await rejectsWith(store.extend(id, lease.token, 1_000, T0 + 1_000), "lease_lost");
    await rejectsWith(store.extend(424242, lease.token, 1_000, T0), "not_found");
    assert.equal((await store.get(id))?.lease_expires_at, T0 + 1_000);

    const other = await enqueueOne(store, "r");
    const d = await claimOne(store, "r", T0);
    await store.ack(other, d.lease.token, null, T0 + 1);
    await rejectsWith(store.extend(other, d.lease.token, 1_000, T0 + 2), "lease_lost");
  });

  test("checkpoint() stores the data on the job", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.checkpoint(id, lease.token, '{"step":1}', T0 + 1), { id });
    assert.equal((await store.get(id))?.checkpoint, '{"step":1}');
    await store.checkpoint(id, lease.token, '{"step":2,"task":"X"}', T0 + 2);
    assert.equal((await store.get(id))?.checkpoint, '{"step":2,"task":"X"}');
    assert.equal(await stateOf(store, id), "leased");
  });

  test("checkpoint() is carried on the next delivery", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.checkpoint(id, first.lease.token, '"calling"', T0 + 1);
    await store.tick(T0 + 1_000, HANDED_ALL); // the consumer crashed; its lease expires
    const second = await claimOne(store, "q", T0 + 1_000);
    assert.equal(second.job.checkpoint, '"calling"');
    await store.checkpoint(id, second.lease.token, '{"task":"X"}', T0 + 1_001);
    await store.nack(id, second.lease.token, { error: null, delay_ms: 0, dead: false }, T0 + 1_002);
    const third = await claimOne(store, "q", T0 + 1_002);
    assert.equal(third.job.checkpoint, '{"task":"X"}');
  });

  test("checkpoint() with a stale token fails with lease_lost and changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await store.checkpoint(id, lease.token, "1", T0 + 1);
    await rejectsWith(store.checkpoint(id, "wrong", "2", T0 + 2), "lease_lost");
    await rejectsWith(store.checkpoint(id, lease.token, "3", T0 + 1_000), "lease_lost");
    await rejectsWith(store.checkpoint(424242, lease.token, "4", T0), "not_found");
    assert.equal((await store.get(id))?.checkpoint, "1");
  });

  test("progress() stores the last report and when it came", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.progress(id, lease.token, '{"done":1,"of":3}', T0 + 1), { id });
    assert.equal((await store.get(id))?.progress, '{"done":1,"of":3}');
    assert.equal((await store.get(id))?.progress_at, T0 + 1);
    await Promise.all([
      store.progress(id, lease.token, "0.5", T0 + 2),
      store.progress(id, lease.token, "0.75", T0 + 3),
    ]);
    const job = await store.get(id);
    assert.equal(job?.progress, "0.75");
    assert.equal(job?.progress_at, T0 + 3);
    assert.equal(job?.state, "leased");
    await store.ack(id, lease.token, null, T0 + 4);
    assert.equal((await store.get(id))?.progress, "0.75", "kept once the job is done");
  });

  test("progress() is fenced like a checkpoint", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await store.progress(id, lease.token, "1", T0 + 1);
    await rejectsWith(store.progress(id, "wrong", "2", T0 + 2), "lease_lost");
    await rejectsWith(store.progress(id, lease.token, "3", T0 + 1_000), "lease_lost");
    await rejectsWith(store.progress(424242, lease.token, "4", T0), "not_found");
    const pending = await enqueueOne(store, "q");
    await rejectsWith(store.progress(pending, lease.token, "5", T0), "lease_lost");
    // Reports sharing a commit each get their own answer.
    const outcomes = await Promise.allSettled([
      store.progress(id, lease.token, "6", T0 + 3),
      store.progress(id, "wrong", "7", T0 + 3),
      store.progress(424242, "x", "8", T0 + 3),
    ]);
    assert.deepEqual(outcomes.map((o) => o.status), ["fulfilled", "rejected", "rejected"]);
    assert.equal((await store.get(id))?.progress, "6");
    assert.equal((await store.get(pending))?.progress, null);
  });

  test("progress() with the token of an earlier lease changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.progress(id, first.lease.token, '"first"', T0 + 1);
    await store.tick(T0 + 1_000, HANDED_ALL);
    const second = await claimOne(store, "q", T0 + 1_000);
    assert.equal(second.job.progress, '"first"', "the delivery shows the last report");
    await rejectsWith(store.progress(id, first.lease.token, '"stale"', T0 + 1_001), "lease_lost");
    await store.progress(id, second.lease.token, '"second"', T0 + 1_002);
    assert.equal((await store.get(id))?.progress, '"second"');
  });
}
