/**
 * How the API shows what the store holds, shared by every transport and the live feed, so a
 * queue looks the same in `GET /v1/queues`, in the dashboard's event stream and anywhere else.
 *
 * @module
 */

import { settingsView } from "../core/queue_settings.ts";
import type { QueueCounts } from "../store/store.ts";

/**
 * A queue's stats as the API shows them: counts, pause, oldest pending age, consumers and its
 * settings.
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
  };
}
