/**
 * The group-commit figures tegami exposes on `/metrics` (`tegami_commit_batch_size`): how many
 * operations each fsynced transaction carried; its event-loop lag; and how long its fsyncs of the
 * write-ahead log took. Two snapshots give the distributions over a workload.
 *
 * @module
 */

/** One snapshot of the `tegami_commit_batch_size` histogram. */
export interface CommitBatches {
  /** Committed transactions. */
  commits: number;
  /** Operations they carried. */
  operations: number;
  /** Seconds spent running and committing (fsync) them (`tegami_commit_duration_seconds_sum`). */
  seconds: number;
  /** SQL statements the store has run (`tegami_store_statements_total`), 0 if not exposed. */
  statements: number;
  /** Cumulative counts by upper bound (`Infinity` last), as Prometheus renders them. */
  buckets: [le: number, count: number][];
  /**
   * The server's event-loop lag samples (`tegami_event_loop_lag_seconds`, a 25 ms timer's
   * lateness), cumulative by upper bound in seconds.
   */
  lag: [le: number, count: number][];
  /**
   * The fsyncs of SQLite's write-ahead log (`tegami_wal_fsync_duration_seconds`), cumulative by
   * upper bound in seconds; empty on a store without them.
   */
  fsyncs: [le: number, count: number][];
  /** Seconds spent in those fsyncs (`tegami_wal_fsync_duration_seconds_sum`). */
  fsyncSeconds: number;
  /**
   * The enqueues the intake gate held (`tegami_intake_hold_seconds`, every queue's summed),
   * cumulative by upper bound in seconds.
   */
  holds: [le: number, count: number][];
}

/** Reads the histogram out of Prometheus text. */
export function parseCommitBatches(text: string): CommitBatches {
  const value = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)`, "m"))?.[1] ?? 0);
  const histogram = (name: string) => summedHistogram(text, name);
  return {
    commits: value("tegami_commit_batch_size_count"),
    operations: value("tegami_commit_batch_size_sum"),
    seconds: value("tegami_commit_duration_seconds_sum"),
    statements: value("tegami_store_statements_total"),
    buckets: histogram("tegami_commit_batch_size"),
    lag: histogram("tegami_event_loop_lag_seconds"),
    fsyncs: histogram("tegami_wal_fsync_duration_seconds"),
    fsyncSeconds: value("tegami_wal_fsync_duration_seconds_sum"),
    holds: histogram("tegami_intake_hold_seconds"),
  };
}

/**
 * A histogram's cumulative buckets by bound, ascending; the series of one with labels besides
 * `le` (a queue's) summed.
 */
function summedHistogram(text: string, name: string): [number, number][] {
  const sums = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{(.*)\\} (\\S+)$`, "gm"))) {
    const le = m[1].match(/(?:^|,)le="([^"]+)"/)?.[1];
    if (le === undefined) continue;
    const bound = le === "+Inf" ? Infinity : Number(le);
    sums.set(bound, (sums.get(bound) ?? 0) + Number(m[2]));
  }
  return [...sums].sort(([a], [b]) => a - b);
}

/**
 * One line for the table on the enqueues the intake gate held over a workload (`h`, the bounds of
 * {@linkcode commitsBetween}'s `holds`); null when none was held.
 */
export function describeHolds(h: LatencyBounds): string | null {
  if (h.samples === 0) return null;
  return `${h.samples} enqueues held, p50 ≤ ${h.p50Ms} ms, max ≤ ${h.maxMs} ms`;
}

function bucketsBetween(
  before: [number, number][],
  after: [number, number][],
): [number, number][] {
  return after.map(([le, count]) => [le, count - (before.find(([b]) => b === le)?.[1] ?? 0)]);
}

/** Samples of a latency histogram, as upper bounds of buckets in ms. */
export interface LatencyBounds {
  /** Samples taken. */
  samples: number;
  /** The upper bound of the bucket holding the median; null without samples. */
  p50Ms: number | null;
  /** The upper bound of the bucket holding the 99th percentile; null without samples. */
  p99Ms: number | null;
  /** The upper bound of the bucket holding the largest sample; null without samples. */
  maxMs: number | null;
}

/**
 * The bounds of a latency histogram's cumulative buckets in seconds (`lag` or `fsyncs` of
 * {@linkcode commitsBetween}'s answer: what a workload added).
 */
export function latencyBounds(buckets: [le: number, count: number][]): LatencyBounds {
  const samples = buckets.at(-1)?.[1] ?? 0;
  if (samples === 0) return { samples, p50Ms: null, p99Ms: null, maxMs: null };
  const bound = (p: number) => 1000 * (buckets.find(([, count]) => count >= p * samples)?.[0] ?? 0);
  return { samples, p50Ms: bound(0.5), p99Ms: bound(0.99), maxMs: bound(1) };
}

/**
 * One line for the table on a workload's fsyncs of the write-ahead log: `f`, the bounds of
 * {@linkcode commitsBetween}'s `fsyncs` and their `seconds` in all; null when there were none
 * (`--sync normal`, PostgreSQL).
 */
export function describeFsyncs(f: LatencyBounds, seconds: number): string | null {
  if (f.samples === 0) return null;
  return `${f.samples} WAL fsyncs, p50 ≤ ${f.p50Ms} ms, p99 ≤ ${f.p99Ms} ms, max ≤ ${f.maxMs} ms ` +
    `(${seconds.toFixed(2)} s in all)`;
}

/** What happened between two snapshots. */
export function commitsBetween(before: CommitBatches, after: CommitBatches): CommitBatches {
  return {
    commits: after.commits - before.commits,
    operations: after.operations - before.operations,
    seconds: after.seconds - before.seconds,
    statements: after.statements - before.statements,
    buckets: bucketsBetween(before.buckets, after.buckets),
    lag: bucketsBetween(before.lag, after.lag),
    fsyncs: bucketsBetween(before.fsyncs, after.fsyncs),
    fsyncSeconds: after.fsyncSeconds - before.fsyncSeconds,
    holds: bucketsBetween(before.holds, after.holds),
  };
}

/** The smallest bucket bound holding at least the fraction `p` of the commits. */
function bucketQuantile(batches: CommitBatches, p: number): number {
  for (const [le, count] of batches.buckets) {
    if (count >= p * batches.commits) return le;
  }
  return Infinity;
}

/**
 * One line for the table: commits, mean ops per commit, median and p90 bucket, the distribution
 * as `bound:commits` (e.g. `≤1:3 ≤64:120`), and the time the server reports spent in commits
 * (`node:sqlite` runs on its main thread: whatever part of that time is not handed to another
 * thread, an fsync in `synchronous=FULL` included, is time its event loop was blocked).
 */
export function describeCommits(batches: CommitBatches): string {
  if (batches.commits === 0) return "no commits";
  const mean = batches.operations / batches.commits;
  const bound = (le: number) => (le === Infinity ? ">4096" : `≤${le}`);
  const spread = Object.entries(commitDistribution(batches)).map(([le, n]) => `${le}:${n}`);
  return `${batches.commits} commits, ${mean.toFixed(1)} ops/commit (median ${
    bound(bucketQuantile(batches, 0.5))
  }, p90 ${bound(bucketQuantile(batches, 0.9))}; ${spread.join(" ")}); in commits ${
    batches.seconds.toFixed(2)
  } s (mean ${(1000 * batches.seconds / batches.commits).toFixed(2)} ms)`;
}

/** The non-cumulative distribution, e.g. `≤1:3 ≤2:0 … ≤64:120`, empty buckets left out. */
export function commitDistribution(batches: CommitBatches): Record<string, number> {
  const out: Record<string, number> = {};
  let previous = 0;
  for (const [le, count] of batches.buckets) {
    if (count - previous > 0) out[le === Infinity ? "+Inf" : `≤${le}`] = count - previous;
    previous = count;
  }
  return out;
}
