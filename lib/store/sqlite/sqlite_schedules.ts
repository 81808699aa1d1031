/**
 * The SQLite store's schedules: the statements on the `schedules` table, prepared once. Every
 * method is synchronous and runs inside the caller's transaction (a group-commit operation) or
 * as a read; the store decides which.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
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
import { CountedStatement, type StatementCount } from "./counted_statement.ts";

/** The `schedules` table of one SQLite database. */
export class SqliteSchedules {
  readonly #s: ReturnType<typeof prepareSchedules>;

  /** Prepares the statements on a migrated database, counting them into `count`. */
  constructor(db: DatabaseSync, count: StatementCount) {
    this.#s = prepareSchedules(db, count);
  }

  /** Creates or replaces a schedule (see `Store.putSchedule`). */
  put(d: ScheduleDefinition, next_at: number | null, now: number, limit = Infinity): Schedule {
    if (limit !== Infinity && this.#s.byName.get(d.name) === undefined) {
      const { active, paused } = this.count();
      if (active + paused >= limit) throw scheduleLimitReached(d.name, limit);
    }
    const row = this.#s.upsert.get(...definitionColumns(d), next_at, now) as unknown as ScheduleRow;
    return rowToSchedule(row);
  }

  /** How many schedules there are, running and paused. */
  count(): ScheduleCounts {
    const row = this.#s.count.get() as { active: number | null; paused: number | null };
    return { active: row.active ?? 0, paused: row.paused ?? 0 };
  }

  /** Reads a schedule, or null. */
  get(name: string): Schedule | null {
    const row = this.#s.byName.get(name) as ScheduleRow | undefined;
    return row === undefined ? null : rowToSchedule(row);
  }

  /** Every schedule, by name. */
  list(): Schedule[] {
    return (this.#s.all.all() as unknown as ScheduleRow[]).map(rowToSchedule);
  }

  /** Deletes a schedule; false if there was none. */
  delete(name: string): boolean {
    return Number(this.#s.delete.run(name).changes) > 0;
  }

  /** Pauses or resumes a schedule; null if there is none. */
  pause(name: string, paused: boolean, next_at: number | null, now: number): Schedule | null {
    const row = this.#s.pause.get(paused ? 1 : 0, next_at, now, name) as ScheduleRow | undefined;
    return row === undefined ? null : rowToSchedule(row);
  }

  /** Unpaused schedules due at `now`, earliest first. */
  due(now: number, limit: number): Schedule[] {
    return (this.#s.due.all(now, limit) as unknown as ScheduleRow[]).map(rowToSchedule);
  }

  /** The earliest next tick of an unpaused schedule, or null. */
  nextAt(): number | null {
    return (this.#s.nextAt.get() as { at: number | null }).at;
  }

  /** Throws `conflict` unless the schedule stands where the tick was read (see ScheduleTick). */
  take(tick: ScheduleTick): void {
    if (this.#s.stands.get(tick.name, tick.revision, tick.due_at) === undefined) {
      throw tickTaken(tick);
    }
  }

  /** Moves the schedule past the tick, recording the last job stored for it. */
  record(tick: ScheduleTick, out: Enqueued[]): void {
    const last = out.length === 0 ? null : out[out.length - 1].id;
    this.#s.advance.run(tick.next_at, tick.last_tick_at, last, tick.name);
  }
}

function prepareSchedules(db: DatabaseSync, count: StatementCount) {
  const p = (sql: string) => new CountedStatement(db.prepare(sql), count);
  return {
    upsert: p(
      `INSERT INTO schedules (name, queue, cron, timezone, payload, priority, max_attempts,
         lease_ms, backoff_base_ms, backoff_max_ms, missed, next_at, paused, revision,
         created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0, 1, ?13, ?13)
       ON CONFLICT (name) DO UPDATE SET queue = excluded.queue, cron = excluded.cron,
         timezone = excluded.timezone, payload = excluded.payload,
         priority = excluded.priority, max_attempts = excluded.max_attempts,
         lease_ms = excluded.lease_ms, backoff_base_ms = excluded.backoff_base_ms,
         backoff_max_ms = excluded.backoff_max_ms, missed = excluded.missed,
         next_at = excluded.next_at, paused = 0, revision = revision + 1,
         updated_at = excluded.updated_at
       RETURNING *`,
    ),
    byName: p("SELECT * FROM schedules WHERE name = ?"),
    count: p("SELECT sum(paused = 0) AS active, sum(paused = 1) AS paused FROM schedules"),
    all: p("SELECT * FROM schedules ORDER BY name"),
    delete: p("DELETE FROM schedules WHERE name = ?"),
    pause: p(
      `UPDATE schedules SET paused = ?, next_at = ?, revision = revision + 1, updated_at = ?
       WHERE name = ? RETURNING *`,
    ),
    due: p(
      `SELECT * FROM schedules WHERE paused = 0 AND next_at IS NOT NULL AND next_at <= ?
       ORDER BY next_at LIMIT ? + 0`,
    ),
    nextAt: p(
      "SELECT min(next_at) AS at FROM schedules WHERE paused = 0 AND next_at IS NOT NULL",
    ),
    stands: p(
      `SELECT 1 FROM schedules
       WHERE name = ? AND revision = ? AND next_at = ? AND paused = 0`,
    ),
    advance: p(
      `UPDATE schedules SET next_at = ?, last_tick_at = coalesce(?, last_tick_at),
         last_job_id = coalesce(?, last_job_id)
       WHERE name = ?`,
    ),
  };
}
