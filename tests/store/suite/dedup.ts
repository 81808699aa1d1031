/**
 * Keys: a duplicate answers the job that holds its key, a key window (`key_ttl_ms`) lets the key
 * go, and `on_duplicate` replaces or extends a waiting job, within a batch and across servers.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { JobState } from "../../../lib/core/job.ts";
import { defaultQueueSettings } from "../../../lib/core/queue_settings.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  newJob,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function dedupCases({ test, sharedTest }: SuiteCases): void {
  test("enqueue() answers the existing id for a duplicate key and stores nothing", async (store) => {
    const id = await enqueueOne(store, "q", { key: "order-1", payload: '"first"' });
    const out = await store.enqueue("q", [
      newJob({ key: "order-1", payload: '"second"', priority: 9 }),
    ], T0 + 10);
    assert.deepEqual(out, [
      { id, deduplicated: true, duplicate: "ignored", state: "pending", run_at: T0 },
    ]);
    const job = await store.get(id);
    assert.equal(job?.payload, '"first"');
    assert.equal(job?.priority, 0);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
  });

  test("enqueue() deduplicates by key within one batch", async (store) => {
    const out = await store.enqueue("q", [
      newJob({ key: "x", payload: "1" }),
      newJob({ key: "y", payload: "2" }),
      newJob({ key: "x", payload: "3" }),
      newJob({ payload: "4" }),
    ], T0);
    assert.deepEqual(out.map((e) => e.deduplicated), [false, false, true, false]);
    assert.equal(out[2].id, out[0].id);
    assert.equal(new Set(out.map((e) => e.id)).size, 3);
    assert.equal((await store.get(out[0].id))?.payload, "1");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 3 }));
  });

  test("enqueue() accepts the same key in another queue", async (store) => {
    const a = await enqueueOne(store, "a", { key: "k" });
    const [out] = await store.enqueue("b", [newJob({ key: "k" })], T0);
    assert.equal(out.deduplicated, false);
    assert.notEqual(out.id, a);
    assert.equal((await store.get(out.id))?.queue, "b");
  });

  test("enqueue() keeps a key held by a leased, done, dead or cancelled job", async (store) => {
    const leased = await enqueueOne(store, "q", { key: "leased" });
    await claimOne(store, "q");
    const done = await enqueueOne(store, "q", { key: "done" });
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0);
    const dead = await enqueueOne(store, "q", { key: "dead" });
    const x = await claimOne(store, "q");
    await store.nack(dead, x.lease.token, { error: null, delay_ms: null, dead: true }, T0);
    const cancelled = await enqueueOne(store, "q", { key: "cancelled" });
    await store.cancel(cancelled, T0);
    const delayed = await enqueueOne(store, "q", { key: "delayed", run_at: T0 + 1_000 });

    const expected: [string, number, JobState][] = [
      ["leased", leased, "leased"],
      ["done", done, "done"],
      ["dead", dead, "dead"],
      ["cancelled", cancelled, "cancelled"],
      ["delayed", delayed, "delayed"],
    ];
    for (const [key, id, state] of expected) {
      const [out] = await store.enqueue("q", [newJob({ key })], T0 + 1);
      assert.deepEqual(
        [out.id, out.deduplicated, out.duplicate, out.state],
        [id, true, "ignored", state],
        `key "${key}"`,
      );
    }
    assert.deepEqual(
      await countsOf(store, "q"),
      counts({ leased: 1, done: 1, dead: 1, cancelled: 1, delayed: 1 }),
    );
  });

  test("enqueue() accepts a key again once its job is removed", async (store) => {
    const done = await enqueueOne(store, "q", { key: "k" });
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0);
    await store.cancel(done, T0 + 1); // removes it
    const again = await enqueueOne(store, "q", { key: "k" }, T0 + 2);
    assert.ok(again > done);

    // ... and once a sweep has removed it.
    await store.cancel(again, T0 + 3);
    await store.sweepFinished(T0 + 4, 0);
    assert.equal(await store.get(again), null);
    const third = await enqueueOne(store, "q", { key: "k" }, T0 + 5);
    assert.ok(third > again);
  });

  test("enqueue() with key_ttl_ms blocks duplicates only until the window ends", async (store) => {
    const first = await enqueueOne(store, "q", { key: "k", key_ttl_ms: 1_000, payload: '"a"' });
    assert.equal((await store.get(first))?.key_expires_at, T0 + 1_000);
    const [inside] = await store.enqueue("q", [newJob({ key: "k" })], T0 + 999);
    assert.deepEqual([inside.id, inside.duplicate], [first, "ignored"]);
    // The clock passes the window: the same key makes a new job, and the old one stays.
    const [after] = await store.enqueue("q", [newJob({ key: "k", payload: '"b"' })], T0 + 1_000);
    assert.equal(after.deduplicated, false);
    assert.equal(after.duplicate, null);
    assert.notEqual(after.id, first);
    const old = await store.get(first);
    assert.equal(old?.key, "k", "the old job still shows its key");
    assert.equal(old?.payload, '"a"');
    assert.equal(old?.state, "pending");
    assert.equal((await store.get(after.id))?.key_expires_at, null);
    // The new job holds the key for as long as it is stored (it has no window).
    const [again] = await store.enqueue("q", [newJob({ key: "k" })], T0 + 1_000_000);
    assert.deepEqual([again.id, again.duplicate], [after.id, "ignored"]);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2 }));
  });

  test("enqueue() lets a key go after its window even while its job is leased or done", async (store) => {
    const leased = await enqueueOne(store, "q", { key: "l", key_ttl_ms: 10 });
    await claimOne(store, "q");
    const done = await enqueueOne(store, "q", { key: "d", key_ttl_ms: 10 });
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, '"ok"', T0 + 1);
    const [l, dd] = await store.enqueue("q", [newJob({ key: "l" }), newJob({ key: "d" })], T0 + 10);
    assert.deepEqual([l.deduplicated, dd.deduplicated], [false, false]);
    assert.equal((await store.get(leased))?.state, "leased");
    assert.equal((await store.get(leased))?.key, "l");
    assert.equal((await store.get(done))?.result, '"ok"');
    assert.equal((await store.get(done))?.key, "d");
    // Removing the old job later frees nothing: the key is the new job's.
    await store.cancel(done, T0 + 11);
    const [dup] = await store.enqueue("q", [newJob({ key: "d" })], T0 + 12);
    assert.deepEqual([dup.id, dup.duplicate], [dd.id, "ignored"]);
  });

  test("enqueue() with on_duplicate replace rewrites a waiting job (debounce)", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k", payload: '"v1"', run_at: T0 + 5_000 });
    const [out] = await store.enqueue("q", [
      newJob({
        key: "k",
        payload: '"v2"',
        run_at: T0 + 9_000,
        priority: 4,
        max_attempts: 2,
        lease_ms: 7_000,
        backoff: { base_ms: 5, max_ms: 50 },
        on_duplicate: "replace",
      }),
    ], T0 + 1_000);
    assert.deepEqual(out, {
      id,
      deduplicated: true,
      duplicate: "replaced",
      state: "delayed",
      run_at: T0 + 9_000,
    });
    const job = await store.get(id);
    assert.equal(job?.payload, '"v2"');
    assert.equal(job?.run_at, T0 + 9_000);
    assert.equal(job?.priority, 4);
    assert.equal(job?.max_attempts, 2);
    assert.equal(job?.lease_ms, 7_000);
    assert.deepEqual(job?.backoff, { base_ms: 5, max_ms: 50 });
    assert.equal(job?.created_at, T0, "still the job first enqueued");
    assert.deepEqual(await countsOf(store, "q"), counts({ delayed: 1 }));
    assert.equal(await store.nextDeadline(T0), T0 + 9_000);
  });

  test("enqueue() with replace keeps the waiting job's group, and the group's limit holds", async (store) => {
    const id = await enqueueOne(store, "q", {
      key: "k",
      group: "g",
      payload: '"later"',
      run_at: T0 + 60_000,
    });
    const [out] = await store.enqueue("q", [
      newJob({ key: "k", group: "h", payload: '"now"', run_at: T0, on_duplicate: "replace" }),
    ], T0);
    assert.deepEqual([out.id, out.duplicate, out.state], [id, "replaced", "pending"]);
    assert.equal((await store.get(id))?.group, "g");
    const second = await enqueueOne(store, "q", { group: "g", payload: '"second"' });
    const [first] = await store.claim("q", 10, null, T0);
    assert.deepEqual([first.job.id, first.job.group, first.job.payload], [id, "g", '"now"']);
    assert.deepEqual(await store.claim("q", 10, null, T0), [], "group g holds one lease at most");
    await store.ack(id, first.lease.token, null, T0);
    const [next] = await store.claim("q", 10, null, T0);
    assert.equal(next.job.id, second);
  });

  test("enqueue() replacing a delayed job with one due now makes it pending", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k", payload: '"later"', run_at: T0 + 60_000 });
    const [out] = await store.enqueue("q", [
      newJob({ key: "k", payload: '"now"', run_at: T0 + 10, on_duplicate: "replace" }),
    ], T0 + 10);
    assert.deepEqual([out.duplicate, out.state, out.run_at], ["replaced", "pending", T0 + 10]);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    const got = await claimOne(store, "q", T0 + 10);
    assert.equal(got.job.id, id);
    assert.equal(got.job.payload, '"now"');
  });

  test("enqueue() replacing a pending job keeps its place and age", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k", payload: '"v1"' });
    const other = await enqueueOne(store, "q", {}, T0 + 1);
    const [out] = await store.enqueue("q", [
      newJob({ key: "k", payload: '"v2"', on_duplicate: "replace", run_at: T0 + 5 }),
    ], T0 + 5);
    assert.deepEqual([out.duplicate, out.state, out.run_at], ["replaced", "pending", T0]);
    const [stats] = await store.stats("q");
    assert.equal(stats.oldest_pending_at, T0);
    const first = await claimOne(store, "q", T0 + 6);
    assert.equal(first.job.id, id, "still first in line");
    assert.equal(first.job.payload, '"v2"');
    assert.equal((await claimOne(store, "q", T0 + 6)).job.id, other);
  });

  test("enqueue() replacing resets the key window to the new job's", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k", key_ttl_ms: 100, run_at: T0 + 1_000 });
    await store.enqueue("q", [
      newJob({ key: "k", key_ttl_ms: 500, on_duplicate: "replace", run_at: T0 + 1_000 }),
    ], T0 + 50);
    assert.equal((await store.get(id))?.key_expires_at, T0 + 550);
    const [held] = await store.enqueue("q", [newJob({ key: "k" })], T0 + 200);
    assert.deepEqual([held.id, held.duplicate], [id, "ignored"]);
    const [fresh] = await store.enqueue("q", [newJob({ key: "k" })], T0 + 550);
    assert.equal(fresh.duplicate, null);
  });

  test("enqueue() with on_duplicate extend pushes a waiting job's run_at, never earlier", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k", payload: '"first"', run_at: T0 + 1_000 });
    const [out] = await store.enqueue("q", [
      newJob({ key: "k", payload: '"second"', run_at: T0 + 3_000, on_duplicate: "extend" }),
    ], T0 + 100);
    assert.deepEqual(out, {
      id,
      deduplicated: true,
      duplicate: "extended",
      state: "delayed",
      run_at: T0 + 3_000,
    });
    const job = await store.get(id);
    assert.equal(job?.payload, '"first"', "extend keeps the payload");
    assert.equal(job?.run_at, T0 + 3_000);
    const [earlier] = await store.enqueue("q", [
      newJob({ key: "k", run_at: T0 + 200, on_duplicate: "extend" }),
    ], T0 + 200);
    assert.deepEqual([earlier.duplicate, earlier.run_at], ["extended", T0 + 3_000]);
    assert.equal((await store.get(id))?.run_at, T0 + 3_000);
  });

  test("enqueue() extending a pending job delays it", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k" });
    const [out] = await store.enqueue("q", [
      newJob({ key: "k", run_at: T0 + 2_000, on_duplicate: "extend" }),
    ], T0 + 1);
    assert.deepEqual([out.id, out.state, out.run_at], [id, "delayed", T0 + 2_000]);
    assert.deepEqual(await countsOf(store, "q"), counts({ delayed: 1 }));
    assert.deepEqual(await store.claim("q", 1, null, T0 + 1), []);
    assert.deepEqual((await store.tick(T0 + 2_000, HANDED_ALL)).woken, ["q"]);
    assert.equal((await claimOne(store, "q", T0 + 2_000)).job.id, id);
  });

  test("enqueue() never replaces or extends a leased or finished job", async (store) => {
    const leased = await enqueueOne(store, "q", { key: "l", payload: '"l"' });
    await claimOne(store, "q");
    const done = await enqueueOne(store, "q", { key: "d", payload: '"d"' });
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0);
    const out = await store.enqueue("q", [
      newJob({ key: "l", payload: '"x"', on_duplicate: "replace" }),
      newJob({ key: "d", payload: '"x"', on_duplicate: "replace" }),
      newJob({ key: "l", run_at: T0 + 9_000, on_duplicate: "extend" }),
    ], T0 + 1);
    assert.deepEqual(out.map((e) => [e.id, e.duplicate, e.state]), [
      [leased, "ignored", "leased"],
      [done, "ignored", "done"],
      [leased, "ignored", "leased"],
    ]);
    assert.equal((await store.get(leased))?.payload, '"l"');
    assert.equal((await store.get(done))?.payload, '"d"');
    assert.equal((await store.get(leased))?.run_at, T0);
  });

  test("enqueue() applies duplicates within a batch in order", async (store) => {
    const stored = await enqueueOne(store, "q", { key: "s", payload: '"s0"', run_at: T0 + 50 });
    const out = await store.enqueue("q", [
      newJob({ key: "n", payload: '"n1"', run_at: T0 + 100 }),
      newJob({ key: "n", payload: '"n2"', run_at: T0 + 200, on_duplicate: "replace" }),
      newJob({ key: "s", payload: '"s1"', on_duplicate: "replace", run_at: T0 + 70 }),
      newJob({ key: "n", run_at: T0 + 300, on_duplicate: "extend" }),
      newJob({ key: "s", run_at: T0 + 80, on_duplicate: "extend" }),
      newJob({ key: "n", payload: '"ignored"' }),
    ], T0);
    const n = out[0].id;
    assert.deepEqual(out.map((e) => [e.id, e.duplicate, e.run_at]), [
      [n, null, T0 + 100],
      [n, "replaced", T0 + 200],
      [stored, "replaced", T0 + 70],
      [n, "extended", T0 + 300],
      [stored, "extended", T0 + 80],
      [n, "ignored", T0 + 300],
    ]);
    const job = await store.get(n);
    assert.equal(job?.payload, '"n2"');
    assert.equal(job?.run_at, T0 + 300);
    const s = await store.get(stored);
    assert.equal(s?.payload, '"s1"');
    assert.equal(s?.run_at, T0 + 80);
    assert.deepEqual(await countsOf(store, "q"), counts({ delayed: 2 }));
  });

  test("enqueue() after a window passed in a batch stores one new job for the key", async (store) => {
    const old = await enqueueOne(store, "q", { key: "k", key_ttl_ms: 5 });
    const out = await store.enqueue("q", [
      newJob({ key: "k", payload: '"new"' }),
      newJob({ key: "k", payload: '"newer"', on_duplicate: "replace" }),
    ], T0 + 5);
    assert.equal(out[0].duplicate, null);
    assert.notEqual(out[0].id, old);
    assert.deepEqual([out[1].id, out[1].duplicate], [out[0].id, "replaced"]);
    assert.equal((await store.get(out[0].id))?.payload, '"newer"');
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2 }));
  });

  test("enqueue() replacing with a job without its own options takes the queue's", async (store) => {
    await store.putSettings("q", {
      ...defaultQueueSettings(),
      max_attempts: 9,
      lease_ms: 7_000,
      backoff: { base_ms: 3, max_ms: 30 },
    }, T0);
    const id = await enqueueOne(store, "q", {
      key: "k",
      run_at: T0 + 1_000,
      max_attempts: 2,
      lease_ms: 1_000,
      backoff: { base_ms: 1, max_ms: 2 },
    });
    const [out] = await store.enqueue("q", [
      newJob({
        key: "k",
        run_at: T0 + 2_000,
        max_attempts: null,
        lease_ms: null,
        backoff: null,
        on_duplicate: "replace",
      }),
    ], T0);
    assert.equal(out.duplicate, "replaced");
    const job = await store.get(id);
    assert.deepEqual([job?.max_attempts, job?.lease_ms, job?.backoff], [9, 7_000, {
      base_ms: 3,
      max_ms: 30,
    }]);
  });

  sharedTest("enqueue() of one key on two servers at once stores one job", async (a, b) => {
    const outs = await Promise.all([
      a.enqueue("q", [newJob({ key: "k", payload: '"a"', on_duplicate: "replace" })], T0),
      b.enqueue("q", [newJob({ key: "k", payload: '"b"', on_duplicate: "replace" })], T0),
      a.enqueue("q", [newJob({ key: "k", payload: '"c"' })], T0),
      b.enqueue("q", [newJob({ key: "k", payload: '"d"', on_duplicate: "extend" })], T0),
    ]);
    const ids = new Set(outs.map(([e]) => e.id));
    assert.equal(ids.size, 1);
    assert.equal(outs.filter(([e]) => e.duplicate === null).length, 1);
    assert.deepEqual(await countsOf(a, "q"), counts({ pending: 1 }));
  });
}
