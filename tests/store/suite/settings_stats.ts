/**
 * A queue's counts, pause and settings: stats() exact after every transition, setPaused(), and
 * queue settings stored, replaced, forgotten, and given to the jobs enqueued after them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { defaultQueueSettings } from "../../../lib/core/queue_settings.ts";
import type { StateCounts } from "../../../lib/store/store.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  FULL_SETTINGS,
  HANDED_ALL,
  newJob,
  queueSettings,
  rejectsWith,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function settingsStatsCases({ test, sharedTest }: SuiteCases): void {
  test("stats() of an unknown queue answers zeros", async (store) => {
    assert.deepEqual(await store.stats("nobody"), [
      {
        name: "nobody",
        paused: false,
        counts: counts(),
        oldest_pending_at: null,
        settings: defaultQueueSettings(),
        groups: { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
        rate_held: false,
      },
    ]);
  });

  test("stats() without a queue lists every queue with jobs", async (store) => {
    await enqueueOne(store, "a");
    await enqueueOne(store, "b", { run_at: T0 + 10 });
    const all = await store.stats();
    const byName = new Map(all.map((s) => [s.name, s]));
    assert.deepEqual(byName.get("a")?.counts, counts({ pending: 1 }));
    assert.deepEqual(byName.get("b")?.counts, counts({ delayed: 1 }));
    assert.equal(byName.has("nobody"), false);
  });

  test("stats() without a queue lists by name in byte order", async (store) => {
    const names = ["b", "a_b", "A", "a-b", "a:b", "Z9", "0x"];
    for (const name of names) await enqueueOne(store, name);
    assert.deepEqual((await store.stats()).map((s) => s.name), [...names].sort());
  });

  test("setPaused() pauses and resumes a queue, as stats() shows", async (store) => {
    await enqueueOne(store, "q");
    await store.setPaused("q", true);
    assert.equal((await store.stats("q"))[0].paused, true);
    assert.equal((await store.stats("other"))[0].paused, false);
    await store.setPaused("q", true); // pausing twice is harmless
    await store.setPaused("q", false);
    assert.equal((await store.stats("q"))[0].paused, false);

    await store.setPaused("empty", true); // a queue without jobs can be paused
    const all = await store.stats();
    assert.equal(all.find((s) => s.name === "empty")?.paused, true);
    assert.deepEqual(all.find((s) => s.name === "empty")?.counts, counts());
  });

  test("stats() counts jobs per state exactly after every transition", async (store) => {
    const expect = async (some: Partial<StateCounts>, step: string) =>
      assert.deepEqual(await countsOf(store, "q"), counts(some), step);

    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q", { run_at: T0 + 1_000 });
    const c = await enqueueOne(store, "q", { max_attempts: 2 });
    await expect({ pending: 2, delayed: 1 }, "enqueue");
    const [extra] = await store.enqueue("q", [newJob({ key: "a" })], T0);
    await store.enqueue("q", [newJob({ key: "a" })], T0);
    await expect({ pending: 3, delayed: 1 }, "enqueue of a duplicate");
    await store.cancel(extra.id, T0);
    await expect({ pending: 2, delayed: 1, cancelled: 1 }, "cancel");
    await store.cancel(extra.id, T0);
    await expect({ pending: 2, delayed: 1 }, "remove");

    const da = await claimOne(store, "q", T0);
    assert.equal(da.job.id, a);
    await expect({ pending: 1, delayed: 1, leased: 1 }, "claim");
    await rejectsWith(store.ack(a, "wrong", null, T0), "lease_lost");
    await expect({ pending: 1, delayed: 1, leased: 1 }, "failed ack");
    await store.ack(a, da.lease.token, null, T0 + 1);
    await expect({ pending: 1, delayed: 1, done: 1 }, "ack");

    const dc = await claimOne(store, "q", T0 + 1, 999);
    assert.equal(dc.job.id, c);
    await expect({ delayed: 1, leased: 1, done: 1 }, "claim");
    await store.tick(T0 + 1_000, HANDED_ALL); // b promoted, c's lease expired
    await expect({ pending: 2, done: 1 }, "tick");

    const both = await store.claim("q", 2, null, T0 + 1_000);
    assert.deepEqual(both.map((x) => x.job.id), [b, c]);
    await expect({ leased: 2, done: 1 }, "claim two");
    const [db, dc2] = both;
    await store.nack(c, dc2.lease.token, { error: "x", delay_ms: 0, dead: false }, T0 + 1_001);
    await expect({ leased: 1, done: 1, dead: 1 }, "nack on the last attempt");
    await store.nack(b, db.lease.token, { error: "x", delay_ms: 500, dead: false }, T0 + 1_001);
    await expect({ delayed: 1, done: 1, dead: 1 }, "nack with delay");
    await store.cancel(b, T0 + 1_002);
    await expect({ done: 1, dead: 1, cancelled: 1 }, "cancel delayed");
    assert.equal((await store.requeueDead("q", { after: 0 }, T0 + 1_003, 1_000)).requeued, 1);
    await expect({ pending: 1, done: 1, cancelled: 1 }, "requeue");

    const dc3 = await claimOne(store, "q", T0 + 1_003);
    await expect({ leased: 1, done: 1, cancelled: 1 }, "claim requeued");
    await store.release([{ id: c, token: dc3.lease.token }], T0 + 1_004);
    await expect({ pending: 1, done: 1, cancelled: 1 }, "release");
    await claimOne(store, "q", T0 + 1_004);
    await store.cancel(c, T0 + 1_005);
    await expect({ done: 1, cancelled: 2 }, "cancel leased");
    await store.cancel(a, T0 + 1_006);
    await expect({ cancelled: 2 }, "remove done");
    assert.equal(await store.sweepFinished(T0 + 1_005, 0), 1);
    await expect({ cancelled: 1 }, "sweep");
    assert.equal(await store.sweepFinished(T0 + 10_000, 0), 1);
    await expect({}, "sweep all");
  });

  test("stats() answers the run_at of the oldest pending job", async (store) => {
    assert.equal((await store.stats("q"))[0].oldest_pending_at, null);
    const x = await enqueueOne(store, "q", {}, T0);
    const y = await enqueueOne(store, "q", { run_at: T0 + 5 }, T0 + 5);
    const z = await enqueueOne(store, "q", { run_at: T0 + 100 }, T0); // delayed, made earlier
    assert.equal((await store.stats("q"))[0].oldest_pending_at, T0);
    await store.tick(T0 + 200, HANDED_ALL);
    assert.equal((await claimOne(store, "q", T0 + 200)).job.id, x);
    assert.equal((await store.stats("q"))[0].oldest_pending_at, T0 + 5);
    assert.equal((await claimOne(store, "q", T0 + 200)).job.id, y);
    assert.equal(
      (await store.stats("q"))[0].oldest_pending_at,
      T0 + 100,
      "a promoted job became available at its run_at",
    );
    assert.equal((await claimOne(store, "q", T0 + 200)).job.id, z);
    assert.equal((await store.stats("q"))[0].oldest_pending_at, null);
  });

  test("settings() of a queue nobody configured answers the defaults", async (store) => {
    assert.deepEqual(await store.settings("q"), defaultQueueSettings());
    assert.deepEqual((await store.stats("q"))[0].settings, defaultQueueSettings());
  });

  test("putSettings() stores every field and settings() answers them", async (store) => {
    assert.deepEqual(await store.putSettings("q", FULL_SETTINGS, T0), FULL_SETTINGS);
    assert.deepEqual(await store.settings("q"), FULL_SETTINGS);
    assert.deepEqual(await store.settings("other"), defaultQueueSettings());
  });

  test("putSettings() replaces the settings as a whole", async (store) => {
    await store.putSettings("q", FULL_SETTINGS, T0);
    const next = queueSettings({ rate: { limit: 5, per_ms: 250 } });
    assert.deepEqual(await store.putSettings("q", next, T0 + 1), next);
    assert.deepEqual(await store.settings("q"), next);
  });

  test("a queue with settings but no jobs is known, and listed with them by stats()", async (store) => {
    await enqueueOne(store, "busy");
    const settings = queueSettings({ concurrency: 1 });
    await store.putSettings("quiet", settings, T0);
    assert.equal(store.knownQueues?.().has("quiet") ?? true, true);
    const all = await store.stats();
    assert.deepEqual(all.map((s) => s.name), ["busy", "quiet"]);
    assert.deepEqual(all[0].settings, defaultQueueSettings());
    assert.deepEqual(all[1].settings, settings);
    assert.deepEqual(all[1].counts, counts());
    assert.deepEqual((await store.stats("quiet"))[0].settings, settings);
  });

  test("putSettings() of the defaults removes them: a queue without jobs is forgotten", async (store) => {
    await store.putSettings("q", FULL_SETTINGS, T0);
    assert.deepEqual(
      await store.putSettings("q", defaultQueueSettings(), T0 + 1),
      defaultQueueSettings(),
    );
    assert.deepEqual(await store.settings("q"), defaultQueueSettings());
    assert.deepEqual(await store.stats(), []);
    // A store that is the only writer of its database forgets the queue at the commit; a shared
    // one at its next count of the database's queues (pg_known_queues.ts).
    if (!store.capabilities.shared) {
      assert.equal(store.knownQueues?.().has("q") ?? false, false);
    }
  });

  test("putSettings() of only SQS attributes or tags keeps them, and the queue known", async (store) => {
    const tagged = queueSettings({ tags: { team: "queues" } });
    const attributed = queueSettings({ sqs_attributes: { DelaySeconds: "5" } });
    assert.deepEqual(await store.putSettings("t", tagged, T0), tagged);
    assert.deepEqual(await store.putSettings("a", attributed, T0), attributed);
    assert.deepEqual(await store.settings("t"), tagged);
    assert.deepEqual(await store.settings("a"), attributed);
    assert.deepEqual((await store.stats()).map((s) => [s.name, s.settings]), [
      ["a", attributed],
      ["t", tagged],
    ]);
    await store.putSettings("t", defaultQueueSettings(), T0 + 1);
    assert.deepEqual((await store.stats()).map((s) => s.name), ["a"]);
  });

  test("enqueue() gives a job without max_attempts, lease_ms or backoff its queue's", async (store) => {
    await store.putSettings("q", FULL_SETTINGS, T0);
    const bare = await enqueueOne(store, "q", { max_attempts: null });
    const own = await enqueueOne(store, "q", {
      max_attempts: 2,
      lease_ms: 1_000,
      backoff: { base_ms: 5, max_ms: 10 },
    });
    const [inBatch] = await store.enqueue("q", [newJob({ max_attempts: null, key: "k" })], T0);
    for (const id of [bare, inBatch.id]) {
      const job = await store.get(id);
      assert.equal(job?.max_attempts, 9);
      assert.equal(job?.lease_ms, 45_000);
      assert.deepEqual(job?.backoff, { base_ms: 200, max_ms: 60_000 });
    }
    const mine = await store.get(own);
    assert.equal(mine?.max_attempts, 2);
    assert.equal(mine?.lease_ms, 1_000);
    assert.deepEqual(mine?.backoff, { base_ms: 5, max_ms: 10 });
    // The queue's lease length is the job's own from then on: a claim without one takes it.
    const delivery = await claimOne(store, "q");
    assert.equal(delivery.job.id, bare);
    assert.equal(delivery.lease.expires_at, T0 + 45_000);
  });

  test("enqueue() without queue defaults gives the server's: 5 attempts, no lease or backoff", async (store) => {
    await store.putSettings("q", queueSettings({ concurrency: 2 }), T0);
    const id = await enqueueOne(store, "q", { max_attempts: null });
    const other = await enqueueOne(store, "other", { max_attempts: null });
    for (const job of [await store.get(id), await store.get(other)]) {
      assert.equal(job?.max_attempts, 5);
      assert.equal(job?.lease_ms, null);
      assert.equal(job?.backoff, null);
    }
  });

  test("enqueue() keeps the defaults a job was given when its queue's settings change", async (store) => {
    await store.putSettings("q", queueSettings({ max_attempts: 2 }), T0);
    const id = await enqueueOne(store, "q", { max_attempts: null });
    await store.putSettings("q", queueSettings({ max_attempts: 7 }), T0 + 1);
    const later = await enqueueOne(store, "q", { max_attempts: null });
    assert.equal((await store.get(id))?.max_attempts, 2);
    assert.equal((await store.get(later))?.max_attempts, 7);
  });

  sharedTest(
    "settings put through one store are what the other reads and applies",
    async (a, b) => {
      await a.putSettings("q", FULL_SETTINGS, T0);
      assert.deepEqual(await b.settings("q"), FULL_SETTINGS);
      assert.deepEqual((await b.stats("q"))[0].settings, FULL_SETTINGS);
      const id = await enqueueOne(b, "q", { max_attempts: null });
      assert.equal((await b.get(id))?.max_attempts, 9);
      await b.putSettings("q", queueSettings({ max_attempts: 3 }), T0 + 1);
      assert.deepEqual(await a.settings("q"), queueSettings({ max_attempts: 3 }));
      const next = await enqueueOne(a, "q", { max_attempts: null });
      assert.equal((await a.get(next))?.max_attempts, 3);
    },
  );

  sharedTest("settings survive the store that put them", async (a, b) => {
    await a.putSettings("q", FULL_SETTINGS, T0);
    await a.close();
    assert.deepEqual(await b.settings("q"), FULL_SETTINGS);
    assert.deepEqual((await b.stats()).map((s) => s.name), ["q"]);
  });
}
