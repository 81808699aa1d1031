/**
 * Bulk actions: requeue, cancel, delete or replay every job of a queue that a filter
 * (core/job_filter.ts) takes, as a background task. A task walks the queue in windows of at most
 * `MAINTENANCE_BATCH` ids ({@linkcode BulkTarget.findJobs}), applies the action to each window's
 * matches through the broker's own transitions (requeueDead, cancel, enqueue), and rests between
 * windows as long as the window took (at most 50 ms), as the maintenance loops do, so serving
 * never waits behind it. Payloads can be large, and reading them holds the event loop on SQLite:
 * windows that read them start small and follow {@linkcode nextWindow}, so one window's reads stay
 * near {@linkcode WINDOW_READ_MS}. A dry run walks the same windows and changes nothing: its `matched` is
 * the count the action would take.
 *
 * Tasks are kept in memory, the last {@linkcode MAX_KEPT_TASKS} of them: who started each, with
 * what filter and action, its counts, and when it started and ended. A restart forgets them; the
 * server log keeps a line for each start and end.
 *
 * @module
 */

import { invalid, TegamiError } from "./errors.ts";
import {
  filterView,
  type FoundJobs,
  type JobFilter,
  parseJobFilter,
  readsPayload,
} from "./job_filter.ts";
import type { Enqueued, Job, JobState, NewJob } from "./job.ts";
import type { Clock } from "./clock.ts";
import { MAINTENANCE_BATCH } from "./limits.ts";

/** What a bulk action does to each job it takes. */
export type BulkActionName = "requeue" | "cancel" | "delete" | "replay";

/** Every bulk action. */
export const BULK_ACTIONS: readonly BulkActionName[] = ["requeue", "cancel", "delete", "replay"];

/** The states each action takes a job from (a filter's states narrow them further). */
export const ACTION_STATES: Readonly<Record<BulkActionName, readonly JobState[]>> = {
  requeue: ["dead"],
  cancel: ["blocked", "pending", "delayed", "leased"],
  delete: ["blocked", "pending", "delayed", "leased", "done", "dead", "cancelled"],
  replay: ["done", "dead", "cancelled"],
};

/** Where a task is in its life. */
export type BulkTaskState = "running" | "done" | "cancelled" | "failed";

/** Most tasks kept (running and ended); the oldest ended ones are forgotten first. */
export const MAX_KEPT_TASKS = 100;
/** Most tasks running at once; one more is refused with `conflict`. */
export const MAX_RUNNING_TASKS = 4;

/** The first window of a task that reads payloads (a payload filter, a replay), in ids. */
export const FIRST_PAYLOAD_WINDOW = 16;
/** How long reading one window's jobs should take at most, ms; windows shrink or grow to it. */
export const WINDOW_READ_MS = 10;

/**
 * The next window's size after one of `limit` ids whose reads took `readMs`: halved when they took
 * longer than {@linkcode WINDOW_READ_MS} (large payloads: on SQLite the reads hold the event loop),
 * doubled when they took under a quarter of it, between 1 and `MAINTENANCE_BATCH`.
 */
export function nextWindow(limit: number, readMs: number): number {
  if (readMs > WINDOW_READ_MS) return Math.max(1, Math.floor(limit / 2));
  if (readMs < WINDOW_READ_MS / 4) return Math.min(MAINTENANCE_BATCH, limit * 2);
  return limit;
}

/** What a task needs of the broker: a window of matches, and the transitions it applies. */
export interface BulkTarget {
  /** One window of matching ids (see `Store.findJobs`). */
  findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs>;
  /** Reads a job, or null. */
  get(id: number): Promise<Job | null>;
  /** A page of a queue's jobs in one state, oldest first past a cursor. */
  listJobs(
    queue: string,
    page: { state: JobState; order: "oldest"; after: number; limit: number },
  ): Promise<Job[]>;
  /**
   * Cancels a waiting or leased job (telling its holder), or removes a finished one; `removed`
   * says which.
   */
  cancel(id: number): Promise<{ removed: boolean }>;
  /** Makes the dead jobs of `ids` pending again, attempts reset; answers how many. */
  requeueDead(queue: string, ids: number[] | null): Promise<number>;
  /** Stores jobs and wakes consumers. */
  enqueue(queue: string, jobs: NewJob[]): Promise<Enqueued[]>;
}

/** A bulk action as asked for. */
export interface BulkRequest {
  /** Which jobs. */
  filter: JobFilter;
  /** What to do to them. */
  action: BulkActionName;
  /** Count only, change nothing. */
  dry_run: boolean;
  /** Who asked: the token's name (or `anonymous` without auth). */
  by: string;
  /** Told when the task ends (for the log), with what made it fail. @default nothing */
  onEnd?: (task: Readonly<BulkTask>, cause: unknown) => void;
}

/** A task as the API shows it: the record of who did what, and how far it got. */
export interface BulkTask {
  /** The task's id (increasing, unique while the server runs). */
  id: number;
  /** The queue. */
  queue: string;
  /** The action. */
  action: BulkActionName;
  /** True for a count that changed nothing. */
  dry_run: boolean;
  /** The filter as given (its states narrowed to the action's). */
  filter: Record<string, unknown>;
  /** Who started it. */
  by: string;
  /** Where it is. */
  state: BulkTaskState;
  /** Jobs of the queue read so far. */
  examined: number;
  /** Of those, jobs the filter took. */
  matched: number;
  /** Of those, jobs the action changed (0 for a dry run). */
  done: number;
  /** Matched jobs the action found gone or changed meanwhile, and left. */
  skipped: number;
  /** When it started. */
  started_at: number;
  /** When it ended, or null while it runs. */
  ended_at: number | null;
  /** Who cancelled it, or null. */
  cancelled_by: string | null;
  /** Why it failed, or null. */
  error: string | null;
}

/** Options of {@linkcode BulkActions}. */
export interface BulkActionsOptions {
  /** Where the jobs are and the transitions come from (the broker). */
  target: BulkTarget;
  /** Times of starts and ends, and of replayed jobs. */
  clock: Clock;
}

/**
 * Validates the body of a bulk action on `queue`, `{filter?, action, dry_run?}` (`dry_run`
 * false when absent); throws `validation_failed` naming the field at fault.
 */
export function parseBulkRequest(
  queue: string,
  value: unknown,
): Pick<BulkRequest, "filter" | "action" | "dry_run"> {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw invalid("body", "expected an object: {filter, action, dry_run}");
  }
  const body = value as Record<string, unknown>;
  for (const name of Object.keys(body)) {
    if (name !== "filter" && name !== "action" && name !== "dry_run") {
      throw invalid(name, "unknown field");
    }
  }
  if (!BULK_ACTIONS.includes(body.action as BulkActionName)) {
    throw invalid("action", `expected one of ${BULK_ACTIONS.join(", ")}`);
  }
  if (body.dry_run !== undefined && typeof body.dry_run !== "boolean") {
    throw invalid("dry_run", "expected true or false");
  }
  const action = body.action as BulkActionName;
  const filter = actionFilter(parseJobFilter(queue, body.filter), action);
  return { filter, action, dry_run: body.dry_run === true };
}

/** A task id from a path segment; `not_found` for anything else (no such task). */
export function bulkTaskId(segment: string): number {
  const id = /^[1-9][0-9]{0,15}$/.test(segment) ? Number(segment) : NaN;
  if (!Number.isSafeInteger(id)) {
    throw new TegamiError(
      "not_found",
      `Cannot find bulk action ${JSON.stringify(segment)}: no such task`,
    );
  }
  return id;
}

/** The filter that `action` applies: `filter` with its states narrowed to the action's. */
export function actionFilter(filter: JobFilter, action: BulkActionName): JobFilter {
  const allowed = ACTION_STATES[action];
  const states = filter.states === null
    ? allowed
    : filter.states.filter((s) => allowed.includes(s));
  if (states.length === 0) {
    throw invalid(
      "filter.states",
      `the ${action} action takes only ${allowed.join(", ")} jobs, and the filter names none`,
    );
  }
  return { ...filter, states };
}

/** A fresh copy of a finished job for a replay: same queue, payload and fields, no key, due now. */
export function replayOf(job: Job, now: number): NewJob {
  return {
    payload: job.payload,
    attributes: job.attributes,
    priority: job.priority,
    key: null,
    group: job.group,
    run_at: now,
    max_attempts: job.max_attempts,
    lease_ms: job.lease_ms,
    backoff: job.backoff,
  };
}

interface Running {
  task: BulkTask;
  onEnd: ((task: Readonly<BulkTask>, cause: unknown) => void) | undefined;
  stop: boolean;
  wake: (() => void) | null;
}

/** The bulk action tasks of one server. */
export class BulkActions {
  readonly #target: BulkTarget;
  readonly #clock: Clock;
  readonly #tasks = new Map<number, Running>();
  #lastId = 0;
  #closed = false;

  /** Makes the task list of a server. */
  constructor(options: BulkActionsOptions) {
    this.#target = options.target;
    this.#clock = options.clock;
  }

  /**
   * Starts a task and answers it as it starts; `conflict` when {@linkcode MAX_RUNNING_TASKS}
   * run, `validation_failed` when the filter names no state the action takes.
   */
  start(request: BulkRequest): BulkTask {
    if (this.#closed) {
      throw new TegamiError(
        "unavailable",
        "Cannot start a bulk action: the server is shutting down",
      );
    }
    const filter = actionFilter(request.filter, request.action);
    const running = [...this.#tasks.values()].filter((r) => r.task.state === "running").length;
    if (running >= MAX_RUNNING_TASKS) {
      throw new TegamiError(
        "conflict",
        `Cannot start a bulk action: ${running} are running (at most ${MAX_RUNNING_TASKS})`,
      );
    }
    const task: BulkTask = {
      id: ++this.#lastId,
      queue: filter.queue,
      action: request.action,
      dry_run: request.dry_run,
      filter: filterView(filter),
      by: request.by,
      state: "running",
      examined: 0,
      matched: 0,
      done: 0,
      skipped: 0,
      started_at: this.#clock.now(),
      ended_at: null,
      cancelled_by: null,
      error: null,
    };
    const run: Running = { task, onEnd: request.onEnd, stop: false, wake: null };
    this.#tasks.set(task.id, run);
    this.#forgetOld();
    this.#run(run, filter).then(
      () => this.#end(run, run.stop ? "cancelled" : "done", null),
      // A task stopped at shutdown may see its last call fail as the store closes: it was
      // stopped, not failed.
      (error) => run.stop ? this.#end(run, "cancelled", null) : this.#end(run, "failed", error),
    );
    return { ...task };
  }

  /** Every task kept, newest first. */
  list(): BulkTask[] {
    return [...this.#tasks.values()].reverse().map((r) => ({ ...r.task }));
  }

  /** One task; `not_found` if it is not kept. */
  get(id: number): BulkTask {
    return { ...this.#find(id).task };
  }

  /**
   * Stops a running task after the window under way (what it did stays done); a task that
   * ended is answered as it is.
   */
  cancel(id: number, by: string): BulkTask {
    const run = this.#find(id);
    if (run.task.state === "running" && !run.stop) {
      run.stop = true;
      run.task.cancelled_by = by;
      run.wake?.();
    }
    return { ...run.task };
  }

  /** Stops every running task (at shutdown); they end as cancelled. */
  close(): void {
    this.#closed = true;
    for (const run of this.#tasks.values()) {
      if (run.task.state !== "running" || run.stop) continue;
      run.stop = true;
      run.task.cancelled_by = "shutdown";
      run.wake?.();
    }
  }

  #find(id: number): Running {
    const run = this.#tasks.get(id);
    if (run === undefined) {
      throw new TegamiError("not_found", `Cannot find bulk action ${id}: no such task`);
    }
    return run;
  }

  #forgetOld(): void {
    for (const [id, run] of this.#tasks) {
      if (this.#tasks.size <= MAX_KEPT_TASKS) return;
      if (run.task.state !== "running") this.#tasks.delete(id);
    }
  }

  #end(run: Running, state: BulkTaskState, cause: unknown): void {
    run.task.state = state;
    run.task.ended_at = this.#clock.now();
    if (cause !== null) {
      run.task.error = cause instanceof TegamiError
        ? cause.message
        : "Internal error: see the server log";
    }
    try {
      run.onEnd?.({ ...run.task }, cause);
    } catch {
      // A log that throws must not leave the task running.
    }
  }

  async #run(run: Running, filter: JobFilter): Promise<void> {
    const { task } = run;
    // Jobs a replay creates land in the same queue: it never takes ids at or past its first.
    let ceiling = Infinity;
    // Payloads may be large (up to --max-payload each): a window that reads them starts small.
    let limit = readsPayload(filter) || (task.action === "replay" && !task.dry_run)
      ? FIRST_PAYLOAD_WINDOW
      : MAINTENANCE_BATCH;
    for (let after = 0; !run.stop;) {
      const began = performance.now();
      const found = await this.#target.findJobs(filter, after, limit);
      let readMs = performance.now() - began;
      task.examined += found.examined;
      const ids = found.ids.filter((id) => id < ceiling);
      task.matched += ids.length;
      if (!task.dry_run && ids.length > 0) {
        const applied = await this.#apply(task, filter, ids, after, limit);
        readMs += applied.readMs;
        if (applied.first !== null && applied.first < ceiling) ceiling = applied.first;
      }
      if (found.next === null || found.next >= ceiling) return;
      after = found.next;
      limit = nextWindow(limit, readMs);
      await this.#rest(run, performance.now() - began);
    }
  }

  /**
   * Applies the task's action to `ids`, the matches of the window of `limit` ids past `after`;
   * answers the first id a replay created (else null), and how long reading the jobs took.
   */
  async #apply(
    task: BulkTask,
    filter: JobFilter,
    ids: number[],
    after: number,
    limit: number,
  ): Promise<{ first: number | null; readMs: number }> {
    const target = this.#target;
    switch (task.action) {
      case "requeue": {
        const n = await target.requeueDead(task.queue, ids);
        task.done += n;
        task.skipped += ids.length - n;
        return { first: null, readMs: 0 };
      }
      case "cancel":
      case "delete": {
        const outcomes = await Promise.all(ids.map((id) => this.#cancel(id, task.action)));
        for (const ok of outcomes) ok ? task.done++ : task.skipped++;
        return { first: null, readMs: 0 };
      }
      case "replay": {
        // The window's jobs of each finished state, read a page per state (the window holds at
        // most `limit` ids past `after`, so one page holds all of a state's), rather
        // than one read per job. A match that left its state meanwhile is not there: skipped.
        const wanted = new Set(ids);
        const began = performance.now();
        const pages = await Promise.all(
          (filter.states ?? ACTION_STATES.replay).map((state) =>
            target.listJobs(task.queue, {
              state,
              order: "oldest",
              after,
              limit,
            })
          ),
        );
        const jobs = pages.flat().filter((job) => wanted.has(job.id)).sort((a, b) => a.id - b.id);
        const readMs = performance.now() - began;
        task.skipped += ids.length - jobs.length;
        if (jobs.length === 0) return { first: null, readMs };
        const now = this.#clock.now();
        const out = await target.enqueue(task.queue, jobs.map((job) => replayOf(job, now)));
        task.done += out.length;
        return { first: Math.min(...out.map((e) => e.id)), readMs };
      }
    }
  }

  /**
   * Cancels one job (a cancel) or removes it (a delete: a waiting or leased job is cancelled,
   * its lease revoked, then removed); false when it was gone or, for a cancel, had finished.
   */
  async #cancel(id: number, action: BulkActionName): Promise<boolean> {
    try {
      if (action === "cancel") {
        // store.cancel() removes a finished job: one that finished since the window was read is
        // left alone. (One finishing between this read and the cancel is still removed.)
        const job = await this.#target.get(id);
        if (job === null || !ACTION_STATES.cancel.includes(job.state)) return false;
      }
      const first = await this.#target.cancel(id);
      if (action === "cancel" || first.removed) return action === "delete" || !first.removed;
      return (await this.#target.cancel(id)).removed;
    } catch (error) {
      if (error instanceof TegamiError && error.code === "not_found") return false;
      throw error;
    }
  }

  #rest(run: Running, busyMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, Math.min(50, Math.max(1, busyMs)));
      function done() {
        clearTimeout(timer);
        run.wake = null;
        resolve();
      }
      run.wake = done;
    });
  }
}
