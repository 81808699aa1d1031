/**
 * Prometheus text exposition of tegami's figures: per-queue gauges, commit figures and HTTP
 * request counts. Names are `tegami_*`; every family has HELP and TYPE lines.
 *
 * @module
 */

import type { CommitStats, QueueCounts } from "./store/store.ts";

/** Counts HTTP answers by route and status. */
export class RequestCounter {
  readonly #counts = new Map<string, number>();
  readonly #seconds = new Map<string, number>();

  /** Records one answer. */
  observe(route: string, status: number, ms: number): void {
    const key = `${route}\u0000${status}`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
    this.#seconds.set(route, (this.#seconds.get(route) ?? 0) + ms / 1000);
  }

  /** The figures as `[route, status, count]`. */
  entries(): [string, number, number][] {
    return [...this.#counts].map(([key, n]) => {
      const [route, status] = key.split("\u0000");
      return [route, Number(status), n];
    });
  }

  /** Seconds spent per route. */
  seconds(): [string, number][] {
    return [...this.#seconds];
  }
}

function label(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** What {@linkcode renderMetrics} shows. */
export interface MetricsInput {
  /** Per-queue stats. */
  queues: QueueCounts[];
  /** Consumers per queue. */
  consumers: (queue: string) => number;
  /** Commit figures. */
  commits: CommitStats;
  /** HTTP answers. */
  requests: RequestCounter;
  /** Now, ms. */
  now: number;
}

/** The Prometheus text for `/metrics`. */
export function renderMetrics(input: MetricsInput): string {
  const out: string[] = [];
  const family = (name: string, type: string, help: string) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  };
  family("tegami_jobs", "gauge", "Jobs stored, by queue and state.");
  for (const q of input.queues) {
    for (const [state, n] of Object.entries(q.counts)) {
      out.push(`tegami_jobs{queue="${label(q.name)}",state="${state}"} ${n}`);
    }
  }
  family("tegami_oldest_pending_age_seconds", "gauge", "Age of the oldest pending job.");
  for (const q of input.queues) {
    const age = q.oldest_pending_at === null ? 0 : Math.max(0, input.now - q.oldest_pending_at);
    out.push(`tegami_oldest_pending_age_seconds{queue="${label(q.name)}"} ${age / 1000}`);
  }
  family("tegami_queue_paused", "gauge", "1 while delivery from the queue is paused.");
  for (const q of input.queues) {
    out.push(`tegami_queue_paused{queue="${label(q.name)}"} ${q.paused ? 1 : 0}`);
  }
  family("tegami_consumers", "gauge", "Consumers (subscriptions and long-polls) per queue.");
  for (const q of input.queues) {
    out.push(`tegami_consumers{queue="${label(q.name)}"} ${input.consumers(q.name)}`);
  }
  const c = input.commits;
  family("tegami_commits_total", "counter", "Transactions committed by group commit.");
  out.push(`tegami_commits_total ${c.commits}`);
  family("tegami_commit_operations_total", "counter", "Operations carried by those commits.");
  out.push(`tegami_commit_operations_total ${c.operations}`);
  family("tegami_commit_seconds_total", "counter", "Time spent in transactions and fsync.");
  out.push(`tegami_commit_seconds_total ${c.commit_ms / 1000}`);
  family("tegami_commit_batch_size", "histogram", "Operations per committed transaction.");
  let cumulative = 0;
  for (let i = 0; i < c.batch_histogram.length; i++) {
    cumulative += c.batch_histogram[i];
    out.push(`tegami_commit_batch_size_bucket{le="${2 ** (i + 1) - 1}"} ${cumulative}`);
  }
  out.push(`tegami_commit_batch_size_bucket{le="+Inf"} ${c.commits}`);
  out.push(`tegami_commit_batch_size_sum ${c.operations}`);
  out.push(`tegami_commit_batch_size_count ${c.commits}`);
  family("tegami_http_requests_total", "counter", "HTTP answers by route and status.");
  for (const [route, status, n] of input.requests.entries()) {
    out.push(`tegami_http_requests_total{route="${label(route)}",status="${status}"} ${n}`);
  }
  family("tegami_http_request_seconds_total", "counter", "Time spent answering, by route.");
  for (const [route, s] of input.requests.seconds()) {
    out.push(`tegami_http_request_seconds_total{route="${label(route)}"} ${s}`);
  }
  return out.join("\n") + "\n";
}
