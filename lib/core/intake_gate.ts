/**
 * Delivery before intake. When the server itself is the bottleneck — a queue's ready backlog far
 * above the credit its subscribers hold, while some of them have room for more — an enqueue to
 * that queue waits for a moment before it is stored, so the server spends its time delivering
 * what it has instead of accepting more than it can deliver (the backlog, and with it the time a
 * job waits, would otherwise grow without bound). Producers see this only as slower answers,
 * never as errors. Held enqueues go on as delivery proceeds: each claim that leases jobs lets
 * through held enqueues carrying as many jobs (at least one enqueue), so while the backlog is over
 * the bound it cannot grow faster than it is delivered, and once it is back to where it was when it
 * started to grow, everything goes. A backlog that is being worked through, however deep (one that
 * was there before), holds nothing. All go once the backlog is
 * within the bound, and any held enqueue goes after {@linkcode MAX_HOLD_MS}.
 *
 * Nothing is held when the queue has no subscribers (a burst with nobody consuming is accepted at
 * full speed), when every subscriber's credit is in use (slow consumers, not a slow server: the
 * backlog is theirs to work through), while delivery from the queue is stalled (paused), or when
 * the store has no ready count for it (PostgreSQL estimates one only for queues this server
 * enqueues into, see PgStore.backlogHint).
 *
 * @module
 */

/** What the gate reads about a queue, each time it decides. */
export interface IntakeView {
  /** Ready (pending) jobs as of the last commit, or undefined when the store cannot tell. */
  ready(queue: string): number | undefined;
  /** The subscribers' summed prefetch, and the room they have for more jobs now. */
  credit(queue: string): { prefetch: number; room: number };
}

/** The backlog allowed, as a multiple of the subscribers' summed prefetch. */
export const BACKLOG_PER_PREFETCH = 1;

/** Longest time one enqueue is held, ms. */
export const MAX_HOLD_MS = 100;

interface Held {
  jobs: number;
  resolve: () => void;
  /** When it goes regardless (performance.now() ms). */
  until: number;
}

/** A queue's held enqueues, oldest first, and the one timer for the oldest's deadline. */
interface Waiting {
  list: Held[];
  timer: ReturnType<typeof setTimeout> | null;
}

/** Holds enqueues to queues whose delivery lags behind, per {@linkcode IntakeView}. */
export class IntakeGate {
  readonly #view: IntakeView;
  readonly #held = new Map<string, Waiting>();
  readonly #stalled = new Set<string>();
  /**
   * Each queue's ready count after its last two claims that leased jobs (counts change only at
   * commits, so growth shows between two claims, not since the last one).
   */
  readonly #passes = new Map<string, { last: number; before: number }>();
  /** Queues whose gate is closed, and the backlog at which it opens again. */
  readonly #closedAt = new Map<string, number>();

  /** A gate deciding from `view`. */
  constructor(view: IntakeView) {
    this.#view = view;
  }

  /**
   * Null when an enqueue of `jobs` jobs to `queue` may go now; else a promise that resolves when
   * it may.
   */
  admit(queue: string, jobs: number): Promise<void> | null {
    if (!this.#lagging(queue, true)) return null;
    return new Promise((resolve) => {
      const held: Held = { jobs, resolve, until: performance.now() + MAX_HOLD_MS };
      let waiting = this.#held.get(queue);
      if (waiting === undefined) {
        waiting = { list: [], timer: null };
        this.#held.set(queue, waiting);
      }
      waiting.list.push(held);
      // One timer per queue, for the oldest: enqueues are held in arrival order.
      if (waiting.timer === null) this.#arm(queue, waiting);
    });
  }

  /**
   * Looks again after delivery from `queue` moved (a claim committed, a subscriber left):
   * `delivered` is how many jobs that claim leased, which lets held enqueues carrying as many
   * through; all go once the backlog is within bounds. A claim that leased nothing while jobs
   * are ready means delivery is stalled (the queue is paused): nothing is held until a claim
   * leases again.
   */
  recheck(queue: string, delivered?: number): void {
    if (delivered !== undefined && delivered > 0) this.#stalled.delete(queue);
    else if (delivered === 0 && (this.#view.ready(queue) ?? 0) > 0) this.#stalled.add(queue);
    if (delivered !== undefined && delivered > 0) {
      const ready = this.#view.ready(queue);
      const passes = this.#passes.get(queue);
      if (ready === undefined) this.#passes.delete(queue);
      else if (passes === undefined) this.#passes.set(queue, { last: ready, before: 0 });
      else {
        passes.before = passes.last;
        passes.last = ready;
      }
    }
    const lagging = this.#lagging(queue, false);
    const waiting = this.#held.get(queue);
    if (waiting === undefined) return;
    let allowance = lagging ? delivered ?? 0 : Infinity;
    let going = 0;
    while (going < waiting.list.length && allowance > 0) {
      allowance -= waiting.list[going].jobs;
      going++;
    }
    this.#release(queue, waiting, going);
  }

  /** Lets everything go (shutdown). */
  openAll(): void {
    for (const [queue, waiting] of [...this.#held]) this.#release(queue, waiting, Infinity);
  }

  /** Lets the first `n` held enqueues of `queue` go; forgets the queue once none is left. */
  #release(queue: string, waiting: Waiting, n: number): void {
    if (n <= 0) return;
    const released = waiting.list.splice(0, n);
    if (waiting.timer !== null) clearTimeout(waiting.timer);
    waiting.timer = null;
    if (waiting.list.length === 0) this.#held.delete(queue);
    else this.#arm(queue, waiting);
    for (const held of released) held.resolve();
  }

  /** Arms the queue's timer for its oldest held enqueue's deadline. */
  #arm(queue: string, waiting: Waiting): void {
    const wait = Math.max(0, waiting.list[0].until - performance.now());
    waiting.timer = setTimeout(() => {
      waiting.timer = null;
      const now = performance.now();
      let due = 0;
      while (due < waiting.list.length && waiting.list[due].until <= now) due++;
      if (due > 0) this.#release(queue, waiting, due);
      else this.#arm(queue, waiting);
    }, wait);
  }

  /**
   * Whether delivery lags behind intake. The gate closes when the backlog is above the bound and
   * grew between the last two claims that leased jobs, and opens again once it is back to where
   * it was when it started growing (or within the bound): so it cannot grow without bound, while
   * a deep backlog that is being worked through (one that was there before) holds nothing. A new
   * enqueue is held only while some subscriber has room (it waits on the server, not on its own
   * work).
   */
  #lagging(queue: string, arriving: boolean): boolean {
    const ready = this.#view.ready(queue);
    const { prefetch, room } = this.#view.credit(queue);
    if (this.#stalled.has(queue) || ready === undefined || prefetch === 0) {
      this.#closedAt.delete(queue);
      return false;
    }
    if (arriving && room === 0) return false;
    const bound = BACKLOG_PER_PREFETCH * prefetch;
    const closedAt = this.#closedAt.get(queue);
    if (closedAt !== undefined) {
      if (ready > closedAt) return true;
      this.#closedAt.delete(queue);
      return false;
    }
    const before = this.#passes.get(queue)?.before ?? 0;
    if (ready <= bound || ready <= before) return false;
    this.#closedAt.set(queue, Math.max(bound, before));
    return true;
  }
}
