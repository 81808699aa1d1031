/**
 * Ordering groups: one job of a group leased at a time (its queue's group_limit), groups served
 * in turn, a slot freed by every way a lease ends, and the group counts stats() answers.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  claimOne,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  idsOf,
  newJob,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function groupCases({ test, sharedTest }: SuiteCases): void {
  test("enqueue() stores a job's group and get() and claim() answer it", async (store) => {
    const id = await enqueueOne(store, "q", { group: "user-7" });
    const plain = await enqueueOne(store, "q");
    assert.equal((await store.get(id))?.group, "user-7");
    assert.equal((await store.get(plain))?.group, null);
    const got = await store.claim("q", 2, null, T0);
    assert.deepEqual(got.map((d) => d.job.group).sort(), [null, "user-7"].sort());
  });

  test("claim() leases one job of a group at a time while other groups' jobs flow", async (store) => {
    const a1 = await enqueueOne(store, "q", { group: "a" });
    const a2 = await enqueueOne(store, "q", { group: "a" });
    const b1 = await enqueueOne(store, "q", { group: "b" });
    const free = await enqueueOne(store, "q");
    const first = await store.claim("q", 10, null, T0);
    assert.deepEqual(idsOf(first).sort((x, y) => x - y), [a1, b1, free]);
    assert.deepEqual(await store.claim("q", 10, null, T0), [], "a2 waits for a1");
    const leasedA1 = first.find((d) => d.job.id === a1)!;
    const acked = await store.ack(a1, leasedA1.lease.token, null, T0);
    assert.equal(acked.frees, true);
    assert.deepEqual(idsOf(await store.claim("q", 10, null, T0)), [a2]);
  });

  test("claim() takes groups in turn: a hot group's backlog never starves a small one", async (store) => {
    const hot = await store.enqueue(
      "q",
      Array.from({ length: 50 }, () => newJob({ group: "hot" })),
      T0,
    );
    const small = await enqueueOne(store, "q", { group: "small" });
    const first = await claimOne(store, "q");
    assert.equal(first.job.id, hot[0].id);
    await store.ack(first.job.id, first.lease.token, null, T0);
    // The hot group was just served: the small one's turn, though its job is younger.
    assert.equal((await claimOne(store, "q")).job.id, small);
    assert.equal((await claimOne(store, "q")).job.id, hot[1].id);
  });

  test("claim() serves a group's jobs by priority, then id; a nacked job is first again", async (store) => {
    const low = await enqueueOne(store, "q", { group: "g", priority: 0 });
    const high = await enqueueOne(store, "q", { group: "g", priority: 5 });
    const next = await enqueueOne(store, "q", { group: "g", priority: 0 });
    const one = await claimOne(store, "q");
    assert.equal(one.job.id, high);
    await store.nack(high, one.lease.token, { error: "x", delay_ms: 0, dead: false }, T0);
    const again = await claimOne(store, "q");
    assert.equal(again.job.id, high);
    await store.ack(high, again.lease.token, null, T0);
    const two = await claimOne(store, "q");
    assert.equal(two.job.id, low);
    await store.ack(low, two.lease.token, null, T0);
    assert.equal((await claimOne(store, "q")).job.id, next);
  });

  test("a nack, an expiry, a release and a cancel each free the group's slot", async (store) => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q", { group: "g" }));
    let held = await claimOne(store, "q");
    assert.deepEqual(await store.claim("q", 5, null, T0), []);
    // A nack with a delay: the job waits, the next one goes.
    await store.nack(
      held.job.id,
      held.lease.token,
      { error: null, delay_ms: 60_000, dead: false },
      T0,
    );
    held = await claimOne(store, "q");
    assert.equal(held.job.id, ids[1]);
    // An expiry.
    const tick = await store.tick(T0 + 30_000, HANDED_ALL);
    assert.deepEqual(tick.expired.map((e) => e.id), [ids[1]]);
    assert.ok(tick.woken.includes("q"));
    held = await claimOne(store, "q", T0 + 30_000);
    assert.equal(held.job.id, ids[1]);
    // A release.
    await store.release([{ id: held.job.id, token: held.lease.token }], T0 + 30_000);
    held = await claimOne(store, "q", T0 + 30_000);
    assert.equal(held.job.id, ids[1]);
    // A cancel of the leased job.
    const cancelled = await store.cancel(held.job.id, T0 + 30_000);
    assert.equal(cancelled.revoked_token, held.lease.token);
    held = await claimOne(store, "q", T0 + 30_000);
    assert.equal(held.job.id, ids[2]);
    // A nack to dead.
    await store.nack(
      held.job.id,
      held.lease.token,
      { error: null, delay_ms: null, dead: true },
      T0 + 30_000,
    );
    assert.equal((await claimOne(store, "q", T0 + 30_000)).job.id, ids[3]);
  });

  test("claim() of grouped jobs skips a paused queue and honours each want's lease", async (store) => {
    await enqueueOne(store, "q", { group: "a" });
    await enqueueOne(store, "q", { group: "b" });
    await store.setPaused("q", true);
    assert.deepEqual(await store.claimFair("q", [{ max: 5, lease_ms: null }], T0), [[]]);
    await store.setPaused("q", false);
    const [x, y] = await store.claimFair("q", [{ max: 1, lease_ms: 1_000 }, {
      max: 1,
      lease_ms: 2_000,
    }], T0);
    assert.equal(x.length, 1);
    assert.equal(y.length, 1);
    assert.equal(x[0].lease.expires_at, T0 + 1_000);
    assert.equal(y[0].lease.expires_at, T0 + 2_000);
    assert.deepEqual((await countsOf(store, "q")).leased, 2);
  });

  test("groups are per queue: the same group name in two queues is two groups", async (store) => {
    await enqueueOne(store, "q1", { group: "g" });
    await enqueueOne(store, "q2", { group: "g" });
    await claimOne(store, "q1");
    await claimOne(store, "q2");
  });

  test("a delayed, dead and requeued grouped job keeps its group", async (store) => {
    const id = await enqueueOne(store, "q", { group: "g", run_at: T0 + 1_000 });
    await store.tick(T0 + 1_000, HANDED_ALL);
    const held = await claimOne(store, "q", T0 + 1_000);
    await store.nack(id, held.lease.token, { error: null, delay_ms: null, dead: true }, T0 + 1_000);
    await enqueueOne(store, "q", { group: "g" }, T0 + 1_000);
    const other = await claimOne(store, "q", T0 + 1_000);
    assert.equal((await store.requeueDead("q", { ids: [id] }, T0 + 1_000, 1_000)).requeued, 1);
    assert.deepEqual(await store.claim("q", 5, null, T0 + 1_000), [], "the group is busy");
    await store.ack(other.job.id, other.lease.token, null, T0 + 1_000);
    assert.equal((await claimOne(store, "q", T0 + 1_000)).job.id, id);
  });

  sharedTest("two stores claiming at once never lease two jobs of one group", async (a, b) => {
    const groups = ["g1", "g2", "g3"];
    const jobs = [];
    for (let i = 0; i < 30; i++) jobs.push(newJob({ group: groups[i % 3] }));
    await a.enqueue("q", jobs, T0);
    let acked = 0;
    while (acked < 30) {
      const [x, y] = await Promise.all([a.claim("q", 5, null, T0), b.claim("q", 5, null, T0)]);
      const all = [...x, ...y];
      const perGroup = new Map<string, number>();
      for (const d of all) perGroup.set(d.job.group!, (perGroup.get(d.job.group!) ?? 0) + 1);
      for (const [group, n] of perGroup) assert.ok(n <= 1, `${n} jobs of ${group} leased at once`);
      assert.ok(all.length > 0);
      await Promise.all(all.map((d) => a.ack(d.job.id, d.lease.token, null, T0)));
      acked += all.length;
    }
  });

  test("many jobs of one group promoted or requeued at once keep the group's counts and limit", async (store) => {
    // One statement changes them all (the store may count their groups itself for it).
    const delayed = Array.from(
      { length: 300 },
      (_, i) => newJob({ run_at: T0 + 1_000, group: i % 10 === 0 ? "b" : "a" }),
    );
    await store.enqueue("q", delayed, T0);
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 0,
      leased: 0,
      full: 0,
      rate_held: 0,
      top_held: [],
    });
    while ((await store.tick(T0 + 1_000, HANDED_ALL)).more) {
      // a store may promote them over several ticks
    }
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 2,
      leased: 0,
      full: 0,
      rate_held: 0,
      top_held: [],
    });
    // group_limit 1: one job of each group at a time, a's first job first.
    const leased = await store.claim("q", 50, null, T0 + 1_000);
    assert.deepEqual(leased.map((d) => d.job.group).sort(), ["a", "b"]);
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 2,
      leased: 2,
      full: 2,
      rate_held: 0,
      top_held: [
        { group: "a", held: "concurrency", pending: 269, leased: 1, limit: 1 },
        { group: "b", held: "concurrency", pending: 29, leased: 1, limit: 1 },
      ],
    });
    for (const d of leased) {
      await store.nack(d.job.id, d.lease.token, { error: "x", delay_ms: null, dead: true }, T0);
    }
    assert.equal((await store.requeueDead("q", { after: 0 }, T0 + 2_000, 1_000)).requeued, 2);
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 2,
      leased: 0,
      full: 0,
      rate_held: 0,
      top_held: [],
    });
    const [stats] = await store.stats("q");
    assert.equal(stats.counts.pending, 300);
    assert.equal((await store.claim("q", 50, null, T0 + 2_000)).length, 2);
  });

  test("stats() counts a queue's groups: waiting, leased, and full (waiting for a slot)", async (store) => {
    await enqueueOne(store, "q", { group: "a" });
    await enqueueOne(store, "q", { group: "a" });
    await enqueueOne(store, "q", { group: "b" });
    await enqueueOne(store, "q");
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 2,
      leased: 0,
      full: 0,
      rate_held: 0,
      top_held: [],
    });
    assert.equal((await store.claim("q", 5, null, T0)).length, 3);
    // a and b each have a job leased; a has another waiting for its slot.
    const [stats] = await store.stats("q");
    assert.deepEqual(stats.groups, {
      waiting: 1,
      leased: 2,
      full: 1,
      rate_held: 0,
      top_held: [{ group: "a", held: "concurrency", pending: 1, leased: 1, limit: 1 }],
    });
    assert.equal(stats.rate_held, false);
  });
}
