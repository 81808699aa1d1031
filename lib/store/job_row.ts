/**
 * A job as both engines store it: one row of the `jobs` table, with the same columns in SQLite
 * and PostgreSQL, and the conversions every store needs from it — the job a client reads, the
 * fields the retry rules read, and zero counts to start a tally.
 *
 * @module
 */

import type { Backoff, Job, JobState } from "../core/job.ts";
import type { AttemptedRow } from "../core/lifecycle.ts";
import type { StateCounts } from "./store.ts";

/** One stored job, column by column. */
export interface JobRow {
  id: number;
  queue: string;
  state: JobState;
  priority: number;
  key: string | null;
  /** When the key window ends, or null (the key is held as long as the job is stored). */
  key_expires_at: number | null;
  /** The key a job gave up when its window passed and another job took it, else null. */
  released_key: string | null;
  /** The job's ordering group (`group` is a reserved word in SQL). */
  grp: string | null;
  payload: string;
  attempts: number;
  max_attempts: number;
  run_at: number;
  lease_ms: number | null;
  backoff_base_ms: number | null;
  backoff_max_ms: number | null;
  created_at: number;
  checkpoint: string | null;
  progress: string | null;
  progress_at: number | null;
  result: string | null;
  last_error: string | null;
  lease_token: string | null;
  lease_len_ms: number | null;
  lease_expires_at: number | null;
  finished_at: number | null;
}

/** The job's own retry backoff, or null for the server's. */
export function rowBackoff(row: JobRow): Backoff | null {
  return row.backoff_base_ms === null || row.backoff_max_ms === null
    ? null
    : { base_ms: row.backoff_base_ms, max_ms: row.backoff_max_ms };
}

/** The fields the retry rules read. */
export function attempted(row: JobRow): AttemptedRow {
  return {
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    last_error: row.last_error,
    backoff: rowBackoff(row),
  };
}

/** The job as clients read it; a lease expiry only while the job is leased. */
export function rowToJob(row: JobRow): Job {
  return {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: row.payload,
    priority: row.priority,
    key: row.key ?? row.released_key,
    key_expires_at: row.key_expires_at,
    group: row.grp,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    run_at: row.run_at,
    lease_ms: row.lease_ms,
    backoff: rowBackoff(row),
    created_at: row.created_at,
    checkpoint: row.checkpoint,
    progress: row.progress,
    progress_at: row.progress_at,
    result: row.result,
    last_error: row.last_error,
    lease_expires_at: row.state === "leased" ? row.lease_expires_at : null,
    finished_at: row.finished_at,
  };
}

/** Counts of every state at zero. */
export function zeroCounts(): StateCounts {
  return { pending: 0, delayed: 0, leased: 0, done: 0, dead: 0, cancelled: 0 };
}
