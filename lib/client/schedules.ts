/**
 * Schedules in the client: the definition a caller gives {@linkcode TegamiClient.putSchedule}
 * (camelCase job options, as for an enqueue), its wire form, and the schedule the server answers.
 *
 * @module
 */

/** What happens to ticks that came due while no server ran: see `docs/api.md`. */
export type MissedPolicy = "none" | "last" | "all";

/** A schedule as a caller defines it: its queue, cron and time zone, and each tick's job. */
export interface ScheduleDefinition<T = unknown> {
  /** The queue each tick's job goes to. */
  queue: string;
  /** Cron: 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first. */
  cron: string;
  /** Each job's payload (any JSON value). */
  payload: T;
  /** The IANA time zone the expression is read in. @default "UTC" */
  timezone?: string;
  /** Missed ticks: `last` enqueues the latest once, `all` each (≤ 100), `none` skips. @default "last" */
  missed?: MissedPolicy;
  /** Each job's priority, higher first. @default 0 */
  priority?: number;
  /** Each job's deliveries allowed before it is dead. @default the queue's, else 5 */
  maxAttempts?: number;
  /** Each job's lease length. @default the server's (30 s) */
  leaseMs?: number;
  /** Each job's retry backoff. @default the server's (1 s base, 1 h max) */
  backoff?: { baseMs: number; maxMs: number };
}

/** A stored schedule as the server shows it. */
export interface ScheduleInfo<T = unknown> {
  /** Its name. */
  name: string;
  /** The queue its jobs go to. */
  queue: string;
  /** The cron expression. */
  cron: string;
  /** The time zone it is read in. */
  timezone: string;
  /** The missed-tick policy. */
  missed: MissedPolicy;
  /** Each job's payload. */
  payload: T;
  /** Each job's priority. */
  priority: number;
  /** Each job's deliveries allowed, or null for its queue's (else 5). */
  max_attempts: number | null;
  /** Each job's lease length, or null for the server's. */
  lease_ms: number | null;
  /** Each job's backoff, or null for the server's. */
  backoff: { base_ms: number; max_ms: number } | null;
  /** Whether its ticks are held back. */
  paused: boolean;
  /** The next tick that will enqueue a job, ms since the epoch; null while paused. */
  next_tick_at: number | null;
  /** The last tick that enqueued a job, or null. */
  last_tick_at: number | null;
  /** The id of that tick's job, or null. */
  last_job_id: number | null;
  /** When it was first defined. */
  created_at: number;
  /** When it was last defined, paused or resumed. */
  updated_at: number;
}

/** The wire form of a schedule's definition. */
export function scheduleBody(definition: ScheduleDefinition): Record<string, unknown> {
  const body: Record<string, unknown> = {
    queue: definition.queue,
    cron: definition.cron,
    payload: definition.payload,
  };
  if (definition.timezone !== undefined) body.timezone = definition.timezone;
  if (definition.missed !== undefined) body.missed = definition.missed;
  if (definition.priority !== undefined) body.priority = definition.priority;
  if (definition.maxAttempts !== undefined) body.max_attempts = definition.maxAttempts;
  if (definition.leaseMs !== undefined) body.lease_ms = definition.leaseMs;
  if (definition.backoff !== undefined) {
    body.backoff = { base_ms: definition.backoff.baseMs, max_ms: definition.backoff.maxMs };
  }
  return body;
}
