/**
 * Claiming without groups or limits: order, counts, the named queue, the lease and its length,
 * attempts, tokens, a paused queue, delayed jobs, and claimFair()'s dealing among wants.
 *
 * @module
 */

import assert from "node:assert/strict";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  SUITE_POLICY,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function claimCases({ test }: SuiteCases): void {
  test("claim() answers the highest priority first, then FIFO", async (store) => {
    const a = await enqueueOne(store, "q", { priority: 0 });
    const b = await enqueueOne(store, "q", { priority: 5 });
    const c = await enqueueOne(store, "q", { priority: 0 });
    const d = await enqueueOne(store, "q", { priority: 5 });
    const e = await enqueueOne(store, "q", { priority: -1 });
    const f = await enqueueOne(store, "q", { priority: 10 });
    const first = await store.claim("q", 3, null, T0);
    assert.deepEqual(first.map((x) => x.job.id), [f, b, d]);
    const rest = [(await claimOne(store, "q")).job.id, (await claimOne(store, "q")).job.id];
    assert.deepEqual(rest, [a, c]);
    assert.equal((await claimOne(store, "q")).job.id, e);
  });

  test("claim() leases at most max jobs and answers an empty list when none wait", async (store) => {
    assert.deepEqual(await store.claim("q", 5, null, T0), []);
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q");
    assert.equal((await store.claim("q", 2, null, T0)).length, 2);
    assert.equal((await store.claim("q", 10, null, T0)).length, 3);
    assert.deepEqual(await store.claim("q", 10, null, T0), []);
    assert.deepEqual(await countsOf(store, "q"), counts({ leased: 5 }));
  });

  test("claim() takes jobs only from the named queue", async (store) => {
    const a = await enqueueOne(store, "a");
    await enqueueOne(store, "b");
    const got = await store.claim("a", 10, null, T0);
    assert.deepEqual(got.map((x) => x.job.id), [a]);
    assert.deepEqual(await countsOf(store, "b"), counts({ pending: 1 }));
  });

  test("claim() answers the job as leased, with its lease", async (store) => {
    const id = await enqueueOne(store, "q", { payload: '{"p":true}', key: "k" });
    const { job, lease } = await claimOne(store, "q", T0 + 7, 2_000);
    assert.equal(job.id, id);
    assert.equal(job.state, "leased");
    assert.equal(job.payload, '{"p":true}');
    assert.equal(job.key, "k");
    assert.equal(job.attempts, 1);
    assert.equal(job.checkpoint, null);
    assert.equal(lease.expires_at, T0 + 2_007);
    assert.equal(job.lease_expires_at, lease.expires_at);
    const stored = await store.get(id);
    assert.equal(stored?.state, "leased");
    assert.equal(stored?.attempts, 1);
    assert.equal(stored?.lease_expires_at, T0 + 2_007);
  });

  test("claim() takes the claim's lease_ms, else the job's, else the policy's", async (store) => {
    const own = await enqueueOne(store, "q", { lease_ms: 5_000 });
    const none = await enqueueOne(store, "q");
    const both = await store.claim("q", 2, 2_000, T0);
    assert.deepEqual(both.map((x) => [x.job.id, x.lease.expires_at]), [
      [own, T0 + 2_000],
      [none, T0 + 2_000],
    ]);

    const own2 = await enqueueOne(store, "r", { lease_ms: 5_000 });
    const none2 = await enqueueOne(store, "r");
    const defaults = await store.claim("r", 2, null, T0);
    assert.deepEqual(defaults.map((x) => [x.job.id, x.lease.expires_at]), [
      [own2, T0 + 5_000],
      [none2, T0 + SUITE_POLICY.defaultLeaseMs],
    ]);
  });

  test("claim() increments attempts at each delivery", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    assert.equal(first.job.attempts, 1);
    await store.release([{ id, token: first.lease.token }], T0 + 1);
    const second = await claimOne(store, "q", T0 + 2, 1_000);
    assert.equal(second.job.attempts, 2);
    await store.tick(T0 + 1_002, HANDED_ALL); // the lease expires
    const third = await claimOne(store, "q", T0 + 1_002);
    assert.equal(third.job.attempts, 3);
    assert.equal((await store.get(id))?.attempts, 3);
  });

  test("claim() gives every delivery a fresh, unique token", async (store) => {
    for (let i = 0; i < 20; i++) await enqueueOne(store, "q");
    const got = await store.claim("q", 20, null, T0);
    const tokens = got.map((x) => x.lease.token);
    assert.equal(new Set(tokens).size, 20);
    for (const token of tokens) assert.ok(token.length >= 16, `token "${token}" is too short`);

    const [again] = got;
    await store.release([{ id: again.job.id, token: again.lease.token }], T0);
    const redelivered = await claimOne(store, "q");
    assert.equal(redelivered.job.id, again.job.id);
    assert.ok(!tokens.includes(redelivered.lease.token));
  });

  test("claim() answers nothing from a paused queue until it is resumed", async (store) => {
    const id = await enqueueOne(store, "q");
    await enqueueOne(store, "other");
    await store.setPaused("q", true);
    assert.deepEqual(await store.claim("q", 10, null, T0), []);
    const late = await enqueueOne(store, "q", {}, T0 + 1); // enqueue is still accepted
    assert.deepEqual(await store.claim("q", 10, null, T0 + 2), []);
    assert.equal((await claimOne(store, "other")).job.queue, "other");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2 }));

    await store.setPaused("q", false);
    const got = await store.claim("q", 10, null, T0 + 3);
    assert.deepEqual(got.map((x) => x.job.id), [id, late]);
  });

  test("claim() does not deliver a delayed job until tick() promotes it", async (store) => {
    const id = await enqueueOne(store, "q", { run_at: T0 + 1_000 });
    assert.deepEqual(await store.claim("q", 1, null, T0), []);
    assert.deepEqual(await store.claim("q", 1, null, T0 + 5_000), [], "not before a tick");
    assert.deepEqual(await store.tick(T0 + 999, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.deepEqual(await store.claim("q", 1, null, T0 + 999), []);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      woken: ["q"],
      expired: [],
      more: false,
    });
    assert.equal((await claimOne(store, "q", T0 + 1_000)).job.id, id);
  });

  test("claimFair() deals a burst round-robin, each want within its max and lease", async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q", { priority: 5 - i }));
    const [a, b, c] = await store.claimFair("q", [
      { max: 10, lease_ms: 1000 },
      { max: 1, lease_ms: 2000 },
      { max: 10, lease_ms: null },
    ], T0);
    assert.deepEqual(a.map((d) => d.job.id), [ids[0], ids[3]]);
    assert.deepEqual(b.map((d) => d.job.id), [ids[1]]);
    assert.deepEqual(c.map((d) => d.job.id), [ids[2], ids[4]]);
    assert.equal(a[0].lease.expires_at, T0 + 1000);
    assert.equal(b[0].lease.expires_at, T0 + 2000);
    assert.equal(c[0].lease.expires_at, T0 + SUITE_POLICY.defaultLeaseMs);
    assert.deepEqual(await countsOf(store, "q"), counts({ leased: 5 }));
    assert.deepEqual(await store.claimFair("q", [{ max: 3, lease_ms: null }], T0), [[]]);
  });

  test("claimFair() gives nothing from a paused queue", async (store) => {
    await enqueueOne(store, "q");
    await store.setPaused("q", true);
    assert.deepEqual(await store.claimFair("q", [{ max: 1, lease_ms: null }], T0), [[]]);
  });
}
