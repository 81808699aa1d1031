/**
 * The dedup rules, as pure functions: what an enqueue does when a job already holds its key.
 *
 * A job's `key` blocks duplicates in its queue for as long as the job is stored, or, with
 * `key_ttl_ms`, until that long after it was enqueued (its key window). A duplicate that arrives
 * while the key is held is, by the new job's `on_duplicate`:
 *
 * - `ignore` (the default): answered with the holder's id, nothing changes;
 * - `replace` (debounce): a holder still waiting (pending or delayed) takes the new job's
 *   payload, `run_at`, priority, attempts allowed, lease length, backoff and key window (not
 *   its group: a job's place in its group's order is its own);
 * - `extend`: a holder still waiting has its `run_at` pushed to the new job's (never earlier).
 *
 * A holder that is leased or finished is never changed: the duplicate is then ignored. Once the
 * window has passed, the holder releases its key (it keeps it for display, see the stores) and
 * the new job is stored.
 *
 * Every store applies these inside its enqueue transaction, so SQLite and PostgreSQL agree.
 *
 * @module
 */

import type { JobState, NewJob } from "./job.ts";
import { initialState } from "./lifecycle.ts";

/** The fields of the job holding a key that the rules read. */
export interface KeyHolder {
  /** Its state. */
  state: JobState;
  /** When it is (or was) due. */
  run_at: number;
  /** When its key window ends, or null when it holds the key as long as it is stored. */
  key_expires_at: number | null;
}

/** What an enqueue does about the job holding its key. */
export type DuplicateDecision =
  /** The holder's key window has passed: release its key and store the new job. */
  | { action: "release" }
  /** Answer the holder's id and change nothing. */
  | { action: "ignored" }
  /** Rewrite the holder with the new job's fields; it is then in `state`, due at `run_at`. */
  | { action: "replaced"; state: "pending" | "delayed"; run_at: number }
  /** Move the holder's `run_at`; it is then in `state`, due at `run_at`. */
  | { action: "extended"; state: "pending" | "delayed"; run_at: number };

/** When the key window of `job` enqueued at `now` ends, or null when it has none. */
export function keyExpiresAt(job: NewJob, now: number): number | null {
  return job.key === null || job.key_ttl_ms == null ? null : now + job.key_ttl_ms;
}

/** Whether the holder still blocks duplicates at `now`. */
export function holdsKey(holder: KeyHolder, now: number): boolean {
  return holder.key_expires_at === null || holder.key_expires_at > now;
}

/** Whether a job in `state` still waits to be delivered (and so may be replaced or extended). */
export function isWaiting(state: JobState): state is "pending" | "delayed" {
  return state === "pending" || state === "delayed";
}

/**
 * What enqueueing `job` at `now` does to `holder`, the job holding its key. A pending holder that
 * stays pending keeps its `run_at` (the time it became available, and so its age); one that
 * becomes pending is available from `now`.
 */
export function onDuplicate(holder: KeyHolder, job: NewJob, now: number): DuplicateDecision {
  if (!holdsKey(holder, now)) return { action: "release" };
  const mode = job.on_duplicate ?? "ignore";
  if (mode === "ignore" || !isWaiting(holder.state)) return { action: "ignored" };
  const wanted = mode === "replace" ? job.run_at : Math.max(holder.run_at, job.run_at);
  const state = initialState(wanted, now);
  const runAt = state === "delayed" ? wanted : holder.state === "pending" ? holder.run_at : now;
  return { action: mode === "replace" ? "replaced" : "extended", state, run_at: runAt };
}
