/**
 * Storing jobs: ids, fields and attributes as given, batches all-or-nothing and in order, and a
 * job due later delayed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { counts, countsOf, enqueueOne, newJob, type SuiteCases, T0 } from "./fixtures.ts";

/** Registers the cases of this area. */
export function enqueueCases({ test }: SuiteCases): void {
  test("enqueue() answers increasing ids and stores each job as given", async (store) => {
    const out = await store.enqueue("q", [
      newJob({ payload: '{"a":1}', priority: 3, key: "k1", max_attempts: 7, lease_ms: 4_000 }),
      newJob({ payload: "[1,2]", backoff: { base_ms: 10, max_ms: 20 } }),
    ], T0);
    assert.equal(out.length, 2);
    assert.deepEqual(out.map((e) => [e.deduplicated, e.state]), [
      [false, "pending"],
      [false, "pending"],
    ]);
    assert.ok(out[1].id > out[0].id);
    const later = await enqueueOne(store, "q");
    assert.ok(later > out[1].id);

    assert.deepEqual(await store.get(out[0].id), {
      id: out[0].id,
      queue: "q",
      state: "pending",
      payload: '{"a":1}',
      attributes: null,
      priority: 3,
      key: "k1",
      key_expires_at: null,
      group: null,
      attempts: 0,
      max_attempts: 7,
      run_at: T0,
      lease_ms: 4_000,
      backoff: null,
      created_at: T0,
      checkpoint: null,
      progress: null,
      progress_at: null,
      result: null,
      last_error: null,
      lease_expires_at: null,
      finished_at: null,
      dead_lettered_from: null,
    });
    const second = await store.get(out[1].id);
    assert.equal(second?.payload, "[1,2]");
    assert.deepEqual(second?.backoff, { base_ms: 10, max_ms: 20 });
    assert.equal(second?.key, null);
    assert.equal(second?.lease_ms, null);
  });

  test("enqueue() stores a job's attributes, and a claim and a replace carry them", async (store) => {
    const attributes = '{"trace":{"type":"String","value":"00-ab-cd-01"}}';
    const [{ id }] = await store.enqueue("q", [newJob({ attributes, key: "k" })], T0);
    const [plain] = await store.enqueue("q", [newJob()], T0);
    assert.equal((await store.get(id))?.attributes, attributes);
    assert.equal((await store.get(plain.id))?.attributes, null);
    const replacing = '{"n":{"type":"Number","value":"7"}}';
    await store.enqueue(
      "q",
      [newJob({ attributes: replacing, key: "k", on_duplicate: "replace" })],
      T0,
    );
    assert.equal((await store.get(id))?.attributes, replacing);
    const claimed = await store.claim("q", 2, null, T0);
    assert.deepEqual(claimed.map((d) => d.job.attributes), [replacing, null]);
    await store.enqueue("r", [newJob({ attributes })], T0);
    const [grouped] = await store.enqueue("r", [newJob({ attributes, group: "g" })], T0);
    const fair = await store.claimFair("r", [{ max: 2, lease_ms: null }], T0);
    assert.deepEqual(fair[0].map((d) => d.job.attributes), [attributes, attributes]);
    assert.equal((await store.get(grouped.id))?.state, "leased");
  });

  test("enqueue() of a long batch mixing keyed and unkeyed jobs keeps each its place and id", async (store) => {
    // Longer than any one statement takes, with keyed jobs (one of them a duplicate) between.
    const jobs = Array.from(
      { length: 150 },
      (_, i) =>
        newJob({ payload: String(i), key: i % 10 === 3 ? `k${i}` : i === 77 ? "k3" : null }),
    );
    const out = await store.enqueue("q", jobs, T0);
    assert.deepEqual(out.map((e, i) => [i, e.deduplicated]).filter(([, d]) => d), [[77, true]]);
    assert.equal(out[77].id, out[3].id);
    const stored = out.filter((e) => !e.deduplicated);
    for (let i = 1; i < stored.length; i++) assert.ok(stored[i].id > stored[i - 1].id);
    const rows = await Promise.all(out.map((e) => store.get(e.id)));
    assert.deepEqual(
      rows.map((job) => job?.payload),
      jobs.map((job, i) => i === 77 ? "3" : job.payload),
    );
    const claimed = await store.claim("q", 200, null, T0);
    assert.deepEqual(
      claimed.map((d) => d.job.payload),
      jobs.map((job) => job.payload).filter((_, i) => i !== 77),
    );
  });

  test("enqueue() makes a job due later delayed and one due now or earlier pending", async (store) => {
    const out = await store.enqueue("q", [
      newJob({ run_at: T0 + 1 }),
      newJob({ run_at: T0 }),
      newJob({ run_at: T0 - 5_000 }),
    ], T0);
    assert.deepEqual(out.map((e) => e.state), ["delayed", "pending", "pending"]);
    const [later, now, past] = await Promise.all(out.map((e) => store.get(e.id)));
    assert.equal(later?.state, "delayed");
    assert.equal(later?.run_at, T0 + 1);
    assert.equal(now?.run_at, T0);
    assert.equal(past?.state, "pending");
    assert.equal(past?.run_at, T0, "a run_at in the past means now");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, delayed: 1 }));
  });

  test("enqueue() never reuses the id of a removed job", async (store) => {
    const first = await enqueueOne(store, "q");
    await store.cancel(first, T0);
    await store.cancel(first, T0); // removes the cancelled job
    assert.equal(await store.get(first), null);
    const next = await enqueueOne(store, "q");
    assert.ok(next > first);
  });

  test("enqueue() stores a batch all-or-nothing", async (store) => {
    // A job the database must refuse (payload is required) sinks the whole batch.
    const bad = newJob({ payload: null as unknown as string });
    await assert.rejects(
      store.enqueue("q", [newJob({ key: "a" }), newJob({ key: "b" }), bad], T0),
    );
    assert.deepEqual(await countsOf(store, "q"), counts());
    const [out] = await store.enqueue("q", [newJob({ key: "a" })], T0);
    assert.equal(out.deduplicated, false, "the key of the failed batch is not held");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
  });
}
