/**
 * Deadlines of one fixed length, for the timeouts set and cancelled once per request (a body's
 * time to arrive, a connection's idle time). With one length, the order they are set in is the
 * order they fall due, so they wait in a list behind one runtime timer, armed for the earliest
 * (and never keeping the process alive): setting one is a push, cancelling one a flag. A runtime
 * timer set and cleared costs far more (Deno 2.9.6's `setTimeout` builds a Node.js `Timeout`), and
 * a request would need two.
 *
 * @module
 */

/** A deadline that has been set. */
export interface Deadline {
  /** Calls nothing when the time comes; idempotent, and harmless once it has fired. */
  cancel(): void;
}

/** Cancelled entries kept before the list is compacted, besides twice the live ones. */
const SLACK = 1024;

const NOTHING = () => {};

class Entry implements Deadline {
  constructor(
    readonly at: number,
    public onExpiry: () => void,
    readonly queue: DeadlineQueue,
    public live = true,
  ) {}

  cancel(): void {
    if (!this.live) return;
    this.live = false;
    this.onExpiry = NOTHING; // what it holds (a request, a connection) is let go now
    this.queue.cancelled();
  }
}

/** Deadlines `ms` after they are set, each calling its function unless cancelled first. */
export class DeadlineQueue {
  readonly #ms: number;
  #entries: Entry[] = [];
  #head = 0;
  #live = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #fire = () => this.#expire();

  /** Deadlines of `ms` milliseconds. */
  constructor(ms: number) {
    this.#ms = ms;
  }

  /** Deadlines set and neither fired nor cancelled. */
  get pending(): number {
    return this.#live;
  }

  /** Entries held, live or cancelled: at most twice the live ones and 1 024 more. */
  get held(): number {
    return this.#entries.length - this.#head;
  }

  /** Calls `onExpiry` once the queue's length of time has passed, unless cancelled first. */
  set(onExpiry: () => void): Deadline {
    const entry = new Entry(performance.now() + this.#ms, onExpiry, this);
    this.#entries.push(entry);
    this.#live++;
    if (this.#timer === undefined) this.#arm(entry.at);
    return entry;
  }

  /** One of the entries was cancelled (called by the entry). */
  cancelled(): void {
    this.#live--;
    if (this.#live === 0) {
      // The timer stays armed: the next deadline falls due after it, so it serves that one too
      // instead of a new timer per request while requests come one at a time.
      this.#entries = [];
      this.#head = 0;
    } else if (this.#entries.length - this.#head > 2 * this.#live + SLACK) {
      this.#entries = this.#entries.slice(this.#head).filter((entry) => entry.live);
      this.#head = 0;
    }
  }

  #arm(at: number): void {
    const timer = setTimeout(this.#fire, Math.max(0, at - performance.now()));
    // A deadline is no reason to stay alive: the server's listener is. (Deno's setTimeout
    // answers a Node.js Timeout here, a number in a browser-like runtime.)
    if (typeof timer === "object") (timer as { unref(): void }).unref();
    else Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    const due: Entry[] = [];
    const entries = this.#entries;
    while (this.#head < entries.length) {
      const entry = entries[this.#head];
      if (entry.live && entry.at > now) break;
      this.#head++;
      if (entry.live) due.push(entry);
    }
    if (this.#head === entries.length) {
      this.#entries = [];
      this.#head = 0;
    } else {
      if (this.#head > SLACK && this.#head * 2 > entries.length) {
        this.#entries = entries.slice(this.#head);
        this.#head = 0;
      }
      this.#arm(this.#entries[this.#head].at);
    }
    // Each in its turn, as separate timers would be: one that an earlier one cancelled is not
    // called. (Unlike separate timers, no microtasks run between them.)
    for (const entry of due) {
      if (!entry.live) continue;
      entry.live = false;
      this.#live--;
      try {
        entry.onExpiry();
      } catch (error) {
        // As an error thrown by a timer's callback would be: reported, the others still run.
        reportError(error);
      }
    }
  }
}

/** The queues by length, shared by every user of one length in the process. */
const queues = new Map<number, DeadlineQueue>();

/** The process's queue of deadlines `ms` long, made at the first ask. */
export function deadlinesOf(ms: number): DeadlineQueue {
  let queue = queues.get(ms);
  if (queue === undefined) queues.set(ms, queue = new DeadlineQueue(ms));
  return queue;
}
