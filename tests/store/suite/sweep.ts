/**
 * Retention: sweepFinished() removing done, cancelled and dead jobs past the server's or their
 * queue's retention, and pending jobs waiting longer than their queue allows.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Store } from "../../../lib/store/store.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  makeDead,
  newJob,
  queueSettings,
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/**
 * When the jobs that each store's retention-sweep check puts in its database behind the store's
 * back finished: an hour before the suite's T0. See {@linkcode assertSweepSkipsKeptJobs}.
 */
export const KEPT_FINISHED_AT = T0 - 3_600_000;

/**
 * Each store's check that a retention sweep reads none of the finished jobs other queues keep.
 * The caller has put 100,000 done and 100,000 dead jobs of queue "kept", finished at
 * {@linkcode KEPT_FINISHED_AT}, into the store's database; this keeps them a week, finishes one
 * job of "q" two minutes before T0, sweeps five times with the server keeping done jobs a
 * minute, and checks that only that job went and that the median sweep took under
 * `medianUnderMs` (a sweep that read the kept jobs took 80–120 ms).
 */
export async function assertSweepSkipsKeptJobs(store: Store, medianUnderMs: number): Promise<void> {
  const week = 7 * 86_400_000;
  await store.putSettings(
    "kept",
    queueSettings({ retain_done_ms: week, retain_dead_ms: week }),
    KEPT_FINISHED_AT,
  );
  const finished = T0 - 120_000;
  await store.enqueue("q", [newJob({ run_at: finished })], finished);
  const [delivery] = await store.claim("q", 1, 60_000, finished);
  await store.ack(delivery.job.id, delivery.lease.token, null, finished);
  const took: number[] = [];
  let swept = 0;
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    swept += await store.sweepFinished(T0 + i, 60_000);
    took.push(performance.now() - started);
  }
  assert.equal(swept, 1, "q's job, finished two minutes ago");
  const [kept] = await store.stats("kept");
  assert.equal(kept.counts.done, 100_000);
  assert.equal(kept.counts.dead, 100_000);
  took.sort((a, b) => a - b);
  assert.ok(
    took[2] < medianUnderMs,
    `median sweep took ${took[2].toFixed(1)} ms (${took.join(", ")})`,
  );
}

/** Registers the cases of this area. */
export function sweepCases({ test }: SuiteCases): void {
  test("sweepFinished() removes done and cancelled jobs finished before the cutoff only", async (store) => {
    const done = await enqueueOne(store, "q");
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0 + 10);
    const cancelled = await enqueueOne(store, "q");
    await store.cancel(cancelled, T0 + 20);
    const [dead] = await makeDead(store, "q", 1, T0);
    const lateDone = await enqueueOne(store, "q");
    const l = await claimOne(store, "q");
    await store.ack(lateDone, l.lease.token, null, T0 + 50);
    const pending = await enqueueOne(store, "q");

    assert.equal(await store.sweepFinished(T0 + 10, 0), 0, "finished at the cutoff is kept");
    assert.equal(await store.sweepFinished(T0 + 50, 0), 2);
    assert.equal(await store.get(done), null);
    assert.equal(await store.get(cancelled), null);
    assert.equal(await stateOf(store, dead), "dead");
    assert.equal(await stateOf(store, lateDone), "done");
    assert.equal(await stateOf(store, pending), "pending");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1, done: 1, dead: 1 }));
    assert.equal(await store.sweepFinished(T0 + 50, 0), 0);
  });

  test("sweepFinished() keeps a queue's done jobs for its retain_done_ms, not the server's", async (store) => {
    await store.putSettings("long", queueSettings({ retain_done_ms: 1_000 }), T0);
    await store.putSettings("short", queueSettings({ retain_done_ms: 10 }), T0);
    const finish = async (queue: string) => {
      const id = await enqueueOne(store, queue);
      const d = await claimOne(store, queue);
      await store.ack(id, d.lease.token, null, T0);
      return id;
    };
    const long = await finish("long"), short = await finish("short"), plain = await finish("q");
    const cancelled = await enqueueOne(store, "long");
    await store.cancel(cancelled, T0);
    // The server keeps done jobs 100 ms; "short" keeps them 10 ms, "long" 1 s.
    assert.equal(await store.sweepFinished(T0 + 10, 100), 0);
    assert.equal(await store.sweepFinished(T0 + 11, 100), 1);
    assert.equal(await store.get(short), null);
    assert.equal(await store.sweepFinished(T0 + 101, 100), 1);
    assert.equal(await store.get(plain), null);
    assert.equal(await stateOf(store, long), "done");
    assert.equal(await store.sweepFinished(T0 + 1_000, 100), 0);
    assert.equal(await store.sweepFinished(T0 + 1_001, 100), 2);
    assert.equal(await store.get(long), null);
    assert.equal(await store.get(cancelled), null);
    assert.deepEqual(await countsOf(store, "long"), counts());
  });

  test("sweepFinished() removes pending jobs due longer ago than their queue's retain_pending_ms", async (store) => {
    await store.putSettings("q", queueSettings({ retain_pending_ms: 100 }), T0);
    const old = await enqueueOne(store, "q", { run_at: T0 });
    const grouped = await enqueueOne(store, "q", { run_at: T0, group: "g" });
    const [{ id: young }] = await store.enqueue("q", [newJob({ run_at: T0 + 50 })], T0 + 50);
    const delayed = await enqueueOne(store, "q", { run_at: T0 + 10_000 });
    const leased = await enqueueOne(store, "r");
    await store.putSettings("r", queueSettings({ retain_pending_ms: 100 }), T0);
    await claimOne(store, "r", T0, 60_000);
    const kept = await enqueueOne(store, "other", { run_at: T0 });
    assert.equal(await store.sweepFinished(T0 + 100, 60_000), 0, "due exactly 100 ms ago: kept");
    assert.equal(await store.sweepFinished(T0 + 101, 60_000), 2);
    assert.equal(await store.get(old), null);
    assert.equal(await store.get(grouped), null);
    assert.equal(await stateOf(store, young), "pending");
    assert.equal(await stateOf(store, delayed), "delayed", "a delayed job has not waited yet");
    assert.equal(await stateOf(store, leased), "leased", "a leased job is not waiting");
    assert.equal(await stateOf(store, kept), "pending", "without retain_pending_ms jobs wait");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1, delayed: 1 }));
    assert.deepEqual((await store.stats("q"))[0].groups, {
      waiting: 0,
      leased: 0,
      full: 0,
      rate_held: 0,
      top_held: [],
    });
    // The group's count went with its job: a new job of the group is claimed as usual.
    await store.enqueue("q", [newJob({ run_at: T0 + 200, group: "g" })], T0 + 200);
    const claimed = await store.claim("q", 5, null, T0 + 200);
    assert.deepEqual(claimed.map((d) => d.job.group).sort(), ["g", null]);
  });

  test("sweepFinished() removes dead jobs past their queue's retain_dead_ms only", async (store) => {
    await store.putSettings("q", queueSettings({ retain_dead_ms: 50 }), T0);
    const [old] = await makeDead(store, "q", 1, T0);
    const [young] = await makeDead(store, "q", 1, T0 + 40);
    const [kept] = await makeDead(store, "other", 1, T0);
    assert.equal(await store.sweepFinished(T0 + 50, 0), 0);
    assert.equal(await store.sweepFinished(T0 + 51, 0), 1);
    assert.equal(await store.get(old), null);
    assert.equal(await stateOf(store, young), "dead");
    assert.equal(await stateOf(store, kept), "dead", "without retain_dead_ms dead jobs stay");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
    assert.equal(await store.sweepFinished(T0 + 1_000_000, 0), 1);
    assert.equal(await stateOf(store, kept), "dead");
  });
}
