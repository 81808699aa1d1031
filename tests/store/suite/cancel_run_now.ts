/**
 * An operator's hand on one job: cancel() of a waiting, leased or finished job, and runNow() of
 * a delayed one.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { JobState } from "../../../lib/core/job.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  makeDead,
  rejectsWith,
  stateOf,
  SUITE_POLICY,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function cancelRunNowCases({ test }: SuiteCases): void {
  test("cancel() makes a pending or delayed job cancelled", async (store) => {
    const pending = await enqueueOne(store, "q");
    const delayed = await enqueueOne(store, "q", { run_at: T0 + 1_000 });
    assert.deepEqual(await store.cancel(pending, T0 + 5), {
      id: pending,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: null,
    });
    assert.deepEqual(await store.cancel(delayed, T0 + 6), {
      id: delayed,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: null,
    });
    const job = await store.get(pending);
    assert.equal(job?.state, "cancelled");
    assert.equal(job?.finished_at, T0 + 5);
    assert.deepEqual(await store.tick(T0 + 2_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.equal(await stateOf(store, delayed), "cancelled");
    assert.deepEqual(await store.claim("q", 10, null, T0 + 2_000), []);
    assert.deepEqual(await countsOf(store, "q"), counts({ cancelled: 2 }));
  });

  test("cancel() of a leased job revokes its lease and answers its token", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.cancel(id, T0 + 10), {
      id,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: lease.token,
    });
    const job = await store.get(id);
    assert.equal(job?.state, "cancelled");
    assert.equal(job?.lease_expires_at, null);
    await rejectsWith(store.ack(id, lease.token, null, T0 + 11), "lease_lost");
    await rejectsWith(store.extend(id, lease.token, null, T0 + 11), "lease_lost");
    await rejectsWith(store.checkpoint(id, lease.token, "1", T0 + 11), "lease_lost");
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 12), []);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ cancelled: 1 }));
  });

  test("cancel() removes a done, dead or cancelled job", async (store) => {
    const done = await enqueueOne(store, "q");
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0);
    const [dead] = await makeDead(store, "q", 1);
    const cancelled = await enqueueOne(store, "q");
    await store.cancel(cancelled, T0);
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1, dead: 1, cancelled: 1 }));

    const expected: [number, JobState][] = [[done, "done"], [dead, "dead"], [
      cancelled,
      "cancelled",
    ]];
    for (const [id, state] of expected) {
      assert.deepEqual(await store.cancel(id, T0 + 1), {
        id,
        queue: "q",
        state,
        removed: true,
        revoked_token: null,
      });
      assert.equal(await store.get(id), null);
      await rejectsWith(store.cancel(id, T0 + 2), "not_found");
    }
    assert.deepEqual(await countsOf(store, "q"), counts());
  });

  test("cancel() of an unknown job fails with not_found", async (store) => {
    await rejectsWith(store.cancel(424242, T0), "not_found");
  });

  test("runNow() makes a delayed job pending now, ready to claim", async (store) => {
    const id = await enqueueOne(store, "q", { run_at: T0 + 3_600_000 });
    assert.equal(await stateOf(store, id), "delayed");
    assert.deepEqual(await store.runNow(id, T0 + 10), {
      id,
      queue: "q",
      state: "pending",
      run_at: T0 + 10,
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    assert.equal((await claimOne(store, "q", T0 + 11)).job.id, id);
    assert.equal(await store.nextDeadline(T0 + 11), T0 + 11 + SUITE_POLICY.defaultLeaseMs);
  });

  test("runNow() leaves a pending job as it is and refuses other states", async (store) => {
    const pending = await enqueueOne(store, "q");
    assert.deepEqual(await store.runNow(pending, T0 + 5), {
      id: pending,
      queue: "q",
      state: "pending",
      run_at: T0,
    });
    const leased = await enqueueOne(store, "l");
    await claimOne(store, "l");
    await rejectsWith(store.runNow(leased, T0), "conflict");
    const [dead] = await makeDead(store, "d", 1);
    await rejectsWith(store.runNow(dead, T0), "conflict");
    await rejectsWith(store.runNow(424242, T0), "not_found");
    assert.equal(await stateOf(store, leased), "leased");
    assert.equal(await stateOf(store, dead), "dead");
  });
}
