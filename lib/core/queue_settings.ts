/**
 * A queue's settings: limits the claim enforces (`concurrency`, `rate`, `group_limit`), the
 * defaults a job enqueued without its own value takes (`max_attempts`, `lease_ms`, `backoff`),
 * how long the queue's finished jobs are kept (`retain_done_ms`, `retain_dead_ms`), how long
 * a job may wait for a consumer (`retain_pending_ms`), where its dead jobs go
 * (`dead_letter_queue`), and two kept only as data: the queue attributes that only the SQS API
 * applies (`sqs_attributes`) and the queue's tags (`tags`).
 *
 * Settings are set as a whole: {@linkcode parseQueueSettings} reads a complete settings object
 * (`PUT /v1/queues/{queue}/settings`), an absent or null member meaning that field's default, so
 * what is answered is exactly what was sent plus defaults, and a read followed by a write of what
 * was read changes nothing. A partial update is a read, a change and a write of the whole (what
 * the CLI does). Every field's default is "no setting": null, or 1 for `group_limit`; an empty
 * `sqs_attributes` or `tags` object is null.
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
  /**
   * SQS queue attributes that only the SQS API applies or answers (docs/sqs.md), by attribute
   * name, as SQS writes their values; keys sorted. tegami's own API keeps them and does not apply
   * them. Absent or null: none (each attribute's default). Optional, like `tags`, so that settings
   * without them read back as they were written.
   */
  sqs_attributes?: Readonly<Record<string, string>> | null;
  /** The queue's tags, key to value (SQS's TagQueue), keys sorted; absent or null: none. */
  tags?: Readonly<Record<string, string>> | null;
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
    settings.retain_pending_ms === null && settings.dead_letter_queue === null &&
    (settings.sqs_attributes ?? null) === null && (settings.tags ?? null) === null;
}

/** The members a settings object may hold. */
const SETTINGS_FIELDS = new Set([...Object.keys(DEFAULT_QUEUE_SETTINGS), "sqs_attributes", "tags"]);
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
export function optionalInteger(
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

/** Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Record<string, unknown> {
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
  const settings: QueueSettings = {
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
  return withKept(settings, parseSqsAttributes(value.sqs_attributes), parseTags(value.tags));
}

/**
 * `settings` with its `sqs_attributes` and `tags` replaced: each present when set, absent when
 * null (so settings that never had them compare equal to settings read back).
 */
export function withKept(
  settings: QueueSettings,
  sqsAttributes: Readonly<Record<string, string>> | null | undefined,
  tags: Readonly<Record<string, string>> | null | undefined,
): QueueSettings {
  const { sqs_attributes: _a, tags: _t, ...rest } = settings;
  const out: QueueSettings = rest;
  if (sqsAttributes !== null && sqsAttributes !== undefined) out.sqs_attributes = sqsAttributes;
  if (tags !== null && tags !== undefined) out.tags = tags;
  return out;
}

/** The SQS queue attributes `sqs_attributes` may hold, each with its check of a value. */
const SQS_ATTRIBUTES: Readonly<Record<string, (value: string) => string | null>> = {
  DelaySeconds: (value) => wholeText(value, 0, MAX_QUEUE_DELAY_SECONDS),
  ReceiveMessageWaitTimeSeconds: (value) => wholeText(value, 0, MAX_RECEIVE_WAIT_SECONDS),
  MaximumMessageSize: (value) => wholeText(value, MIN_MESSAGE_SIZE, MAX_MESSAGE_SIZE),
  KmsDataKeyReusePeriodSeconds: (value) => wholeText(value, 60, 86_400),
  SqsManagedSseEnabled: (value) =>
    value === "true" || value === "false" ? null : "expected true or false",
  KmsMasterKeyId: (value) => value.length <= 2048 ? null : "expected at most 2048 characters",
  Policy: (value) => jsonObjectText(value),
  RedriveAllowPolicy: (value) => checkRedriveAllowPolicy(value),
};

/** The longest default delay a queue's `DelaySeconds` may give, seconds (SQS's). */
export const MAX_QUEUE_DELAY_SECONDS = 900;
/** The longest default long poll a queue's `ReceiveMessageWaitTimeSeconds` may give, seconds. */
export const MAX_RECEIVE_WAIT_SECONDS = 20;
/** The smallest `MaximumMessageSize`, bytes (SQS's). */
export const MIN_MESSAGE_SIZE = 1024;
/** The largest `MaximumMessageSize` tegami keeps, bytes (a server allows at most its own limit). */
export const MAX_MESSAGE_SIZE = 1024 * 1024;
/** The most tags a queue may have (SQS's). */
export const MAX_TAGS = 50;
/** The longest tag key, characters (SQS's). */
export const MAX_TAG_KEY = 128;
/** The longest tag value, characters (SQS's). */
export const MAX_TAG_VALUE = 256;
/** The longest JSON policy kept (`Policy`, `RedriveAllowPolicy`), characters. */
const MAX_POLICY = 20_480;

/** The names of the SQS attributes `sqs_attributes` may hold. */
export const SQS_STORED_ATTRIBUTES: readonly string[] = Object.keys(SQS_ATTRIBUTES);

function wholeText(value: string, min: number, max: number): string | null {
  const n = /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  return n >= min && n <= max ? null : `expected a whole number from ${min} to ${max}`;
}

function jsonObjectText(value: string): string | null {
  if (value.length > MAX_POLICY) return `expected at most ${MAX_POLICY} characters`;
  try {
    if (isObject(JSON.parse(value))) return null;
  } catch {
    // answered below
  }
  return "expected the JSON text of an object";
}

/** `{redrivePermission: allowAll|denyAll|byQueue, sourceQueueArns?: [1–10 ARNs]}`. */
function checkRedriveAllowPolicy(value: string): string | null {
  const notObject = jsonObjectText(value);
  if (notObject !== null) return notObject;
  const policy = JSON.parse(value) as Record<string, unknown>;
  for (const name of Object.keys(policy)) {
    if (name !== "redrivePermission" && name !== "sourceQueueArns") {
      return `unknown field ${JSON.stringify(name.slice(0, 64))}`;
    }
  }
  const permission = policy.redrivePermission;
  if (permission !== "allowAll" && permission !== "denyAll" && permission !== "byQueue") {
    return "redrivePermission must be allowAll, denyAll or byQueue";
  }
  const arns = policy.sourceQueueArns;
  if (permission !== "byQueue") {
    return arns === undefined ? null : "sourceQueueArns is only for byQueue";
  }
  if (
    !Array.isArray(arns) || arns.length < 1 || arns.length > 10 ||
    !arns.every((arn) => typeof arn === "string")
  ) {
    return "byQueue needs sourceQueueArns: 1 to 10 queue ARNs";
  }
  return null;
}

/**
 * Why `value` cannot be SQS attribute `name` in `sqs_attributes` (unknown, or a bad value), or
 * null when it can. The SQS API checks what it keeps with this too, so both doors agree.
 */
export function sqsAttributeProblem(name: string, value: string): string | null {
  const check = Object.hasOwn(SQS_ATTRIBUTES, name) ? SQS_ATTRIBUTES[name] : undefined;
  if (check === undefined) return `unknown attribute (one of ${SQS_STORED_ATTRIBUTES.join(", ")})`;
  return check(value);
}

/** Why tag `key` = `value` cannot be kept, or null when it can. */
export function tagProblem(key: string, value: string): string | null {
  if (key.length < 1 || key.length > MAX_TAG_KEY) {
    return `a tag key must have 1 to ${MAX_TAG_KEY} characters`;
  }
  if (value.length > MAX_TAG_VALUE) {
    return `a tag value must have at most ${MAX_TAG_VALUE} characters`;
  }
  return null;
}

/** `entries` as an object with its keys sorted, or null when there are none. */
export function sortedStrings(
  entries: Iterable<readonly [string, string]>,
): Readonly<Record<string, string>> | null {
  const list = [...entries].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  if (list.length === 0) return null;
  const out: Record<string, string> = {};
  for (const [key, value] of list) out[key] = value;
  return out;
}

/** An optional object of strings, each entry checked by `problem`. */
function stringObject(
  value: unknown,
  field: string,
  most: number,
  problem: (key: string, value: string) => string | null,
): Readonly<Record<string, string>> | null {
  if (value === undefined || value === null) return null;
  if (!isObject(value)) throw invalid(field, "expected an object of strings or null");
  const entries = Object.entries(value);
  if (entries.length > most) throw invalid(field, `expected at most ${most} members`);
  for (const [key, v] of entries) {
    if (typeof v !== "string") throw invalid(`${field}.${key.slice(0, 128)}`, "expected a string");
    const why = problem(key, v);
    if (why !== null) throw invalid(`${field}.${key.slice(0, 128)}`, why);
  }
  return sortedStrings(entries as [string, string][]);
}

function parseSqsAttributes(value: unknown): Readonly<Record<string, string>> | null {
  return stringObject(value, "sqs_attributes", SQS_STORED_ATTRIBUTES.length, sqsAttributeProblem);
}

function parseTags(value: unknown): Readonly<Record<string, string>> | null {
  return stringObject(value, "tags", MAX_TAGS, tagProblem);
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

/**
 * The settings as the API shows them: every member present, the rate as its canonical text;
 * `sqs_attributes` and `tags`, which most queues never have, only when set.
 */
export function settingsView(settings: Readonly<QueueSettings>): Record<string, unknown> {
  const view: Record<string, unknown> = {
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
  if (settings.sqs_attributes) view.sqs_attributes = { ...settings.sqs_attributes };
  if (settings.tags) view.tags = { ...settings.tags };
  return view;
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
