/**
 * The queue settings model: parsing and validation (errors naming the field), the rate's text
 * and canonical form, and the rule for the defaults a job takes from its queue.
 */

import assert from "node:assert/strict";
import { TegamiError } from "../../lib/core/errors.ts";
import type { NewJob } from "../../lib/core/job.ts";
import {
  DEFAULT_QUEUE_SETTINGS,
  defaultQueueSettings,
  formatRate,
  isDefaultSettings,
  parseQueueSettings,
  parseRate,
  settingsView,
  withQueueDefaults,
} from "../../lib/core/queue_settings.ts";

function refused(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof TegamiError);
    assert.equal(error.code, "validation_failed");
    assert.match(error.message, message);
    return true;
  });
}

Deno.test("parseRate() reads LIMIT/INTERVAL with ms, s, m or h", () => {
  assert.deepEqual(parseRate("100/1s"), { limit: 100, per_ms: 1000 });
  assert.deepEqual(parseRate("5/250ms"), { limit: 5, per_ms: 250 });
  assert.deepEqual(parseRate("1000/1m"), { limit: 1000, per_ms: 60_000 });
  assert.deepEqual(parseRate("7/s"), { limit: 7, per_ms: 1000 });
  assert.deepEqual(parseRate("1/24h"), { limit: 1, per_ms: 86_400_000 });
  assert.deepEqual(parseRate("1000000/1ms"), { limit: 1_000_000, per_ms: 1 });
});

Deno.test("parseRate() refuses other texts, naming the field and why", () => {
  refused(() => parseRate("100"), /^Invalid "rate": expected "LIMIT\/INTERVAL"/);
  refused(() => parseRate("100 / 1s"), /got "100 \/ 1s"/);
  refused(() => parseRate("1.5/1s"), /expected "LIMIT\/INTERVAL"/);
  refused(() => parseRate("10/1d"), /expected "LIMIT\/INTERVAL"/);
  refused(() => parseRate(10), /as a string/);
  refused(() => parseRate("0/1s"), /expected a limit from 1 to 1000000, got 0/);
  refused(() => parseRate("1000001/1s"), /expected a limit from 1 to 1000000/);
  refused(() => parseRate("1/0ms"), /expected an interval from 1ms to 24h, got "0ms"/);
  refused(() => parseRate("1/1441m"), /expected an interval from 1ms to 24h/);
  refused(() => parseRate("x", "jobs.rate"), /^Invalid "jobs.rate"/);
});

Deno.test("formatRate() writes the interval in the largest unit that divides it", () => {
  assert.equal(formatRate({ limit: 100, per_ms: 1000 }), "100/1s");
  assert.equal(formatRate({ limit: 5, per_ms: 250 }), "5/250ms");
  assert.equal(formatRate({ limit: 1, per_ms: 90_000 }), "1/90s");
  assert.equal(formatRate({ limit: 1, per_ms: 120_000 }), "1/2m");
  assert.equal(formatRate({ limit: 1, per_ms: 7_200_000 }), "1/2h");
  assert.equal(formatRate({ limit: 3, per_ms: 1500 }), "3/1500ms");
  for (const text of ["1/1ms", "9/999ms", "2/61s", "4/59m", "8/24h"]) {
    assert.equal(formatRate(parseRate(text)), text);
  }
});

Deno.test("parseQueueSettings() takes the default for every absent or null member", () => {
  assert.deepEqual(parseQueueSettings({}), DEFAULT_QUEUE_SETTINGS);
  assert.deepEqual(
    parseQueueSettings({ concurrency: null, rate: null, group_limit: null, backoff: null }),
    DEFAULT_QUEUE_SETTINGS,
  );
  assert.equal(isDefaultSettings(parseQueueSettings({})), true);
  assert.equal(isDefaultSettings(parseQueueSettings({ group_limit: 2 })), false);
  assert.equal(isDefaultSettings(parseQueueSettings({ retain_dead_ms: 0 })), false);
});

Deno.test("parseQueueSettings() reads every member and settingsView() shows them back", () => {
  const body = {
    concurrency: 5,
    rate: "100/1000ms",
    group_limit: 3,
    max_attempts: 9,
    lease_ms: 100,
    backoff: { base_ms: 1, max_ms: 1 },
    retain_done_ms: 0,
    retain_dead_ms: 31_536_000_000,
    retain_pending_ms: 60_000,
    dead_letter_queue: "dlq",
  };
  const settings = parseQueueSettings(body);
  assert.deepEqual(settings.rate, { limit: 100, per_ms: 1000 });
  assert.deepEqual(settingsView(settings), { ...body, rate: "100/1s" });
  assert.deepEqual(parseQueueSettings(settingsView(settings)), settings);
});

Deno.test("parseQueueSettings() refuses bad members with errors naming the field", () => {
  refused(() => parseQueueSettings(null), /^Invalid "body": expected a JSON object/);
  refused(() => parseQueueSettings([1]), /^Invalid "body"/);
  refused(() => parseQueueSettings({ limit: 1 }), /^Invalid "limit": unknown field$/);
  refused(() => parseQueueSettings({ concurrency: true }), /"concurrency": expected an integer/);
  refused(() => parseQueueSettings({ concurrency: 1_000_001 }), /from 1 to 1000000/);
  refused(() => parseQueueSettings({ group_limit: 0 }), /"group_limit": expected an integer/);
  refused(() => parseQueueSettings({ max_attempts: 0 }), /"max_attempts": .* got 0/);
  refused(() => parseQueueSettings({ lease_ms: 43_200_001 }), /"lease_ms": .*43200000/);
  refused(() => parseQueueSettings({ backoff: [] }), /"backoff": expected an object/);
  refused(() => parseQueueSettings({ backoff: {} }), /"backoff.base_ms": is required/);
  refused(
    () => parseQueueSettings({ backoff: { base_ms: 0, max_ms: 1 } }),
    /"backoff.base_ms": expected an integer from 1/,
  );
  refused(() => parseQueueSettings({ retain_done_ms: 1.5 }), /"retain_done_ms": expected an/);
  refused(() => parseQueueSettings({ rate: "" }), /"rate": expected "LIMIT\/INTERVAL"/);
});

const JOB: NewJob = {
  payload: "1",
  priority: 0,
  key: null,
  run_at: 0,
  max_attempts: null,
  lease_ms: null,
  backoff: null,
};

Deno.test("withQueueDefaults() fills what the job left out from its queue, then the server's", () => {
  const queue = {
    ...defaultQueueSettings(),
    max_attempts: 9,
    lease_ms: 1000,
    backoff: { base_ms: 1, max_ms: 2 },
  };
  assert.deepEqual(withQueueDefaults(JOB, queue), {
    ...JOB,
    max_attempts: 9,
    lease_ms: 1000,
    backoff: { base_ms: 1, max_ms: 2 },
  });
  assert.deepEqual(withQueueDefaults(JOB, defaultQueueSettings()), { ...JOB, max_attempts: 5 });
  const own = { ...JOB, max_attempts: 2, lease_ms: 500, backoff: { base_ms: 3, max_ms: 4 } };
  assert.equal(withQueueDefaults(own, queue), own, "a complete job is taken as it is");
  assert.deepEqual(withQueueDefaults({ ...JOB, max_attempts: 1 }, queue).lease_ms, 1000);
});
