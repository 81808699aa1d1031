/**
 * How the API shows what the store holds, shared by every transport and the live feed, so a
 * queue looks the same in `GET /v1/queues`, in the dashboard's event stream and anywhere else.
 *
 * @module
 */

import { settingsView } from "../core/queue_settings.ts";
import type { QueueCounts } from "../store/store.ts";

/**
 * What holds a queue's waiting jobs back from consumers that have credit: its `concurrency`
 * (as many jobs leased as it allows), its `rate` (this server's last claim found no token), or
 * nothing (null). Only while jobs are pending and someone consumes.
 */
export function heldBy(stats: QueueCounts, consumers: number): "concurrency" | "rate" | null {
  if (stats.counts.pending === 0 || consumers === 0) return null;
  const { concurrency } = stats.settings;
  if (concurrency !== null && stats.counts.leased >= concurrency) return "concurrency";
  if (stats.rate_held) return "rate";
  return null;
}

/**
 * A queue's stats as the API shows them: counts, pause, oldest pending age, consumers, its
 * settings, its ordering groups and the limit holding it back.
 */
export function statsView(stats: QueueCounts, now: number, consumers: number): unknown {
  return {
    name: stats.name,
    paused: stats.paused,
    counts: stats.counts,
    oldest_pending_age_ms: stats.oldest_pending_at === null
      ? 0
      : Math.max(0, now - stats.oldest_pending_at),
    consumers,
    settings: settingsView(stats.settings),
    groups: stats.groups,
    held: heldBy(stats, consumers),
  };
}
