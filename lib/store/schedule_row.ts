/**
 * A schedule as both engines store it: one row of the `schedules` table, with the same columns
 * in SQLite and PostgreSQL, and its conversion to the {@linkcode Schedule} callers read.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";
import type { Schedule, ScheduleDefinition } from "../core/schedule.ts";
import type { ScheduleTick } from "./store.ts";

/**
 * One stored schedule, column by column: the fields of its definition that are stored as they
 * are, and the columns the rest become (`paused` is 0/1 in SQLite, a boolean in PostgreSQL).
 */
export type ScheduleRow =
  & Pick<
    Schedule,
    | "name"
    | "queue"
    | "cron"
    | "timezone"
    | "payload"
    | "priority"
    | "max_attempts"
    | "lease_ms"
    | "missed"
    | "next_at"
    | "last_tick_at"
    | "last_job_id"
    | "revision"
    | "created_at"
    | "updated_at"
  >
  & {
    /**
     * Each job's first retry delay, ms; null (with `backoff_max_ms`): its queue's backoff, else
     * the server's.
     */
    backoff_base_ms: number | null;
    /** Each job's longest retry delay, ms; null together with `backoff_base_ms`. */
    backoff_max_ms: number | null;
    /** Whether ticks are held back: 0/1 in SQLite, a boolean in PostgreSQL. */
    paused: number | boolean;
  };

/** The schedule a row holds. */
export function rowToSchedule(row: ScheduleRow): Schedule {
  return {
    name: row.name,
    queue: row.queue,
    cron: row.cron,
    timezone: row.timezone,
    payload: row.payload,
    priority: row.priority,
    max_attempts: row.max_attempts,
    lease_ms: row.lease_ms,
    backoff: row.backoff_base_ms === null || row.backoff_max_ms === null
      ? null
      : { base_ms: row.backoff_base_ms, max_ms: row.backoff_max_ms },
    missed: row.missed,
    paused: row.paused === true || row.paused === 1,
    next_at: row.next_at,
    last_tick_at: row.last_tick_at,
    last_job_id: row.last_job_id,
    revision: row.revision,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** A definition's column values in table order, `name` first (for the upserts). */
export function definitionColumns(
  d: ScheduleDefinition,
): [
  string,
  string,
  string,
  string,
  string,
  number,
  number | null,
  number | null,
  number | null,
  number | null,
  string,
] {
  return [
    d.name,
    d.queue,
    d.cron,
    d.timezone,
    d.payload,
    d.priority,
    d.max_attempts,
    d.lease_ms,
    d.backoff?.base_ms ?? null,
    d.backoff?.max_ms ?? null,
    d.missed,
  ];
}

/** How the message of a {@linkcode tickTaken} error begins. */
const TICK_TAKEN = "Cannot enqueue the tick of schedule";

/** The `conflict` of a tick that another server took, or whose schedule changed. */
export function tickTaken(tick: ScheduleTick): TegamiError {
  return new TegamiError(
    "conflict",
    `${TICK_TAKEN} "${tick.name}" at ${new Date(tick.due_at).toISOString()}: it was enqueued ` +
      "already, or the schedule changed",
  );
}

/** The error of a schedule created past the limit of `Store.putSchedule`. */
export function scheduleLimitReached(name: string, limit: number): TegamiError {
  return new TegamiError(
    "conflict",
    `Cannot create schedule "${name}": ${limit} schedules is the limit (--max-schedules); ` +
      "delete one first, or replace an existing one",
  );
}

/** Whether `error` is a {@linkcode tickTaken}: normal when several servers tick one schedule. */
export function isTickTaken(error: unknown): boolean {
  return error instanceof TegamiError && error.code === "conflict" &&
    error.message.startsWith(TICK_TAKEN);
}
