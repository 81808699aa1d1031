/**
 * What the servers sharing one PostgreSQL database tell each other, as {@linkcode Peers}: the
 * news and consumer counts of pg_events.ts, and this server's estimate of the ready backlog of
 * the queues it enqueues into, for the intake gate (core/intake_gate.ts).
 *
 * The estimate: a server cannot count a shared queue's ready jobs at every commit as the SQLite
 * store does, so it keeps, per queue it enqueued into lately, what its last claim counted beyond
 * the jobs it took (at most {@linkcode BACKLOG_COUNT_LIMIT}) plus the ready jobs it enqueued
 * since. A queue that only other servers consume has no claims here to count it: the backlog
 * watch (pg_backlog_watch.ts) counts it every few ms instead, and its counts go to the broker as
 * `backlog` events.
 *
 * @module
 */

import type { Enqueued } from "../../core/job.ts";
import type { Peers, RemoteLeaseEnd, StoreEvent } from "../store.ts";
import { type BacklogCount, PgBacklogWatch } from "./pg_backlog_watch.ts";
import type { Sql } from "./pg_driver.ts";
import { PgEvents } from "./pg_events.ts";
import type { PgWatches } from "./pg_watches.ts";

/**
 * The most pending jobs a claim counts beyond those it takes, for the backlog estimate: enough
 * to tell a backlog of a few rounds of credit from one within bounds, without reading a deep
 * backlog whole.
 */
const BACKLOG_COUNT_LIMIT = 2000;

/** How long after this server's last enqueue into a queue its claims keep counting, ms. */
const INTAKE_WINDOW_MS = 250;

/** How long a count of a queue's backlog is evidence of it for the intake gate, ms. */
const SEEN_FOR_MS = 100;

/** A queue's intake through this server. */
interface Intake {
  /** Pending jobs the last claim counted beyond those it leased. */
  ahead: number;
  /** Ready jobs enqueued here since that claim. */
  since: number;
  /** When `ahead` was counted (performance.now() ms; -Infinity: never). */
  countedAt: number;
  /** When this server last enqueued into it (Date.now() ms). */
  at: number;
}

/** How {@linkcode PgPeers} reaches the database and the store. */
export interface PgPeersOptions {
  /** The pool for LISTEN, heartbeats and backlog counts. */
  sql: Sql;
  /** The store's schema (its channel is named after it). */
  schema: string;
  /** This server's id among the others. */
  instance: string;
  /** How often to poll for news that may have been missed, ms. */
  pollMs: number;
  /** Sends a lease's end to the others with the next commit (best effort). */
  announce: (id: number, token: string, why: RemoteLeaseEnd) => void;
  /** How long a backlog may see no delivery before it counts as stalled, ms (tests). */
  stallMs?: number;
  /** How often a watched queue is counted, ms (tests). */
  watchMs?: number;
  /** Where failures of the background work go. */
  onError: (what: string, error: unknown) => void;
}

/** The {@linkcode Peers} of a PostgreSQL store. */
export class PgPeers implements Peers {
  readonly #events: PgEvents;
  /** Counts the backlog of queues this server feeds and only others consume. */
  readonly #watch: PgBacklogWatch;
  /** Queues this server enqueued into lately: their backlog estimate. */
  readonly #intake = new Map<string, Intake>();
  readonly #announce: PgPeersOptions["announce"];

  /** Peers that hear nothing until {@linkcode PgPeers.start}. */
  constructor(options: PgPeersOptions) {
    this.#announce = options.announce;
    this.#events = new PgEvents({
      sql: options.sql,
      schema: options.schema,
      instance: options.instance,
      pollMs: options.pollMs,
      onError: options.onError,
    });
    this.#watch = new PgBacklogWatch({
      sql: options.sql,
      limit: BACKLOG_COUNT_LIMIT,
      queues: () => this.#watchedQueues(),
      counted: (queue, count) => this.#backlogCounted(queue, count),
      stallMs: options.stallMs,
      intervalMs: options.watchMs,
      onError: (error) => options.onError("count a queue's backlog", error),
    });
    // Subscribers elsewhere that came or changed may make a queue this server feeds the watch's.
    this.#events.listen((event) => {
      if (event.kind === "consumers") this.#watch.poke();
    });
  }

  /** LISTENs and starts the heartbeat (rejects if that fails). */
  start(): Promise<void> {
    return this.#events.start();
  }

  /** Stops the watch and the LISTEN. */
  async close(): Promise<void> {
    await this.#watch.close();
    await this.#events.close();
  }

  /** Tells this server's listeners to look at everything again (news may have been missed). */
  resync(): void {
    this.#events.resync();
  }

  listen(listener: (event: StoreEvent) => void): () => void {
    return this.#events.listen(listener);
  }

  announce(id: number, token: string, why: RemoteLeaseEnd): void {
    this.#announce(id, token, why);
  }

  watch(id: number): void {
    this.#events.watches.watch(id);
  }

  unwatch(id: number): void {
    this.#events.watches.unwatch(id);
  }

  /** Who watches which job (what a batch's NOTIFY tells of ended jobs). */
  get watches(): PgWatches {
    return this.#events.watches;
  }

  setConsumers(queue: string, n: number, prefetch: number): void {
    this.#events.setConsumers(queue, n, prefetch);
    // Its last subscriber here gone, a queue it feeds may be the backlog watch's now.
    if (n === 0) this.#watch.poke();
  }

  consumers(queue: string): number {
    return this.#events.consumers(queue);
  }

  remotePrefetch(queue: string): number {
    return this.#events.remotePrefetch(queue);
  }

  /**
   * The ready jobs of `queue` as this server estimates them: those its last claim counted beyond
   * the ones it leased, plus the ready jobs it enqueued since. Known only for queues this server
   * enqueued into in the last {@linkcode INTAKE_WINDOW_MS}: the others have no intake here to
   * hold back. Other servers' enqueues are seen at the next claim's count. A count older than
   * {@linkcode SEEN_FOR_MS} is not gone by (see {@linkcode PgPeers.backlogSeen}).
   */
  backlogHint(queue: string): number | undefined {
    const intake = this.#intake.get(queue);
    return intake === undefined ? undefined : this.#seenOf(intake) + intake.since;
  }

  /** The pending jobs the last claim or backlog count saw, of {@linkcode PgPeers.backlogHint}. */
  backlogSeen(queue: string): number | undefined {
    const intake = this.#intake.get(queue);
    return intake === undefined ? undefined : this.#seenOf(intake);
  }

  /** Adds an enqueue's new ready jobs to its queue's backlog estimate. */
  enqueued(queue: string, out: Enqueued[]): void {
    let ready = 0;
    for (const e of out) if (e.duplicate === null && e.state === "pending") ready++;
    const intake = this.#intake.get(queue);
    if (intake === undefined) {
      this.#intake.set(queue, { ahead: 0, since: ready, at: Date.now(), countedAt: -Infinity });
    } else {
      intake.since += ready;
      intake.at = Date.now();
    }
    if (this.#fedForOthers(queue)) this.#watch.poke();
  }

  /**
   * How many pending jobs a claim of `total` from `queue` should count, those it takes included:
   * none (0) unless this server enqueued into it lately.
   */
  countLimit(queue: string, total: number): number {
    return this.#recentIntake(queue, Date.now()) === undefined ? 0 : total + BACKLOG_COUNT_LIMIT;
  }

  /** A claim counted `pending` jobs (itself included) and leased `leased` of them. */
  counted(queue: string, pending: number, leased: number): void {
    const intake = this.#intake.get(queue);
    if (intake === undefined) return;
    intake.ahead = Math.max(0, pending - leased);
    intake.since = 0;
    intake.countedAt = performance.now();
  }

  /**
   * The pending jobs the last count saw, or 0 once it is older than {@linkcode SEEN_FOR_MS}: the
   * queue's delivery may have changed since (its consumers left, or came back, while nothing
   * counted it).
   */
  #seenOf(intake: Intake): number {
    return performance.now() - intake.countedAt <= SEEN_FOR_MS ? intake.ahead : 0;
  }

  /** Whether `queue` has consumers on other servers and none on this one. */
  #fedForOthers(queue: string): boolean {
    return this.#events.localConsumers(queue) === 0 && this.#events.remotePrefetch(queue) > 0;
  }

  /**
   * The queues for the backlog watch: those this server enqueued into lately that only other
   * servers consume. A queue whose intake stopped is forgotten.
   */
  #watchedQueues(): string[] {
    const now = Date.now();
    return [...this.#intake.keys()].filter((queue) =>
      this.#recentIntake(queue, now) !== undefined && this.#fedForOthers(queue)
    );
  }

  /** A backlog count of the watch: the estimate starts from it, and the broker hears of it. */
  #backlogCounted(queue: string, count: BacklogCount): void {
    const intake = this.#intake.get(queue);
    if (intake !== undefined) {
      intake.ahead = count.ready;
      intake.since = 0;
      intake.countedAt = performance.now();
    }
    this.#events.tell({
      kind: "backlog",
      queue,
      delivered: count.delivered ?? 0,
      stalled: count.stalled,
    });
  }

  /**
   * The queue's intake if this server enqueued into it in the last {@linkcode INTAKE_WINDOW_MS};
   * a queue whose intake stopped is forgotten.
   */
  #recentIntake(queue: string, now: number): Intake | undefined {
    const intake = this.#intake.get(queue);
    if (intake === undefined || now - intake.at <= INTAKE_WINDOW_MS) return intake;
    this.#intake.delete(queue);
    return undefined;
  }
}
