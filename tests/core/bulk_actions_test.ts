import assert from "node:assert/strict";
import {
  actionFilter,
  BulkActions,
  type BulkTarget,
  type BulkTask,
  bulkTaskId,
  nextWindow,
  parseBulkRequest,
  replayOf,
} from "../../lib/core/bulk_actions.ts";
import { ManualClock } from "../../lib/core/clock.ts";
import { TegamiError } from "../../lib/core/errors.ts";
import {
  everyJob,
  type FoundJobs,
  type JobFilter,
  parseJobFilter,
} from "../../lib/core/job_filter.ts";
import type { Enqueued, Job, NewJob } from "../../lib/core/job.ts";
import type { JobPage } from "../../lib/store/store.ts";

Deno.test("actionFilter() narrows the states to the action's, and refuses none left", () => {
  assert.deepEqual(actionFilter(everyJob("q"), "requeue").states, ["dead"]);
  assert.deepEqual(actionFilter(everyJob("q"), "replay").states, ["done", "dead", "cancelled"]);
  const some = { ...everyJob("q"), states: ["pending", "done"] as const };
  assert.deepEqual(actionFilter({ ...some, states: [...some.states] }, "cancel").states, [
    "pending",
  ]);
  assert.throws(
    () => actionFilter({ ...everyJob("q"), states: ["done"] }, "cancel"),
    (e: unknown) => e instanceof TegamiError && e.code === "validation_failed",
  );
});

Deno.test("parseBulkRequest() takes an action, a filter and dry_run false by default", () => {
  const request = parseBulkRequest("q", { action: "delete", filter: { group: "g" } });
  assert.equal(request.action, "delete");
  assert.equal(request.dry_run, false);
  assert.equal(request.filter.group, "g");
  assert.equal(request.filter.queue, "q");
  assert.equal(parseBulkRequest("q", { action: "cancel", dry_run: true }).dry_run, true);
  for (const bad of [null, [], { action: "purge" }, { action: "cancel", extra: 1 }]) {
    assert.throws(() => parseBulkRequest("q", bad), TegamiError);
  }
});

Deno.test("nextWindow() halves a slow window, doubles a quick one, within 1 and 250 ids", () => {
  assert.equal(nextWindow(16, 40), 8);
  assert.equal(nextWindow(1, 400), 1);
  assert.equal(nextWindow(16, 1), 32);
  assert.equal(nextWindow(200, 0.5), 250);
  assert.equal(nextWindow(64, 5), 64);
});

Deno.test("bulkTaskId() takes positive decimal ids and answers not_found otherwise", () => {
  assert.equal(bulkTaskId("12"), 12);
  for (const bad of ["0", "01", "-1", "x", "1e3", "99999999999999999"]) {
    assert.throws(
      () => bulkTaskId(bad),
      (e: unknown) => e instanceof TegamiError && e.code === "not_found",
      bad,
    );
  }
});

Deno.test("replayOf() copies a job's fields without its key, due now", () => {
  const job = {
    id: 7,
    queue: "q",
    state: "dead",
    payload: '{"a":1}',
    attributes: '{"trace":"x"}',
    priority: 3,
    key: "k",
    group: "g",
    max_attempts: 9,
    lease_ms: 5000,
    backoff: { base_ms: 10, max_ms: 100 },
  } as unknown as Job;
  assert.deepEqual(replayOf(job, 1234), {
    payload: '{"a":1}',
    attributes: '{"trace":"x"}',
    priority: 3,
    key: null,
    group: "g",
    run_at: 1234,
    max_attempts: 9,
    lease_ms: 5000,
    backoff: { base_ms: 10, max_ms: 100 },
  });
});

/** A queue of jobs in memory, answering as a broker would; copies a replay makes finish at once. */
class FakeTarget implements BulkTarget {
  jobs: Job[] = [];
  failWith: Error | null = null;

  add(n: number, state: Job["state"]): void {
    for (let i = 0; i < n; i++) {
      const id = this.jobs.length + 1;
      this.jobs.push({ id, queue: "q", state, payload: `{"n":${id}}` } as unknown as Job);
    }
  }

  /** When set, findJobs() waits for it before answering. */
  hold: Promise<void> | null = null;

  async findJobs(filter: JobFilter, after: number, limit: number): Promise<FoundJobs> {
    if (this.hold !== null) await this.hold;
    if (this.failWith !== null) return Promise.reject(this.failWith);
    const window = this.jobs.filter((j) => j.id > after).slice(0, limit);
    if (window.length === 0) return Promise.resolve({ ids: [], examined: 0, next: null });
    const end = window[0].id + limit - 1;
    const rows = window.filter((j) => j.id <= end && j.queue === filter.queue);
    const ids = rows.filter((j) => filter.states === null || filter.states.includes(j.state))
      .map((j) => j.id);
    return Promise.resolve({ ids, examined: rows.length, next: end });
  }

  get(id: number): Promise<Job | null> {
    return Promise.resolve(this.jobs.find((j) => j.id === id) ?? null);
  }

  listJobs(queue: string, page: JobPage): Promise<Job[]> {
    const jobs = this.jobs.filter((j) =>
      j.queue === queue && j.state === page.state && j.id > (page.after ?? 0)
    );
    return Promise.resolve(jobs.slice(0, page.limit));
  }

  cancel(): Promise<never> {
    return Promise.reject(new Error("not used"));
  }

  requeueDead(): Promise<never> {
    return Promise.reject(new Error("not used"));
  }

  enqueue(queue: string, jobs: NewJob[]): Promise<Enqueued[]> {
    return Promise.resolve(jobs.map((job) => {
      const id = this.jobs.length + 1;
      // Served and done at once: a replay that took its own copies would never end.
      this.jobs.push({ id, queue, state: "done", payload: job.payload } as unknown as Job);
      return { id, deduplicated: false, duplicate: null, state: "pending", run_at: 0 };
    }));
  }
}

async function ended(bulk: BulkActions, id: number): Promise<BulkTask> {
  for (let i = 0; i < 1000; i++) {
    const task = bulk.get(id);
    if (task.state !== "running") return task;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error(`task ${id} did not end`);
}

Deno.test("BulkActions replay never takes the copies it made, even once they are done", async () => {
  const target = new FakeTarget();
  target.add(600, "done");
  const bulk = new BulkActions({ target, clock: new ManualClock() });
  const task = bulk.start({
    filter: parseJobFilter("q", { states: ["done"] }),
    action: "replay",
    dry_run: false,
    by: "ops",
  });
  const done = await ended(bulk, task.id);
  assert.deepEqual([done.state, done.matched, done.done], ["done", 600, 600]);
  assert.equal(target.jobs.length, 1200);
});

Deno.test("BulkActions records a failure's message, and an unknown error as internal", async () => {
  const target = new FakeTarget();
  target.add(3, "dead");
  const bulk = new BulkActions({ target, clock: new ManualClock() });
  const request = { filter: everyJob("q"), action: "requeue" as const, dry_run: true, by: "ops" };
  target.failWith = new TegamiError("unavailable", "Cannot read: the store is closed");
  const failed = await ended(bulk, bulk.start(request).id);
  assert.deepEqual([failed.state, failed.error], ["failed", "Cannot read: the store is closed"]);
  target.failWith = new Error("connection reset by peer");
  const hidden = await ended(bulk, bulk.start(request).id);
  assert.equal(hidden.error, "Internal error: see the server log");
});

Deno.test("BulkActions stops a task on cancel and at close, and refuses a fifth at once", async () => {
  const target = new FakeTarget();
  target.add(100_000, "pending");
  const bulk = new BulkActions({ target, clock: new ManualClock() });
  const request = { filter: everyJob("q"), action: "cancel" as const, dry_run: true, by: "ops" };
  const ids = [1, 2, 3, 4].map(() => bulk.start(request).id);
  assert.throws(
    () => bulk.start(request),
    (e: unknown) => e instanceof TegamiError && e.code === "conflict",
  );
  assert.equal(bulk.cancel(ids[0], "alice").cancelled_by, "alice");
  const stopped = await ended(bulk, ids[0]);
  assert.equal(stopped.state, "cancelled");
  assert.ok(stopped.examined < 100_000);
  bulk.close();
  for (const id of ids.slice(1)) {
    const task = await ended(bulk, id);
    assert.deepEqual([task.state, task.cancelled_by], ["cancelled", "shutdown"]);
  }
  assert.throws(
    () => bulk.start(request),
    (e: unknown) => e instanceof TegamiError && e.code === "unavailable",
  );
  assert.deepEqual(bulk.list().map((t) => t.id), [...ids].reverse());
});

Deno.test("BulkActions counts a task whose last call fails as the server closes as stopped", async () => {
  const target = new FakeTarget();
  target.add(10, "dead");
  const { promise, resolve } = Promise.withResolvers<void>();
  target.hold = promise;
  target.failWith = new TegamiError("unavailable", "Cannot read: the store is closed");
  const bulk = new BulkActions({ target, clock: new ManualClock() });
  const request = { filter: everyJob("q"), action: "requeue" as const, dry_run: true, by: "ops" };
  const id = bulk.start(request).id;
  bulk.close();
  resolve();
  const task = await ended(bulk, id);
  assert.deepEqual([task.state, task.cancelled_by, task.error], ["cancelled", "shutdown", null]);
});
