/**
 * A queue's settings as both engines store them: one row of the `queue_settings` table per queue
 * with settings (a queue without a row has the defaults), with the same columns in SQLite and
 * PostgreSQL, and the conversions both ways.
 *
 * @module
 */

import { DEFAULT_QUEUE_SETTINGS, type QueueSettings, withKept } from "../core/queue_settings.ts";

/**
 * The settings encoded as flat columns, as both stores keep them (one row per queue with
 * settings; a queue without a row has the defaults).
 */
export interface SettingsRow {
  // One column per field; `rate` and `backoff` take two each.
  /** Most leased jobs of the queue at once, across servers; null: no limit. */
  concurrency: number | null;
  /** Deliveries allowed per `rate_per_ms`; null (with it): no rate. */
  rate_limit: number | null;
  /** The rate's interval, ms; null together with `rate_limit`. */
  rate_per_ms: number | null;
  /** Most jobs of one ordering group leased at once (1 when not set). */
  group_limit: number;
  /** Deliveries allowed to a job enqueued without its own; null: the server's (5). */
  max_attempts: number | null;
  /** Lease length of a job enqueued without its own, ms; null: the server's (`--lease`). */
  lease_ms: number | null;
  /**
   * First retry delay of a job enqueued without its own backoff, ms; null (with
   * `backoff_max_ms`): the server's (`--backoff-*`).
   */
  backoff_base_ms: number | null;
  /** Longest retry delay of that backoff, ms; null together with `backoff_base_ms`. */
  backoff_max_ms: number | null;
  /** How long done and cancelled jobs are kept, ms; null: the server's (`--retain-done`). */
  retain_done_ms: number | null;
  /** How long dead jobs are kept, ms; null: until removed or requeued. */
  retain_dead_ms: number | null;
  /** How long a pending job waits for a consumer from when it became due, ms; null: no limit. */
  retain_pending_ms: number | null;
  /** The queue a job that would be dead moves to; null: none. */
  dead_letter_queue: string | null;
  /** The SQS-only attributes, JSON text of an object of strings; null: none. */
  sqs_attributes: string | null;
  /** The tags, JSON text of an object of strings; null: none. */
  tags: string | null;
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
    retain_pending_ms: settings.retain_pending_ms,
    dead_letter_queue: settings.dead_letter_queue,
    sqs_attributes: settings.sqs_attributes ? JSON.stringify(settings.sqs_attributes) : null,
    tags: settings.tags ? JSON.stringify(settings.tags) : null,
  };
}

/** The columns of a settings row, in one order both engines write them in. */
export const SETTINGS_COLUMNS: readonly (keyof SettingsRow)[] = Object.keys(
  settingsToRow(DEFAULT_QUEUE_SETTINGS),
) as (keyof SettingsRow)[];

/** The values of `row` in the order of {@linkcode SETTINGS_COLUMNS}. */
export function settingsValues(row: SettingsRow): (number | string | null)[] {
  return SETTINGS_COLUMNS.map((column) => row[column]);
}

/** The settings a row of columns holds (numbers may come back as bigints' numbers). */
export function rowToSettings(row: SettingsRow): QueueSettings {
  const n = (value: number | null) => value === null ? null : Number(value);
  const settings: QueueSettings = {
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
    retain_pending_ms: n(row.retain_pending_ms),
    dead_letter_queue: row.dead_letter_queue ?? null,
  };
  return withKept(settings, strings(row.sqs_attributes), strings(row.tags));
}

/** An object of strings kept as JSON text (keys sorted when written), or null. */
function strings(text: string | null | undefined): Readonly<Record<string, string>> | null {
  return text === null || text === undefined ? null : JSON.parse(text);
}
