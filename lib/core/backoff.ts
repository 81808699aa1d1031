/**
 * Retry backoff: `min(max, base · 2^(attempt−1))` scaled by a random factor in [0.5, 1], so
 * retries of jobs that failed together spread out instead of returning as one wave.
 *
 * @module
 */

import type { Backoff } from "./job.ts";

/** The retry delay in ms after `attempt` (1-based) failed. `random` returns a number in [0, 1). */
export function retryDelayMs(
  attempt: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 52);
  const raw = Math.min(backoff.max_ms, backoff.base_ms * 2 ** exponent);
  return Math.round(raw * (0.5 + random() * 0.5));
}
