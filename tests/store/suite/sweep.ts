/**
 * Retention: sweepFinished() removing done, cancelled and dead jobs past the server's or their
 * queue's retention, and pending jobs waiting longer than their queue allows; an ack deleting
 * its job at once where done jobs are kept no time.
 *
 * @module
 */

import assert from "node:assert/strict";
import type { Store } from "../../../lib/store/store.ts";
import type { DoneRetention } from "../../../lib/core/lifecycle.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  makeDead,
  newJob,
  queueSettings,
  rejectsWith,
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";
import { create as createFlow, node as flowNode } from "./flows.ts";

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

  /** The server keeps done jobs no time (`--retain-done 0`); nobody watches. */
  const NO_TIME: DoneRetention = { retainDoneMs: 0, watched: () => false };
  const A_DAY: DoneRetention = { retainDoneMs: 86_400_000, watched: () => false };

  test("ack() deletes its job when done jobs are kept no time: gone, key free, counts right", async (store) => {
    const id = await enqueueOne(store, "q", { key: "k" });
    const other = await enqueueOne(store, "q");
    const got = await claimOne(store, "q");
    assert.equal(got.job.id, id);
    assert.deepEqual(await store.ack(id, got.lease.token, '"r"', T0 + 1, NO_TIME), {
      id,
      queue: "q",
      frees: false,
    });
    assert.equal(await store.get(id), null);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    // A repeated ack finds nothing, as after a sweep; the key is free for a new job.
    await rejectsWith(store.ack(id, got.lease.token, null, T0 + 2, NO_TIME), "not_found");
    const [again] = await store.enqueue("q", [newJob({ key: "k" })], T0 + 3);
    assert.equal(again.deduplicated, false);
    assert.notEqual(again.id, id);
    assert.equal(await stateOf(store, other), "pending");
    assert.equal(await store.sweepFinished(T0 + 10, 0), 0, "nothing left for the sweep");
  });

  test("ack() with a wrong token deletes nothing, even where done jobs are kept no time", async (store) => {
    const id = await enqueueOne(store, "q");
    const got = await claimOne(store, "q");
    await rejectsWith(store.ack(id, "not-a-token", null, T0 + 1, NO_TIME), "lease_lost");
    assert.equal(await stateOf(store, id), "leased");
    await store.ack(id, got.lease.token, null, T0 + 2, NO_TIME);
    assert.equal(await store.get(id), null);
  });

  test("ack() keeps its job done by its queue's retain_done_ms over the server's", async (store) => {
    await store.putSettings("now", queueSettings({ retain_done_ms: 0 }), T0);
    await store.putSettings("kept", queueSettings({ retain_done_ms: 60_000 }), T0);
    const gone = await enqueueOne(store, "now");
    const kept = await enqueueOne(store, "kept");
    const g = await claimOne(store, "now");
    const k = await claimOne(store, "kept");
    await store.ack(gone, g.lease.token, null, T0 + 1, A_DAY);
    await store.ack(kept, k.lease.token, null, T0 + 1, NO_TIME);
    assert.equal(await store.get(gone), null, "the queue keeps none, the server a day");
    assert.equal(await stateOf(store, kept), "done", "the queue keeps a minute, the server none");
  });

  test("ack() keeps a watched job, a flow's job, and any job without a retention, done", async (store) => {
    const watched = await enqueueOne(store, "q");
    const plain = await enqueueOne(store, "q");
    const w = await claimOne(store, "q");
    const p = await claimOne(store, "q");
    await store.ack(watched, w.lease.token, '"seen"', T0 + 1, {
      retainDoneMs: 0,
      watched: () => true,
    });
    await store.ack(plain, p.lease.token, null, T0 + 1);
    assert.equal((await store.get(watched))?.result, '"seen"');
    assert.equal(await stateOf(store, plain), "done");

    const created = await createFlow(store, [flowNode("a", [], "f"), flowNode("b", ["a"], "f")]);
    const a = await claimOne(store, "f", T0 + 2);
    await store.ack(a.job.id, a.lease.token, '"a"', T0 + 3, NO_TIME);
    assert.equal(await stateOf(store, a.job.id), "done", "its dependents read it");
    const b = await claimOne(store, "f", T0 + 4);
    assert.equal(b.job.flow?.id, created.id);
    await store.ack(b.job.id, b.lease.token, null, T0 + 5, NO_TIME);
    assert.equal(await stateOf(store, b.job.id), "done", "swept with its flow");
  });

  test("ack() asks whether the job is watched when it runs, not when it was called", async (store) => {
    const id = await enqueueOne(store, "q");
    const got = await claimOne(store, "q");
    let watching = false;
    const acked = store.ack(id, got.lease.token, '"late"', T0 + 1, {
      retainDoneMs: 0,
      watched: () => watching,
    });
    watching = true; // a watch begun after the call, before the commit
    await acked;
    assert.equal((await store.get(id))?.result, '"late"');
  });

  test("ack() runs of many, some deleting, some keeping, one in a flow, all settle right", async (store) => {
    const created = await createFlow(store, [flowNode("solo")]);
    for (let i = 0; i < 7; i++) await enqueueOne(store, "q");
    const got = await store.claim("q", 8, null, T0 + 1);
    assert.equal(got.length, 8);
    // Submitted together, so each store settles them as one run.
    const acks = got.map((d, i) =>
      store.ack(d.job.id, d.lease.token, null, T0 + 2, i % 2 === 0 ? NO_TIME : A_DAY)
    );
    assert.deepEqual((await Promise.all(acks)).map((a) => a.id), got.map((d) => d.job.id));
    const states = await Promise.all(got.map((d) => stateOf(store, d.job.id)));
    assert.deepEqual(
      states,
      got.map((d, i) => i % 2 === 0 && d.job.flow?.id !== created.id ? null : "done"),
    );
    const flowJob = got.findIndex((d) => d.job.flow?.id === created.id);
    assert.notEqual(flowJob, -1);
    const kept = got.filter((_, i) => i % 2 === 1 || i === flowJob).length;
    assert.deepEqual(await countsOf(store, "q"), counts({ done: kept }));
  });

  test("storedIds() answers which of many ids are jobs still stored", async (store) => {
    const kept = await enqueueOne(store, "q");
    const gone = await enqueueOne(store, "q");
    const got = await store.claim("q", 2, null, T0);
    const lease = got.find((d) => d.job.id === gone)!.lease;
    await store.ack(gone, lease.token, null, T0 + 1, NO_TIME);
    assert.deepEqual(await store.storedIds([]), new Set());
    // More ids than one statement takes: most of them unknown.
    const ids = [gone, ...Array.from({ length: 2500 }, (_, i) => 1_000_000 + i), kept];
    assert.deepEqual(await store.storedIds(ids), new Set([kept]));
  });

  test("ack() deleting a job of a group frees its group's slot", async (store) => {
    const first = await enqueueOne(store, "q", { group: "g" });
    const second = await enqueueOne(store, "q", { group: "g" });
    const got = await claimOne(store, "q");
    assert.equal(got.job.id, first);
    assert.deepEqual(await store.claim("q", 1, null, T0), [], "the group's one slot is taken");
    await store.ack(first, got.lease.token, null, T0 + 1, NO_TIME);
    assert.equal(await store.get(first), null);
    assert.equal((await claimOne(store, "q", T0 + 2)).job.id, second);
  });
}
