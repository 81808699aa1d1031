/**
 * Who watches which job: the callers waiting for a job's end (`GET /v1/jobs/{id}?wait_ms`, an
 * enqueue that waits) and the WebSocket connections watching jobs. The broker tells it of every
 * progress report and every end it makes or hears of; nothing here reads the store, and an end
 * of a job nobody watches costs one Map lookup.
 *
 * @module
 */

import type { Job } from "./job.ts";

/** What a watcher hears of a job. */
export type JobEvent =
  /** A lease holder reported progress (`progress` is its JSON text). */
  | {
    readonly kind: "progress";
    readonly id: number;
    readonly progress: string;
    readonly at: number;
  }
  /** The job ended: done, dead or cancelled (as read once it had). */
  | { readonly kind: "ended"; readonly job: Job }
  /**
   * The job is no longer stored, and how it ended cannot be read: deleted by its ack where done
   * jobs are kept no time (before the watch was known there), or by a retention sweep.
   */
  | { readonly kind: "gone"; readonly id: number };

/** The watchers of jobs, by id. */
export class JobWatchers {
  readonly #byId = new Map<number, Set<(event: JobEvent) => void>>();

  /** Calls `listener` with the job's events until the answered function is called. */
  watch(id: number, listener: (event: JobEvent) => void): () => void {
    let set = this.#byId.get(id);
    if (set === undefined) this.#byId.set(id, set = new Set());
    set.add(listener);
    return () => {
      const now = this.#byId.get(id);
      if (now === undefined) return;
      now.delete(listener);
      if (now.size === 0) this.#byId.delete(id);
    };
  }

  /** The ids of the jobs watched. */
  ids(): number[] {
    return [...this.#byId.keys()];
  }

  /** Whether anyone watches job `id`. */
  has(id: number): boolean {
    return this.#byId.has(id);
  }

  /** Tells the job's watchers. */
  tell(id: number, event: JobEvent): void {
    const set = this.#byId.get(id);
    if (set === undefined) return;
    for (const listener of [...set]) listener(event);
  }
}
