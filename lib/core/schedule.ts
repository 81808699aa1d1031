/**
 * Schedules: recurring jobs. A schedule names a queue, a cron expression read in a time zone,
 * and the job each tick enqueues. This module holds the record, its JSON form, the dedup key of
 * a tick's job, and the pure rule of which ticks a due schedule enqueues (the `missed` policy).
 *
 * Exactly once: a tick's job is stored in the same transaction that moves the schedule past the
 * tick, and only if the schedule still stands where it was read (see `ScheduleTick` in
 * `store/store.ts`); its key, {@linkcode tickKey}, is a second guard while the job is retained.
 *
 * @module
 */

import type { Backoff, NewJob } from "./job.ts";
import { type CronTimes, ticksBetween } from "./cron.ts";

/** What happens to ticks that came due while no server was running (or it was stalled). */
export type MissedPolicy = "none" | "last" | "all";

/** The missed policies, for validation and documents. */
export const MISSED_POLICIES: readonly MissedPolicy[] = ["none", "last", "all"];

/** The policy when none is given: enqueue the most recent missed tick once. */
export const DEFAULT_MISSED: MissedPolicy = "last";

/** The time zone when none is given. */
export const DEFAULT_TIMEZONE = "UTC";

/** Schedule names: the queue-name pattern, `[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}`. */
export const SCHEDULE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

/** The most missed ticks `missed: "all"` enqueues at once: the most recent ones. */
export const MAX_CATCH_UP = 100;

/**
 * How late a tick may be enqueued and still count as on time, ms: `missed: "none"` enqueues the
 * latest due tick only within this, so a timer that fires a little late loses nothing.
 */
export const ON_TIME_MS = 60_000;

/** What a schedule is, as a caller defines it (`PUT /v1/schedules/{name}`). */
export interface ScheduleDefinition {
  /** Its name, unique. */
  name: string;
  /** The queue its jobs go to. */
  queue: string;
  /** The cron expression (5 fields, or 6 with seconds first). */
  cron: string;
  /** The IANA time zone the expression is read in. */
  timezone: string;
  /** Each job's payload, as JSON text. */
  payload: string;
  /** Each job's priority. */
  priority: number;
  /** Each job's deliveries allowed, or null for its queue's (else 5). */
  max_attempts: number | null;
  /** Each job's lease length, ms, or null for its queue's (else the server's). */
  lease_ms: number | null;
  /** Each job's retry backoff, or null for its queue's (else the server's). */
  backoff: Backoff | null;
  /** What to do with missed ticks. */
  missed: MissedPolicy;
}

/** A stored schedule. */
export interface Schedule extends ScheduleDefinition {
  /** Whether ticks are held back (skipped, not saved for later). */
  paused: boolean;
  /** The next tick to enqueue, ms since the epoch (stale while paused; recomputed on resume). */
  next_at: number | null;
  /** The last tick that enqueued a job, or null. */
  last_tick_at: number | null;
  /** The id of the job that tick enqueued (or found by its key), or null. */
  last_job_id: number | null;
  /** Grows by one at every change of definition or pause: a tick read before it is refused. */
  revision: number;
  /** When it was first defined. */
  created_at: number;
  /** When it was last defined, paused or resumed. */
  updated_at: number;
}

/** The dedup key of the job a schedule's tick enqueues: `schedule:{name}:{ISO time}`. */
export function tickKey(name: string, at: number): string {
  return `schedule:${name}:${new Date(at).toISOString()}`;
}

/** The job a tick at `at` enqueues. */
export function tickJob(schedule: ScheduleDefinition, at: number): NewJob {
  return {
    payload: schedule.payload,
    priority: schedule.priority,
    key: tickKey(schedule.name, at),
    run_at: at,
    max_attempts: schedule.max_attempts,
    lease_ms: schedule.lease_ms,
    backoff: schedule.backoff,
  };
}

/** What a due schedule does now. */
export interface DueTicks {
  /** The ticks to enqueue, oldest first; empty when the policy skips them all. */
  ticks: number[];
  /** The first tick after now, or null if the expression matches nothing more. */
  next_at: number | null;
}

/**
 * The `missed` policy: which of the ticks from `schedule.next_at` to `now` are enqueued.
 * - `all`: every one, oldest first (at most {@linkcode MAX_CATCH_UP}, the most recent);
 * - `last`: only the most recent one;
 * - `none`: only the most recent one, and only if it is at most {@linkcode ON_TIME_MS} late.
 */
export function dueTicks(schedule: Schedule, times: CronTimes, now: number): DueTicks {
  if (schedule.next_at === null || schedule.next_at > now) {
    return { ticks: [], next_at: schedule.next_at };
  }
  const limit = schedule.missed === "all" ? MAX_CATCH_UP : 1;
  // next_at is itself a tick of the definition it was computed from (the revision guards that).
  let { ticks } = ticksBetween(times, schedule.next_at - 1, now, limit);
  if (schedule.missed === "none" && ticks.length > 0 && now - ticks[0] > ON_TIME_MS) ticks = [];
  return { ticks, next_at: times.next(now) };
}
