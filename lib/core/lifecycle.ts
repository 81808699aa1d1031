/**
 * The lifecycle rules of a job, as pure functions: what state a new job starts in, which lease
 * length wins, who holds a lease, how a claim is dealt over several consumers, what a nack does,
 * what the end of a lease does, and when the attempts used make a job dead.
 *
 * Every store applies these inside its own transaction — it locks the row, asks a rule what
 * happens, and writes the answer — so SQLite and PostgreSQL cannot drift apart on policy. None
 * of them reads a clock or touches a database: `now` and the row come in, a decision goes out.
 *
 * @module
 */

import { TegamiError } from "./errors.ts";
import type { Backoff, JobState } from "./job.ts";

/** The server's policy the rules apply (built from the configuration). */
export interface LifecyclePolicy {
  /** The server's lease length, for jobs without their own and claims without one. */
  defaultLeaseMs: number;
  /** The retry delay for a nack without `delay_ms`, given the attempt that failed. */
  retryDelayMs(attempt: number, backoff: Backoff | null): number;
}

/** What a nack asks for. */
export interface NackRequest {
  /** The error to record, or null. */
  error: string | null;
  /** An explicit delay instead of the backoff, or null. */
  delay_ms: number | null;
  /** Send the job straight to dead. */
  dead: boolean;
}

/** The fields of a stored job the lease rules read. */
export interface LeasedRow {
  /** Current state. */
  state: JobState;
  /** The token of the current (or last) lease, or null if never leased. */
  lease_token: string | null;
  /** When the current lease ends, or null. */
  lease_expires_at: number | null;
}

/** The fields of a stored job the retry rules read. */
export interface AttemptedRow {
  /** Deliveries so far, the current one included. */
  attempts: number;
  /** Deliveries allowed before the job is dead. */
  max_attempts: number;
  /** The last recorded error, or null. */
  last_error: string | null;
  /** The job's own backoff, or null for the server's. */
  backoff: Backoff | null;
}

/** Where a leased job goes when its lease ends without an ack. */
export interface Transition {
  /** `pending`, `delayed` or `dead`. */
  state: "pending" | "delayed" | "dead";
  /** When it runs again; for `dead`, when it died (the store keeps it as `finished_at`). */
  run_at: number;
  /** The error to record (the previous one when nothing new was said). */
  error: string | null;
  /** Deliveries counted from now on. */
  attempts: number;
}

/** How a lease ended without an ack: it ran out, or its holder went away. */
export type LeaseEndCause = "expired" | "released" | "undelivered";

/** The state a new job starts in: delayed while its `run_at` is in the future, else pending. */
export function initialState(runAt: number, now: number): "pending" | "delayed" {
  return runAt > now ? "delayed" : "pending";
}

/** Which lease length wins for a claim: the consumer's, else the job's own, else the server's. */
export function claimLeaseMs(
  wanted: number | null,
  jobOwn: number | null,
  policy: LifecyclePolicy,
): number {
  return wanted ?? jobOwn ?? policy.defaultLeaseMs;
}

/** Which lease length wins for an extend: the one asked for, else the one in force. */
export function extendLeaseMs(
  wanted: number | null,
  inForce: number | null,
  policy: LifecyclePolicy,
): number {
  return wanted ?? inForce ?? policy.defaultLeaseMs;
}

/**
 * Whether `token` holds the job's lease at `now`: the job is leased under that token and the
 * lease has not run out. Ack, nack, extend and checkpoint are refused with `lease_lost` otherwise.
 */
export function holdsLease(row: LeasedRow, token: string, now: number): boolean {
  return row.state === "leased" && row.lease_token === token && row.lease_expires_at !== null &&
    row.lease_expires_at > now;
}

/**
 * How long after its end a lease that this server did not hand to a consumer may be ended by
 * its tick, when other servers share the database: the lease may be another server's, still on
 * its way to a consumer. It exceeds the clock skew servers may have between them (each within
 * 500 ms of the database's) with room for a stall of a few seconds.
 */
export const HANDOVER_GRACE_MS = 5_000;

/** What the server that ends expired leases knows of the leases it claimed. */
export interface HandOvers {
  /** Whether this server handed the lease under `token` to a consumer (and it is not over). */
  handedOver(token: string): boolean;
  /**
   * The `now` of the earliest claim of this server still on its way to its consumers, or null
   * when none is: a lease that began at or after it may not have reached anyone yet.
   */
  claimingSince: number | null;
}

/** The fields of a leased job the expiry rule reads. */
export interface ExpiringLease {
  /** The lease's token. */
  lease_token: string | null;
  /** When the lease ends. */
  lease_expires_at: number | null;
  /** Its length, ms (the lease began `lease_len_ms` before it ends). */
  lease_len_ms: number | null;
}

/**
 * Whether a tick at `now` ends this lease as expired. An attempt is used by a delivery, so a
 * lease counts only once it has reached a consumer, and only the server that claimed it knows
 * when that was:
 *
 * - a lease this server handed over ends at its end;
 * - a lease one of this server's claims may still be carrying to its consumer is not ended
 *   here: that claim hands it over while it runs, or gives it back as undelivered (the attempt
 *   not counted) when it ran out on the way;
 * - any other lease ends at its end on a server alone on its database (it was handed over
 *   before a restart), and {@linkcode HANDOVER_GRACE_MS} after its end where servers share
 *   one: until then it is its own server's to end (at once if handed over, as undelivered if
 *   not), unless that server is gone.
 *
 * So a tick never takes an attempt from a delivery on its way, unless another server carrying
 * it stalls longer than the grace past the lease's end (or dies) before handing it over.
 *
 * `alone` is true when no other server shares the database (the store knows): a lease this
 * server did not hand over and no claim of it carries was handed over before a restart, and
 * nobody else can be carrying it.
 */
export function leaseEndDue(
  lease: ExpiringLease,
  now: number,
  mine: HandOvers,
  alone: boolean,
): boolean {
  const end = lease.lease_expires_at;
  if (end === null || end > now) return false;
  if (lease.lease_token !== null && mine.handedOver(lease.lease_token)) return true;
  const began = end - (lease.lease_len_ms ?? 0);
  if (mine.claimingSince !== null && began >= mine.claimingSince) return false;
  return alone || end <= now - HANDOVER_GRACE_MS;
}

/**
 * When a lease that ends at `end` is next due for a tick at `now`: its end while it runs, and
 * {@linkcode HANDOVER_GRACE_MS} after it once it has run out unended (until then it is its own
 * server's to end, or its claim's to give back).
 */
export function leaseDeadline(end: number, now: number): number {
  return end > now ? end : end + HANDOVER_GRACE_MS;
}

/**
 * The earliest lease deadline at `now` ({@linkcode leaseDeadline}), from the earliest end of all
 * leases (`earliest`) and the earliest end after `now` (`upcoming`), each null when none is.
 */
export function nextLeaseDeadline(
  earliest: number | null,
  upcoming: number | null,
  now: number,
): number | null {
  if (earliest === null) return null;
  const first = leaseDeadline(earliest, now);
  return upcoming === null ? first : Math.min(first, upcoming);
}

/** Whether the job has used every attempt it is allowed: one more failure makes it dead. */
export function attemptsExhausted(row: { attempts: number; max_attempts: number }): boolean {
  return row.attempts >= row.max_attempts;
}

/**
 * What a nack does: dead when asked or when the attempts are used up; otherwise a retry after
 * `delay_ms` if given, else after the backoff for the attempt that failed (pending at once when
 * the delay is 0).
 */
export function afterNack(
  row: AttemptedRow,
  request: NackRequest,
  now: number,
  policy: LifecyclePolicy,
): Transition {
  const error = request.error ?? row.last_error;
  if (request.dead || attemptsExhausted(row)) {
    return { state: "dead", run_at: now, error, attempts: row.attempts };
  }
  const delay = Math.max(0, request.delay_ms ?? policy.retryDelayMs(row.attempts, row.backoff));
  return {
    state: delay > 0 ? "delayed" : "pending",
    run_at: now + delay,
    error,
    attempts: row.attempts,
  };
}

/**
 * What the end of a lease without an ack does. A delivery that never reached anyone
 * (`undelivered`) goes back to pending with its attempt not counted. Otherwise the job is
 * pending again at once, or dead (with the reason recorded) when that was its last attempt.
 */
export function afterLeaseEnd(row: AttemptedRow, cause: LeaseEndCause, now: number): Transition {
  if (cause === "undelivered") {
    return { state: "pending", run_at: now, error: row.last_error, attempts: row.attempts - 1 };
  }
  if (attemptsExhausted(row)) {
    const what = cause === "expired" ? "Lease expired" : "Consumer went away";
    return {
      state: "dead",
      run_at: now,
      error: `${what} on attempt ${row.attempts} of ${row.max_attempts}`,
      attempts: row.attempts,
    };
  }
  return { state: "pending", run_at: now, error: row.last_error, attempts: row.attempts };
}

/** What an ack needs to know, beside the job's queue, to tell whether it deletes the job. */
export interface DoneRetention {
  /** The server's retention of done jobs (`--retain-done`), for a queue without its own, ms. */
  retainDoneMs: number;
  /**
   * Whether someone waits to read how job `id` ended (a watch, a `GET` with `wait_ms`): asked
   * when the ack runs in its transaction, so a watch begun until then keeps the job.
   */
  watched(id: number): boolean;
}

/**
 * Whether an ack deletes its job in the ack's own commit rather than keeping it done for the
 * retention sweep: when its queue keeps done jobs for no time (its `retain_done_ms`, else the
 * server's) and nobody waits to read the job's end. Kept, such a job would be deleted by the
 * next sweep anyway; deleted at once, it never writes its done row, its indexes' entries, nor
 * the sweep's delete. A job of a flow is kept whatever this says (its flow is swept as a whole
 * once it has ended); the store checks that on the row.
 */
export function deletedAtAck(
  id: number,
  queueRetainDoneMs: number | null,
  retention: DoneRetention,
): boolean {
  return (queueRetainDoneMs ?? retention.retainDoneMs) === 0 && !retention.watched(id);
}

/** Whether a cancel removes the job (it had finished) rather than cancelling it. */
export function cancelRemoves(state: JobState): boolean {
  return state === "done" || state === "dead" || state === "cancelled";
}

/** The most jobs a claim over `wants` can take: the sum of their `max`. */
export function claimTotal(wants: readonly { max: number }[]): number {
  let total = 0;
  for (const want of wants) total += want.max;
  return total;
}

/**
 * The claim order of pending jobs without a group: highest priority first, then oldest (lowest
 * id). PostgreSQL's claim statements sort by the same `priority DESC, id`, in SQL.
 */
export function byClaimOrder(
  a: { readonly priority: number; readonly id: number },
  b: { readonly priority: number; readonly id: number },
): number {
  return b.priority - a.priority || a.id - b.id;
}

/** How many jobs a claim's lists (one per want) hold together. */
export function claimedCount(lists: readonly (readonly unknown[])[]): number {
  let n = 0;
  for (const list of lists) n += list.length;
  return n;
}

/**
 * Deals `jobs` claimed jobs (in claim order) round-robin over `wants`, each taking at most its
 * `max`, so a burst of fewer jobs than the total credit is spread evenly. Answers, for each job,
 * the index of the want it goes to. `jobs` must not exceed {@linkcode claimTotal}.
 */
export function dealRoundRobin(jobs: number, wants: readonly { max: number }[]): number[] {
  if (jobs > claimTotal(wants)) {
    throw new RangeError(`Cannot deal ${jobs} jobs: the wants take ${claimTotal(wants)}`);
  }
  const taken = new Array<number>(wants.length).fill(0);
  const out = new Array<number>(jobs);
  let w = 0;
  for (let i = 0; i < jobs; i++) {
    while (taken[w] >= wants[w].max) w = (w + 1) % wants.length;
    out[i] = w;
    taken[w]++;
    w = (w + 1) % wants.length;
  }
  return out;
}

/**
 * Whether running job `id` now changes it: a delayed job becomes pending (true), a pending one
 * stays as it is (false), and any other state is a `conflict`.
 */
export function runNowPromotes(id: number, state: JobState): boolean {
  if (state === "pending") return false;
  if (state === "delayed") return true;
  throw new TegamiError("conflict", `Cannot run job ${id} now: it is ${state}, not delayed`, {
    id,
  });
}
