/**
 * What the SQLite store knows of its queues without asking the database: per queue its jobs by
 * state, whether it is paused, and its settings. The store is the sole writer of its file, so
 * these are exact as of the last commit, and a claim, an enqueue or a stats call reads them
 * without a query.
 *
 * A transaction's changes are staged as it makes them (`move`, `stageSettings`) and applied at
 * its commit; a rollback drops them, and an undone savepoint drops those made since its mark.
 * A pause is applied by the store once its write has committed.
 *
 * @module
 */

import type { JobState } from "../../core/job.ts";
import { DEFAULT_QUEUE_SETTINGS, type QueueSettings } from "../../core/queue_settings.ts";
import { zeroCounts } from "../job_row.ts";
import { statsNames } from "../queue_stats.ts";
import type { KnownQueues, StateCounts } from "../store.ts";

/** A job leaving one state of a queue for another (null: in or out of the table). */
type Move = [queue: string, from: JobState | null, to: JobState | null];

/** The SQLite store's queues as of its last commit, and its open transaction's changes. */
export class QueueMirror {
  readonly #counts = new Map<string, StateCounts>();
  readonly #paused = new Set<string>();
  /** Every queue's settings as committed; queues without settings are absent. */
  readonly #settings = new Map<string, QueueSettings>();
  #moves: Move[] = [];
  /** Settings written by the open transaction (null: removed). */
  #settingsMoves: [queue: string, settings: QueueSettings | null][] = [];
  #markAt = 0;
  #settingsMarkAt = 0;
  /** A view of the maps, which change in place: made once, asked at every enqueue. */
  readonly known: KnownQueues = this.#knownView();

  /** Takes a count read at open: `n` jobs of `queue` in `state`. */
  loadCount(queue: string, state: JobState, n: number): void {
    this.#countsOf(queue)[state] = n;
  }

  /** Takes settings read at open. */
  loadSettings(queue: string, settings: QueueSettings): void {
    this.#settings.set(queue, settings);
  }

  /** Records a committed pause or resume. */
  setPaused(queue: string, paused: boolean): void {
    if (paused) this.#paused.add(queue);
    else this.#paused.delete(queue);
  }

  /** Stages a job of `queue` going from one state to another in the open transaction. */
  move(queue: string, from: JobState | null, to: JobState | null): void {
    this.#moves.push([queue, from, to]);
  }

  /** Stages new settings of `queue` (null: the defaults) in the open transaction. */
  stageSettings(queue: string, settings: QueueSettings | null): void {
    this.#settingsMoves.push([queue, settings]);
  }

  /** Applies what the transaction staged: it committed. */
  commit(): void {
    for (const [queue, from, to] of this.#moves) {
      const counts = this.#countsOf(queue);
      if (from !== null) counts[from]--;
      if (to !== null) counts[to]++;
    }
    // A queue whose last job is gone is forgotten (a pause or settings keep it known); only a
    // queue a job left can be.
    for (const [queue, from] of this.#moves) if (from !== null) this.#forgetIfEmpty(queue);
    this.#moves = [];
    for (const [queue, settings] of this.#settingsMoves) {
      if (settings === null) this.#settings.delete(queue);
      else this.#settings.set(queue, settings);
    }
    this.#settingsMoves = [];
  }

  /** Drops what the transaction staged: it rolled back. */
  rollback(): void {
    this.#moves = [];
    this.#settingsMoves = [];
  }

  /** Marks where a savepoint begins. */
  mark(): void {
    this.#markAt = this.#moves.length;
    this.#settingsMarkAt = this.#settingsMoves.length;
  }

  /** Drops what was staged since the mark: the savepoint was undone. */
  undo(): void {
    this.#moves.length = this.#markAt;
    this.#settingsMoves.length = this.#settingsMarkAt;
  }

  /** The committed counts of `queue`, or undefined for a queue without jobs. Never modify. */
  counts(queue: string): Readonly<StateCounts> | undefined {
    return this.#counts.get(queue);
  }

  /** The queues holding jobs, with their committed counts. */
  withJobs(): IterableIterator<[string, Readonly<StateCounts>]> {
    return this.#counts.entries();
  }

  /**
   * How many of `queue`'s jobs are leased inside the open transaction: the committed count and
   * the transaction's moves so far.
   */
  leasedNow(queue: string): number {
    let n = this.#counts.get(queue)?.leased ?? 0;
    for (const [q, from, to] of this.#moves) {
      if (q !== queue) continue;
      if (from === "leased") n--;
      if (to === "leased") n++;
    }
    return n;
  }

  /** Whether `queue` is paused. */
  isPaused(queue: string): boolean {
    return this.#paused.has(queue);
  }

  /**
   * A queue's settings as committed: what a claim or an enqueue inside the store's transaction
   * applies; a change made in the same transaction shows from its commit on. Never modify.
   */
  settingsOf(queue: string): Readonly<QueueSettings> {
    return this.#settings.get(queue) ?? DEFAULT_QUEUE_SETTINGS;
  }

  /** The queues `stats(queue)` answers (see queue_stats.ts). */
  statsNames(queue: string | undefined): string[] {
    return statsNames(queue, this.#counts.keys(), this.#paused, this.#settings.keys());
  }

  /** Forgets the counts of `queue` if it holds no job. */
  #forgetIfEmpty(queue: string): void {
    const c = this.#counts.get(queue);
    if (
      c !== undefined && c.pending === 0 && c.delayed === 0 && c.leased === 0 && c.done === 0 &&
      c.dead === 0 && c.cancelled === 0
    ) this.#counts.delete(queue);
  }

  #countsOf(queue: string): StateCounts {
    let counts = this.#counts.get(queue);
    if (counts === undefined) {
      counts = zeroCounts();
      this.#counts.set(queue, counts);
    }
    return counts;
  }

  #knownView(): KnownQueues {
    const counts = this.#counts, paused = this.#paused, settings = this.#settings;
    return {
      has: (queue) => counts.has(queue) || paused.has(queue) || settings.has(queue),
      get size() {
        let n = counts.size;
        for (const queue of paused) if (!counts.has(queue)) n++;
        for (const queue of settings.keys()) {
          if (!counts.has(queue) && !paused.has(queue)) n++;
        }
        return n;
      },
    };
  }
}
