/**
 * The token bucket of a queue's `rate` (at most `limit` deliveries per `per_ms`): tokens come
 * in evenly, one every `per_ms / limit` ms, and a claim takes one per job. The bucket holds at
 * most a tenth of an interval's tokens (at least one), so deliveries stay smooth: after a quiet
 * spell a burst is at most that tenth, and no window of `per_ms` ever sees much more than
 * `limit` (a fixed window would allow twice that across its edge).
 *
 * Pure arithmetic; the stores keep the bucket (tokens and when they were counted) in the
 * database and apply these inside the claim's transaction, with the injected clock's `now`.
 *
 * @module
 */

import type { Rate } from "./queue_settings.ts";

/** A bucket as stored: its tokens (fractional) as of `at` (ms). */
export interface Bucket {
  /** Tokens at `at`. */
  tokens: number;
  /** When they were counted, ms since the epoch. */
  at: number;
}

/** The most tokens a bucket of `rate` holds. */
export function bucketCapacity(rate: Rate): number {
  return Math.max(1, Math.floor(rate.limit / 10));
}

/** The tokens in `bucket` at `now` (a bucket never used is full). */
export function tokensAt(bucket: Bucket | null, rate: Rate, now: number): number {
  const capacity = bucketCapacity(rate);
  if (bucket === null) return capacity;
  const gained = Math.max(0, now - bucket.at) * rate.limit / rate.per_ms;
  return Math.min(capacity, bucket.tokens + gained);
}

/** When a bucket holding `tokens` at `now` next holds a whole one (now if it does). */
export function nextTokenAt(tokens: number, rate: Rate, now: number): number {
  if (tokens >= 1) return now;
  return now + Math.ceil((1 - tokens) * rate.per_ms / rate.limit);
}
