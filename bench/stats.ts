/**
 * Percentiles of latency samples, nearest-rank on a sorted copy.
 *
 * @module
 */

/** What a latency column shows: how many samples, and the p50 / p99 / max in ms. */
export interface LatencySummary {
  /** Number of samples. */
  count: number;
  /** Median, in ms. */
  p50: number;
  /** 99th percentile, in ms. */
  p99: number;
  /** Largest sample, in ms. */
  max: number;
}

/** The `p`-quantile (0–1) of ascending `sorted`, nearest rank; `NaN` when there are no samples. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil(p * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))];
}

/** Sorts a copy of `samples` and answers its p50, p99 and max. */
export function summarize(samples: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  return {
    count: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    max: sorted.length === 0 ? NaN : sorted[sorted.length - 1],
  };
}
