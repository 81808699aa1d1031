/**
 * The behaviour suite every {@linkcode Store} must pass, in the manner of riverqueue's
 * `riverdrivertest.Exercise`: the SQLite store runs it always, a PostgreSQL store will run the
 * same cases. It speaks only through the `Store` interface and picks every time itself (no
 * sleeping), so a case that passes here passes for the same reason on any engine.
 *
 * The store under test must be built with {@linkcode SUITE_POLICY}: the lease and backoff
 * cases rely on its numbers.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type ErrorCode, TegamiError } from "../../lib/core/errors.ts";
import type { Delivery, JobState, NewJob } from "../../lib/core/job.ts";
import {
  HANDOVER_GRACE_MS,
  type HandOvers,
  type LifecyclePolicy,
} from "../../lib/core/lifecycle.ts";
import { defaultQueueSettings, type QueueSettings } from "../../lib/core/queue_settings.ts";
import type { StateCounts, Store, StoreCapabilities, StoreEvent } from "../../lib/store/store.ts";
import { scheduleCases } from "./schedule_suite.ts";

/**
 * A fresh, empty store and a way to dispose of it (which must also accept a closed store).
 * A store with the `shared` capability also answers `peer`: another store on the same
 * database, as a second server would open it, closed by `cleanup` too.
 */
export type OpenStore = () => Promise<{
  store: Store;
  cleanup(): Promise<void>;
  peer?: () => Promise<Store>;
}>;

/**
 * The policy the store under test must be built with. The retry delay is deterministic and
 * shows what it was given: without a job backoff, `attempt` seconds; with one,
 * `min(max_ms, base_ms · 2^(attempt−1))` without jitter.
 */
export const SUITE_POLICY: LifecyclePolicy = {
  defaultLeaseMs: 30_000,
  retryDelayMs(attempt, backoff) {
    if (backoff === null) return attempt * 1_000;
    return Math.min(backoff.max_ms, backoff.base_ms * 2 ** (attempt - 1));
  },
};

/** The suite's "now": every case counts from here. */
const T0 = 1_700_000_000_000;

/** A job due at T0 with the usual defaults, overridden by `fields`. */
export function newJob(fields: Partial<NewJob> = {}): NewJob {
  return {
    payload: '{"n":0}',
    priority: 0,
    key: null,
    run_at: T0,
    max_attempts: 5,
    lease_ms: null,
    backoff: null,
    ...fields,
  };
}

/** A tick by the server that handed every lease over: each ends at its end. */
export const HANDED_ALL: HandOvers = {
  handedOver: () => true,
  claimingSince: null,
  alone: false,
};

/** A tick by a server that handed no lease over (another server's, or one restarted). */
export const HANDED_NONE: HandOvers = {
  handedOver: () => false,
  claimingSince: null,
  alone: false,
};

/** Queue settings: the defaults with `fields` set. */
export function queueSettings(fields: Partial<QueueSettings> = {}): QueueSettings {
  return { ...defaultQueueSettings(), ...fields };
}

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

/** Settings with every field set, none to its default. */
const FULL_SETTINGS: QueueSettings = {
  concurrency: 3,
  rate: { limit: 100, per_ms: 1_000 },
  group_limit: 2,
  max_attempts: 9,
  lease_ms: 45_000,
  backoff: { base_ms: 200, max_ms: 60_000 },
  retain_done_ms: 3_600_000,
  retain_dead_ms: 86_400_000,
  retain_pending_ms: 345_600_000,
  dead_letter_queue: "q.dead",
};

/** Counts with the given states set and every other state zero. */
function counts(some: Partial<StateCounts> = {}): StateCounts {
  return { pending: 0, delayed: 0, leased: 0, done: 0, dead: 0, cancelled: 0, ...some };
}

/** Asserts that `promise` rejects with a `TegamiError` carrying `code`. */
async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TegamiError, `expected a TegamiError, got ${error}`);
    assert.equal(error.code, code);
    return true;
  });
}

/** Enqueues one job and answers its id. */
async function enqueueOne(
  store: Store,
  queue: string,
  fields: Partial<NewJob> = {},
  now = T0,
): Promise<number> {
  const [out] = await store.enqueue(queue, [newJob(fields)], now);
  assert.equal(out.deduplicated, false);
  return out.id;
}

/** Claims exactly one job. */
async function claimOne(
  store: Store,
  queue: string,
  now = T0,
  lease_ms: number | null = null,
): Promise<Delivery> {
  const got = await store.claim(queue, 1, lease_ms, now);
  assert.equal(got.length, 1, `expected one delivery from "${queue}"`);
  return got[0];
}

/** The counts of one queue. */
async function countsOf(store: Store, queue: string): Promise<StateCounts> {
  const [stats] = await store.stats(queue);
  return stats.counts;
}

/** The state of a job, or null if it is gone. */
async function stateOf(store: Store, id: number): Promise<JobState | null> {
  return (await store.get(id))?.state ?? null;
}

/** Makes `n` dead jobs in `queue` (dead by an explicit nack), answering their ids in order. */
async function makeDead(store: Store, queue: string, n: number, now = T0): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < n; i++) ids.push(await enqueueOne(store, queue, {}, now));
  for (const delivery of await store.claim(queue, n, null, now)) {
    await store.nack(
      delivery.job.id,
      delivery.lease.token,
      { error: "boom", delay_ms: null, dead: true },
      now,
    );
  }
  return ids;
}

/** Options of {@linkcode exerciseStore}. */
export interface ExerciseOptions {
  /**
   * What the store can do. Cases that need a capability the store lacks are registered as
   * ignored, their name saying which capability (`[needs shared]`), so the run shows them.
   */
  capabilities: StoreCapabilities;
  /** Registers every case as ignored (the engine is not reachable here). @default false */
  ignore?: boolean;
}

/** Waits until `check` answers true, trying every 10 ms for at most `ms`. */
async function eventually(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Registers the behaviour suite for a store; every test name starts with `name`. */
export function exerciseStore(name: string, open: OpenStore, options: ExerciseOptions): void {
  function test(title: string, fn: (store: Store) => Promise<void>): void {
    Deno.test({
      name: `${name}: ${title}`,
      ignore: options.ignore ?? false,
      fn: async () => {
        const { store, cleanup } = await open();
        try {
          await fn(store);
        } finally {
          await cleanup();
        }
      },
    });
  }

  /** A case for two stores on one database, as two servers would use it. */
  function sharedTest(title: string, fn: (a: Store, b: Store) => Promise<void>): void {
    const lacking = !options.capabilities.shared;
    Deno.test({
      name: `${name}: ${lacking ? "[needs shared] " : ""}${title}`,
      ignore: (options.ignore ?? false) || lacking,
      fn: async () => {
        const { store, cleanup, peer } = await open();
        try {
          assert.ok(peer !== undefined, "a shared store must offer a peer");
          await fn(store, await peer());
        } finally {
          await cleanup();
        }
      },
    });
  }

  // ---- schedules (schedule_suite.ts) ----

  scheduleCases(test, sharedTest);

  // ---- capabilities ----

  test("capabilities are the ones the suite was told", async (store) => {
    assert.deepEqual({ ...store.capabilities }, { ...options.capabilities });
    assert.equal(store.fileSizes() !== null, store.capabilities.localFiles);
    await Promise.resolve();
  });

  test("consumers() answers what setConsumers() recorded on this store", async (store) => {
    assert.equal(store.consumers("q"), 0);
    store.setConsumers("q", 3, 96);
    assert.equal(store.consumers("q"), 3);
    store.setConsumers("q", 0, 0);
    assert.equal(store.consumers("q"), 0);
    await Promise.resolve();
  });

  // ---- several servers on one database ----

  sharedTest("8 claimers on two stores lease each of 80,000 jobs exactly once", async (a, b) => {
    const perClaimer = 10_000;
    const claimers = 8;
    for (let i = 0; i < (perClaimer * claimers) / 1000; i++) {
      const jobs = Array.from({ length: 1000 }, (_, j) => newJob({ payload: `${i * 1000 + j}` }));
      await (i % 2 === 0 ? a : b).enqueue("q", jobs, T0);
    }
    const seen = new Map<number, number>();
    await Promise.all(Array.from({ length: claimers }, async (_, c) => {
      const store = c % 2 === 0 ? a : b;
      for (;;) {
        const got = await store.claim("q", 100, null, T0);
        if (got.length === 0) return;
        for (const d of got) seen.set(d.job.id, (seen.get(d.job.id) ?? 0) + 1);
      }
    }));
    assert.equal(seen.size, perClaimer * claimers);
    assert.ok([...seen.values()].every((n) => n === 1), "some job was leased twice");
    assert.deepEqual(await countsOf(b, "q"), counts({ leased: perClaimer * claimers }));
  });

  sharedTest(
    "a job enqueued through one store is news of a ready queue on the other",
    async (a, b) => {
      const heard: StoreEvent[] = [];
      const stop = b.listen((event) => heard.push(event));
      try {
        await enqueueOne(a, "q");
        await eventually(
          "the ready news",
          () => heard.some((e) => e.kind === "ready" && e.queue === "q"),
        );
        assert.equal((await claimOne(b, "q")).job.queue, "q");
      } finally {
        stop();
      }
    },
  );

  sharedTest("a cancel through one store reaches the other as its lease ending", async (a, b) => {
    const id = await enqueueOne(a, "q");
    const { lease } = await claimOne(a, "q");
    const heard: StoreEvent[] = [];
    const stop = a.listen((event) => heard.push(event));
    try {
      await b.cancel(id, T0 + 1);
      await eventually(
        "the cancel news",
        () =>
          heard.some((e) =>
            e.kind === "lease_ended" && e.id === id && e.token === lease.token &&
            e.why === "cancelled"
          ),
      );
      await rejectsWith(a.ack(id, lease.token, null, T0 + 2), "lease_lost");
    } finally {
      stop();
    }
  });

  sharedTest(
    "a lease expiring through one store reaches the other as its lease ending",
    async (a, b) => {
      const id = await enqueueOne(a, "q");
      const { lease } = await claimOne(a, "q", T0, 1_000);
      const heard: StoreEvent[] = [];
      const stop = a.listen((event) => heard.push(event));
      try {
        // b handed nothing over: the lease is a's to end until the grace has passed.
        assert.deepEqual((await b.tick(T0 + 1_000, HANDED_NONE)).expired, []);
        const result = await b.tick(T0 + 1_000 + HANDOVER_GRACE_MS, HANDED_NONE);
        assert.deepEqual(result.expired, [{
          id,
          queue: "q",
          token: lease.token,
          state: "pending",
        }]);
        await eventually(
          "the expiry news",
          () => heard.some((e) => e.kind === "lease_ended" && e.id === id && e.why === "expired"),
        );
      } finally {
        stop();
      }
    },
  );

  sharedTest(
    "a lease held through a store that is gone ends a grace after its expiry",
    async (a, b) => {
      const id = await enqueueOne(a, "q");
      await claimOne(a, "q", T0, 1_000);
      await a.close();
      assert.equal(await b.nextDeadline(T0), T0 + 1_000);
      assert.deepEqual(await b.tick(T0 + 1_000, HANDED_NONE), {
        woken: [],
        expired: [],
        more: false,
      });
      assert.equal(await b.nextDeadline(T0 + 1_000), T0 + 1_000 + HANDOVER_GRACE_MS);
      const end = T0 + 1_000 + HANDOVER_GRACE_MS;
      assert.deepEqual(await b.tick(end - 1, HANDED_NONE), { woken: [], expired: [], more: false });
      const result = await b.tick(end, HANDED_NONE);
      assert.deepEqual(result.woken, ["q"]);
      const again = await claimOne(b, "q", end);
      assert.equal(again.job.id, id);
      assert.equal(again.job.attempts, 2);
    },
  );

  sharedTest("two stores ending the same expired leases end each once", async (a, b) => {
    for (let i = 0; i < 200; i++) await enqueueOne(a, "q");
    await a.claim("q", 200, 1_000, T0);
    const [x, y] = await Promise.all([
      a.tick(T0 + 1_000, HANDED_ALL),
      b.tick(T0 + 1_000, HANDED_ALL),
    ]);
    assert.equal(x.expired.length + y.expired.length, 200);
    const ids = new Set([...x.expired, ...y.expired].map((e) => e.id));
    assert.equal(ids.size, 200);
    assert.deepEqual(await countsOf(a, "q"), counts({ pending: 200 }));
  });

  sharedTest("consumers() counts the consumers recorded on every store", async (a, b) => {
    a.setConsumers("q", 2, 64);
    b.setConsumers("q", 1, 32);
    await eventually("both counts", () => a.consumers("q") === 3 && b.consumers("q") === 3);
    // Each store also hears the others' summed prefetch (its own is the broker's to know).
    assert.equal(a.remotePrefetch?.("q"), 32);
    assert.equal(b.remotePrefetch?.("q"), 64);
    b.setConsumers("q", 0, 0);
    await eventually("the drop", () => a.consumers("q") === 2 && b.consumers("q") === 2);
    assert.equal(a.remotePrefetch?.("q"), 0);
  });

  sharedTest("an announced lease end reaches the other store", async (a, b) => {
    const heard: StoreEvent[] = [];
    const stop = a.listen((event) => heard.push(event));
    try {
      b.announce(7, "tok", "settled");
      await eventually(
        "the announcement",
        () => heard.some((e) => e.kind === "lease_ended" && e.id === 7 && e.token === "tok"),
      );
    } finally {
      stop();
    }
  });

  // ---- enqueue ----

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

  // ---- dedup windows and duplicate modes ----

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

  // ---- claim ----

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

  test("tick() promotes at most `limit` due jobs per call and says when more are due", async (store) => {
    await store.enqueue("q", [1, 2, 3, 4, 5].map(() => newJob({ run_at: T0 + 1_000 })), T0);
    const first = await store.tick(T0 + 1_000, HANDED_ALL, 2);
    assert.deepEqual(first, { woken: ["q"], expired: [], more: true });
    assert.equal((await store.stats("q"))[0].counts.pending, 2);
    assert.equal((await store.tick(T0 + 1_000, HANDED_ALL, 2)).more, true);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL, 2), {
      woken: ["q"],
      expired: [],
      more: false,
    });
    assert.equal((await store.stats("q"))[0].counts.pending, 5);
  });

  // ---- ack ----

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

  // ---- nack ----

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

  // ---- extend ----

  test("extend() moves the expiry to now + lease_ms", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.extend(id, lease.token, 5_000, T0 + 500), {
      id,
      expires_at: T0 + 5_500,
    });
    assert.equal((await store.get(id))?.lease_expires_at, T0 + 5_500);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.equal(await stateOf(store, id), "leased");
    await store.ack(id, lease.token, null, T0 + 5_499);
    assert.equal(await stateOf(store, id), "done");
  });

  test("extend() without lease_ms uses the lease length in force", async (store) => {
    const claimed = await enqueueOne(store, "a");
    const own = await enqueueOne(store, "b", { lease_ms: 4_000 });
    const plain = await enqueueOne(store, "c");
    const a = await claimOne(store, "a", T0, 2_000);
    const b = await claimOne(store, "b", T0);
    const c = await claimOne(store, "c", T0);
    assert.equal(
      (await store.extend(claimed, a.lease.token, null, T0 + 1_500)).expires_at,
      T0 + 3_500,
    );
    assert.equal((await store.extend(own, b.lease.token, null, T0 + 100)).expires_at, T0 + 4_100);
    assert.equal(
      (await store.extend(plain, c.lease.token, null, T0 + 100)).expires_at,
      T0 + 100 + SUITE_POLICY.defaultLeaseMs,
    );
  });

  test("extend() with a stale token fails with lease_lost", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await rejectsWith(store.extend(id, "wrong", 1_000, T0 + 1), "lease_lost");
    await rejectsWith(store.extend(id, lease.token, 1_000, T0 + 1_000), "lease_lost");
    await rejectsWith(store.extend(424242, lease.token, 1_000, T0), "not_found");
    assert.equal((await store.get(id))?.lease_expires_at, T0 + 1_000);

    const other = await enqueueOne(store, "r");
    const d = await claimOne(store, "r", T0);
    await store.ack(other, d.lease.token, null, T0 + 1);
    await rejectsWith(store.extend(other, d.lease.token, 1_000, T0 + 2), "lease_lost");
  });

  // ---- checkpoint ----

  test("checkpoint() stores the data on the job", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.checkpoint(id, lease.token, '{"step":1}', T0 + 1), { id });
    assert.equal((await store.get(id))?.checkpoint, '{"step":1}');
    await store.checkpoint(id, lease.token, '{"step":2,"task":"X"}', T0 + 2);
    assert.equal((await store.get(id))?.checkpoint, '{"step":2,"task":"X"}');
    assert.equal(await stateOf(store, id), "leased");
  });

  test("checkpoint() is carried on the next delivery", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.checkpoint(id, first.lease.token, '"calling"', T0 + 1);
    await store.tick(T0 + 1_000, HANDED_ALL); // the consumer crashed; its lease expires
    const second = await claimOne(store, "q", T0 + 1_000);
    assert.equal(second.job.checkpoint, '"calling"');
    await store.checkpoint(id, second.lease.token, '{"task":"X"}', T0 + 1_001);
    await store.nack(id, second.lease.token, { error: null, delay_ms: 0, dead: false }, T0 + 1_002);
    const third = await claimOne(store, "q", T0 + 1_002);
    assert.equal(third.job.checkpoint, '{"task":"X"}');
  });

  test("checkpoint() with a stale token fails with lease_lost and changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await store.checkpoint(id, lease.token, "1", T0 + 1);
    await rejectsWith(store.checkpoint(id, "wrong", "2", T0 + 2), "lease_lost");
    await rejectsWith(store.checkpoint(id, lease.token, "3", T0 + 1_000), "lease_lost");
    await rejectsWith(store.checkpoint(424242, lease.token, "4", T0), "not_found");
    assert.equal((await store.get(id))?.checkpoint, "1");
  });

  // ---- progress ----

  test("progress() stores the last report and when it came", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.progress(id, lease.token, '{"done":1,"of":3}', T0 + 1), { id });
    assert.equal((await store.get(id))?.progress, '{"done":1,"of":3}');
    assert.equal((await store.get(id))?.progress_at, T0 + 1);
    await Promise.all([
      store.progress(id, lease.token, "0.5", T0 + 2),
      store.progress(id, lease.token, "0.75", T0 + 3),
    ]);
    const job = await store.get(id);
    assert.equal(job?.progress, "0.75");
    assert.equal(job?.progress_at, T0 + 3);
    assert.equal(job?.state, "leased");
    await store.ack(id, lease.token, null, T0 + 4);
    assert.equal((await store.get(id))?.progress, "0.75", "kept once the job is done");
  });

  test("progress() is fenced like a checkpoint", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    await store.progress(id, lease.token, "1", T0 + 1);
    await rejectsWith(store.progress(id, "wrong", "2", T0 + 2), "lease_lost");
    await rejectsWith(store.progress(id, lease.token, "3", T0 + 1_000), "lease_lost");
    await rejectsWith(store.progress(424242, lease.token, "4", T0), "not_found");
    const pending = await enqueueOne(store, "q");
    await rejectsWith(store.progress(pending, lease.token, "5", T0), "lease_lost");
    // Reports sharing a commit each get their own answer.
    const outcomes = await Promise.allSettled([
      store.progress(id, lease.token, "6", T0 + 3),
      store.progress(id, "wrong", "7", T0 + 3),
      store.progress(424242, "x", "8", T0 + 3),
    ]);
    assert.deepEqual(outcomes.map((o) => o.status), ["fulfilled", "rejected", "rejected"]);
    assert.equal((await store.get(id))?.progress, "6");
    assert.equal((await store.get(pending))?.progress, null);
  });

  test("progress() with the token of an earlier lease changes nothing", async (store) => {
    const id = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0, 1_000);
    await store.progress(id, first.lease.token, '"first"', T0 + 1);
    await store.tick(T0 + 1_000, HANDED_ALL);
    const second = await claimOne(store, "q", T0 + 1_000);
    assert.equal(second.job.progress, '"first"', "the delivery shows the last report");
    await rejectsWith(store.progress(id, first.lease.token, '"stale"', T0 + 1_001), "lease_lost");
    await store.progress(id, second.lease.token, '"second"', T0 + 1_002);
    assert.equal((await store.get(id))?.progress, '"second"');
  });

  // ---- get ----

  test("get() answers null for an unknown id", async (store) => {
    assert.equal(await store.get(424242), null);
  });

  test("queueOf() answers a job's queue, leased or not, and null once it is gone", async (store) => {
    const waiting = await enqueueOne(store, "a.one");
    const leased = await enqueueOne(store, "b.two");
    await store.claim("b.two", 1, null, T0);
    assert.equal(await store.queueOf(waiting), "a.one");
    assert.equal(await store.queueOf(leased), "b.two");
    assert.equal(await store.queueOf(424242), null);
    await store.cancel(waiting, T0);
    await store.cancel(waiting, T0); // a cancelled job is removed by the second cancel
    assert.equal(await store.queueOf(waiting), null);
  });

  // ---- cancel ----

  test("cancel() makes a pending or delayed job cancelled", async (store) => {
    const pending = await enqueueOne(store, "q");
    const delayed = await enqueueOne(store, "q", { run_at: T0 + 1_000 });
    assert.deepEqual(await store.cancel(pending, T0 + 5), {
      id: pending,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: null,
    });
    assert.deepEqual(await store.cancel(delayed, T0 + 6), {
      id: delayed,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: null,
    });
    const job = await store.get(pending);
    assert.equal(job?.state, "cancelled");
    assert.equal(job?.finished_at, T0 + 5);
    assert.deepEqual(await store.tick(T0 + 2_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.equal(await stateOf(store, delayed), "cancelled");
    assert.deepEqual(await store.claim("q", 10, null, T0 + 2_000), []);
    assert.deepEqual(await countsOf(store, "q"), counts({ cancelled: 2 }));
  });

  test("cancel() of a leased job revokes its lease and answers its token", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.cancel(id, T0 + 10), {
      id,
      queue: "q",
      state: "cancelled",
      removed: false,
      revoked_token: lease.token,
    });
    const job = await store.get(id);
    assert.equal(job?.state, "cancelled");
    assert.equal(job?.lease_expires_at, null);
    await rejectsWith(store.ack(id, lease.token, null, T0 + 11), "lease_lost");
    await rejectsWith(store.extend(id, lease.token, null, T0 + 11), "lease_lost");
    await rejectsWith(store.checkpoint(id, lease.token, "1", T0 + 11), "lease_lost");
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 12), []);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ cancelled: 1 }));
  });

  test("cancel() removes a done, dead or cancelled job", async (store) => {
    const done = await enqueueOne(store, "q");
    const d = await claimOne(store, "q");
    await store.ack(done, d.lease.token, null, T0);
    const [dead] = await makeDead(store, "q", 1);
    const cancelled = await enqueueOne(store, "q");
    await store.cancel(cancelled, T0);
    assert.deepEqual(await countsOf(store, "q"), counts({ done: 1, dead: 1, cancelled: 1 }));

    const expected: [number, JobState][] = [[done, "done"], [dead, "dead"], [
      cancelled,
      "cancelled",
    ]];
    for (const [id, state] of expected) {
      assert.deepEqual(await store.cancel(id, T0 + 1), {
        id,
        queue: "q",
        state,
        removed: true,
        revoked_token: null,
      });
      assert.equal(await store.get(id), null);
      await rejectsWith(store.cancel(id, T0 + 2), "not_found");
    }
    assert.deepEqual(await countsOf(store, "q"), counts());
  });

  test("cancel() of an unknown job fails with not_found", async (store) => {
    await rejectsWith(store.cancel(424242, T0), "not_found");
  });

  // ---- setPaused and stats ----

  test("stats() of an unknown queue answers zeros", async (store) => {
    assert.deepEqual(await store.stats("nobody"), [
      {
        name: "nobody",
        paused: false,
        counts: counts(),
        oldest_pending_at: null,
        settings: defaultQueueSettings(),
        groups: { waiting: 0, leased: 0, full: 0 },
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

  // ---- dead jobs ----

  test("listJobs() of dead jobs answers them by id after the cursor, at most limit", async (store) => {
    const dead = await makeDead(store, "q", 4);
    await makeDead(store, "other", 1);
    await enqueueOne(store, "q"); // pending, not dead
    const listDead = (queue: string, limit: number, after: number) =>
      store.listJobs(queue, { state: "dead", order: "oldest", after, limit });
    const all = await listDead("q", 10, 0);
    assert.deepEqual(all.map((j) => j.id), dead);
    for (const job of all) {
      assert.equal(job.state, "dead");
      assert.equal(job.queue, "q");
      assert.equal(job.last_error, "boom");
    }
    assert.deepEqual((await listDead("q", 2, 0)).map((j) => j.id), dead.slice(0, 2));
    assert.deepEqual((await listDead("q", 2, dead[1])).map((j) => j.id), dead.slice(2));
    assert.deepEqual(await listDead("q", 10, dead[3]), []);
    assert.deepEqual(await listDead("nobody", 10, 0), []);
  });

  // ---- the job browser ----

  test("listJobs() answers one queue's jobs of one state, oldest or newest first", async (store) => {
    const dead = await makeDead(store, "q", 2);
    const pending = [await enqueueOne(store, "q"), await enqueueOne(store, "q")];
    const delayed = await enqueueOne(store, "q", { run_at: T0 + 60_000 });
    pending.push(await enqueueOne(store, "q", { priority: 9 }));
    await enqueueOne(store, "other");
    const page = (state: JobState, order: "oldest" | "newest" = "oldest") =>
      store.listJobs("q", { state, order, after: null, limit: 10 });
    const ids = async (state: JobState, order?: "oldest" | "newest") =>
      (await page(state, order)).map((j) => j.id);
    // Ordered by id, whatever the priority: a browser shows when jobs came, not who goes next.
    assert.deepEqual(await ids("pending"), pending);
    assert.deepEqual(await ids("pending", "newest"), [...pending].reverse());
    assert.deepEqual(await ids("delayed"), [delayed]);
    assert.deepEqual(await ids("dead", "newest"), [...dead].reverse());
    assert.deepEqual(await ids("leased"), []);
    for (const job of await page("pending")) {
      assert.equal(job.queue, "q");
      assert.equal(job.state, "pending");
    }
    assert.deepEqual(
      await store.listJobs("nobody", {
        state: "pending",
        order: "oldest",
        after: null,
        limit: 10,
      }),
      [],
    );
  });

  test("listJobs() pages with the cursor in either order", async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q"));
    const list = async (order: "oldest" | "newest", after: number | null) =>
      (await store.listJobs("q", { state: "pending", order, after, limit: 2 })).map((j) => j.id);
    assert.deepEqual(await list("oldest", null), ids.slice(0, 2));
    assert.deepEqual(await list("oldest", ids[1]), ids.slice(2, 4));
    assert.deepEqual(await list("oldest", ids[3]), ids.slice(4));
    assert.deepEqual(await list("oldest", ids[4]), []);
    assert.deepEqual(await list("newest", null), [ids[4], ids[3]]);
    assert.deepEqual(await list("newest", ids[3]), [ids[2], ids[1]]);
    assert.deepEqual(await list("newest", ids[1]), [ids[0]]);
    assert.deepEqual(await list("newest", ids[0]), []);
  });

  test("listJobs() pages pending jobs by id across priorities and groups, either way", async (store) => {
    // Priorities and groups interleaved, so that no one run of the claim order is the id order.
    const shapes: Partial<NewJob>[] = [
      { priority: 0 },
      { priority: 5, group: "a" },
      { priority: -3 },
      { priority: 5 },
      { priority: 0, group: "b" },
      { priority: 0, group: "a" },
      { priority: 9 },
      { priority: -3, group: "b" },
      { priority: 0 },
      { priority: 5, group: "b" },
      { priority: 7, group: "a" },
    ];
    const ids: number[] = [];
    for (const shape of shapes) ids.push(await enqueueOne(store, "q", shape));
    await enqueueOne(store, "other", { priority: 4 });
    await enqueueOne(store, "q", { run_at: T0 + 60_000 }); // delayed: not listed
    const [taken] = await store.claim("other", 1, null, T0); // leased elsewhere: not listed
    assert.ok(taken !== undefined);
    for (const order of ["oldest", "newest"] as const) {
      const expected = order === "oldest" ? ids : [...ids].reverse();
      for (const limit of [1, 2, 3, 4, 20]) {
        const seen: number[] = [];
        let after: number | null = null;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store.listJobs("q", { state: "pending", order, after, limit });
          assert.ok(page.length <= limit);
          for (const job of page) assert.equal(job.state, "pending");
          seen.push(...page.map((j) => j.id));
          if (page.length < limit) break;
          after = page[page.length - 1].id;
        }
        assert.deepEqual(seen, expected, `${order}, limit ${limit}`);
      }
    }
    // From a cursor in the middle, both ways.
    const page = (order: "oldest" | "newest") =>
      store.listJobs("q", { state: "pending", order, after: ids[5], limit: 3 });
    assert.deepEqual((await page("oldest")).map((j) => j.id), ids.slice(6, 9));
    assert.deepEqual((await page("newest")).map((j) => j.id), ids.slice(2, 5).reverse());
  });

  test("listJobs() pages leased jobs by id, either way", async (store) => {
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) ids.push(await enqueueOne(store, "q", { priority: i % 2 }));
    await enqueueOne(store, "other");
    await store.claim("other", 1, null, T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 5);
    const list = async (order: "oldest" | "newest", after: number | null) =>
      (await store.listJobs("q", { state: "leased", order, after, limit: 2 })).map((j) => j.id);
    assert.deepEqual(await list("oldest", null), ids.slice(0, 2));
    assert.deepEqual(await list("oldest", ids[1]), ids.slice(2, 4));
    assert.deepEqual(await list("oldest", ids[3]), ids.slice(4));
    assert.deepEqual(await list("newest", null), [ids[4], ids[3]]);
    assert.deepEqual(await list("newest", ids[1]), [ids[0]]);
  });

  test("listJobs() shows leased, done and cancelled jobs with their fields", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const c = await enqueueOne(store, "q");
    const first = await claimOne(store, "q", T0 + 1);
    assert.equal(first.job.id, a);
    await store.ack(a, first.lease.token, '{"ok":true}', T0 + 2);
    const second = await claimOne(store, "q", T0 + 3);
    await store.checkpoint(b, second.lease.token, '"half"', T0 + 4);
    await store.cancel(c, T0 + 5);
    const one = async (state: JobState) => {
      const jobs = await store.listJobs("q", { state, order: "oldest", after: null, limit: 10 });
      assert.equal(jobs.length, 1, state);
      return jobs[0];
    };
    const done = await one("done");
    assert.equal(done.id, a);
    assert.equal(done.result, '{"ok":true}');
    assert.equal(done.finished_at, T0 + 2);
    const leased = await one("leased");
    assert.equal(leased.id, b);
    assert.equal(leased.checkpoint, '"half"');
    assert.equal(leased.lease_expires_at, second.lease.expires_at);
    assert.equal((await one("cancelled")).id, c);
  });

  test("runNow() makes a delayed job pending now, ready to claim", async (store) => {
    const id = await enqueueOne(store, "q", { run_at: T0 + 3_600_000 });
    assert.equal(await stateOf(store, id), "delayed");
    assert.deepEqual(await store.runNow(id, T0 + 10), {
      id,
      queue: "q",
      state: "pending",
      run_at: T0 + 10,
    });
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    assert.equal((await claimOne(store, "q", T0 + 11)).job.id, id);
    assert.equal(await store.nextDeadline(T0 + 11), T0 + 11 + SUITE_POLICY.defaultLeaseMs);
  });

  test("runNow() leaves a pending job as it is and refuses other states", async (store) => {
    const pending = await enqueueOne(store, "q");
    assert.deepEqual(await store.runNow(pending, T0 + 5), {
      id: pending,
      queue: "q",
      state: "pending",
      run_at: T0,
    });
    const leased = await enqueueOne(store, "l");
    await claimOne(store, "l");
    await rejectsWith(store.runNow(leased, T0), "conflict");
    const [dead] = await makeDead(store, "d", 1);
    await rejectsWith(store.runNow(dead, T0), "conflict");
    await rejectsWith(store.runNow(424242, T0), "not_found");
    assert.equal(await stateOf(store, leased), "leased");
    assert.equal(await stateOf(store, dead), "dead");
  });

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

  // ---- time ----

  test("tick() promotes due delayed jobs and answers the queues it woke", async (store) => {
    const a = await enqueueOne(store, "q1", { run_at: T0 + 100 });
    const b = await enqueueOne(store, "q1", { run_at: T0 + 200 });
    const c = await enqueueOne(store, "q2", { run_at: T0 + 100 });
    assert.deepEqual(await store.tick(T0, HANDED_ALL), { woken: [], expired: [], more: false });
    assert.deepEqual(await store.tick(T0 + 99, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    const result = await store.tick(T0 + 100, HANDED_ALL);
    assert.deepEqual(result.woken.toSorted(), ["q1", "q2"]);
    assert.deepEqual(result.expired, []);
    assert.equal(await stateOf(store, a), "pending");
    assert.equal(await stateOf(store, b), "delayed");
    assert.equal(await stateOf(store, c), "pending");
    assert.equal((await store.get(a))?.run_at, T0 + 100);
    assert.deepEqual(await countsOf(store, "q1"), counts({ pending: 1, delayed: 1 }));
    assert.deepEqual(await store.tick(T0 + 150, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
  });

  test("tick() returns expired leases to pending at once", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const c = await enqueueOne(store, "q", { lease_ms: 2_000 });
    const got = await store.claim("q", 2, 1_000, T0);
    const dc = await claimOne(store, "q", T0);
    assert.equal(dc.job.id, c);
    assert.deepEqual(await store.tick(T0 + 999, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
    const result = await store.tick(T0 + 1_000, HANDED_ALL);
    assert.deepEqual(result.woken, ["q"]);
    assert.deepEqual(result.expired.toSorted((x, y) => x.id - y.id), [
      { id: a, queue: "q", token: got[0].lease.token, state: "pending" },
      { id: b, queue: "q", token: got[1].lease.token, state: "pending" },
    ]);
    assert.equal(await stateOf(store, c), "leased");
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, leased: 1 }));
    const again = await store.claim("q", 2, null, T0 + 1_000);
    assert.deepEqual(again.map((d) => [d.job.id, d.job.attempts]), [[a, 2], [b, 2]]);
    assert.deepEqual(await store.tick(T0 + 1_500, HANDED_ALL), {
      woken: [],
      expired: [],
      more: false,
    });
  });

  test("tick() sends an expired lease to dead when its attempts are used up", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual(await store.tick(T0 + 1_000, HANDED_ALL), {
      // The lease's slot is free, even though no job became pending.
      woken: ["q"],
      expired: [{ id, queue: "q", token: lease.token, state: "dead" }],
      more: false,
    });
    const job = await store.get(id);
    assert.equal(job?.state, "dead");
    assert.equal(job?.finished_at, T0 + 1_000);
    assert.equal(typeof job?.last_error, "string");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
  });

  test("release() returns a lease to pending at once", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 10_000);
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 10), [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
    const job = await store.get(id);
    assert.equal(job?.state, "pending");
    assert.equal(job?.lease_expires_at, null);
    await rejectsWith(store.ack(id, lease.token, null, T0 + 11), "lease_lost");
    assert.equal((await claimOne(store, "q", T0 + 10)).job.attempts, 2);
  });

  test("release() sends a job whose attempts are used up to dead", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(await store.release([{ id, token: lease.token }], T0 + 10), [
      { id, queue: "q", token: lease.token, state: "dead" },
    ]);
    assert.equal(await stateOf(store, id), "dead");
    assert.deepEqual(await countsOf(store, "q"), counts({ dead: 1 }));
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

  test("release() of an undelivered lease does not count the attempt", async (store) => {
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q");
    assert.deepEqual(
      await store.release([{ id, token: lease.token, undelivered: true }], T0 + 10),
      [{ id, queue: "q", token: lease.token, state: "pending" }],
    );
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 1 }));
    assert.equal((await claimOne(store, "q", T0 + 10)).job.attempts, 1);
  });

  test("release() ignores leases whose token does not hold the job", async (store) => {
    const a = await enqueueOne(store, "q");
    const b = await enqueueOne(store, "q");
    const pending = await enqueueOne(store, "q");
    const [da, db] = await store.claim("q", 2, null, T0);
    const out = await store.release([
      { id: a, token: "wrong" },
      { id: b, token: db.lease.token },
      { id: pending, token: da.lease.token },
      { id: 424242, token: da.lease.token },
    ], T0 + 1);
    assert.deepEqual(out, [{ id: b, queue: "q", token: db.lease.token, state: "pending" }]);
    assert.equal(await stateOf(store, a), "leased");
    assert.deepEqual(await store.release([], T0 + 2), []);
    assert.deepEqual(await countsOf(store, "q"), counts({ pending: 2, leased: 1 }));
  });

  test("nextDeadline() answers the earliest delayed run_at or lease expiry", async (store) => {
    assert.equal(await store.nextDeadline(T0), null);
    await enqueueOne(store, "q");
    assert.equal(await store.nextDeadline(T0), null, "pending jobs have no deadline");
    await enqueueOne(store, "r", { run_at: T0 + 5_000 });
    assert.equal(await store.nextDeadline(T0), T0 + 5_000);
    const { job, lease } = await claimOne(store, "q", T0, 1_000);
    assert.equal(await store.nextDeadline(T0), T0 + 1_000);
    await store.extend(job.id, lease.token, 9_000, T0 + 10);
    assert.equal(await store.nextDeadline(T0 + 10), T0 + 5_000);
    await store.ack(job.id, lease.token, null, T0 + 20);
    assert.equal(await store.nextDeadline(T0 + 20), T0 + 5_000);
    await store.tick(T0 + 5_000, HANDED_ALL);
    assert.equal(await store.nextDeadline(T0 + 5_000), null);
  });

  test("nextDeadline() places a lease that ran out unended a grace after its end", async (store) => {
    await enqueueOne(store, "q");
    await enqueueOne(store, "q");
    await claimOne(store, "q", T0, 1_000);
    await claimOne(store, "q", T0, 3_000);
    assert.equal(await store.nextDeadline(T0 + 999), T0 + 1_000);
    // Run out and not ended (its server has not handed it over, or is gone): due a grace on,
    // unless a running lease ends first.
    assert.equal(await store.nextDeadline(T0 + 1_000), T0 + 3_000);
    assert.equal(await store.nextDeadline(T0 + 3_000), T0 + 1_000 + HANDOVER_GRACE_MS);
    await enqueueOne(store, "r", { run_at: T0 + 4_000 });
    assert.equal(await store.nextDeadline(T0 + 3_000), T0 + 4_000);
  });

  test("tick() never ends a lease that a claim of this server may still be carrying", async (store) => {
    // The claim was dated T0 and its answer is late: past the lease's end, and past the grace.
    const id = await enqueueOne(store, "q", { max_attempts: 1 });
    const { lease } = await claimOne(store, "q", T0, 100);
    const carrying: HandOvers = { handedOver: () => false, claimingSince: T0, alone: true };
    const late = T0 + 100 + HANDOVER_GRACE_MS + 1;
    assert.deepEqual(await store.tick(late, carrying), { woken: [], expired: [], more: false });
    // It ran out on its way, so the claim gives it back: the attempt was never used.
    const back = await store.release([{ id, token: lease.token, undelivered: true }], late);
    assert.deepEqual(back, [{ id, queue: "q", token: lease.token, state: "pending" }]);
    const again = await claimOne(store, "q", late, 100);
    assert.equal(again.job.id, id);
    assert.equal(again.job.attempts, 1);
  });

  test("tick() ends a lease it handed over at its end, any other only a grace later", async (store) => {
    const mine = await enqueueOne(store, "q");
    const theirs = await enqueueOne(store, "q");
    const a = await claimOne(store, "q", T0, 1_000);
    const b = await claimOne(store, "q", T0, 1_000);
    assert.deepEqual([a.job.id, b.job.id], [mine, theirs]);
    const handed: HandOvers = {
      handedOver: (t) => t === a.lease.token,
      claimingSince: null,
      alone: false,
    };
    const first = await store.tick(T0 + 1_000, handed);
    assert.deepEqual(first.expired, [{
      id: mine,
      queue: "q",
      token: a.lease.token,
      state: "pending",
    }]);
    assert.equal(first.more, false);
    assert.equal(await stateOf(store, theirs), "leased");
    const end = T0 + 1_000 + HANDOVER_GRACE_MS;
    assert.deepEqual((await store.tick(end - 1, handed)).expired, []);
    assert.deepEqual((await store.tick(end, handed)).expired, [
      { id: theirs, queue: "q", token: b.lease.token, state: "pending" },
    ]);
    // A lease ended a grace late was handed over somewhere: its attempt counts.
    const again = await store.claim("q", 2, null, end);
    assert.deepEqual(again.map((d) => [d.job.id, d.job.attempts]), [[mine, 2], [theirs, 2]]);
  });

  test("tick() ends a lease that began before this server's claims on their way", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    const later: HandOvers = { handedOver: () => false, claimingSince: T0 + 1, alone: false };
    const end = T0 + 1_000 + HANDOVER_GRACE_MS;
    assert.deepEqual((await store.tick(end, later)).expired, [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
  });

  test("tick() on a server alone on its database ends a lease from before a restart at its end", async (store) => {
    const id = await enqueueOne(store, "q");
    const { lease } = await claimOne(store, "q", T0, 1_000);
    const alone: HandOvers = { handedOver: () => false, claimingSince: null, alone: true };
    assert.deepEqual((await store.tick(T0 + 999, alone)).expired, []);
    assert.deepEqual((await store.tick(T0 + 1_000, alone)).expired, [
      { id, queue: "q", token: lease.token, state: "pending" },
    ]);
  });

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

  // ---- queue settings ----

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
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 0, leased: 0, full: 0 });
    // The group's count went with its job: a new job of the group is claimed as usual.
    await store.enqueue("q", [newJob({ run_at: T0 + 200, group: "g" })], T0 + 200);
    const claimed = await store.claim("q", 5, null, T0 + 200);
    assert.deepEqual(claimed.map((d) => d.job.group).sort(), ["g", null]);
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

  sharedTest(
    "settings put through one store are news of a ready queue on the other",
    async (a, b) => {
      const heard: StoreEvent[] = [];
      const stop = b.listen((event) => heard.push(event));
      try {
        await a.putSettings("q", queueSettings({ concurrency: 4 }), T0);
        await eventually(
          "the ready news",
          () => heard.some((e) => e.kind === "ready" && e.queue === "q"),
        );
      } finally {
        stop();
      }
    },
  );

  sharedTest("settings survive the store that put them", async (a, b) => {
    await a.putSettings("q", FULL_SETTINGS, T0);
    await a.close();
    assert.deepEqual(await b.settings("q"), FULL_SETTINGS);
    assert.deepEqual((await b.stats()).map((s) => s.name), ["q"]);
  });

  // ---- commits, closing, concurrency ----

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

  // ---- ordering groups ----

  /** The ids of a claim's deliveries. */
  const idsOf = (deliveries: Delivery[]) => deliveries.map((d) => d.job.id);

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

  // ---- concurrency and rate ----

  /** Settings with the defaults and `some` set. */
  const settingsWith = (some: Partial<QueueSettings>): QueueSettings => ({
    ...defaultQueueSettings(),
    ...some,
  });

  test("claim() never leases more of a queue than its concurrency", async (store) => {
    await store.putSettings("q", settingsWith({ concurrency: 2 }), T0);
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q");
    const first = await store.claim("q", 5, null, T0);
    assert.equal(first.length, 2);
    assert.deepEqual(await store.claim("q", 5, null, T0), []);
    const acked = await store.ack(first[0].job.id, first[0].lease.token, null, T0);
    assert.equal(acked.frees, true);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
    await store.nack(first[1].job.id, first[1].lease.token, {
      error: null,
      delay_ms: 5_000,
      dead: false,
    }, T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
    // Raising the limit lets more through at once.
    await store.putSettings("q", settingsWith({ concurrency: 10 }), T0);
    assert.equal((await store.claim("q", 5, null, T0)).length, 1);
  });

  test("claim() leases up to the queue's group_limit of one group at once", async (store) => {
    await store.putSettings("q", settingsWith({ group_limit: 2 }), T0);
    for (let i = 0; i < 5; i++) await enqueueOne(store, "q", { group: "g" });
    await enqueueOne(store, "q", { group: "h" });
    const got = await store.claim("q", 10, null, T0);
    assert.equal(got.filter((d) => d.job.group === "g").length, 2);
    assert.equal(got.filter((d) => d.job.group === "h").length, 1);
    assert.deepEqual(await store.claim("q", 10, null, T0), []);
  });

  test("claim() takes at most the rate's tokens, which come in evenly", async (store) => {
    // 10 per second: a token every 100 ms, and the bucket holds one.
    await store.putSettings("q", settingsWith({ rate: { limit: 10, per_ms: 1_000 } }), T0);
    for (let i = 0; i < 30; i++) await enqueueOne(store, "q");
    assert.equal((await store.claim("q", 10, null, T0)).length, 1);
    assert.deepEqual(await store.claim("q", 10, null, T0 + 50), []);
    assert.equal(store.claimHeldUntil?.("q"), T0 + 100);
    assert.equal((await store.claim("q", 10, null, T0 + 100)).length, 1);
    // A quiet spell fills the bucket to its capacity, no more.
    assert.equal((await store.claim("q", 10, null, T0 + 10_000)).length, 1);
    let taken = 0;
    for (let t = T0 + 10_000; t <= T0 + 11_000; t += 10) {
      taken += (await store.claim("q", 10, null, t)).length;
    }
    assert.ok(taken >= 9 && taken <= 11, `${taken} in one second at 10/s`);
  });

  test("claim() with a concurrency and groups holds both limits", async (store) => {
    await store.putSettings("q", settingsWith({ concurrency: 2, group_limit: 1 }), T0);
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "a" });
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "b" });
    for (let i = 0; i < 3; i++) await enqueueOne(store, "q", { group: "c" });
    const got = await store.claim("q", 10, null, T0);
    assert.equal(got.length, 2);
    assert.equal(new Set(got.map((d) => d.job.group)).size, 2);
  });

  sharedTest("two stores claiming at once never exceed the queue's concurrency", async (a, b) => {
    await a.putSettings("q", settingsWith({ concurrency: 3 }), T0);
    await a.enqueue("q", Array.from({ length: 40 }, () => newJob()), T0);
    let done = 0;
    while (done < 40) {
      const [x, y] = await Promise.all([a.claim("q", 5, null, T0), b.claim("q", 5, null, T0)]);
      const all = [...x, ...y];
      assert.ok(all.length <= 3, `${all.length} leased at once`);
      assert.equal((await countsOf(a, "q")).leased, all.length);
      assert.ok(all.length > 0);
      await Promise.all(all.map((d) => b.ack(d.job.id, d.lease.token, null, T0)));
      done += all.length;
    }
  });

  sharedTest("two stores share one rate bucket", async (a, b) => {
    await a.putSettings("q", settingsWith({ rate: { limit: 10, per_ms: 1_000 } }), T0);
    await a.enqueue("q", Array.from({ length: 40 }, () => newJob()), T0);
    let taken = 0;
    for (let t = T0; t < T0 + 1_000; t += 25) {
      const [x, y] = await Promise.all([a.claim("q", 5, null, t), b.claim("q", 5, null, t)]);
      taken += x.length + y.length;
    }
    assert.ok(taken >= 9 && taken <= 11, `${taken} in one second at 10/s`);
  });

  test("many jobs of one group promoted or requeued at once keep the group's counts and limit", async (store) => {
    // One statement changes them all (the store may count their groups itself for it).
    const delayed = Array.from(
      { length: 300 },
      (_, i) => newJob({ run_at: T0 + 1_000, group: i % 10 === 0 ? "b" : "a" }),
    );
    await store.enqueue("q", delayed, T0);
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 0, leased: 0, full: 0 });
    while ((await store.tick(T0 + 1_000, HANDED_ALL)).more) {
      // a store may promote them over several ticks
    }
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 2, leased: 0, full: 0 });
    // group_limit 1: one job of each group at a time, a's first job first.
    const leased = await store.claim("q", 50, null, T0 + 1_000);
    assert.deepEqual(leased.map((d) => d.job.group).sort(), ["a", "b"]);
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 2, leased: 2, full: 2 });
    for (const d of leased) {
      await store.nack(d.job.id, d.lease.token, { error: "x", delay_ms: null, dead: true }, T0);
    }
    assert.equal((await store.requeueDead("q", { after: 0 }, T0 + 2_000, 1_000)).requeued, 2);
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 2, leased: 0, full: 0 });
    const [stats] = await store.stats("q");
    assert.equal(stats.counts.pending, 300);
    assert.equal((await store.claim("q", 50, null, T0 + 2_000)).length, 2);
  });

  test("stats() counts a queue's groups: waiting, leased, and full (waiting for a slot)", async (store) => {
    await enqueueOne(store, "q", { group: "a" });
    await enqueueOne(store, "q", { group: "a" });
    await enqueueOne(store, "q", { group: "b" });
    await enqueueOne(store, "q");
    assert.deepEqual((await store.stats("q"))[0].groups, { waiting: 2, leased: 0, full: 0 });
    assert.equal((await store.claim("q", 5, null, T0)).length, 3);
    // a and b each have a job leased; a has another waiting for its slot.
    const [stats] = await store.stats("q");
    assert.deepEqual(stats.groups, { waiting: 1, leased: 2, full: 1 });
    assert.equal(stats.rate_held, false);
  });
}
