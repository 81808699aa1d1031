/**
 * Settling a lease: ack() with its result, nack() to a retry, a delay or dead, each fenced by the
 * lease's token, alone or submitted together.
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
  stateOf,
  type SuiteCases,
  T0,
} from "./fixtures.ts";

/** Registers the cases of this area. */
export function ackNackCases({ test }: SuiteCases): void {
  test("ack() completes the job and stores its result", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.ack(id, lease.token, '{"ok":true}', T0 + 10), {
      id,
      queue: "q",
      frees: false,
    });
    const job = await store.get(id);
    assert.equal(job?.state, "done");
    assert.equal(job?.result, '{"ok":true}');
    assert.equal(job?.finished_at, T0 + 10);
    assert.equal(job?.lease_expires_at, null);
    assert.equal(job?.attempts, 1);
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1 }));
  });

  test("ack() without a result stores null", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    await store.ack(id, lease.token, null, T0);
    assert.equal((await store.get(id))?.result, null);
  });

  test("ack() repeated with the same token answers the same and changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    await store.ack(id, lease.token, '"r1"', T0 + 10);
    assert.deepEqual(await store.ack(id, lease.token, '"r1"', T0 + 20), {
      id,
      queue: "q",
      frees: false,
    });
    assert.deepEqual(await store.ack(id, lease.token, '"other"', T0 + 40_000), {
      id,
      queue: "q",
      frees: false,
    });
    const job = await store.get(id);
    assert.equal(job?.result, '"r1"');
    assert.equal(job?.finished_at, T0 + 10);
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1 }));
  });

  test("acks submitted together each complete their own job with their own result", async (store) => {
    const ids = (await store.enqueue("q", Array.from({ length: 70 }, () => newJob()), T0)).map((
      e,
    ) => e.id);
    const leases = await store.claim("q", 70, null, T0);
    // A write after them that fails makes the transaction run again without it: the acks are
    // done again in the rerun, not only in the try that was rolled back.
    const [acked, failed] = await Promise.all([
      Promise.all(leases.map((d, i) => store.ack(d.job.id, d.lease.token, `${i}`, T0 + i))),
      store.extend(leases[0].job.id, "not-a-token", null, T0).catch((e) => e.code),
    ]);
    assert.equal(failed, "lease_lost");
    assert.deepEqual(acked, leases.map((d) => ({ id: d.job.id, queue: "q", frees: false })));
    const jobs = await Promise.all(leases.map((d) => store.get(d.job.id)));
    assert.deepEqual(
      jobs.map((job) => [job?.state, job?.result, job?.finished_at, job?.lease_expires_at]),
      leases.map((_, i) => ["done", `${i}`, T0 + i, null]),
    );
    assert.deepEqual(new Set(leases.map((d) => d.job.id)), new Set(ids));
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 70 }));
  });

  test("acks submitted together each settle their own lease; a stale one fails alone", async (store) => {
    // More than one statement's worth, submitted in one go, with a stale token (after the first
    // 64, whose statement succeeds and must be undone), an unknown job and a repeated ack among
    // them, then a nack: each answered as if it had come alone.
    const ids = (await store.enqueue("q", Array.from({ length: 70 }, () => newJob()), T0)).map((
      e,
    ) => e.id);
    const leases = await store.claim("q", 70, null, T0);
    const tokens = new Map(leases.map((d) => [d.job.id, d.lease.token]));
    const answers = await Promise.allSettled([
      ...ids.slice(0, 68).map((id, i) =>
        store.ack(id, i === 66 ? "not-a-token" : tokens.get(id)!, `${i}`, T0 + 5)
      ),
      store.ack(ids[3], tokens.get(ids[3])!, '"again"', T0 + 6),
      store.ack(999_999, "nobody", null, T0 + 5),
      store.nack(ids[68], tokens.get(ids[68])!, { error: null, delay_ms: 0, dead: false }, T0 + 5),
      store.ack(ids[69], tokens.get(ids[69])!, '"last"', T0 + 7),
    ]);
    const codes = answers.map((a) =>
      a.status === "fulfilled" ? "ok" : (a.reason as TegamiError).code
    );
    assert.deepEqual(
      codes.map((code, i) => [i, code]).filter(([, code]) => code !== "ok"),
      [[66, "lease_lost"], [69, "not_found"]],
    );
    const jobs = await Promise.all(ids.map((id) => store.get(id)));
    assert.deepEqual(
      jobs.map((job) => [job?.state, job?.result]),
      ids.map((_, i) =>
        i === 66
          ? ["leased", null]
          : i === 68
          ? ["pending", null]
          : i === 69
          ? ["done", '"last"']
          : ["done", `${i}`]
      ),
    );
    assert.equal(jobs[69]?.finished_at, T0 + 7);
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 68, leased: 1, pending: 1 }));
  });

  test("ack() with a stale token fails with lease_lost and changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.tick(T0 + 1_000, HANDED_ALL);
    const second = await claimOne(store, "q", T0 + 1_000, 1_000);
    await rejectsWith(store.ack(id, first.lease.token, null, T0 + 1_001), "lease_lost");
    await rejectsWith(store.ack(id, "not-a-token", null, T0 + 1_001), "lease_lost");
    const job = await store.get(id);
    assert.equal(job?.state, "leased");
    assert.equal(job?.result, null);
    assert.deepEqual(await countsOf(store, "q"), counts({ leased: 1 }));

    await store.ack(id, second.lease.token, null, T0 + 1_002);
    // Once done, only the completing token's repeat is answered.
    await rejectsWith(store.ack(id, first.lease.token, null, T0 + 1_003), "lease_lost");
  });

  test("ack() of an unknown job fails with not_found", async (store) => {
    await rejectsWith(store.ack(424242, "token", null, T0), "not_found");
  });

  test("ack() once the lease has expired fails with lease_lost", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const [da, db] = await store.claim("q", 2, 1_000, T0);
    assert.deepEqual(await store.ack(a, da.lease.token, null, T0 + 999), {
      id: a,
      queue: "q",
      frees: false,
    });
    // Expired at now = expires_at, even before a tick has ended the lease.
    await rejectsWith(store.ack(b, db.lease.token, null, T0 + 1_000), "lease_lost");
    assert.equal(await stateOf(store, b), "leased");
  });

  test("nack() with delay_ms makes the job delayed until now + delay_ms", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    const out = await store.nack(id, lease.token, {
      error: "try later",
      delay_ms: 2_500,
      dead: false,
    }, T0 + 100);
    assert.deepEqual(out, { id, queue: "q", state: "delayed", run_at: T0 + 2_600 });
    const job = await store.get(id);
    assert.equal(job?.state, "delayed");
    assert.equal(job?.run_at, T0 + 2_600);
    assert.equal(job?.last_error, "try later");
    assert.equal(job?.lease_expires_at, null);
    assert.deepEqual(await countsOf(store, "q"), counts({ delayed: 1 }));
    assert.deepEqual(await store.claim("q", 1, null, T0 + 2_600), []);
    await store.tick(T0 + 2_599, HANDED_ALL);
    assert.equal(await stateOf(store, id), "delayed");
    await store.tick(T0 + 2_600, HANDED_ALL);
    assert.equal((await claimOne(store, "q", T0 + 2_600)).job.attempts, 2);
  });

  test("nack() with delay_ms 0 makes the job pending at once", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    const out = await store.nack(
      id,
      lease.token,
      { error: null, delay_ms: 0, dead: false },
      T0 + 5,
    );
    assert.deepEqual(out, { id, queue: "q", state: "pending", run_at: T0 + 5 });
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    assert.equal((await claimOne(store, "q", T0 + 5)).job.id, id);
  });

  test("nack() without delay_ms waits the policy's delay for the failed attempt", async (store) => {
    const id = await enqueueOne(store, "q");
    let { lease } = await claimOne(store, "q", T0);
    const first = await store.nack(
      id,
      lease.token,
      { error: "e1", delay_ms: null, dead: false },
      T0,
    );
    assert.deepEqual(first, { id, queue: "q", state: "delayed", run_at: T0 + 1_000 });
    await store.tick(T0 + 1_000, HANDED_ALL);
    ({ lease } = await claimOne(store, "q", T0 + 1_000));
    const second = await store.nack(
      id,
      lease.token,
      { error: "e2", delay_ms: null, dead: false },
      T0 + 1_000,
    );
    assert.deepEqual(second, { id, queue: "q", state: "delayed", run_at: T0 + 3_000 });
  });

  test("nack() without delay_ms passes the job's own backoff to the policy", async (store) => {
    const id = await enqueueOne(store, "q", { backoff: { base_ms: 50, max_ms: 120 } });
    const delays: number[] = [];
    let now = T0;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const { lease } = await claimOne(store, "q", now);
      const out = await store.nack(
        id,
        lease.token,
        { error: null, delay_ms: null, dead: false },
        now,
      );
      delays.push(out.run_at - now);
      now = out.run_at;
      await store.tick(now, HANDED_ALL);
    }
    assert.deepEqual(delays, [50, 100, 120]);
  });

  test("nack() with dead sends the job to dead at once", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    const out = await store.nack(
      id,
      lease.token,
      { error: "poison", delay_ms: 10, dead: true },
      T0 + 3,
    );
    assert.deepEqual(out, { id, queue: "q", state: "dead", run_at: T0 + 3 });
    const job = await store.get(id);
    assert.equal(job?.state, "dead");
    assert.equal(job?.last_error, "poison");
    assert.equal(job?.finished_at, T0 + 3);
    assert.equal(job?.attempts, 1);
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
  });

  test("nack() of the last allowed attempt sends the job to dead", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 2 });
    const first = await claimOne(store, "q");
    const retry = await store.nack(id, first.lease.token, {
      error: "one",
      delay_ms: 0,
      dead: false,
    }, T0);
    assert.equal(retry.state, "pending");
    const second = await claimOne(store, "q", T0 + 1);
    assert.equal(second.job.attempts, 2);
    const out = await store.nack(id, second.lease.token, {
      error: "two",
      delay_ms: 0,
      dead: false,
    }, T0 + 2);
    assert.deepEqual(out, { id, queue: "q", state: "dead", run_at: T0 + 2 });
    const job = await store.get(id);
    assert.equal(job?.state, "dead");
    assert.equal(job?.last_error, "two");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
  });

  test("nack() with a stale token fails with lease_lost and changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    const retry = { error: "x", delay_ms: 0, dead: false };
    await rejectsWith(store.nack(id, "wrong", retry, T0 + 1), "lease_lost");
    await rejectsWith(store.nack(id, lease.token, retry, T0 + 1_000), "lease_lost");
    await rejectsWith(store.nack(424242, lease.token, retry, T0), "not_found");
    const job = await store.get(id);
    assert.equal(job?.state, "leased");
    assert.equal(job?.last_error, null);
  });
}
