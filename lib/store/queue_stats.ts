/**
 * A queue's numbers as both engines answer them from `stats()`: which queues are known, in which
 * order, and what a queue without jobs, settings or groups shows. Each engine gathers the facts
 * its own way (SQLite from what it keeps in memory, PostgreSQL with a few grouped queries); the
 * answer is assembled here.
 *
 * @module
 */

import { DEFAULT_QUEUE_SETTINGS, type QueueSettings } from "../core/queue_settings.ts";
import { zeroCounts } from "./job_row.ts";
import type { GroupCounts, QueueCounts, StateCounts } from "./store.ts";

/** What an engine found of one queue; whatever it did not find takes the empty value. */
export interface QueueFacts {
  /** Its jobs by state (none: no jobs). */
  counts?: Readonly<StateCounts>;
  /** Whether delivery is paused. */
  paused: boolean;
  /** When its oldest pending job became available (read only when it has pending jobs). */
  oldest_pending_at: () => number | null;
  /** Its settings (none: the defaults); shared, never modified. */
  settings?: Readonly<QueueSettings>;
  /** Its groups, counted (none: no groups). */
  groups?: GroupCounts;
  /** Whether this server's last claim of it was held back by its rate. */
  rate_held: boolean;
}

/**
 * The queues a `stats()` call answers: `queue` alone when one is asked for (known or not), else
 * every known queue (holding jobs, paused, or with settings) by name in byte order, which the
 * lists' pages rely on.
 */
export function statsNames(
  queue: string | undefined,
  withJobs: Iterable<string>,
  paused: Iterable<string>,
  withSettings: Iterable<string>,
): string[] {
  if (queue !== undefined) return [queue];
  return [...new Set([...withJobs, ...paused, ...withSettings])].sort();
}

/** The answer for queue `name` from what was found of it. */
export function queueCounts(name: string, facts: QueueFacts): QueueCounts {
  const counts = { ...(facts.counts ?? zeroCounts()) };
  return {
    name,
    paused: facts.paused,
    counts,
    oldest_pending_at: counts.pending === 0 ? null : facts.oldest_pending_at(),
    // Shared, not copied: stored settings are replaced, never changed in place, and a stats call
    // over tens of thousands of queues should not copy them all.
    settings: facts.settings ?? DEFAULT_QUEUE_SETTINGS,
    groups: facts.groups ?? { waiting: 0, leased: 0, full: 0, rate_held: 0, top_held: [] },
    rate_held: facts.rate_held,
  };
}
