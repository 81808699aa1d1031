/**
 * Collects the calls of one tick and hands them over together, with no configured linger and no
 * timer: the batch is flushed in a microtask once {@linkcode QUIET_HOPS} microtask hops in a row
 * passed without a call being added. Calls made by code resumed from the same event (one reply resolving many promises, a
 * frame starting many handlers) join one batch even when they arrive at different depths of
 * `await`; a lone call waits only a few microtasks. Timers are no use here: `setTimeout(0)` costs
 * a millisecond or more.
 *
 * @module
 */

/**
 * Hops without a new call before the batch goes: calls separated by a few `await`s (each one
 * hop, more for an async function's return) still meet.
 */
const QUIET_HOPS = 8;

/** After this many hops in all, the batch goes anyway. */
const MAX_HOPS = 256;

/** A batch of calls made in the same tick. */
export class TickBatch<T> {
  readonly #flush: (items: T[]) => void;
  #items: T[] = [];
  #scheduled = false;

  /** `flush` receives each tick's calls, in the order they were added. */
  constructor(flush: (items: T[]) => void) {
    this.#flush = flush;
  }

  /** Adds a call to this tick's batch. */
  add(item: T): void {
    this.#items.push(item);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.#hop(this.#items.length, 0, 0);
  }

  /** Calls added and not yet flushed. */
  get size(): number {
    return this.#items.length;
  }

  #hop(seen: number, quiet: number, hops: number): void {
    queueMicrotask(() => {
      const size = this.#items.length;
      const still = size === seen ? quiet + 1 : 0;
      if (still < QUIET_HOPS && hops < MAX_HOPS) {
        this.#hop(size, still, hops + 1);
        return;
      }
      this.#scheduled = false;
      const items = this.#items;
      this.#items = [];
      this.#flush(items);
    });
  }
}
