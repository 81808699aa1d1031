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
import {
  rowToSettings,
  SETTINGS_COLUMNS,
  type SettingsRow,
  settingsToRow,
} from "../settings_row.ts";
import type { Sql, TxSql } from "./pg_driver.ts";

/** A queue's settings as `sql` (a transaction, or the pool) sees them; defaults without a row. */
export async function readQueueSettings(sql: Sql | TxSql, queue: string): Promise<QueueSettings> {
  const rows = await sql<SettingsRow[]>`
    SELECT ${sql(SETTINGS_COLUMNS as string[])} FROM queue_settings WHERE name = ${queue}`;
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
  const row = { name: queue, ...settingsToRow(settings), updated_at: now };
  await tx`
    INSERT INTO queue_settings ${tx(row)}
    ON CONFLICT (name) DO UPDATE SET ${tx.unsafe(UPSERT_SET)}`;
}

/** The upsert's assignments: every column from the row that lost the conflict. */
const UPSERT_SET = [...SETTINGS_COLUMNS, "updated_at"]
  .map((column) => `${column} = excluded.${column}`)
  .join(", ");
