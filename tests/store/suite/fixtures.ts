/**
 * What every area of the store behaviour suite shares: the policy the store under test is built
 * with, the suite's "now", the registration functions an area gets, and the helpers its cases
 * speak through. Cases pick every time themselves from {@linkcode T0} on; none sleeps.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type ErrorCode, TegamiError } from "../../../lib/core/errors.ts";
import type { Delivery, JobState, NewJob } from "../../../lib/core/job.ts";
import type { HandOvers, LifecyclePolicy } from "../../../lib/core/lifecycle.ts";
import { defaultQueueSettings, type QueueSettings } from "../../../lib/core/queue_settings.ts";
import type { StateCounts, Store, StoreCapabilities } from "../../../lib/store/store.ts";

/** Registers a case on one fresh store. */
export type Test = (title: string, fn: (store: Store) => Promise<void>) => void;

/**
 * Registers a case on two stores of one database, as two servers would use it (registered as
 * ignored, its name saying `[needs shared]`, for a store without the `shared` capability).
 */
export type SharedTest = (title: string, fn: (a: Store, b: Store) => Promise<void>) => void;

/** What an area's registration function is given. */
export interface SuiteCases {
  /** Registers a case on one store. */
  test: Test;
  /** Registers a case on two stores of one database. */
  sharedTest: SharedTest;
  /** The capabilities the store under test must report. */
  capabilities: StoreCapabilities;
}

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
export const T0 = 1_700_000_000_000;

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
};

/** A tick by a server that handed no lease over (another server's, or one restarted). */
export const HANDED_NONE: HandOvers = {
  handedOver: () => false,
  claimingSince: null,
};

/** Queue settings: the defaults with `fields` set. */
export function queueSettings(fields: Partial<QueueSettings> = {}): QueueSettings {
  return { ...defaultQueueSettings(), ...fields };
}

/** Settings with every field set, none to its default. */
export const FULL_SETTINGS: QueueSettings = {
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
  sqs_attributes: { DelaySeconds: "5", MaximumMessageSize: "1024" },
  tags: { env: "test", team: "queues" },
};

/** Counts with the given states set and every other state zero. */
export function counts(some: Partial<StateCounts> = {}): StateCounts {
  return {
    blocked: 0,
    pending: 0,
    delayed: 0,
    leased: 0,
    done: 0,
    dead: 0,
    cancelled: 0,
    ...some,
  };
}

/** Asserts that `promise` rejects with a `TegamiError` carrying `code`. */
export async function rejectsWith(promise: Promise<unknown>, code: ErrorCode): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof TegamiError, `expected a TegamiError, got ${error}`);
    assert.equal(error.code, code);
    return true;
  });
}

/** Enqueues one job and answers its id. */
export async function enqueueOne(
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
export async function claimOne(
  store: Store,
  queue: string,
  now = T0,
  lease_ms: number | null = null,
): Promise<Delivery> {
  const got = await store.claim(queue, 1, lease_ms, now);
  assert.equal(got.length, 1, `expected one delivery from "${queue}"`);
  return got[0];
}

/** The ids of a claim's deliveries. */
export const idsOf = (deliveries: Delivery[]): number[] => deliveries.map((d) => d.job.id);

/** The counts of one queue. */
export async function countsOf(store: Store, queue: string): Promise<StateCounts> {
  const [stats] = await store.stats(queue);
  return stats.counts;
}

/** The state of a job, or null if it is gone. */
export async function stateOf(store: Store, id: number): Promise<JobState | null> {
  return (await store.get(id))?.state ?? null;
}

/** Makes `n` dead jobs in `queue` (dead by an explicit nack), answering their ids in order. */
export async function makeDead(
  store: Store,
  queue: string,
  n: number,
  now = T0,
): Promise<number[]> {
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

/** Waits until `check` answers true, trying every 10 ms for at most `ms`. */
export async function eventually(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
