/**
 * The dashboard's live feed. Once a second it reads every queue's job counters (kept in memory
 * by the metrics) and records how many jobs were enqueued, acked and failed in that second,
 * keeping the last five minutes, so a dashboard opened now draws a chart at once. While anyone
 * is subscribed it also reads the queues' stats and sends each subscriber a snapshot of the
 * queues its token may see.
 *
 * The counters are read whether or not anyone watches (a few Map lookups a second); the
 * store's stats are read only while a subscriber is connected.
 *
 * Events, each one JSON object:
 *
 * - `hello` (first, once): `{version, started_at, interval_ms, history: [sample…]}`
 * - `snapshot` (then once a second): `{at, connections, queue_count, queues: [stats + totals +
 *   rates]}`: how many queues the subscriber may see, and the busiest `topQueues` of them (all
 *   of them by default)
 *
 * A sample is `{at, queues: {name: {enqueued, acked, failed}}}` holding only the queues that
 * moved in that second.
 *
 * @module
 */

import type { Clock, TimerHandle } from "../core/clock.ts";
import { statsView } from "../api/views.ts";
import { byLoad, type QueueTotals } from "./server_metrics.ts";
import type { QueueCounts } from "../store/store.ts";

/** Jobs per interval (one second) of one queue. */
export interface Rates {
  /** Jobs stored by enqueues. */
  enqueued: number;
  /** Jobs completed by an ack. */
  acked: number;
  /** Deliveries that ended in a nack, an expired lease or the dead letters. */
  failed: number;
}

/** One interval's throughput: only the queues that moved appear. */
export interface Sample {
  /** When the interval ended, ms since the epoch. */
  at: number;
  /** Rates by queue name. */
  queues: Record<string, Rates>;
}

/** Where the feed reads from. */
export interface FeedSources {
  /** Every queue's stats. */
  stats(): Promise<QueueCounts[]>;
  /** Consumers of a queue (subscriptions and waiting long-polls). */
  consumers(queue: string): number;
  /** Job counters since start, of every queue that moved. */
  totals(): QueueTotals[];
  /** Open WebSocket connections. */
  connections(): number;
}

/** A subscriber: where one event stream's events go. */
export interface FeedSink {
  /** Whether the subscriber may see a queue. */
  allows(queue: string): boolean;
  /** Sends one event; answers false when the subscriber is behind and the event was dropped. */
  send(event: "hello" | "snapshot", data: string): boolean;
  /** Ends the stream (server shutdown). */
  end(): void;
}

/** Options of {@linkcode LiveFeed}. */
export interface LiveFeedOptions {
  /** The clock driving the sampling timer. */
  clock: Clock;
  /** Where stats and counters come from. */
  sources: FeedSources;
  /** The program's version, for the `hello` event. @default "dev" */
  version?: string;
  /** Length of one sample, ms. @default 1000 */
  intervalMs?: number;
  /** Samples kept. @default 300 (five minutes) */
  historySize?: number;
  /** Reports a failure to read stats. @default ignore */
  onError?: (error: unknown) => void;
  /** Queues in a snapshot: the busiest this many (the count of all is sent too). @default all */
  topQueues?: number;
}

const NO_RATES: Rates = { enqueued: 0, acked: 0, failed: 0 };

/** Samples throughput every interval and streams snapshots to subscribers. */
export class LiveFeed {
  readonly #clock: Clock;
  readonly #sources: FeedSources;
  readonly #version: string;
  readonly #intervalMs: number;
  readonly #historySize: number;
  readonly #onError: (error: unknown) => void;
  readonly #topQueues: number;
  readonly #history: Sample[] = [];
  readonly #last = new Map<string, QueueTotals>();
  readonly #sinks = new Set<FeedSink>();
  #startedAt = 0;
  /** The interval (`at / intervalMs`) of the last sample; 0 before the first. */
  #slot = 0;
  #timer: TimerHandle | null = null;
  #broadcasting = false;
  #closed = false;

  /** Makes a feed; {@linkcode LiveFeed.start} arms its timer. */
  constructor(options: LiveFeedOptions) {
    this.#clock = options.clock;
    this.#sources = options.sources;
    this.#version = options.version ?? "dev";
    this.#intervalMs = options.intervalMs ?? 1000;
    this.#historySize = options.historySize ?? 300;
    this.#onError = options.onError ?? (() => {});
    this.#topQueues = options.topQueues ?? Infinity;
  }

  /** Starts sampling. */
  start(): void {
    this.#startedAt = this.#clock.now();
    this.#arm();
  }

  /** Stops sampling and ends every subscriber's stream. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) this.#clock.clearTimer(this.#timer);
    this.#timer = null;
    const sinks = [...this.#sinks];
    this.#sinks.clear();
    for (const sink of sinks) endQuietly(sink);
  }

  /** How many subscribers are connected. */
  get subscribers(): number {
    return this.#sinks.size;
  }

  /**
   * Adds a subscriber: it gets `hello` (with the history it may see) at once, then a snapshot
   * as soon as the stats are read, then one every interval. Answers the unsubscribe function.
   */
  subscribe(sink: FeedSink): () => void {
    if (this.#closed) {
      endQuietly(sink);
      return () => {};
    }
    this.#sinks.add(sink);
    const history = this.#history.map((sample) => visibleSample(sample, sink));
    this.#deliver(
      sink,
      "hello",
      JSON.stringify({
        version: this.#version,
        started_at: this.#startedAt,
        interval_ms: this.#intervalMs,
        history,
      }),
    );
    void this.#broadcast([sink]);
    return () => this.#sinks.delete(sink);
  }

  #arm(): void {
    // Samples sit on whole intervals of the clock, so charts of several servers line up.
    const now = this.#clock.now();
    const next = this.#slot === 0 ? Math.floor(now / this.#intervalMs) + 1 : this.#slot + 1;
    this.#timer = this.#clock.setTimer(
      () => this.#tick(),
      Math.max(1, next * this.#intervalMs - now),
    );
  }

  #tick(): void {
    this.#timer = null;
    if (this.#closed) return;
    // One sample per interval, stamped with its interval's end: a timer that fires a little
    // early must not stamp two samples with the same second (a chart would show a false gap).
    this.#slot = Math.max(this.#slot + 1, Math.round(this.#clock.now() / this.#intervalMs));
    const sample: Sample = { at: this.#slot * this.#intervalMs, queues: {} };
    for (const totals of this.#sources.totals()) {
      const before = this.#last.get(totals.queue);
      this.#last.set(totals.queue, totals);
      const rates = {
        enqueued: totals.enqueued - (before?.enqueued ?? 0),
        acked: totals.acked - (before?.acked ?? 0),
        failed: totals.failed - (before?.failed ?? 0),
      };
      if (rates.enqueued > 0 || rates.acked > 0 || rates.failed > 0) {
        sample.queues[totals.queue] = rates;
      }
    }
    this.#history.push(sample);
    if (this.#history.length > this.#historySize) this.#history.shift();
    this.#arm();
    // A slow stats read must not pile up reads: subscribers then get the next tick's snapshot.
    if (this.#sinks.size > 0 && !this.#broadcasting) {
      this.#broadcasting = true;
      void this.#broadcast([...this.#sinks]).finally(() => this.#broadcasting = false);
    }
  }

  async #broadcast(sinks: FeedSink[]): Promise<void> {
    let stats: QueueCounts[];
    try {
      stats = await this.#sources.stats();
    } catch (error) {
      if (!this.#closed) this.#onError(error);
      return;
    }
    if (this.#closed) return;
    const now = this.#clock.now();
    const latest = this.#history.at(-1);
    // Snapshots are built each second for every reader: with many queues, only the busiest a
    // reader may see (its token's queues), each queue's JSON made once for all readers.
    const top = this.#topQueues;
    const ranked = stats.length <= top ? stats : byLoad(stats);
    const made = new Map<string, string>();
    const entry = (s: QueueCounts): string => {
      let json = made.get(s.name);
      if (json !== undefined) return json;
      const totals = this.#last.get(s.name);
      json = JSON.stringify({
        ...(statsView(s, now, this.#sources.consumers(s.name)) as object),
        totals: {
          enqueued: totals?.enqueued ?? 0,
          delivered: totals?.delivered ?? 0,
          acked: totals?.acked ?? 0,
          failed: totals?.failed ?? 0,
        },
        rates: latest?.queues[s.name] ?? NO_RATES,
      });
      made.set(s.name, json);
      return json;
    };
    const head = `{"at":${latest?.at ?? now},"connections":${this.#sources.connections()}`;
    for (const sink of sinks) {
      if (!this.#sinks.has(sink)) continue;
      const queues: string[] = [];
      let visible = 0;
      for (const s of ranked) {
        if (!sink.allows(s.name)) continue;
        visible++;
        if (queues.length < top) queues.push(entry(s));
      }
      this.#deliver(
        sink,
        "snapshot",
        `${head},"queue_count":${visible},"queues":[${queues.join(",")}]}`,
      );
    }
  }

  /** Sends to one sink; a sink that throws (its stream is gone) is dropped. */
  #deliver(sink: FeedSink, event: "hello" | "snapshot", data: string): void {
    try {
      sink.send(event, data);
    } catch {
      this.#sinks.delete(sink);
    }
  }
}

function visibleSample(sample: Sample, sink: FeedSink): Sample {
  const queues: Record<string, Rates> = {};
  for (const [name, rates] of Object.entries(sample.queues)) {
    if (sink.allows(name)) queues[name] = rates;
  }
  return { at: sample.at, queues };
}

function endQuietly(sink: FeedSink): void {
  try {
    sink.end();
  } catch {
    // already ended by the other side
  }
}
