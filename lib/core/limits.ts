/**
 * Limits of the protocol that are fixed by the contract (configurable ones live in the config).
 *
 * @module
 */

/** Queue names: `[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}`. */
export const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
/** The longest dedup key, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 512;
/** The longest ordering group name, in UTF-8 bytes. */
export const MAX_GROUP_BYTES = 512;
/** How many jobs of one group a queue leases at once, unless its settings say otherwise. */
export const DEFAULT_GROUP_LIMIT = 1;
/** The shortest lease, ms. */
export const MIN_LEASE_MS = 100;
/** The longest lease, ms (12 h). */
export const MAX_LEASE_MS = 12 * 60 * 60 * 1000;
/** Largest WebSocket subscription `prefetch`. */
export const MAX_PREFETCH = 1000;
/**
 * Most subscriptions one WebSocket connection holds at once: each costs memory (about 0.5 KB)
 * and a place in its queue's consumer list, whether or not the queue exists.
 */
export const MAX_SUBSCRIPTIONS = 1000;
/**
 * The largest frame a WebSocket that has not authenticated may send (an `auth` frame, whose token
 * is at most 256 characters, needs far less), in characters or bytes; a larger one is refused
 * from its head, before it is read.
 */
export const MAX_AUTH_FRAME_BYTES = 4096;
/** The most deliveries a job may allow. */
export const MAX_ATTEMPTS = 1000;
/** The default deliveries a job allows. */
export const DEFAULT_MAX_ATTEMPTS = 5;
/** The most jobs one lease call may take. */
export const MAX_LEASE_BATCH = 100;
/** The longest long-poll, ms. */
export const MAX_WAIT_MS = 60_000;
/** Priorities fit a 32-bit signed integer (the PostgreSQL column type). */
export const PRIORITY_RANGE: readonly [number, number] = [-2147483648, 2147483647];
/** The longest nack error kept, in characters; longer ones are cut with a marker. */
export const MAX_ERROR_CHARS = 8192;
/** The longest delay or backoff, ms (about 100 years: keeps `run_at` a safe integer). */
export const MAX_DELAY_MS = 100 * 365 * 24 * 60 * 60 * 1000;
/** The most ids one requeue call may name. */
export const MAX_REQUEUE_IDS = 10_000;
/**
 * How many jobs one maintenance transaction changes at most, on every engine: due jobs promoted,
 * expired leases ended, dead jobs requeued, finished jobs swept. A million jobs coming due (or
 * requeued, or expiring from retention) at once become short commits with the event loop free
 * between them, never one transaction that stalls every request.
 */
export const MAINTENANCE_BATCH = 250;
/** The most jobs one page of a listing returns (the dead letters, the job browser). */
export const MAX_LIST_LIMIT = 1000;
/**
 * Room a job object takes besides its user JSON values (payload, checkpoint, result), in bytes:
 * member names and numbers (under 1 KiB), the queue name (128), the key and the group (512 bytes
 * each, up to 3072 once JSON-escaped), `last_error` (8192 characters plus the cut marker, up to 6
 * bytes each once escaped: under 48.1 KiB), the progress report (4 KiB), the attributes (4 KiB,
 * `MAX_ATTRIBUTES_BYTES`) and the lease. 64 KiB covers them all with room to spare.
 */
export const JOB_OVERHEAD_BYTES = 64 * 1024;

/**
 * The largest WebSocket `job` frame (and HTTP delivery) the server sends, in bytes, given
 * `--max-payload`: a payload and a checkpoint at the limit plus {@linkcode JOB_OVERHEAD_BYTES}.
 * A delivery's `result` is always null (only an ack sets it, and a done job is never leased).
 */
export function largestDeliveryBytes(maxPayload: number): number {
  return 2 * maxPayload + JOB_OVERHEAD_BYTES;
}

/**
 * The largest job object an HTTP answer carries, in bytes, given `--max-payload`: payload,
 * checkpoint and result at the limit plus {@linkcode JOB_OVERHEAD_BYTES}.
 */
export function largestJobBytes(maxPayload: number): number {
  return 3 * maxPayload + JOB_OVERHEAD_BYTES;
}

/** The longest key window (`key_ttl_ms`), ms: as long as the longest delay. */
export const MAX_KEY_TTL_MS: number = MAX_DELAY_MS;
/** The largest progress report, in bytes of JSON. */
export const MAX_PROGRESS_BYTES = 4096;
