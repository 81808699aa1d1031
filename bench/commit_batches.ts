/**
 * The group-commit figures tegami exposes on `/metrics` (`tegami_commit_batch_size`): how many
 * operations each fsynced transaction carried. Two snapshots give the distribution over a
 * workload.
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
  /** Cumulative counts by upper bound (`Infinity` last), as Prometheus renders them. */
  buckets: [le: number, count: number][];
}

/** Reads the histogram out of Prometheus text. */
export function parseCommitBatches(text: string): CommitBatches {
  const value = (name: string) => Number(text.match(new RegExp(`^${name} (\\S+)`, "m"))?.[1] ?? 0);
  const buckets: [number, number][] = [];
  for (const m of text.matchAll(/^tegami_commit_batch_size_bucket\{le="([^"]+)"\} (\S+)/gm)) {
    buckets.push([m[1] === "+Inf" ? Infinity : Number(m[1]), Number(m[2])]);
  }
  return {
    commits: value("tegami_commit_batch_size_count"),
    operations: value("tegami_commit_batch_size_sum"),
    seconds: value("tegami_commit_duration_seconds_sum"),
    buckets,
  };
}

/** What happened between two snapshots. */
export function commitsBetween(before: CommitBatches, after: CommitBatches): CommitBatches {
  return {
    commits: after.commits - before.commits,
    operations: after.operations - before.operations,
    seconds: after.seconds - before.seconds,
    buckets: after.buckets.map(([le, count]) => [
      le,
      count - (before.buckets.find(([b]) => b === le)?.[1] ?? 0),
    ]),
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
