/**
 * Delivery before intake. When the server itself is the bottleneck — a queue's ready backlog above
 * a quarter of the credit its subscribers hold, while some of them have room for more — an
 * enqueue to that queue waits for a moment before it is stored, so the server spends its time
 * delivering what it has instead of accepting more than it can deliver (the backlog, and with it
 * the time a job waits, would otherwise grow, or stay wherever a burst left it). Producers see
 * this only as slower answers, never as errors. Held enqueues go on as delivery proceeds: each
 * claim that leases jobs lets through held enqueues carrying as many jobs as it leased less the
 * backlog's excess over the bound, so the backlog shrinks back to the bound and stays there; all
 * go once it is within the bound, and any held enqueue goes after {@linkcode MAX_HOLD_MS}.
 *
 * A deep backlog (from {@linkcode DEEP_BACKLOG_PER_PREFETCH} rounds of credit: one a burst left
 * while nobody consumed, or jobs of lower priority that new ones overtake) is only kept from
 * growing: the gate closes when it grew between the last two claims that leased jobs, lets held
 * enqueues in at the pace of delivery, and opens once the backlog is back to where it began.
 * Holding producers until it is worked down would stall them for as long as that takes, while the
 * jobs they send may be the first to go (and their consumers, starved of them, would work on the
 * old ones meanwhile).
 *
 * Nothing is held when the queue has no subscribers (a burst with nobody consuming is accepted at
 * full speed), when every subscriber's credit is in use (slow consumers, not a slow server: the
 * backlog is theirs to work through), while the queue's own state holds delivery back (its last
 * claim got fewer jobs than it asked for and jobs stayed ready: paused, or its concurrency, rate
 * or group limit at work, which producers must not be slowed down to), or when the store has no ready
 * count for it (PostgreSQL estimates one only for queues this server enqueues into, see
 * PgPeers.backlogHint).
 *
 * Servers sharing a PostgreSQL database count each other's subscribers: the bound is measured
 * against the prefetch of all of them. A server feeding a queue that only others consume learns
 * of their deliveries from counts of the backlog every few ms (pg_backlog_watch.ts), which let
 * held enqueues go as its own claims would. It holds only once a count has seen the backlog over
 * the bound (what it enqueued since may have been delivered already: an idle queue's jobs are,
 * within a few ms, and holding them would only delay them), and for {@linkcode ARMED_MS} after.
 * It cannot see whether the other servers' credit is in use, so it holds nothing once their
 * delivery stalls (nothing delivered for a while with jobs ready) or the backlog is deep.
 *
 * @module
 */

/** What the gate reads about a queue, each time it decides. */
export interface IntakeView {
  /** Ready (pending) jobs as of the last commit, or undefined when the store cannot tell. */
  ready(queue: string): number | undefined;
  /**
   * When `ready` is an estimate that adds the jobs enqueued here since the store last counted the
   * backlog (PostgreSQL: some may have been delivered already), the part that count saw; undefined
   * when `ready` is exact.
   */
  seen(queue: string): number | undefined;
  /**
   * This server's subscribers' summed prefetch and the room they have for more jobs now, and the
   * summed prefetch of the queue's subscribers on other servers (whose room is not known here).
   */
  credit(queue: string): { prefetch: number; room: number; remote: number };
}

/** The backlog allowed, as a multiple of the subscribers' summed prefetch. */
export const BACKLOG_PER_PREFETCH = 0.25;

/**
 * The backlog allowed for subscribers on other servers, as a multiple of their summed prefetch:
 * a whole round, since what they deliver is seen here only at the next count of the backlog, and
 * what is let in reaches them only after its commit, a backlog of a quarter round would run dry
 * before either.
 */
export const REMOTE_BACKLOG_PER_PREFETCH = 1;

/**
 * From this many times the subscribers' summed prefetch, a backlog is deep: one left by a burst
 * nobody consumed, or jobs of lower priority that new ones overtake. Holding producers until it
 * is worked down would stall them for as long as that takes, so a deep backlog is only kept from
 * growing.
 */
export const DEEP_BACKLOG_PER_PREFETCH = 16;

/**
 * For how long after a count of the backlog last saw it over the bound a server whose subscribers
 * of the queue are all on other servers judges its estimate of the backlog (that count plus the
 * jobs it accepted since) against the bound, ms. Before any such count it holds nothing: the jobs
 * accepted since the last count may have been delivered already (an idle queue's are).
 */
export const ARMED_MS = 250;

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
  /** Queues whose delivery their own state holds back (paused, limits): nothing is held. */
  readonly #stalled = new Set<string>();
  /**
   * Each queue's ready count after its last two claims that leased jobs (counts change only at
   * commits, so growth shows between two claims, not since the last one).
   */
  readonly #passes = new Map<string, { last: number; before: number }>();
  /** Deep backlogs that grew, and the level they are held back to. */
  readonly #grewFrom = new Map<string, number>();
  /**
   * Queues only other servers consume, and when a count last saw their backlog over the bound
   * (performance.now() ms): see {@linkcode ARMED_MS}.
   */
  readonly #overSeenAt = new Map<string, number>();

  /** A gate deciding from `view`. */
  constructor(view: IntakeView) {
    this.#view = view;
  }

  /**
   * Null when an enqueue of `jobs` jobs to `queue` may go now; else a promise that resolves when
   * it may.
   */
  admit(queue: string, jobs: number): Promise<void> | null {
    if (this.#hold(queue, true) === null) return null;
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
   * Looks again after delivery from `queue` moved (a claim committed, a subscriber left). With
   * the claim's figures: `delivered` jobs leased let held enqueues through as the backlog allows
   * (all go once it is within bounds); a claim that got fewer than it `asked` for while jobs stay
   * ready was held back by the queue itself (paused, or its concurrency, rate or group limit), and
   * nothing is held until a claim gets all it asked for again.
   */
  recheck(queue: string, claim?: { delivered: number; asked: number }): void {
    if (claim !== undefined) {
      const ready = this.#view.ready(queue);
      if (claim.delivered < claim.asked && (ready ?? 0) > 0) this.#stalled.add(queue);
      else this.#stalled.delete(queue);
      if (claim.delivered > 0) {
        const passes = this.#passes.get(queue);
        if (ready === undefined) this.#passes.delete(queue);
        else if (passes === undefined) this.#passes.set(queue, { last: ready, before: 0 });
        else {
          passes.before = passes.last;
          passes.last = ready;
        }
      }
    }
    // Judged at every claim, held enqueues or not: a deep backlog's growth shows between claims.
    const hold = this.#hold(queue, false);
    const waiting = this.#held.get(queue);
    if (waiting === undefined) return;
    // A claim lets in what it delivered less what the backlog is over the bound, so the backlog
    // shrinks to it; a deep one's growth only at the pace of delivery (draining it would starve
    // the consumers of the new jobs while they work on the old). Once nothing is over, all go.
    const delivered = claim?.delivered ?? 0;
    let allowance = hold === null ? Infinity : hold.deep ? delivered : delivered - hold.over;
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
   * Whether to hold enqueues to `queue`, and by how many jobs its ready backlog is over where the
   * gate holds it; null when nothing is to be held. Within {@linkcode DEEP_BACKLOG_PER_PREFETCH}
   * rounds of credit, the bound is {@linkcode BACKLOG_PER_PREFETCH} of the subscribers' summed
   * prefetch; a deeper backlog is held only once it grows (between the last two claims that leased
   * jobs), until it is back to where it began. Nothing is held without subscribers or a ready
   * count, while the queue itself holds delivery back, or (for a new enqueue) while no subscriber
   * has room: then it waits on its consumers, not on the server. Subscribers on other servers
   * count towards the bound; with none here their room is taken for granted (a stalled delivery
   * is seen by the backlog watch instead), but only once a count saw the backlog over the bound
   * (and for {@linkcode ARMED_MS} after), and a deep backlog only they consume is not held
   * (whether it is theirs to work through cannot be seen here).
   */
  #hold(queue: string, arriving: boolean): { over: number; deep: boolean } | null {
    const ready = this.#view.ready(queue);
    const { prefetch: local, room, remote } = this.#view.credit(queue);
    const prefetch = local + remote;
    if (this.#stalled.has(queue) || ready === undefined || prefetch === 0) {
      this.#grewFrom.delete(queue);
      this.#overSeenAt.delete(queue);
      return null;
    }
    // Room is known only for this server's subscribers; with none here, the others' delivery is
    // judged by the backlog watch's counts (a stalled delivery opens the gate).
    if (arriving && local > 0 && room === 0) return null;
    const bound = BACKLOG_PER_PREFETCH * local + REMOTE_BACKLOG_PER_PREFETCH * remote;
    // Without subscribers here, no claim of its own tells this server what was delivered: only
    // the backlog watch's counts do. Jobs enqueued since the last count may be gone already (an
    // idle queue's are, within a few ms), so only a count that saw the backlog over the bound is
    // reason to hold; from it on, for a while, the estimate is judged as for subscribers here.
    if (local === 0) {
      const now = performance.now();
      if ((this.#view.seen(queue) ?? ready) > bound) this.#overSeenAt.set(queue, now);
      const at = this.#overSeenAt.get(queue);
      if (at === undefined || now - at > ARMED_MS) {
        this.#overSeenAt.delete(queue);
        return null;
      }
    }
    if (ready <= DEEP_BACKLOG_PER_PREFETCH * prefetch) {
      this.#grewFrom.delete(queue);
      return ready > bound ? { over: ready - bound, deep: false } : null;
    }
    if (local === 0) return null;
    let from = this.#grewFrom.get(queue);
    if (from === undefined) {
      const before = this.#passes.get(queue)?.before ?? 0;
      if (ready <= before) return null; // a deep backlog being worked through
      from = Math.max(bound, before);
      this.#grewFrom.set(queue, from);
    }
    if (ready > from) return { over: ready - from, deep: true };
    this.#grewFrom.delete(queue);
    return null;
  }
}
