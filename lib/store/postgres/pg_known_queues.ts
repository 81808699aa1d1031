/**
 * The queues a PostgreSQL database holds, as this server last counted them, for `--max-queues`.
 *
 * SQLite's store knows every queue at every commit because it is the only writer. Here other
 * servers create and empty queues too, so the names are read from the database when the store
 * opens and again every few polling intervals (five: 5 s by default): one index skip-scan over
 * `jobs_browse` (one descent per distinct queue, not a scan of the jobs) plus the queues that hold
 * a setting (paused, or a row in `queue_settings`). Between two reads a queue this server enqueues into is added at once, and a queue
 * that lost its last job is forgotten at the next read. Several servers admitting new queues
 * between two reads can pass the limit together by the queues they create in that time.
 *
 * @module
 */

import type { KnownQueues } from "../store.ts";
import type { Sql } from "./pg_driver.ts";

/** The names are read again every this many polling intervals. */
export const KNOWN_QUEUES_POLLS = 5;

/** The queue names of one schema, refreshed from the database. */
export class PgKnownQueues implements KnownQueues {
  readonly #sql: Sql;
  readonly #onError: (error: unknown) => void;
  readonly #refreshMs: number;
  #names = new Set<string>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #reading: Promise<void> | null = null;
  /** Names added while a read is in flight, which that read may not have seen. */
  #addedDuringRead = new Set<string>();

  /**
   * Reads through `sql` (whose search path is the schema) every `refreshMs`; failures of those
   * timed reads go to `onError`.
   */
  constructor(sql: Sql, refreshMs: number, onError: (error: unknown) => void) {
    this.#sql = sql;
    this.#refreshMs = refreshMs;
    this.#onError = onError;
  }

  /** Reads the names now (rejects if that fails), then every refresh interval. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => {
      this.refresh().catch(this.#onError);
    }, this.#refreshMs);
  }

  /** Stops the timer and waits for a read in progress. */
  async stop(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.#reading?.catch(() => {});
  }

  /** Reads the names from the database; concurrent calls share one read. */
  refresh(): Promise<void> {
    this.#reading ??= this.#read().finally(() => this.#reading = null);
    return this.#reading;
  }

  /** Counts `queue` as known from now on (it just received a job here). */
  add(queue: string): void {
    this.#names.add(queue);
    if (this.#reading !== null) this.#addedDuringRead.add(queue);
  }

  /** Whether `queue` was known at the last read, or has received a job here since. */
  has(queue: string): boolean {
    return this.#names.has(queue);
  }

  /** How many queues are known. */
  get size(): number {
    return this.#names.size;
  }

  async #read(): Promise<void> {
    // A loose index scan: each step finds the next queue name past the last in jobs_browse.
    const rows = await this.#sql<{ name: string }[]>`
      WITH RECURSIVE names AS (
        (SELECT queue AS name FROM jobs ORDER BY queue LIMIT 1)
        UNION ALL
        SELECT (SELECT queue FROM jobs WHERE queue > names.name ORDER BY queue LIMIT 1)
        FROM names WHERE names.name IS NOT NULL
      )
      SELECT name FROM names WHERE name IS NOT NULL
      UNION
      SELECT name FROM queues WHERE paused
      UNION
      SELECT name FROM queue_settings`;
    const names = new Set(rows.map((row) => row.name));
    for (const queue of this.#addedDuringRead) names.add(queue);
    this.#addedDuringRead.clear();
    this.#names = names;
  }
}
