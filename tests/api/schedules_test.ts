/**
 * Schedules on the wire (lib/api/schedules.ts), called directly: the body of
 * `PUT /v1/schedules/{name}` and a schedule's JSON answer. tests/http/schedules_test.ts drives
 * the same through a running server.
 */

import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import type { Schedule } from "../../lib/core/schedule.ts";
import { parseSchedule, scheduleJson, scheduleName } from "../../lib/api/schedules.ts";

const LIMITS = { maxPayload: 1_000, maxBatch: 10 };

function refused(fn: () => unknown, code: string, message: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, code);
    assert.equal(error.message, message);
    return true;
  });
}

Deno.test("scheduleName() takes 1–128 of [A-Za-z0-9_.:-], starting with a letter or digit", () => {
  for (const name of ["nightly", "a", "0-report.v2:eu_1", "x".repeat(128)]) {
    assert.equal(scheduleName(name), name);
  }
  const problem = "expected 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or digit";
  for (const name of ["", "-a", ".a", "a b", "x".repeat(129), "é", 7, null]) {
    refused(() => scheduleName(name), "validation_failed", `Invalid "name": ${problem}`);
  }
  refused(() => scheduleName("", "path"), "validation_failed", `Invalid "path": ${problem}`);
});

Deno.test("parseSchedule() fills the defaults: UTC, missed last, priority 0, the rest unset", () => {
  const body = { queue: "reports", cron: " 0 3 * * * ", payload: { kind: "sales" } };
  assert.deepEqual(parseSchedule("nightly", body, LIMITS, 0), {
    name: "nightly",
    queue: "reports",
    cron: "0 3 * * *",
    timezone: "UTC",
    payload: '{"kind":"sales"}',
    priority: 0,
    max_attempts: null,
    lease_ms: null,
    backoff: null,
    missed: "last",
  });
});

Deno.test("parseSchedule() takes the job options as an enqueue does", () => {
  const body = {
    queue: "reports",
    cron: "*/5 * * * *",
    timezone: "Europe/Berlin",
    missed: "all",
    payload: [1, 2],
    priority: -3,
    max_attempts: 2,
    lease_ms: 60_000,
    backoff: { base_ms: 500, max_ms: 10_000 },
  };
  const s = parseSchedule("every-5", body, LIMITS, 0);
  assert.deepEqual(
    [s.timezone, s.missed, s.payload, s.priority, s.max_attempts, s.lease_ms, s.backoff],
    ["Europe/Berlin", "all", "[1,2]", -3, 2, 60_000, { base_ms: 500, max_ms: 10_000 }],
  );
  refused(
    () => parseSchedule("n", { ...body, priority: 1.5 }, LIMITS, 0),
    "validation_failed",
    'Invalid "priority": expected an integer',
  );
});

Deno.test("parseSchedule() keeps the payload as the very text sent when given the body", () => {
  const source =
    '{"queue":"q","cron":"* * * * *","payload": {"big":12345678901234567890, "x":1.0} }';
  const s = parseSchedule("n", JSON.parse(source), LIMITS, 0, source);
  assert.equal(s.payload, '{"big":12345678901234567890, "x":1.0}');
});

Deno.test("parseSchedule() refuses what a schedule cannot hold, naming the field", () => {
  const ok = { queue: "q", cron: "* * * * *", payload: 1 };
  const cases: [Record<string, unknown>, string][] = [
    [
      { ...ok, key: "k" },
      'Invalid "key": not a schedule option (each tick\'s job gets its own key, and runs at its tick)',
    ],
    [
      { ...ok, delay_ms: 5 },
      'Invalid "delay_ms": not a schedule option (each tick\'s job gets its own key, and runs at its tick)',
    ],
    [{ ...ok, colour: "red" }, 'Invalid "colour": unknown field'],
    [{ cron: "* * * * *", payload: 1 }, 'Invalid "queue": is required'],
    [{ queue: "q", payload: 1 }, 'Invalid "cron": is required'],
    [{ ...ok, cron: "  " }, 'Invalid "cron": expected a cron expression such as "0 3 * * *"'],
    [{ ...ok, cron: 5 }, 'Invalid "cron": expected a cron expression such as "0 3 * * *"'],
    [
      { ...ok, timezone: 1 },
      'Invalid "timezone": expected an IANA time zone name such as Europe/Berlin',
    ],
    [{ ...ok, missed: "some" }, 'Invalid "missed": expected one of none, last, all'],
    [{ queue: "q", cron: "* * * * *" }, 'Invalid "payload": is required'],
  ];
  for (const [body, message] of cases) {
    refused(() => parseSchedule("n", body, LIMITS, 0), "validation_failed", message);
  }
  refused(
    () => parseSchedule("n", [], LIMITS, 0),
    "validation_failed",
    'Invalid "body": expected a JSON object',
  );
  refused(
    () => parseSchedule("n", { ...ok, payload: "x".repeat(2_000) }, LIMITS, 0),
    "payload_too_large",
    'Invalid "payload": 2002 bytes of JSON is over the limit of 1000',
  );
});

Deno.test("scheduleJson() answers the definition with the payload spliced in as stored", () => {
  const s: Schedule = {
    name: "nightly",
    queue: "reports",
    cron: "0 3 * * *",
    timezone: "UTC",
    payload: '{"big":12345678901234567890}',
    priority: 2,
    max_attempts: null,
    lease_ms: 60_000,
    backoff: null,
    missed: "last",
    paused: false,
    next_at: 5_000,
    last_tick_at: 4_000,
    last_job_id: 17,
    revision: 3,
    created_at: 1_000,
    updated_at: 2_000,
  };
  assert.equal(
    scheduleJson(s),
    '{"name":"nightly","queue":"reports","cron":"0 3 * * *","timezone":"UTC","missed":"last",' +
      '"payload":{"big":12345678901234567890},"priority":2,"max_attempts":null,' +
      '"lease_ms":60000,"backoff":null,"paused":false,"next_tick_at":5000,"last_tick_at":4000,' +
      '"last_job_id":17,"created_at":1000,"updated_at":2000}',
  );
  const paused = JSON.parse(scheduleJson({ ...s, paused: true }));
  assert.equal(paused.paused, true);
  assert.equal(paused.next_tick_at, null, "no next tick while paused");
});
