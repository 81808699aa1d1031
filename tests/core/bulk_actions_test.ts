import assert from "node:assert/strict";
import {
  actionFilter,
  bulkTaskId,
  parseBulkRequest,
  replayOf,
} from "../../lib/core/bulk_actions.ts";
import { TegamiError } from "../../lib/core/errors.ts";
import { everyJob } from "../../lib/core/job_filter.ts";
import type { Job } from "../../lib/core/job.ts";

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
