/**
 * What one workload run on one system yields, and the guard that turns a stalled run into an
 * error instead of a hung bench.
 *
 * @module
 */

import type { CpuUse } from "./proc.ts";
import type { LatencySummary } from "./stats.ts";

/** The result of one workload on one system. */
export interface Measurement {
  /** Jobs counted by the workload. */
  jobs: number;
  /** Wall time of the measured part, in seconds. */
  seconds: number;
  /** Enqueue→receipt latency, where the workload measures it. */
  latency?: LatencySummary;
  /** CPU used during the measured part. */
  cpu?: CpuUse;
  /** Server RSS (bytes) at the point the workload reports it. */
  rssBytes?: number;
  /** Bytes the server's processes wrote to storage during the run (`/proc/PID/io` write_bytes). */
  diskBytes?: number;
  /** SQL statements the server ran during the run (tegami's `tegami_store_statements_total`). */
  statements?: number;
  /** Anything else worth a note in the table. */
  notes: string[];
  /** Machine-readable extras for `--json` (commit batch distribution, …). */
  extra?: Record<string, unknown>;
}

/**
 * Waits for `work`, but rejects if `progress()` does not change for `stallMs` (a lost job or a
 * wedged peer would otherwise hang the bench forever).
 */
export async function guarded<T>(
  work: Promise<T>,
  progress: () => number,
  what: string,
  stallMs = 30_000,
): Promise<T> {
  let last = progress();
  let lastChange = performance.now();
  let timer: ReturnType<typeof setInterval> | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      const seen = progress();
      if (seen !== last) {
        last = seen;
        lastChange = performance.now();
      } else if (performance.now() - lastChange > stallMs) {
        reject(new Error(`${what} stalled: no progress for ${stallMs / 1000} s at ${seen}`));
      }
    }, 250);
  });
  // After a stall the work is abandoned; its late failure must not crash the bench.
  work.catch(() => {});
  try {
    return await Promise.race([work, stalled]);
  } finally {
    clearInterval(timer);
  }
}

/** `[0, 1, …, n-1]`. */
export function range(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i);
}
