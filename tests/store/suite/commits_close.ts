/**
 * The engine under the operations: its capabilities, commit counts, writes submitted together
 * sharing transactions with each caller answered alone, and close().
 *
 * @module
 */

import assert from "node:assert/strict";
import type { TegamiError } from "../../../lib/core/errors.ts";
import {
  claimOne,
  counts,
  countsOf,
  enqueueOne,
  HANDED_ALL,
  newJob,
  rejectsWith,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function commitCloseCases({ test, capabilities }: SuiteCases): void {
  test("capabilities are the ones the suite was told", async (store) => {
    assert.deepEqual({ ...store.capabilities }, { ...capabilities });
    assert.equal(store.fileSizes() !== null, store.capabilities.localFiles);
    await Promise.resolve();
  });

  test("commitStats() counts commits and the operations they carried", async (store) => {
    const before = store.commitStats();
    await enqueueOne(store, "q");
    await store.get(1);
    await store.stats("q");
    const after = store.commitStats();
    assert.equal(after.commits, before.commits + 1);
    assert.equal(after.operations, before.operations + 1);
    assert.ok(after.largest_batch >= 1);
    assert.equal(after.batch_histogram.reduce((a, b) => a + b, 0), after.commits);
    assert.ok(after.commit_ms >= before.commit_ms);
  });

  test("probeWritable() resolves on a writable store", async (store) => {
    await store.probeWritable();
  });

  test("writes submitted together share transactions and each caller gets its own answer", async (store) => {
    const before = store.commitStats();
    const n = 50;
    const answers = await Promise.all(
      Array.from({ length: n }, (_, i) => store.enqueue("q", [newJob({ payload: `${i}` })], T0)),
    );
    const after = store.commitStats();
    assert.equal(after.operations - before.operations, n);
    assert.ok(
      after.commits - before.commits < n,
      `${n} writes took ${after.commits - before.commits} commits`,
    );
    assert.equal(new Set(answers.map(([e]) => e.id)).size, n);
    for (let i = 0; i < n; i++) {
      assert.equal((await store.get(answers[i][0].id))?.payload, `${i}`);
    }
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: n }));
  });

  test("claims submitted together never deliver one job twice", async (store) => {
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q");
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => store.claim("q", 1, null, T0)),
    );
    const ids = answers.flat().map((d) => d.job.id);
    assert.equal(ids.length, 5);
    assert.equal(new Set(ids).size, 5);
    assert.deepEqual(await countsOf(store, "q"), counts({ leased: 5 }));
  });

  test("enqueues of one key submitted together store a single job", async (store) => {
    const answers = await Promise.all(
      Array.from(
        { length: 5 },
        (_, i) => store.enqueue("q", [newJob({ key: "k", payload: `${i}` })], T0),
      ),
    );
    const created = answers.flat().filter((e) => !e.deduplicated);
    assert.equal(created.length, 1);
    for (const [e] of answers) assert.equal(e.id, created[0].id);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
  });

  test("a failing operation does not affect the others committed with it", async (store) => {
    for (let i = 0; i < 4; i++) await enqueueOne(store, "q");
    const [a, b, c, d] = await store.claim("q", 4, null, T0);
    const results = await Promise.allSettled([
      store.ack(a.job.id, a.lease.token, '"a"', T0 + 1),
      store.ack(b.job.id, "stale", '"b"', T0 + 1),
      store.nack(c.job.id, c.lease.token, { error: "c", delay_ms: 0, dead: false }, T0 + 1),
      store.ack(424242, "x", null, T0 + 1),
      store.extend(d.job.id, d.lease.token, 60_000, T0 + 1),
    ]);
    assert.deepEqual(results.map((r) => r.status), [
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    const codes = results.map((r) =>
      r.status === "rejected" ? (r.reason as TegamiError).code : null
    );
    assert.deepEqual(codes, [null, "lease_lost", null, "not_found", null]);
    assert.equal((await store.get(a.job.id))?.result, '"a"');
    assert.equal((await store.get(b.job.id))?.state, "leased");
    assert.equal((await store.get(b.job.id))?.result, null);
    assert.equal((await store.get(c.job.id))?.state, "pending");
    assert.equal((await store.get(d.job.id))?.lease_expires_at, T0 + 60_001);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1, leased: 2, done: 1 }));
  });

  test("acks of one job submitted together: the holder's wins, a stale one is lease_lost", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.tick(T0 + 1_000, HANDED_ALL);
    const second = await claimOne(store, "q", T0 + 1_000);
    const results = await Promise.allSettled([
      store.ack(id, first.lease.token, '"old"', T0 + 1_001),
      store.ack(id, second.lease.token, '"new"', T0 + 1_001),
      store.ack(id, second.lease.token, '"new"', T0 + 1_001),
    ]);
    assert.deepEqual(results.map((r) => r.status), ["rejected", "fulfilled", "fulfilled"]);
    assert.equal(((results[0] as PromiseRejectedResult).reason as TegamiError).code, "lease_lost");
    assert.equal((await store.get(id))?.result, '"new"');
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1 }));
  });

  test("close() answers the writes submitted before it", async (store) => {
    const pending = store.enqueue("q", [newJob()], T0);
    await store.close();
    const [out] = await pending;
    assert.equal(out.deduplicated, false);
  });

  test("close() called again resolves only once the store is closed", async (store) => {
    let committed = false;
    const write = store.enqueue("q", [newJob()], T0).then(() => committed = true);
    const first = store.close();
    await store.close();
    assert.equal(committed, true, "the second close() resolved before the first had drained");
    await Promise.all([first, write]);
  });

  test("close() makes later reads fail with unavailable", async (store) => {
    const id = await enqueueOne(store, "q");
    await store.close();
    await rejectsWith(store.get(id), "unavailable");
    await rejectsWith(store.stats("q"), "unavailable");
    await rejectsWith(store.stats(), "unavailable");
    const page = { state: "dead", order: "oldest", after: null, limit: 10 } as const;
    await rejectsWith(store.listJobs("q", page), "unavailable");
    await rejectsWith(store.nextDeadline(T0), "unavailable");
  });

  test("close() makes later writes fail with unavailable", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    await store.close();
    await store.close(); // closing twice is harmless
    const retry = { error: null, delay_ms: 0, dead: false };
    await rejectsWith(store.enqueue("q", [newJob()], T0), "unavailable");
    await rejectsWith(store.claim("q", 1, null, T0), "unavailable");
    await rejectsWith(store.ack(id, lease.token, null, T0), "unavailable");
    await rejectsWith(store.nack(id, lease.token, retry, T0), "unavailable");
    await rejectsWith(store.extend(id, lease.token, null, T0), "unavailable");
    await rejectsWith(store.checkpoint(id, lease.token, "1", T0), "unavailable");
    await rejectsWith(store.cancel(id, T0), "unavailable");
    await rejectsWith(store.setPaused("q", true), "unavailable");
    await rejectsWith(store.requeueDead("q", { after: 0 }, T0, 1_000), "unavailable");
    await rejectsWith(store.tick(T0, HANDED_ALL), "unavailable");
    await rejectsWith(store.release([{ id, token: lease.token }], T0), "unavailable");
    await rejectsWith(store.sweepFinished(T0, 0), "unavailable");
    await rejectsWith(store.probeWritable(), "unavailable");
  });
}
