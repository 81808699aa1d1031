/**
 * Counts the ready backlog of queues this server feeds while only other servers consume them, for
 * the intake gate (`core/intake_gate.ts`). A server with subscribers of a queue learns its
 * backlog from its own claims (`PgPeers.backlogHint`); one with only producers has no claims to
 * learn from, and without a count it would take jobs at full speed while the consumers' servers
 * fall behind, the backlog and every job's wait growing.
 *
 * While such queues are fed, one statement every {@linkcode WATCH_INTERVAL_MS} counts, for each,
 * its pending jobs (up to a limit) and the jobs that arrived since the last count (by their ids,
 * from any server, leaving out delayed ones). What left the backlog between two counts is the
 * first count plus the arrivals less the second: the other servers' deliveries, whoever fed the
 * queue. It is an estimate: jobs that become pending again under an old id (a lease that ended, a
 * retry coming due) are not arrivals, so they hide as many deliveries. A queue from which nothing
 * left for {@linkcode STALL_MS} while jobs were ready is stalled (paused, its limits at work, or
 * its consumers holding all their credit).
 *
 * @module
 */

import type { Sql } from "./pg_driver.ts";

/** How often the backlog of a watched queue is counted, ms. */
export const WATCH_INTERVAL_MS = 10;

/** With jobs ready and none delivered for this long, a queue's delivery is stalled, ms. */
export const STALL_MS = 50;

/**
 * A count older than this is not compared with the next one, ms (which also bounds the ids the
 * next count passes over for its arrivals to those of a few intervals).
 */
const STALE_MS = 100;

/** After a count that failed, the next one waits this long, ms. */
const RETRY_MS = 1_000;

/** One queue's count. */
export interface BacklogCount {
  /** Pending jobs; Infinity when the count reached the watch's limit (at least that many). */
  ready: number;
  /** Jobs that left the backlog since the last count; null without a recent one to compare. */
  delivered: number | null;
  /** Jobs were ready and none was delivered for {@linkcode STALL_MS} (or the watch's own). */
  stalled: boolean;
}

/** Options of {@linkcode PgBacklogWatch}. */
export interface PgBacklogWatchOptions {
  /** The pool the counts run on. */
  sql: Sql;
  /** The most pending jobs (and arrivals) one count reads of a queue. */
  limit: number;
  /** The queues to count now; empty when none is to be watched (the watch then sleeps). */
  queues: () => string[];
  /** Called with each queue's count as it comes. */
  counted: (queue: string, count: BacklogCount) => void;
  /** Reports a count that failed; must not throw. */
  onError: (error: unknown) => void;
  /** How long without a delivery makes a queue stalled, ms. @default STALL_MS */
  stallMs?: number;
  /** How often a watched queue is counted, ms. @default WATCH_INTERVAL_MS */
  intervalMs?: number;
}

/** What the last count of a queue found. */
interface Last {
  ready: number;
  /** The highest job id at that count. */
  lastId: number;
  /** The highest job id at the count before it (null: none recent). */
  before: number | null;
  /** Jobs (not delayed) with ids above `before`, as that count found them. */
  aboveBefore: number;
  /** When (performance.now() ms). */
  at: number;
  /** When a count last saw a delivery, or the watch began (performance.now() ms). */
  deliveredAt: number;
}

/** Counts the watched queues' backlogs while there are any; see the module's documentation. */
export class PgBacklogWatch {
  readonly #o: PgBacklogWatchOptions;
  readonly #last = new Map<string, Last>();
  #timer: ReturnType<typeof setTimeout> | null = null;
  #counting: Promise<void> | null = null;
  /** When counting may resume after a failure (performance.now() ms). */
  #retryAt = 0;
  #closed = false;

  /** A watch that counts nothing until {@linkcode PgBacklogWatch.poke}d. */
  constructor(options: PgBacklogWatchOptions) {
    this.#o = options;
  }

  /** Counts within an interval if any queue is to be watched (an enqueue). */
  poke(): void {
    if (this.#closed || this.#timer !== null || this.#counting !== null) return;
    const interval = this.#o.intervalMs ?? WATCH_INTERVAL_MS;
    const wait = Math.max(interval, this.#retryAt - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#counting = this.#count()
        .catch((error) => {
          this.#retryAt = performance.now() + RETRY_MS;
          this.#o.onError(error);
        })
        .finally(() => {
          this.#counting = null;
          if (this.#o.queues().length > 0) this.poke();
        });
    }, wait);
  }

  /** Stops counting; answers once a count under way has ended. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    await this.#counting;
  }

  async #count(): Promise<void> {
    const queues = this.#o.queues();
    for (const queue of this.#last.keys()) if (!queues.includes(queue)) this.#last.delete(queue);
    if (queues.length === 0) return;
    const started = performance.now();
    // Arrivals are counted only after a recent count (null: none, and no scan of the ids): the
    // ids above the last count's highest, and again those above the one before it, which also
    // finds the jobs of transactions that had taken their ids but not committed at the last
    // count (a group commit overlaps every count or two).
    const lasts = queues.map((queue) => {
      const last = this.#last.get(queue);
      return last !== undefined && started - last.at <= STALE_MS ? last : undefined;
    });
    const recent = lasts.map((last) => last?.lastId ?? null);
    const older = lasts.map((last) => last?.before ?? null);
    const limit = this.#o.limit;
    // ORDER BY run_at reads jobs_pending_age, which holds every pending job: without it the
    // planner may scan the whole table for a deep backlog.
    const rows = await this.#o.sql<
      { queue: string; ready: number; recent: number; older: number; last_id: number }[]
    >`
      SELECT q.queue,
        (SELECT count(*)::int FROM (
          SELECT 1 FROM jobs WHERE queue = q.queue AND state = 'pending' ORDER BY run_at
          LIMIT ${limit}
        ) p) AS ready,
        (SELECT count(*)::int FROM (
          SELECT 1 FROM jobs WHERE id > q.recent AND queue = q.queue AND state <> 'delayed'
          LIMIT ${limit}
        ) a) AS recent,
        (SELECT count(*)::int FROM (
          SELECT 1 FROM jobs WHERE id > q.older AND queue = q.queue AND state <> 'delayed'
          LIMIT ${limit}
        ) b) AS older,
        (SELECT coalesce(max(id), 0) FROM jobs) AS last_id
      FROM unnest(${queues}::text[], ${recent}::bigint[], ${older}::bigint[])
        AS q(queue, recent, older)`;
    if (this.#closed) return;
    const now = performance.now();
    rows.forEach((row, i) => {
      const last = lasts[i];
      // A count at the limit says only "at least": the backlog is then taken as too deep to
      // count, and compared with no other.
      const ready = row.ready < limit ? row.ready : Infinity;
      const arrived = older[i] !== null ? row.older - last!.aboveBefore : row.recent;
      const comparable = last !== undefined && Number.isFinite(last.ready) &&
        Number.isFinite(ready) && row.recent < limit && row.older < limit;
      const delivered = comparable ? Math.max(0, last.ready + arrived - ready) : null;
      const deliveredAt = !comparable || delivered! > 0 ? now : last.deliveredAt;
      this.#last.set(row.queue, {
        ready,
        lastId: row.last_id,
        before: recent[i],
        aboveBefore: row.recent,
        at: now,
        deliveredAt,
      });
      this.#o.counted(row.queue, {
        ready,
        delivered,
        stalled: ready > 0 && now - deliveredAt >= (this.#o.stallMs ?? STALL_MS),
      });
    });
  }
}
