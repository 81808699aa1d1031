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

/** How much a claim of a queue with a concurrency or a rate may take. */
export interface ClaimCap {
  /** The most jobs the claim takes; none when 0 or less. */
  cap: number;
  /** The bucket's tokens at the claim (store `tokens - taken` after it), or null without a rate. */
  tokens: number | null;
  /** When the bucket next holds a whole token, if the rate held the claim back; else null. */
  heldUntil: number | null;
}

/**
 * The cap of a claim that wants `total` jobs of a queue with these limits, `leased` of its jobs
 * leased now and its rate's `bucket` as stored (null: never used), both read inside the claim's
 * transaction: the free slots of its concurrency and the bucket's whole tokens, whichever is
 * fewer. When the tokens are what held it back, `heldUntil` says when the next one comes, so
 * the queue's consumers can be offered it again then.
 */
export function claimCap(
  limits: { readonly concurrency: number | null; readonly rate: Rate | null },
  total: number,
  leased: number,
  bucket: Bucket | null,
  now: number,
): ClaimCap {
  let cap = total;
  if (limits.concurrency !== null) cap = Math.min(cap, limits.concurrency - leased);
  const rate = limits.rate;
  if (rate === null) return { cap, tokens: null, heldUntil: null };
  const tokens = tokensAt(bucket, rate, now);
  if (Math.floor(tokens) >= cap) return { cap, tokens, heldUntil: null };
  const whole = Math.floor(tokens);
  return { cap: whole, tokens, heldUntil: nextTokenAt(tokens - whole, rate, now) };
}
