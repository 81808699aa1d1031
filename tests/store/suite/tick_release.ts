/**
 * Time and gone consumers: tick() promoting due jobs and ending expired leases (at their end or a
 * grace later, by who handed them over), release(), and nextDeadline().
 *
 * @module
 */

import assert from "node:assert/strict";
import { HANDOVER_GRACE_MS, type HandOvers } from "../../../lib/core/lifecycle.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  newJob,
  rejectsWith,
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function tickReleaseCases({ test }: SuiteCases): void {
  test("tick() promotes at most `limit` due jobs per call and says when more are due", async (store) => {
    await store.enqueue("q", [1, 2, 3, 4, 5].map(() => newJob({ run_at: T0 + 1_000 })), T0);
    const first = await store.tick(T0 + 1_000, HANDED_ALL, 2);
    assert.deepEqual(first, { woken: ["q"], expired: [], more: true });
    assert.equal((await store.stats("q"))[0].counts.pending, 2);
    assert.equal((await store.tick(T0 + 1_000, HANDED_ALL, 2)).more, true);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL, 2), {
      woken: ["q"],
      expired: [],
      more: false,
    });
    assert.equal((await store.stats("q"))[0].counts.pending, 5);
  });

  test("tick() promotes due delayed jobs and answers the queues it woke", async (store) => {
    const a = await enqueueOne(store, "q1", { run_at: T0 + 100 });
    const b = await enqueueOne(store, "q1", { run_at: T0 + 200 });
    const c = await enqueueOne(store, "q2", { run_at: T0 + 100 });
    assert.deepEqual(await store.tick(T0, HANDED_ALL), { woken: [], expired: [], more: false });
    assert.deepEqual(await store.tick(T0 + 99, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    const result = await store.tick(T0 + 100, HANDED_ALL);
    assert.deepEqual(result.woken.toSorted(), ["q1", "q2"]);
    assert.deepEqual(result.expired, []);
    assert.equal(await stateOf(store, a), "pending");
    assert.equal(await stateOf(store, b), "delayed");
    assert.equal(await stateOf(store, c), "pending");
    assert.equal((await store.get(a))?.run_at, T0 + 100);
    assert.deepEqual(await countsOf(store, "q1"), counts({ pending: 1, delayed: 1 }));
    assert.deepEqual(await store.tick(T0 + 150, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
  });

  test("tick() returns expired leases to pending at once", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const c = await enqueueOne(store, "q", { lease_ms: 2_000 });
    const got = await store.claim("q", 2, 1_000, T0);
    const dc = await claimOne(store, "q", T0);
    assert.equal(dc.job.id, c);
    assert.deepEqual(await store.tick(T0 + 999, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    const result = await store.tick(T0 + 1_000, HANDED_ALL);
    assert.deepEqual(result.woken, ["q"]);
    assert.deepEqual(result.expired.toSorted((x, y) => x.id - y.id), [
      { id: a, queue: "q", token: got[0].lease.token, state: "pending" },
      { id: b, queue: "q", token: got[1].lease.token, state: "pending" },
    ]);
    assert.equal(await stateOf(store, c), "leased");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, leased: 1 }));
    const again = await store.claim("q", 2, null, T0 + 1_000);
    assert.deepEqual(again.map((d) => [d.job.id, d.job.attempts]), [[a, 2], [b, 2]]);
    assert.deepEqual(await store.tick(T0 + 1_500, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
  });

  test("tick() sends an expired lease to dead when its attempts are used up", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      // The lease's slot is free, even though no job became pending.
      woken: ["q"],
      expired: [{ id, queue: "q", token: lease.token, state: "dead" }],
      more: false,
    });
    const job = await store.get(id);
    assert.equal(job?.state, "dead");
    assert.equal(job?.finished_at, T0 + 1_000);
    assert.equal(typeof job?.last_error, "string");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
  });

  test("release() returns a lease to pending at once", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 10_000);
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 10), [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
    const job = await store.get(id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.lease_expires_at, null);
    await rejectsWith(store.ack(id, lease.token, null, T0 + 11), "lease_lost");
    assert.equal((await claimOne(store, "q", T0 + 10)).job.attempts, 2);
  });

  test("release() sends a job whose attempts are used up to dead", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 10), [
      { id, queue: "q", token: lease.token, state: "dead" },
    ]);
    assert.equal(await stateOf(store, id), "dead");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
  });

  test("release() of an undelivered lease does not count the attempt", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(
      await store.release([{ id, token: lease.token, undelivered: true }], T0 + 10),
      [{ id, queue: "q", token: lease.token, state: "pending" }],
    );
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    assert.equal((await claimOne(store, "q", T0 + 10)).job.attempts, 1);
  });

  test("release() ignores leases whose token does not hold the job", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const pending = await enqueueOne(store, "q");
    const [da, db] = await store.claim("q", 2, null, T0);
    const out = await store.release([
      { id: a, token: "wrong" },
      { id: b, token: db.lease.token },
      { id: pending, token: da.lease.token },
      { id: 424242, token: da.lease.token },
    ], T0 + 1);
    assert.deepEqual(out, [{ id: b, queue: "q", token: db.lease.token, state: "pending" }]);
    assert.equal(await stateOf(store, a), "leased");
    assert.deepEqual(await store.release([], T0 + 2), []);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, leased: 1 }));
  });

  test("nextDeadline() answers the earliest delayed run_at or lease expiry", async (store) => {
    assert.equal(await store.nextDeadline(T0), null);
    await enqueueOne(store, "q");
    assert.equal(await store.nextDeadline(T0), null, "pending jobs have no deadline");
    await enqueueOne(store, "r", { run_at: T0 + 5_000 });
    assert.equal(await store.nextDeadline(T0), T0 + 5_000);
    const { job, lease } = await claimOne(store, "q", T0, 1_000);
    assert.equal(await store.nextDeadline(T0), T0 + 1_000);
    await store.extend(job.id, lease.token, 9_000, T0 + 10);
    assert.equal(await store.nextDeadline(T0 + 10), T0 + 5_000);
    await store.ack(job.id, lease.token, null, T0 + 20);
    assert.equal(await store.nextDeadline(T0 + 20), T0 + 5_000);
    await store.tick(T0 + 5_000, HANDED_ALL);
    assert.equal(await store.nextDeadline(T0 + 5_000), null);
  });

  test("nextDeadline() places a lease that ran out unended a grace after its end", async (store) => {
    await enqueueOne(store, "q");
    await enqueueOne(store, "q");
    await claimOne(store, "q", T0, 1_000);
    await claimOne(store, "q", T0, 3_000);
    assert.equal(await store.nextDeadline(T0 + 999), T0 + 1_000);
    // Run out and not ended (its server has not handed it over, or is gone): due a grace on,
    // unless a running lease ends first.
    assert.equal(await store.nextDeadline(T0 + 1_000), T0 + 3_000);
    assert.equal(await store.nextDeadline(T0 + 3_000), T0 + 1_000 + HANDOVER_GRACE_MS);
    await enqueueOne(store, "r", { run_at: T0 + 4_000 });
    assert.equal(await store.nextDeadline(T0 + 3_000), T0 + 4_000);
  });

  test("tick() never ends a lease that a claim of this server may still be carrying", async (store) => {
    // The claim was dated T0 and its answer is late: past the lease's end, and past the grace.
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q", T0, 100);
    const carrying: HandOvers = { handedOver: () => false, claimingSince: T0 };
    const late = T0 + 100 + HANDOVER_GRACE_MS + 1;
    assert.deepEqual(await store.tick(late, carrying), { woken: [], expired: [], more: false });
    // It ran out on its way, so the claim gives it back: the attempt was never used.
    const back = await store.release([{ id, token: lease.token, undelivered: true }], late);
    assert.deepEqual(back, [{ id, queue: "q", token: lease.token, state: "pending" }]);
    const again = await claimOne(store, "q", late, 100);
    assert.equal(again.job.id, id);
    assert.equal(again.job.attempts, 1);
  });

  test("tick() ends a lease it handed over at its end, any other a grace later where servers share the database", async (store) => {
    const mine = await enqueueOne(store, "q");
    const theirs = await enqueueOne(store, "q");
    const a = await claimOne(store, "q", T0, 1_000);
    const b = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual([a.job.id, b.job.id], [mine, theirs]);
    const handed: HandOvers = { handedOver: (t) => t === a.lease.token, claimingSince: null };
    const first = await store.tick(T0 + 1_000, handed);
    const ended = (d: typeof a) => ({ id: d.job.id, queue: "q", token: d.lease.token });
    if (!store.capabilities.shared) {
      // Alone on its database, the other lease was handed over before a restart: no grace.
      assert.deepEqual(first.expired, [
        { ...ended(a), state: "pending" },
        { ...ended(b), state: "pending" },
      ]);
      return;
    }
    assert.deepEqual(first.expired, [{ ...ended(a), state: "pending" }]);
    assert.equal(first.more, false);
    assert.equal(await stateOf(store, theirs), "leased");
    const end = T0 + 1_000 + HANDOVER_GRACE_MS;
    assert.deepEqual((await store.tick(end - 1, handed)).expired, []);
    assert.deepEqual((await store.tick(end, handed)).expired, [
      { id: theirs, queue: "q", token: b.lease.token, state: "pending" },
    ]);
    // A lease ended a grace late was handed over somewhere: its attempt counts.
    const again = await store.claim("q", 2, null, end);
    assert.deepEqual(again.map((d) => [d.job.id, d.job.attempts]), [[mine, 2], [theirs, 2]]);
  });

  test("tick() ends a lease that began before this server's claims on their way", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    const later: HandOvers = { handedOver: () => false, claimingSince: T0 + 1 };
    const end = T0 + 1_000 + HANDOVER_GRACE_MS;
    assert.deepEqual((await store.tick(end, later)).expired, [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
  });

  test("tick() ends a lease from before a restart at its end alone, a grace later if shared", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    const restarted: HandOvers = { handedOver: () => false, claimingSince: null };
    const end = T0 + 1_000 + (store.capabilities.shared ? HANDOVER_GRACE_MS : 0);
    assert.deepEqual((await store.tick(end - 1, restarted)).expired, []);
    assert.deepEqual((await store.tick(end, restarted)).expired, [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
  });
}
