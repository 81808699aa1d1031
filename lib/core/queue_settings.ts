/**
 * A queue's settings: limits the claim enforces (`concurrency`, `rate`, `group_limit`), the
 * defaults a job enqueued without its own value takes (`max_attempts`, `lease_ms`, `backoff`),
 * how long the queue's finished jobs are kept (`retain_done_ms`, `retain_dead_ms`), and how long
 * a job may wait for a consumer (`retain_pending_ms`).
 *
 * Settings are set as a whole: {@linkcode parseQueueSettings} reads a complete settings object
 * (`PUT /v1/queues/{queue}/settings`), an absent or null member meaning that field's default, so
 * what is answered is exactly what was sent plus defaults, and a read followed by a write of what
 * was read changes nothing. A partial update is a read, a change and a write of the whole (what
 * the CLI does). Every field's default is "no setting": null, or 1 for `group_limit`.
 *
 * The functions here are pure: parsing and validation with errors that name the field, the
 * canonical form of a rate, the JSON view, and the rule for a job's defaults.
 *
 * @module
 */

import { invalid } from "./errors.ts";
import type { Backoff, NewJob } from "./job.ts";
import {
  DEFAULT_MAX_ATTEMPTS,
  MAX_ATTEMPTS,
  MAX_DELAY_MS,
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  QUEUE_NAME,
} from "./limits.ts";

/** Most deliveries of a queue per interval: `limit` per `per_ms` milliseconds. */
export interface Rate {
  /** Deliveries allowed per interval. */
  limit: number;
  /** The interval, ms. */
  per_ms: number;
}

/** A queue's settings; null means "not set" (no limit, or the server's value). */
export interface QueueSettings {
  /** Most leased jobs of the queue at once, across every consumer and server; null: no limit. */
  concurrency: number | null;
  /** Most deliveries per interval; null: no limit. */
  rate: Rate | null;
  /** Most jobs of one ordering group leased at once (1 or more). @default 1 */
  group_limit: number;
  /** Deliveries allowed to a job enqueued without its own; null: the server's (5). */
  max_attempts: number | null;
  /** Lease length of a job enqueued without its own, ms; null: the server's (`--lease`). */
  lease_ms: number | null;
  /** Retry backoff of a job enqueued without its own; null: the server's (`--backoff-*`). */
  backoff: Backoff | null;
  /** How long done and cancelled jobs are kept, ms; null: the server's (`--retain-done`). */
  retain_done_ms: number | null;
  /** How long dead jobs are kept, ms; null: until removed or requeued. */
  retain_dead_ms: number | null;
  /**
   * How long a pending job waits for a consumer, ms, counted from when it became due (its
   * enqueue, its delay's end, a retry or a requeue); past it, the retention sweep deletes it
   * (SQS's `MessageRetentionPeriod`). null: until it is delivered.
   */
  retain_pending_ms: number | null;
  /**
   * The queue a job that would be dead here moves to instead (out of attempts, nacked dead, or
   * its consumer gone on its last attempt), pending there with its attempts reset and the move
   * recorded on it; null: it stays in this queue's dead list.
   */
  dead_letter_queue: string | null;
}

/** The most `concurrency` may be. */
export const MAX_CONCURRENCY = 1_000_000;
/** The most `group_limit` may be. */
export const MAX_GROUP_LIMIT = 1_000_000;
/** The most deliveries a rate may allow per interval. */
export const MAX_RATE_LIMIT = 1_000_000;
/** The longest rate interval, ms (one day). */
export const MAX_RATE_PER_MS = 24 * 60 * 60 * 1000;
/** The longest retention, ms (365 days, as `--retain-done`). */
export const MAX_RETAIN_MS = 365 * 24 * 60 * 60 * 1000;

/** The settings of a queue nobody configured. */
export const DEFAULT_QUEUE_SETTINGS: Readonly<QueueSettings> = Object.freeze({
  concurrency: null,
  rate: null,
  group_limit: 1,
  max_attempts: null,
  lease_ms: null,
  backoff: null,
  retain_done_ms: null,
  retain_dead_ms: null,
  retain_pending_ms: null,
  dead_letter_queue: null,
});

/** A fresh copy of the default settings. */
export function defaultQueueSettings(): QueueSettings {
  return { ...DEFAULT_QUEUE_SETTINGS };
}

/** Whether `settings` are all defaults (a queue with these has no settings to keep). */
export function isDefaultSettings(settings: QueueSettings): boolean {
  return settings.concurrency === null && settings.rate === null && settings.group_limit === 1 &&
    settings.max_attempts === null && settings.lease_ms === null && settings.backoff === null &&
    settings.retain_done_ms === null && settings.retain_dead_ms === null &&
    settings.retain_pending_ms === null && settings.dead_letter_queue === null;
}

/** The members a settings object may hold. */
const SETTINGS_FIELDS = new Set(Object.keys(DEFAULT_QUEUE_SETTINGS));
const BACKOFF_FIELDS = new Set(["base_ms", "max_ms"]);

/** Rate interval units, in ms. */
const RATE_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `LIMIT/[COUNT]UNIT`: `100/1s`, `5/250ms`, `1000/m`. */
const RATE_TEXT = /^(\d{1,16})\/(\d{0,16})(ms|s|m|h)$/;

const RATE_HINT = 'expected "LIMIT/INTERVAL" such as "100/1s", "5/250ms" or "1000/1m"';

/**
 * Parses a rate written `LIMIT/INTERVAL`: a whole number of deliveries, a slash, and an interval
 * as a whole number with a unit `ms`, `s`, `m` or `h` (`100/1s`, `5/250ms`, `1000/1m`; the
 * number may be left out for one unit: `100/s`). `field` names it in errors.
 */
export function parseRate(value: unknown, field = "rate"): Rate {
  if (typeof value !== "string") throw invalid(field, `${RATE_HINT}, as a string`);
  const match = RATE_TEXT.exec(value);
  if (match === null) {
    throw invalid(field, `${RATE_HINT}, got ${JSON.stringify(value.slice(0, 64))}`);
  }
  const limit = Number(match[1]);
  const per_ms = Number(match[2] === "" ? "1" : match[2]) * RATE_UNITS[match[3]];
  if (limit < 1 || limit > MAX_RATE_LIMIT) {
    throw invalid(field, `expected a limit from 1 to ${MAX_RATE_LIMIT}, got ${limit}`);
  }
  if (per_ms < 1 || per_ms > MAX_RATE_PER_MS) {
    throw invalid(field, `expected an interval from 1ms to 24h, got "${value.split("/")[1]}"`);
  }
  return { limit, per_ms };
}

/** A rate in its canonical text: the interval in the largest unit that divides it (`100/1s`). */
export function formatRate(rate: Rate): string {
  for (const unit of ["h", "m", "s"] as const) {
    const ms = RATE_UNITS[unit];
    if (rate.per_ms % ms === 0) return `${rate.limit}/${rate.per_ms / ms}${unit}`;
  }
  return `${rate.limit}/${rate.per_ms}ms`;
}

/** An optional integer member in [min, max]; absent or null answers null. */
function optionalInteger(
  body: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  prefix = "",
): number | null {
  const value = body[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw invalid(prefix + name, "expected an integer or null");
  }
  if (value < min || value > max) {
    throw invalid(prefix + name, `expected an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Parses and validates a complete settings object (the body of a settings PUT). Every member is
 * optional; an absent or null one takes its default. Unknown members are refused, so a typo is
 * an error rather than a setting silently not made. Throws `validation_failed` naming the field.
 */
export function parseQueueSettings(value: unknown): QueueSettings {
  if (!isObject(value)) throw invalid("body", "expected a JSON object of queue settings");
  for (const name of Object.keys(value)) {
    if (!SETTINGS_FIELDS.has(name)) throw invalid(name, "unknown field");
  }
  let backoff: Backoff | null = null;
  if (value.backoff !== undefined && value.backoff !== null) {
    const b = value.backoff;
    if (!isObject(b)) throw invalid("backoff", "expected an object {base_ms, max_ms} or null");
    for (const name of Object.keys(b)) {
      if (!BACKOFF_FIELDS.has(name)) throw invalid(`backoff.${name}`, "unknown field");
    }
    const base = optionalInteger(b, "base_ms", 1, MAX_DELAY_MS, "backoff.");
    const max = optionalInteger(b, "max_ms", 1, MAX_DELAY_MS, "backoff.");
    if (base === null) throw invalid("backoff.base_ms", "is required");
    if (max === null) throw invalid("backoff.max_ms", "is required");
    if (max < base) throw invalid("backoff.max_ms", "must be at least base_ms");
    backoff = { base_ms: base, max_ms: max };
  }
  return {
    concurrency: optionalInteger(value, "concurrency", 1, MAX_CONCURRENCY),
    rate: value.rate === undefined || value.rate === null ? null : parseRate(value.rate),
    group_limit: optionalInteger(value, "group_limit", 1, MAX_GROUP_LIMIT) ?? 1,
    max_attempts: optionalInteger(value, "max_attempts", 1, MAX_ATTEMPTS),
    lease_ms: optionalInteger(value, "lease_ms", MIN_LEASE_MS, MAX_LEASE_MS),
    backoff,
    retain_done_ms: optionalInteger(value, "retain_done_ms", 0, MAX_RETAIN_MS),
    retain_dead_ms: optionalInteger(value, "retain_dead_ms", 0, MAX_RETAIN_MS),
    retain_pending_ms: optionalInteger(value, "retain_pending_ms", 0, MAX_RETAIN_MS),
    dead_letter_queue: optionalQueueName(value, "dead_letter_queue"),
  };
}

function optionalQueueName(body: Record<string, unknown>, name: string): string | null {
  const value = body[name];
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || !QUEUE_NAME.test(value)) {
    throw invalid(name, "expected a queue name or null");
  }
  return value;
}

/**
 * Refuses settings of `queue` that name it as its own dead-letter queue (a job would move to
 * where it already is). Every door applies it before settings are stored.
 */
export function checkDeadLetterQueue(queue: string, settings: Readonly<QueueSettings>): void {
  if (settings.dead_letter_queue === queue) {
    throw invalid("dead_letter_queue", "a queue cannot be its own dead-letter queue");
  }
}

/** The settings as the API shows them: every member present, the rate as its canonical text. */
export function settingsView(settings: Readonly<QueueSettings>): Record<string, unknown> {
  return {
    concurrency: settings.concurrency,
    rate: settings.rate === null ? null : formatRate(settings.rate),
    group_limit: settings.group_limit,
    max_attempts: settings.max_attempts,
    lease_ms: settings.lease_ms,
    backoff: settings.backoff === null ? null : { ...settings.backoff },
    retain_done_ms: settings.retain_done_ms,
    retain_dead_ms: settings.retain_dead_ms,
    retain_pending_ms: settings.retain_pending_ms,
    dead_letter_queue: settings.dead_letter_queue,
  };
}

/**
 * A job as it is stored in a queue with `settings`: a job enqueued without `max_attempts`,
 * `lease_ms` or `backoff` takes the queue's, and without those, the server's (`max_attempts` 5;
 * a null lease or backoff stays null, which means the server's when it is used). A job's own
 * value always wins. The PostgreSQL store writes the same rule in SQL.
 */
export function withQueueDefaults(job: NewJob, settings: QueueSettings): ResolvedJob {
  // The usual case on the enqueue path, without a copy: nothing to fill in.
  if (
    job.max_attempts !== null && (job.lease_ms !== null || settings.lease_ms === null) &&
    (job.backoff !== null || settings.backoff === null)
  ) return job as ResolvedJob;
  return {
    ...job,
    max_attempts: job.max_attempts ?? settings.max_attempts ?? DEFAULT_MAX_ATTEMPTS,
    lease_ms: job.lease_ms ?? settings.lease_ms,
    backoff: job.backoff ?? settings.backoff,
  };
}

/** A job whose `max_attempts` is known: its own, its queue's, or the server's. */
export type ResolvedJob = NewJob & { max_attempts: number };
