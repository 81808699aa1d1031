/**
 * tegami's metrics: what `/metrics` shows. Counters and histograms are fed by the broker (as its
 * {@linkcode BrokerObserver}), the HTTP layer and group commit; per-queue gauges are read from
 * the store when scraped.
 *
 * @module
 */

import type { BrokerObserver, LeaseOutcome } from "../core/broker.ts";
import { type Counter, type Histogram, LATENCY_BUCKETS, Registry } from "./metrics.ts";
import type { QueueCounts, ScheduleCounts } from "../store/store.ts";

/** What a scrape reads besides the counters. */
export interface ScrapeInput {
  /** Per-queue stats. */
  queues: QueueCounts[];
  /** Consumers per queue. */
  consumers: (queue: string) => number;
  /** Open WebSocket connections. */
  connections: number;
  /** Open client connections of every kind (HTTP and WebSocket). */
  clientConnections?: number;
  /** Now, ms. */
  now: number;
  /** Bytes of the database file and its WAL, when the store has files. */
  files: { database: number; wal: number } | null;
  /** SQL statements the store has run since start, when it counts them. */
  statements?: number;
  /** Schedules in the store, running and paused. */
  schedules?: ScheduleCounts;
  /**
   * Queues given their own series: the busiest this many (most jobs not yet finished); every
   * queue still counts in the all-queue totals. @default all
   */
  topQueues?: number;
}

/** The `n` busiest queues: most pending, delayed, leased and dead jobs, then by name. */
export function busiestQueues(queues: QueueCounts[], n: number): QueueCounts[] {
  if (queues.length <= n) return queues;
  return byLoad(queues).slice(0, n);
}

/** A copy of `queues`, busiest first (jobs pending, delayed, leased and dead), then by name. */
export function byLoad(queues: readonly QueueCounts[]): QueueCounts[] {
  const load = (s: QueueCounts) =>
    s.counts.pending + s.counts.delayed + s.counts.leased + s.counts.dead;
  return [...queues].sort((a, b) =>
    load(b) - load(a) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
  );
}

/** One queue's job counters since the server started (the dashboard's throughput). */
export interface QueueTotals {
  /** The queue. */
  queue: string;
  /** Jobs stored by enqueues. */
  enqueued: number;
  /** Deliveries (leases taken). */
  delivered: number;
  /** Jobs completed by an ack. */
  acked: number;
  /** Deliveries that ended in a nack, an expired lease or the dead letters. */
  failed: number;
}

/** Every metric tegami exports. */
export class ServerMetrics implements BrokerObserver {
  readonly #registry = new Registry();
  #scrape: ScrapeInput | null = null;
  #allQueues: QueueCounts[] = [];
  /** Queues with any counter moved since start, for {@linkcode ServerMetrics.queueTotals}. */
  readonly #seen = new Set<string>();
  readonly #enqueued: Counter;
  readonly #scheduleJobs: Counter;
  readonly #deduplicated: Counter;
  readonly #delivered: Counter;
  readonly #outcomes: Record<LeaseOutcome, Counter>;
  readonly #waited: Histogram;
  readonly #held: Histogram;
  readonly #intakeHold: Histogram;
  readonly #http: Histogram;
  readonly #requests: Counter;
  readonly #batch: Histogram;
  readonly #commit: Histogram;
  readonly #walSync: Histogram;
  readonly #commitFailures: Counter;
  readonly #lag: Histogram;
  readonly #clockJumps: Counter;
  readonly #connectionEvents: Counter;

  /** Registers every family. */
  constructor() {
    const r = this.#registry;
    const q = ["queue"];
    const snapshot = () => this.#scrape!;
    const perQueue = (pick: (s: QueueCounts) => number) => () =>
      snapshot().queues.map((s): [Record<string, string>, number] => [{ queue: s.name }, pick(s)]);
    r.gauge(
      "tegami_jobs",
      "Jobs stored, by queue and state.",
      () =>
        snapshot().queues.flatMap((s) =>
          Object.entries(s.counts).map((
            [state, n],
          ): [Record<string, string>, number] => [{ queue: s.name, state }, n])
        ),
    );
    r.gauge("tegami_queues", "Queues known (with jobs, settings or consumers).", () => [[
      {},
      this.#allQueues.length,
    ]]);
    r.gauge(
      "tegami_all_queues_jobs",
      "Jobs stored in all queues together, by state (per-queue series cover the busiest only).",
      () => {
        const sums: Record<string, number> = {};
        for (const s of this.#allQueues) {
          for (const [state, n] of Object.entries(s.counts)) sums[state] = (sums[state] ?? 0) + n;
        }
        return Object.entries(sums).map(([state, n]): [Record<string, string>, number] => [
          { state },
          n,
        ]);
      },
    );
    r.gauge(
      "tegami_oldest_pending_age_seconds",
      "How long the oldest pending job has been available, by queue.",
      perQueue((s) =>
        s.oldest_pending_at === null ? 0 : Math.max(0, snapshot().now - s.oldest_pending_at) / 1000
      ),
    );
    r.gauge(
      "tegami_queue_paused",
      "1 while delivery from the queue is paused.",
      perQueue((s) => s.paused ? 1 : 0),
    );
    r.gauge(
      "tegami_consumers",
      "Subscriptions and waiting long-polls, by queue.",
      perQueue((s) => snapshot().consumers(s.name)),
    );
    r.gauge(
      "tegami_websocket_connections",
      "Open WebSocket connections.",
      () => [[{}, snapshot().connections]],
    );
    r.gauge("tegami_database_bytes", "Size of the database file.", () => {
      const files = snapshot().files;
      return files === null ? [] : [[{}, files.database]];
    });
    r.gauge("tegami_wal_bytes", "Size of the write-ahead log.", () => {
      const files = snapshot().files;
      return files === null ? [] : [[{}, files.wal]];
    });
    r.gauge(
      "tegami_memory_bytes",
      "Memory of the server process, by kind: rss (resident), heap_total and heap_used " +
        "(the JavaScript heap), external (memory of JavaScript objects outside that heap).",
      () => {
        const m = Deno.memoryUsage();
        return [
          [{ kind: "rss" }, m.rss],
          [{ kind: "heap_total" }, m.heapTotal],
          [{ kind: "heap_used" }, m.heapUsed],
          [{ kind: "external" }, m.external],
        ];
      },
    );
    r.countedElsewhere(
      "tegami_store_statements_total",
      "SQL statements the store has run since start (BEGIN and COMMIT included).",
      () => {
        const n = snapshot().statements;
        return n === undefined ? [] : [[{}, n]];
      },
    );
    r.gauge("tegami_schedules", "Schedules (recurring jobs), by state: active or paused.", () => {
      const n = snapshot().schedules;
      return n === undefined
        ? []
        : [[{ state: "active" }, n.active], [{ state: "paused" }, n.paused]];
    });
    this.#scheduleJobs = r.counter(
      "tegami_schedule_jobs_total",
      "Jobs enqueued by schedules' ticks on this server.",
    );
    this.#enqueued = r.counter("tegami_enqueued_total", "Jobs stored by enqueues.", q);
    this.#deduplicated = r.counter(
      "tegami_deduplicated_total",
      "Enqueues answered with an existing job's id (same key).",
      q,
    );
    this.#delivered = r.counter("tegami_delivered_total", "Deliveries (leases taken).", q);
    this.#outcomes = {
      acked: r.counter("tegami_acked_total", "Jobs completed by an ack.", q),
      nacked: r.counter("tegami_nacked_total", "Nacks that scheduled a retry.", q),
      expired: r.counter(
        "tegami_expired_total",
        "Leases that expired and returned the job to pending.",
        q,
      ),
      released: r.counter(
        "tegami_released_total",
        "Leases given back because the consumer went away.",
        q,
      ),
      dead: r.counter("tegami_dead_lettered_total", "Jobs moved to the dead letters.", q),
      cancelled: r.counter("tegami_cancelled_total", "Jobs cancelled before finishing.", q),
    };
    this.#waited = r.histogram(
      "tegami_delivery_wait_seconds",
      "Time from a job becoming available to its delivery.",
      LATENCY_BUCKETS,
      q,
    );
    this.#held = r.histogram(
      "tegami_processing_seconds",
      "Time from delivery to ack, nack, expiry or cancel.",
      LATENCY_BUCKETS,
      q,
    );
    this.#intakeHold = r.histogram(
      "tegami_intake_hold_seconds",
      "How long an enqueue waited before it was stored while delivery lagged behind intake.",
      LATENCY_BUCKETS,
      q,
    );
    this.#http = r.histogram(
      "tegami_http_request_duration_seconds",
      "HTTP request duration, by route and status class.",
      LATENCY_BUCKETS,
      ["route", "status"],
    );
    this.#requests = r.counter(
      "tegami_http_requests_total",
      "HTTP requests answered, by route and status.",
      ["route", "status"],
    );
    this.#batch = r.histogram(
      "tegami_commit_batch_size",
      "Operations per committed transaction (group commit).",
      [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096],
    );
    this.#commit = r.histogram(
      "tegami_commit_duration_seconds",
      "Time to run and commit one group-committed transaction (on SQLite with --sync full, " +
        "without the fsync that follows it: tegami_wal_fsync_duration_seconds).",
      LATENCY_BUCKETS,
    );
    this.#walSync = r.histogram(
      "tegami_wal_fsync_duration_seconds",
      "Time of each fsync of SQLite's write-ahead log (--sync full); one covers every commit " +
        "made before it began, and their callers are answered when it ends.",
      LATENCY_BUCKETS,
    );
    this.#lag = r.histogram(
      "tegami_event_loop_lag_seconds",
      "How late a 25 ms timer fires: stalls of the server's single JavaScript thread.",
      LATENCY_BUCKETS,
    );
    r.gauge(
      "tegami_connections",
      "Open client connections, HTTP and WebSocket.",
      () => {
        const n = snapshot().clientConnections;
        return n === undefined ? [] : [[{}, n]];
      },
    );
    this.#connectionEvents = r.counter(
      "tegami_connection_events_total",
      "Connection events: accepted, refused_limit, evicted_idle, timed_out_header, " +
        "timed_out_idle, timed_out_write, accept_error, cut_at_shutdown.",
      ["event"],
    );
    this.#clockJumps = r.counter(
      "tegami_clock_jumps_total",
      "Wall-clock jumps noticed (wall and monotonic clocks disagreeing by 2 s or more).",
    );
    this.#commitFailures = r.counter(
      "tegami_commit_failures_total",
      "Transactions that could not be committed (every caller got 503 unavailable).",
    );
  }

  /** Counts jobs stored and duplicates refused by one enqueue into `queue`. */
  enqueued(queue: string, created: number, deduplicated: number): void {
    this.#seen.add(queue);
    if (created > 0) this.#enqueued.inc([queue], created);
    if (deduplicated > 0) this.#deduplicated.inc([queue], deduplicated);
  }

  /** Counts the jobs one schedule's ticks enqueued here. */
  scheduleJobs(n: number): void {
    if (n > 0) this.#scheduleJobs.inc([], n);
  }

  /** Counts deliveries from `queue`, with how long each job had waited to be ready. */
  delivered(queue: string, waitedMs: number[]): void {
    this.#seen.add(queue);
    this.#delivered.inc([queue], waitedMs.length);
    for (const ms of waitedMs) this.#waited.observe([queue], ms / 1000);
  }

  /** Counts a lease of `queue` that ended with `outcome`, held for `heldMs` if known. */
  settled(queue: string, outcome: LeaseOutcome, heldMs: number | null): void {
    this.#seen.add(queue);
    this.#outcomes[outcome].inc([queue]);
    if (heldMs !== null) this.#held.observe([queue], heldMs / 1000);
  }

  /** Records an enqueue to `queue` that the intake gate held for `ms`. */
  intakeHeld(queue: string, ms: number): void {
    this.#seen.add(queue);
    this.#intakeHold.observe([queue], ms / 1000);
  }

  /** Records an answered HTTP request. */
  request(route: string, status: number, ms: number): void {
    this.#http.observe([route, `${Math.floor(status / 100)}xx`], ms / 1000);
    this.#requests.inc([route, String(status)]);
  }

  /** Records one event-loop lag sample, ms. */
  eventLoopLag(ms: number): void {
    this.#lag.observe([], ms / 1000);
  }

  /** Records a wall-clock jump. */
  clockJump(): void {
    this.#clockJumps.inc();
  }

  /** Records a connection event of the front door. */
  connectionEvent(event: string): void {
    this.#connectionEvents.inc([event]);
  }

  /** Records a group commit. */
  commit(size: number, ms: number, failed: boolean): void {
    if (failed) {
      this.#commitFailures.inc();
      return;
    }
    this.#batch.observe([], size);
    this.#commit.observe([], ms / 1000);
  }

  /** Records an fsync of SQLite's write-ahead log. */
  walSync(ms: number): void {
    this.#walSync.observe([], ms / 1000);
  }

  /** The job counters of every queue that has moved since start (read from memory, cheap). */
  queueTotals(): QueueTotals[] {
    const o = this.#outcomes;
    return [...this.#seen].map((queue) => {
      const q = [queue];
      return {
        queue,
        enqueued: this.#enqueued.get(q),
        delivered: this.#delivered.get(q),
        acked: o.acked.get(q),
        failed: o.nacked.get(q) + o.expired.get(q) + o.dead.get(q),
      };
    });
  }

  /** The Prometheus text for a scrape. */
  render(input: ScrapeInput): string {
    const shown = busiestQueues(input.queues, input.topQueues ?? Infinity);
    this.#allQueues = input.queues;
    this.#scrape = { ...input, queues: shown };
    // Counters and histograms by queue are written for the shown queues only, so the scrape
    // stays small and fast however many queues exist.
    const names = new Set(shown.map((s) => s.name));
    const keep = shown.length === input.queues.length ? undefined : (
      labelNames: readonly string[],
      values: readonly string[],
    ) => {
      const at = labelNames.indexOf("queue");
      return at === -1 || names.has(values[at]);
    };
    try {
      return this.#registry.render(keep, shown.map((s) => s.name));
    } finally {
      this.#scrape = null;
      this.#allQueues = [];
    }
  }
}
