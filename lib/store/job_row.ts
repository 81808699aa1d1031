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
  /** Unique, increasing, never reused. */
  id: number;
  /** The queue's name. */
  queue: string;
  /** Where the job is in its life. */
  state: JobState;
  /** Higher is claimed first. */
  priority: number;
  /** The dedup key the job holds in its queue, or null: none given, or given up to another job. */
  key: string | null;
  /** When the key window ends, or null (the key is held as long as the job is stored). */
  key_expires_at: number | null;
  /** The key a job gave up when its window passed and another job took it, else null. */
  released_key: string | null;
  /** The job's ordering group (`group` is a reserved word in SQL). */
  grp: string | null;
  /** The payload as the JSON text received. */
  payload: string;
  /** The attributes as JSON text (core/attributes.ts), or null for none. */
  attributes: string | null;
  /** Deliveries so far, less any that reached no consumer; requeueing a dead job zeroes it. */
  attempts: number;
  /** Deliveries allowed before the job is dead: its own, else its queue's, else 5. */
  max_attempts: number;
  /** When the job is (or was) due, ms since the epoch; a delayed job's, when it turns pending. */
  run_at: number;
  /** The lease length a claim gives, ms: the job's own or its queue's; null: the server's. */
  lease_ms: number | null;
  /**
   * The retry backoff's first delay, ms: the job's own or its queue's; null (with
   * `backoff_max_ms`): the server's.
   */
  backoff_base_ms: number | null;
  /** The retry backoff's longest delay, ms; null together with `backoff_base_ms`. */
  backoff_max_ms: number | null;
  /** When the job was enqueued, ms since the epoch. */
  created_at: number;
  /** The last checkpoint a lease holder saved, as JSON text, or null. */
  checkpoint: string | null;
  /** The last progress a lease holder reported, as JSON text, or null. */
  progress: string | null;
  /** When that progress was reported, ms since the epoch, or null. */
  progress_at: number | null;
  /** The ack's result as JSON text; null until acked (and for an ack without one). */
  result: string | null;
  /**
   * Why the last attempt failed (the nack's error, or the lease's end that made the
   * job dead), or null.
   */
  last_error: string | null;
  /**
   * The token of the latest lease, or null if never leased. Kept after the lease
   * ends, so a repeated ack of a done job is known for one.
   */
  lease_token: string | null;
  /**
   * The length of the latest lease, ms (what an extend without its own length
   * renews for), or null if never leased.
   */
  lease_len_ms: number | null;
  /** When the current lease ends, ms since the epoch; null when not leased. */
  lease_expires_at: number | null;
  /** When the job reached done, dead or cancelled, ms since the epoch; else null. */
  finished_at: number | null;
  /** The queue it was dead-lettered from, or null. */
  dead_lettered_from: string | null;
  /** The flow it is a node of, or null (core/flow.ts). */
  flow_id: number | null;
  /** Its ref in that flow, or null. */
  flow_ref: string | null;
  /** While blocked: how many of its prerequisites' edges are not met yet; else 0. */
  waiting_on: number;
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
  const job: Job = {
    id: row.id,
    queue: row.queue,
    state: row.state,
    payload: row.payload,
    attributes: row.attributes,
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
    dead_lettered_from: row.dead_lettered_from,
  };
  if (row.flow_id !== null) job.flow = { id: row.flow_id, ref: row.flow_ref ?? "" };
  return job;
}

/** Counts of every state at zero. */
export function zeroCounts(): StateCounts {
  return { blocked: 0, pending: 0, delayed: 0, leased: 0, done: 0, dead: 0, cancelled: 0 };
}
