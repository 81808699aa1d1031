/**
 * Dead jobs: requeueDead() by cursor or ids within a limit, a queue's dead_letter_queue taking the
 * jobs that die, and moveWaiting() sending them back.
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
  makeDead,
  newJob,
  queueSettings,
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function deadLetterCases({ test }: SuiteCases): void {
  test("requeueDead() after an id requeues the queue's oldest dead jobs past it, at most the limit", async (store) => {
    const dead = await makeDead(store, "q", 7);
    assert.deepEqual(await store.requeueDead("q", { after: 0 }, T0 + 50, 3), {
      requeued: 3,
      last: dead[2],
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 3, dead: 4 }));
    for (const id of dead.slice(0, 3)) assert.equal(await stateOf(store, id), "pending");
    assert.deepEqual(await store.requeueDead("q", { after: dead[4] }, T0 + 50, 3), {
      requeued: 2,
      last: dead[6],
    });
    assert.equal(await stateOf(store, dead[3]), "dead", "before the cursor: left");
    assert.deepEqual(await store.requeueDead("q", { after: dead[6] }, T0 + 50, 3), {
      requeued: 0,
      last: null,
    });
  });

  test("requeueDead() with ids requeues at most the limit of them", async (store) => {
    const dead = await makeDead(store, "q", 4);
    assert.deepEqual(await store.requeueDead("q", { ids: dead }, T0 + 50, 2), {
      requeued: 2,
      last: dead[1],
    });
    assert.deepEqual([await stateOf(store, dead[1]), await stateOf(store, dead[2])], [
      "pending",
      "dead",
    ]);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, dead: 2 }));
  });

  test("requeueDead() without ids makes every dead job of the queue pending", async (store) => {
    const dead = await makeDead(store, "q", 3);
    const [other] = await makeDead(store, "other", 1);
    assert.equal((await store.requeueDead("q", { after: 0 }, T0 + 50, 1_000)).requeued, 3);
    for (const id of dead) {
      const job = await store.get(id);
      assert.equal(job?.state, "pending");
      assert.equal(job?.attempts, 0, "attempts are reset");
      assert.equal(job?.finished_at, null);
    }
    assert.equal(await stateOf(store, other), "dead");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 3 }));
    const got = await store.claim("q", 10, null, T0 + 50);
    assert.deepEqual(got.map((d) => [d.job.id, d.job.attempts]), dead.map((id) => [id, 1]));
    assert.equal((await store.requeueDead("q", { after: 0 }, T0 + 60, 1_000)).requeued, 0);
  });

  test("requeueDead() with ids requeues only those, ignoring other queues' ids", async (store) => {
    const [d1, d2, d3] = await makeDead(store, "q", 3);
    const [other] = await makeDead(store, "other", 1);
    const pending = await enqueueOne(store, "q");
    assert.equal(
      (await store.requeueDead("q", { ids: [d2, other, pending, 424242] }, T0 + 1, 1_000)).requeued,
      1,
    );
    assert.equal(await stateOf(store, d1), "dead");
    assert.equal(await stateOf(store, d2), "pending");
    assert.equal(await stateOf(store, d3), "dead");
    assert.equal(await stateOf(store, other), "dead");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, dead: 2 }));
    assert.deepEqual(await countsOf(store, "other"), counts({ dead: 1 }));
    assert.equal((await store.requeueDead("q", { ids: [] }, T0 + 2, 1_000)).requeued, 0);
  });

  test("a job that dies in a queue with a dead_letter_queue moves there, pending, attempts reset", async (store) => {
    await store.putSettings("q", queueSettings({ dead_letter_queue: "q.dead" }), T0);
    // Nacked dead; out of attempts at its lease's end; its consumer gone on its last attempt.
    const nacked = await enqueueOne(store, "q", { key: "k1", group: "g", lease_ms: 5_000 });
    const expired = await enqueueOne(store, "q", { max_attempts: 1, lease_ms: 1_000 });
    const released = await enqueueOne(store, "q", { max_attempts: 1, lease_ms: 5_000 });
    const claimed = await store.claim("q", 3, null, T0);
    assert.deepEqual(claimed.map((d) => d.job.id).sort(), [nacked, expired, released].sort());
    const byId = new Map(claimed.map((d) => [d.job.id, d]));
    const out = await store.nack(
      nacked,
      byId.get(nacked)!.lease.token,
      { error: "bad input", delay_ms: null, dead: true },
      T0 + 10,
    );
    assert.deepEqual(out, {
      id: nacked,
      queue: "q",
      state: "pending",
      run_at: T0 + 10,
      moved_to: "q.dead",
    });
    const tick = await store.tick(T0 + 1_000, HANDED_ALL);
    assert.deepEqual(tick.expired.map((e) => [e.id, e.state, e.moved_to]), [
      [expired, "pending", "q.dead"],
    ]);
    assert.ok(tick.woken.includes("q.dead"));
    const gone = await store.release(
      [{ id: released, token: byId.get(released)!.lease.token }],
      T0 + 1_001,
    );
    assert.deepEqual(gone.map((e) => [e.id, e.state, e.moved_to]), [[
      released,
      "pending",
      "q.dead",
    ]]);
    for (const id of [nacked, expired, released]) {
      const job = await store.get(id);
      assert.equal(job?.queue, "q.dead");
      assert.equal(job?.state, "pending");
      assert.equal(job?.attempts, 0);
      assert.equal(job?.dead_lettered_from, "q");
      assert.equal(job?.group, null);
    }
    assert.equal((await store.get(nacked))?.last_error, "bad input", "why it died is kept");
    assert.equal((await store.get(nacked))?.key, "k1", "its key is shown, no longer held");
    assert.deepEqual(await countsOf(store, "q"), counts());
    assert.deepEqual(await countsOf(store, "q.dead"), counts({ pending: 3 }));
    // The key is free in the queue it left, and the group's slot too.
    const [fresh] = await store.enqueue("q", [newJob({ key: "k1", group: "g" })], T0 + 2_000);
    assert.equal(fresh.deduplicated, false);
    assert.equal((await claimOne(store, "q", T0 + 2_000)).job.id, fresh.id);
    // In the dead-letter queue the jobs are ordinary ones: claimed, counted, with a fresh attempt.
    const again = await store.claim("q.dead", 5, null, T0 + 2_000);
    assert.equal(again.length, 3);
    assert.ok(again.every((d) => d.job.attempts === 1 && d.job.dead_lettered_from === "q"));
  });

  test("moveWaiting() moves waiting jobs back where they were dead-lettered from, or to a queue", async (store) => {
    await store.putSettings("a", queueSettings({ dead_letter_queue: "dlq", max_attempts: 1 }), T0);
    await store.putSettings("b", queueSettings({ dead_letter_queue: "dlq", max_attempts: 1 }), T0);
    const fromA = [await enqueueOne(store, "a"), await enqueueOne(store, "a", { key: "ka" })];
    const fromB = await enqueueOne(store, "b");
    for (const queue of ["a", "a", "b"]) {
      const { job, lease } = await claimOne(store, queue, T0);
      await store.nack(job.id, lease.token, { error: "x", delay_ms: null, dead: true }, T0 + 1);
    }
    const native = await enqueueOne(store, "dlq", { key: "kd" });
    const grouped = await enqueueOne(store, "dlq", { group: "g" });
    assert.deepEqual(await countsOf(store, "dlq"), counts({ pending: 5 }));
    // Back to where they came from: the two of a and the one of b, not the others.
    const back = await store.moveWaiting("dlq", null, 10, T0 + 100);
    assert.deepEqual(back.toSorted(), ["a", "a", "b"]);
    for (const [id, queue] of [[fromA[0], "a"], [fromA[1], "a"], [fromB, "b"]] as const) {
      const job = await store.get(id);
      assert.deepEqual(
        [job?.queue, job?.state, job?.run_at, job?.dead_lettered_from, job?.attempts],
        [queue, "pending", T0 + 100, null, 0],
      );
    }
    assert.equal((await store.get(fromA[1]))?.key, "ka", "its key is shown, not held");
    assert.deepEqual(await countsOf(store, "a"), counts({ pending: 2 }));
    assert.deepEqual(await countsOf(store, "dlq"), counts({ pending: 2 }));
    // To a queue given: at most the limit, never a grouped job.
    assert.deepEqual(await store.moveWaiting("dlq", "elsewhere", 1, T0 + 200), ["elsewhere"]);
    assert.equal((await store.get(native))?.queue, "elsewhere");
    assert.deepEqual(await store.moveWaiting("dlq", "elsewhere", 10, T0 + 200), []);
    assert.equal((await store.get(grouped))?.queue, "dlq");
    const [again] = await store.enqueue("dlq", [newJob({ key: "kd" })], T0 + 300);
    assert.equal(again.deduplicated, false, "the moved job left its key behind");
    assert.equal((await claimOne(store, "elsewhere", T0 + 300)).job.id, native);
  });
}
