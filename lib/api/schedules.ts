/**
 * Schedules on the wire: the body of `PUT /v1/schedules/{name}` validated into a
 * {@linkcode ScheduleDefinition}, and a schedule's JSON answer. The job options are read by the
 * same parser as an enqueue's, so they take the same values and the same errors.
 *
 * @module
 */

import { invalid } from "../core/errors.ts";
import { MAX_CRON_CHARS } from "../core/cron.ts";
import {
  DEFAULT_MISSED,
  DEFAULT_TIMEZONE,
  MISSED_POLICIES,
  type MissedPolicy,
  type Schedule,
  SCHEDULE_NAME,
  type ScheduleDefinition,
} from "../core/schedule.ts";
import { asObject, parseJob, queueName, type RequestLimits } from "./requests.ts";
import { memberSpan } from "./json_spans.ts";

/** The fields a schedule's body may hold. */
const SCHEDULE_FIELDS = new Set([
  "queue",
  "cron",
  "timezone",
  "missed",
  "payload",
  "priority",
  "max_attempts",
  "lease_ms",
  "backoff",
]);

/** The job options among them, handed to the enqueue parser. */
const JOB_OPTIONS = ["payload", "priority", "max_attempts", "lease_ms", "backoff"] as const;

/** Checks a schedule name (the queue-name pattern). */
export function scheduleName(value: unknown, field = "name"): string {
  if (typeof value !== "string" || !SCHEDULE_NAME.test(value)) {
    throw invalid(
      field,
      "expected 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or digit",
    );
  }
  return value;
}

/**
 * Parses the body of `PUT /v1/schedules/{name}`. The cron expression and the time zone are only
 * checked for shape here; the scheduler parses them (and names them when they are wrong). With
 * `source`, the body's text, the payload is kept as the very text sent (as an enqueue keeps it:
 * integers past 2^53, `1.0` and key order survive), not re-serialised.
 */
export function parseSchedule(
  name: string,
  value: unknown,
  limits: RequestLimits,
  now: number,
  source?: string,
): ScheduleDefinition {
  const body = asObject(value);
  for (const field of Object.keys(body)) {
    if (!SCHEDULE_FIELDS.has(field)) {
      throw invalid(
        field,
        field === "key" || field === "delay_ms" || field === "run_at"
          ? "not a schedule option (each tick's job gets its own key, and runs at its tick)"
          : "unknown field",
      );
    }
  }
  if (!Object.hasOwn(body, "queue")) throw invalid("queue", "is required");
  const queue = queueName(body.queue);
  if (!Object.hasOwn(body, "cron")) throw invalid("cron", "is required");
  if (typeof body.cron !== "string" || body.cron.trim() === "") {
    throw invalid("cron", 'expected a cron expression such as "0 3 * * *"');
  }
  if (body.cron.length > MAX_CRON_CHARS) {
    throw invalid("cron", `longer than ${MAX_CRON_CHARS} characters`);
  }
  let timezone = DEFAULT_TIMEZONE;
  if (body.timezone !== undefined && body.timezone !== null) {
    if (typeof body.timezone !== "string") {
      throw invalid("timezone", "expected an IANA time zone name such as Europe/Berlin");
    }
    timezone = body.timezone;
  }
  let missed: MissedPolicy = DEFAULT_MISSED;
  if (body.missed !== undefined && body.missed !== null) {
    if (!MISSED_POLICIES.includes(body.missed as MissedPolicy)) {
      throw invalid("missed", `expected one of ${MISSED_POLICIES.join(", ")}`);
    }
    missed = body.missed as MissedPolicy;
  }
  const options: Record<string, unknown> = {};
  for (const field of JOB_OPTIONS) if (Object.hasOwn(body, field)) options[field] = body[field];
  const span = source === undefined ? undefined : memberSpan(source, "payload");
  const raw = span === undefined ? undefined : source!.slice(span.start, span.end);
  const job = parseJob(options, limits, now, "", raw);
  return {
    name,
    queue,
    cron: body.cron.trim(),
    timezone,
    payload: job.payload,
    priority: job.priority,
    max_attempts: job.max_attempts,
    lease_ms: job.lease_ms,
    backoff: job.backoff,
    missed,
  };
}

/**
 * A schedule as JSON text: its definition, `paused`, `next_tick_at` (null while paused),
 * `last_tick_at`, `last_job_id`, `created_at` and `updated_at`. The payload is spliced in as
 * stored.
 */
export function scheduleJson(s: Schedule): string {
  const head = JSON.stringify({
    name: s.name,
    queue: s.queue,
    cron: s.cron,
    timezone: s.timezone,
    missed: s.missed,
  });
  const tail = JSON.stringify({
    priority: s.priority,
    max_attempts: s.max_attempts,
    lease_ms: s.lease_ms,
    backoff: s.backoff,
    paused: s.paused,
    next_tick_at: s.paused ? null : s.next_at,
    last_tick_at: s.last_tick_at,
    last_job_id: s.last_job_id,
    created_at: s.created_at,
    updated_at: s.updated_at,
  });
  return `${head.slice(0, -1)},"payload":${s.payload},${tail.slice(1)}`;
}
