/**
 * Queue settings in PostgreSQL: the `queue_settings` table (migration 002), read and written by
 * queue name.
 *
 * There is no cache: several servers share the table, so whatever must apply a queue's settings
 * reads them in its own transaction ({@linkcode readQueueSettings} with the transaction's `tx`,
 * or a join on `queue_settings` in the statement itself), and sees every change from its commit
 * on. One primary-key lookup; a queue without a row has the defaults.
 *
 * @module
 */

import {
  defaultQueueSettings,
  isDefaultSettings,
  type QueueSettings,
} from "../../core/queue_settings.ts";
import { rowToSettings, type SettingsRow, settingsToRow } from "../settings_row.ts";
import type { Sql, TxSql } from "./pg_driver.ts";

/** A queue's settings as `sql` (a transaction, or the pool) sees them; defaults without a row. */
export async function readQueueSettings(sql: Sql | TxSql, queue: string): Promise<QueueSettings> {
  const rows = await sql<SettingsRow[]>`
    SELECT concurrency, rate_limit, rate_per_ms, group_limit, max_attempts, lease_ms,
      backoff_base_ms, backoff_max_ms, retain_done_ms, retain_dead_ms, retain_pending_ms,
      dead_letter_queue
    FROM queue_settings WHERE name = ${queue}`;
  return rows.length === 0 ? defaultQueueSettings() : rowToSettings(rows[0]);
}

/** Every queue's settings as `sql` sees them, by queue name (queues with the defaults absent). */
export async function readAllQueueSettings(
  sql: Sql | TxSql,
  queue?: string,
): Promise<Map<string, QueueSettings>> {
  const rows = queue === undefined
    ? await sql<(SettingsRow & { name: string })[]>`SELECT * FROM queue_settings`
    : await sql<(SettingsRow & { name: string })[]>`
      SELECT * FROM queue_settings WHERE name = ${queue}`;
  return new Map(rows.map((row) => [row.name, rowToSettings(row)]));
}

/** Replaces a queue's settings inside `tx`; the defaults remove its row. */
export async function writeQueueSettings(
  tx: TxSql,
  queue: string,
  settings: QueueSettings,
  now: number,
): Promise<void> {
  if (isDefaultSettings(settings)) {
    await tx`DELETE FROM queue_settings WHERE name = ${queue}`;
    return;
  }
  const r = settingsToRow(settings);
  await tx`
    INSERT INTO queue_settings (name, concurrency, rate_limit, rate_per_ms, group_limit,
      max_attempts, lease_ms, backoff_base_ms, backoff_max_ms, retain_done_ms, retain_dead_ms,
      retain_pending_ms, dead_letter_queue, updated_at)
    VALUES (${queue}, ${r.concurrency}, ${r.rate_limit}, ${r.rate_per_ms}, ${r.group_limit},
      ${r.max_attempts}, ${r.lease_ms}, ${r.backoff_base_ms}, ${r.backoff_max_ms},
      ${r.retain_done_ms}, ${r.retain_dead_ms}, ${r.retain_pending_ms}, ${r.dead_letter_queue},
      ${now})
    ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency,
      rate_limit = excluded.rate_limit, rate_per_ms = excluded.rate_per_ms,
      group_limit = excluded.group_limit, max_attempts = excluded.max_attempts,
      lease_ms = excluded.lease_ms, backoff_base_ms = excluded.backoff_base_ms,
      backoff_max_ms = excluded.backoff_max_ms, retain_done_ms = excluded.retain_done_ms,
      retain_dead_ms = excluded.retain_dead_ms, retain_pending_ms = excluded.retain_pending_ms,
      dead_letter_queue = excluded.dead_letter_queue, updated_at = excluded.updated_at`;
}
