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
 * Every store plans its enqueues with {@linkcode planEnqueue} inside the enqueue's transaction,
 * so SQLite and PostgreSQL agree.
 *
 * @module
 */

import type { DuplicateOutcome, JobState, NewJob } from "./job.ts";
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

/** Who holds a key while a batch is planned: a stored job, or a job of the batch. */
export interface KeySlot extends KeyHolder {
  /** The stored job's id, or null for a job of this batch not yet inserted. */
  id: number | null;
  /** The index in the plan's inserts of a job of this batch, or null. */
  insert: number | null;
}

/** A job of an enqueue to insert, as the plan leaves it. */
export interface PlannedInsert<J extends NewJob = NewJob> {
  /** The job, in its final form (a later job of the batch may have replaced it). */
  job: J;
  /** The state it is stored in. */
  state: "pending" | "delayed";
  /** When it is due. */
  run_at: number;
  /** When its key window ends, or null. */
  key_expires_at: number | null;
}

/** A stored job a duplicate changes: replaced (`job` given) or extended (`job` null). */
export interface PlannedChange<J extends NewJob = NewJob> {
  /** The stored job. */
  id: number;
  /** The job that replaced it, or null when it was only extended. */
  job: J | null;
  /** Its state after the batch. */
  state: "pending" | "delayed";
  /** When it is due after the batch. */
  run_at: number;
  /** When its key window ends after the batch, or null. */
  key_expires_at: number | null;
}

/** What an enqueue writes and answers, worked out before any write. */
export interface EnqueuePlan<J extends NewJob = NewJob> {
  /** Stored jobs whose key window passed: they give their keys up. */
  released: number[];
  /** Stored jobs replaced or extended, once each (in their final form). */
  changed: PlannedChange<J>[];
  /** New jobs, in batch order. */
  inserts: PlannedInsert<J>[];
  /** One per job of the batch: the job that answers it, and its outcome. */
  answers: {
    slot: KeySlot;
    duplicate: DuplicateOutcome | null;
    state: JobState;
    run_at: number;
  }[];
}

/**
 * Applies the dedup rules to a batch, in order, as if each job were enqueued after the one
 * before: a job may dedup against a stored holder of its key (`holders`, read inside the
 * enqueue's transaction, where no other enqueue of these keys can interleave) or an earlier job
 * of the batch, and a replace or extend of an earlier job of the batch changes what is inserted.
 * Both stores write what it says, so they agree on every batch.
 */
export function planEnqueue<J extends NewJob>(
  holders: readonly (KeyHolder & { id: number; key: string })[],
  jobs: readonly J[],
  now: number,
): EnqueuePlan<J> {
  const slots = new Map<string, KeySlot>();
  for (const h of holders) {
    slots.set(h.key, {
      id: h.id,
      insert: null,
      state: h.state,
      run_at: h.run_at,
      key_expires_at: h.key_expires_at,
    });
  }
  const plan: EnqueuePlan<J> = { released: [], changed: [], inserts: [], answers: [] };
  const changed = new Map<number, PlannedChange<J>>();
  for (const job of jobs) {
    const slot = job.key === null ? undefined : slots.get(job.key);
    if (slot !== undefined) {
      const decision = onDuplicate(slot, job, now);
      if (decision.action === "release") {
        // Only a stored job can have a window that passed: the batch's own are all open.
        if (slot.id !== null) plan.released.push(slot.id);
      } else {
        if (decision.action !== "ignored") {
          const replaced = decision.action === "replaced";
          slot.state = decision.state;
          slot.run_at = decision.run_at;
          if (replaced) slot.key_expires_at = keyExpiresAt(job, now);
          if (slot.insert !== null) {
            const row = plan.inserts[slot.insert];
            if (replaced) row.job = job;
            row.state = decision.state;
            row.run_at = decision.run_at;
            row.key_expires_at = slot.key_expires_at;
          } else {
            const id = slot.id as number;
            const before = changed.get(id);
            changed.set(id, {
              id,
              job: replaced ? job : before?.job ?? null,
              state: decision.state,
              run_at: decision.run_at,
              key_expires_at: slot.key_expires_at,
            });
          }
        }
        plan.answers.push({
          slot,
          duplicate: decision.action,
          state: slot.state,
          run_at: slot.run_at,
        });
        continue;
      }
    }
    const state = initialState(job.run_at, now);
    const fresh: KeySlot = {
      id: null,
      insert: plan.inserts.length,
      state,
      run_at: state === "delayed" ? job.run_at : now,
      key_expires_at: keyExpiresAt(job, now),
    };
    plan.inserts.push({
      job,
      state,
      run_at: fresh.run_at,
      key_expires_at: fresh.key_expires_at,
    });
    if (job.key !== null) slots.set(job.key, fresh);
    plan.answers.push({ slot: fresh, duplicate: null, state, run_at: fresh.run_at });
  }
  plan.changed = [...changed.values()];
  return plan;
}
