/**
 * The PostgreSQL store's schedules: the statements on the `schedules` table. Writes run inside a
 * group-commit transaction (`tx`), reads on the pool; the store decides which.
 *
 * A tick is taken with `SELECT … FOR UPDATE SKIP LOCKED` on the schedule's row, checking that it
 * still stands where the caller read it: a server whose row is locked by another one ticking it
 * gives up at once (that one will move it on), and one that comes after the other's commit finds
 * `next_at` moved and gives up too. Either way it writes nothing, so its `conflict` is answered
 * to it alone.
 *
 * @module
 */

import type { Enqueued } from "../../core/job.ts";
import type { Schedule, ScheduleDefinition } from "../../core/schedule.ts";
import {
  definitionColumns,
  rowToSchedule,
  scheduleLimitReached,
  type ScheduleRow,
  tickTaken,
} from "../schedule_row.ts";
import type { ScheduleCounts, ScheduleTick } from "../store.ts";
import type { Sql, TxSql } from "./pg_driver.ts";

/** Creates or replaces a schedule (see `Store.putSchedule`). */
export async function putSchedule(
  tx: TxSql,
  d: ScheduleDefinition,
  next_at: number | null,
  now: number,
  limit = Infinity,
): Promise<Schedule> {
  if (limit !== Infinity) await refuseNewPastLimit(tx, d.name, limit);
  const [name, queue, cron, timezone, payload, priority, maxAttempts, leaseMs, base, max, missed] =
    definitionColumns(d);
  const [row] = await tx<ScheduleRow[]>`
    INSERT INTO schedules (name, queue, cron, timezone, payload, priority, max_attempts,
      lease_ms, backoff_base_ms, backoff_max_ms, missed, next_at, paused, revision, created_at,
      updated_at)
    VALUES (${name}, ${queue}, ${cron}, ${timezone}, ${payload}, ${priority}, ${maxAttempts},
      ${leaseMs}, ${base}, ${max}, ${missed}, ${next_at}, false, 1, ${now}, ${now})
    ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, cron = excluded.cron,
      timezone = excluded.timezone, payload = excluded.payload, priority = excluded.priority,
      max_attempts = excluded.max_attempts, lease_ms = excluded.lease_ms,
      backoff_base_ms = excluded.backoff_base_ms, backoff_max_ms = excluded.backoff_max_ms,
      missed = excluded.missed, next_at = excluded.next_at, paused = false,
      revision = schedules.revision + 1, updated_at = excluded.updated_at
    RETURNING *`;
  return rowToSchedule(row);
}

/**
 * Throws `conflict` when `name` is a new schedule and `limit` exist. A lock of this schema's
 * schedule definitions (advisory: nothing but another definition waits for it, ticks do not)
 * makes the count exact across servers: two creations cannot both count the same last free
 * place. A deadlock with another batch is retried by the group commit.
 */
async function refuseNewPastLimit(tx: TxSql, name: string, limit: number): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.schedules', 0))`;
  const [row] = await tx<{ exists: boolean; n: number }[]>`
    SELECT EXISTS (SELECT 1 FROM schedules WHERE name = ${name}) AS exists,
      (SELECT count(*)::int FROM schedules) AS n`;
  if (!row.exists && row.n >= limit) throw scheduleLimitReached(name, limit);
}

/** How many schedules there are, running and paused. */
export async function countSchedules(sql: Sql): Promise<ScheduleCounts> {
  const [row] = await sql<ScheduleCounts[]>`
    SELECT count(*) FILTER (WHERE NOT paused)::int AS active,
      count(*) FILTER (WHERE paused)::int AS paused
    FROM schedules`;
  return row;
}

/** Reads a schedule, or null. */
export async function getSchedule(sql: Sql, name: string): Promise<Schedule | null> {
  const rows = await sql<ScheduleRow[]>`SELECT * FROM schedules WHERE name = ${name}`;
  return rows.length === 0 ? null : rowToSchedule(rows[0]);
}

/** Every schedule, by name in byte order (whatever the database's collation). */
export async function listSchedules(sql: Sql): Promise<Schedule[]> {
  const rows = await sql<ScheduleRow[]>`SELECT * FROM schedules ORDER BY name COLLATE "C"`;
  return rows.map(rowToSchedule);
}

/** Deletes a schedule; false if there was none. */
export async function deleteSchedule(tx: TxSql, name: string): Promise<boolean> {
  const rows = await tx`DELETE FROM schedules WHERE name = ${name} RETURNING name`;
  return rows.length > 0;
}

/** Pauses or resumes a schedule; null if there is none. */
export async function pauseSchedule(
  tx: TxSql,
  name: string,
  paused: boolean,
  next_at: number | null,
  now: number,
): Promise<Schedule | null> {
  const rows = await tx<ScheduleRow[]>`
    UPDATE schedules SET paused = ${paused}, next_at = ${next_at}, revision = revision + 1,
      updated_at = ${now}
    WHERE name = ${name} RETURNING *`;
  return rows.length === 0 ? null : rowToSchedule(rows[0]);
}

/** Unpaused schedules due at `now`, earliest first. */
export async function dueSchedules(sql: Sql, now: number, limit: number): Promise<Schedule[]> {
  const rows = await sql<ScheduleRow[]>`
    SELECT * FROM schedules WHERE NOT paused AND next_at IS NOT NULL AND next_at <= ${now}
    ORDER BY next_at LIMIT ${limit}`;
  return rows.map(rowToSchedule);
}

/** The earliest next tick of an unpaused schedule, or null. */
export async function nextScheduleAt(sql: Sql): Promise<number | null> {
  const [row] = await sql<{ at: number | null }[]>`
    SELECT min(next_at) AS at FROM schedules WHERE NOT paused AND next_at IS NOT NULL`;
  return row.at;
}

/**
 * Locks the schedule's row for the tick, or throws `conflict` (having written nothing) when it
 * is locked by another server or no longer stands where the tick was read.
 */
export async function takeTick(tx: TxSql, tick: ScheduleTick): Promise<void> {
  const rows = await tx`
    SELECT 1 FROM schedules
    WHERE name = ${tick.name} AND revision = ${tick.revision} AND next_at = ${tick.due_at}
      AND NOT paused
    FOR UPDATE SKIP LOCKED`;
  if (rows.length === 0) throw tickTaken(tick);
}

/** Moves the schedule past the tick, recording the last job stored for it. */
export async function recordTick(tx: TxSql, tick: ScheduleTick, out: Enqueued[]): Promise<void> {
  const last = out.length === 0 ? null : out[out.length - 1].id;
  await tx`
    UPDATE schedules SET next_at = ${tick.next_at},
      last_tick_at = coalesce(${tick.last_tick_at}::bigint, last_tick_at),
      last_job_id = coalesce(${last}::bigint, last_job_id)
    WHERE name = ${tick.name}`;
}
