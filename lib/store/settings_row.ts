/**
 * A queue's settings as both engines store them: one row of the `queue_settings` table per queue
 * with settings (a queue without a row has the defaults), with the same columns in SQLite and
 * PostgreSQL, and the conversions both ways.
 *
 * @module
 */

import type { QueueSettings } from "../core/queue_settings.ts";

/**
 * The settings encoded as flat columns, as both stores keep them (one row per queue with
 * settings; a queue without a row has the defaults).
 */
export interface SettingsRow {
  // One column per field; `rate` and `backoff` take two each.
  concurrency: number | null;
  rate_limit: number | null;
  rate_per_ms: number | null;
  group_limit: number;
  max_attempts: number | null;
  lease_ms: number | null;
  backoff_base_ms: number | null;
  backoff_max_ms: number | null;
  retain_done_ms: number | null;
  retain_dead_ms: number | null;
}

/** The columns of `settings`. */
export function settingsToRow(settings: QueueSettings): SettingsRow {
  return {
    concurrency: settings.concurrency,
    rate_limit: settings.rate?.limit ?? null,
    rate_per_ms: settings.rate?.per_ms ?? null,
    group_limit: settings.group_limit,
    max_attempts: settings.max_attempts,
    lease_ms: settings.lease_ms,
    backoff_base_ms: settings.backoff?.base_ms ?? null,
    backoff_max_ms: settings.backoff?.max_ms ?? null,
    retain_done_ms: settings.retain_done_ms,
    retain_dead_ms: settings.retain_dead_ms,
  };
}

/** The settings a row of columns holds (numbers may come back as bigints' numbers). */
export function rowToSettings(row: SettingsRow): QueueSettings {
  const n = (value: number | null) => value === null ? null : Number(value);
  return {
    concurrency: n(row.concurrency),
    rate: row.rate_limit === null || row.rate_per_ms === null
      ? null
      : { limit: Number(row.rate_limit), per_ms: Number(row.rate_per_ms) },
    group_limit: Number(row.group_limit),
    max_attempts: n(row.max_attempts),
    lease_ms: n(row.lease_ms),
    backoff: row.backoff_base_ms === null || row.backoff_max_ms === null
      ? null
      : { base_ms: Number(row.backoff_base_ms), max_ms: Number(row.backoff_max_ms) },
    retain_done_ms: n(row.retain_done_ms),
    retain_dead_ms: n(row.retain_dead_ms),
  };
}
