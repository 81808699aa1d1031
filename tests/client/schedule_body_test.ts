import assert from "node:assert/strict";
import { scheduleBody } from "../../lib/client/schedules.ts";

Deno.test("scheduleBody() sends queue, cron and payload, and only the options given", () => {
  assert.deepEqual(scheduleBody({ queue: "reports", cron: "0 3 * * *", payload: { a: 1 } }), {
    queue: "reports",
    cron: "0 3 * * *",
    payload: { a: 1 },
  });
  assert.deepEqual(scheduleBody({ queue: "q", cron: "* * * * *", payload: null }), {
    queue: "q",
    cron: "* * * * *",
    payload: null,
  });
});

Deno.test("scheduleBody() writes the options in the API's snake_case", () => {
  const body = scheduleBody({
    queue: "q",
    cron: "*/5 * * * *",
    payload: "x",
    timezone: "Europe/Berlin",
    missed: "all",
    priority: 0,
    maxAttempts: 3,
    leaseMs: 60_000,
    backoff: { baseMs: 500, maxMs: 10_000 },
  });
  assert.deepEqual(body, {
    queue: "q",
    cron: "*/5 * * * *",
    payload: "x",
    timezone: "Europe/Berlin",
    missed: "all",
    priority: 0,
    max_attempts: 3,
    lease_ms: 60_000,
    backoff: { base_ms: 500, max_ms: 10_000 },
  });
});
