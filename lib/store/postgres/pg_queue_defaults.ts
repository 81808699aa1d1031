/**
 * A job's queue defaults in PostgreSQL's SQL: the one place the statements that store jobs take
 * a job's `max_attempts`, `lease_ms` and backoff from, when it leaves them out.
 *
 * @module
 */

import { DEFAULT_MAX_ATTEMPTS } from "../../core/limits.ts";
import type { SqlFragment, TxSql } from "./pg_driver.ts";

/** The queue's column, and the server's value after it, for each field a job may leave out. */
export const QUEUE_DEFAULTS = {
  max_attempts: `s.max_attempts, ${DEFAULT_MAX_ATTEMPTS}`,
  lease_ms: "s.lease_ms",
  backoff_base_ms: "s.backoff_base_ms",
  backoff_max_ms: "s.backoff_max_ms",
} as const;

/**
 * withQueueDefaults() (core/queue_settings.ts) in SQL, for one field of a job a statement writes:
 * the job's own (`own`, a column of the statement), else its queue's (`s`, the queue's
 * `queue_settings` row, which the statement joins and so reads in its own transaction), else the
 * server's. Every statement that stores a job's fields takes them through this.
 */
export function withQueueDefault(
  tx: TxSql,
  field: keyof typeof QUEUE_DEFAULTS,
  own: string,
): SqlFragment {
  return tx.unsafe(`coalesce(${own}, ${QUEUE_DEFAULTS[field]})`);
}
