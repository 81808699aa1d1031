/**
 * Validation of request bodies, shared by the HTTP API and the WebSocket protocol. Each parser
 * takes the decoded JSON value and answers a typed request or throws `validation_failed` (or
 * `payload_too_large`) with a message naming the field. Unknown fields are rejected, so a typo
 * such as `priorty` is an error instead of a silently ignored option.
 *
 * @module
 */

import { invalid, TegamiError } from "../core/errors.ts";
import {
  type Attribute,
  attributeNameProblem,
  attributesText,
  attributeTypeProblem,
  attributeValueProblem,
  MAX_ATTRIBUTES,
  MAX_ATTRIBUTES_BYTES,
  readAttributes,
} from "../core/attributes.ts";
import { addTraceHeaders } from "../core/trace_context.ts";
import { elementSpans, memberSpan, type Span } from "./json_spans.ts";
import {
  type Backoff,
  type Enqueued,
  JOB_STATES,
  type JobState,
  type NewJob,
  ON_DUPLICATE,
  type OnDuplicate,
} from "../core/job.ts";
import type { JobPage } from "../store/store.ts";
import {
  MAX_ATTEMPTS,
  MAX_DELAY_MS,
  MAX_ERROR_CHARS,
  MAX_GROUP_BYTES,
  MAX_KEY_BYTES,
  MAX_KEY_TTL_MS,
  MAX_LEASE_BATCH,
  MAX_LEASE_MS,
  MAX_LIST_LIMIT,
  MAX_PREFETCH,
  MAX_PROGRESS_BYTES,
  MAX_REQUEUE_IDS,
  MAX_WAIT_MS,
  MIN_LEASE_MS,
  PRIORITY_RANGE,
  QUEUE_NAME,
} from "../core/limits.ts";

/** Limits that come from the server's configuration. */
export interface RequestLimits {
  /** The largest payload (and checkpoint, result), as JSON bytes. */
  maxPayload: number;
  /** The most jobs in one batch. */
  maxBatch: number;
}

/** A JSON object's members, as the parsers read them. */
export type Fields = Record<string, unknown>;

/** Answers the value as an object, or throws naming `what`. */
export function asObject(value: unknown, what = "body"): Fields {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid(what, "expected a JSON object");
  }
  return value as Fields;
}

/** Throws `validation_failed` naming the first member of `body` not in `allowed`. */
export function rejectUnknown(body: Fields, allowed: ReadonlySet<string>, prefix = ""): void {
  for (const name of Object.keys(body)) {
    if (!allowed.has(name)) throw invalid(prefix + name, "unknown field");
  }
}

/** Whether `body` has member `name` (an `undefined` one counts as absent). */
export function has(body: Fields, name: string): boolean {
  return Object.hasOwn(body, name) && body[name] !== undefined;
}

function integer(
  body: Fields,
  name: string,
  min: number,
  max: number,
  prefix = "",
): number | undefined {
  if (!has(body, name) || body[name] === null) return undefined;
  const value = body[name];
  if (typeof value !== "number" || !Number.isSafeInteger(value)) {
    throw invalid(prefix + name, "expected an integer");
  }
  if (value < min || value > max) {
    throw invalid(prefix + name, `expected an integer from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/** Finds a character that takes more than one byte in UTF-8. */
const NOT_ASCII = /[\u0080-\uffff]/;

/** The UTF-8 length of a string, without allocating. */
export function utf8Length(text: string): number {
  // The regular expression finds ASCII text out faster than the loop below.
  if (!NOT_ASCII.test(text)) return text.length;
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 UTF-16 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** Serializes a user JSON value, enforcing the payload limit; `field` names it in errors. */
export function jsonText(value: unknown, field: string, maxBytes: number): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw invalid(field, "expected a JSON value");
  return withinLimit(text, field, maxBytes);
}

/** Answers JSON text if its UTF-8 size is within `maxBytes`, else `payload_too_large`. */
function withinLimit(text: string, field: string, maxBytes: number): string {
  // No UTF-16 unit takes more than 3 bytes of UTF-8: most texts need no count at all.
  if (text.length * 3 <= maxBytes) return text;
  const size = utf8Length(text);
  if (size > maxBytes) {
    throw new TegamiError(
      "payload_too_large",
      `Invalid "${field}": ${size} bytes of JSON is over the limit of ${maxBytes}`,
    );
  }
  return text;
}

/** Checks a queue name against the contract's pattern. */
export function queueName(value: unknown, field = "queue"): string {
  if (typeof value !== "string" || !QUEUE_NAME.test(value)) {
    throw invalid(
      field,
      "expected 1–128 characters of [A-Za-z0-9_.:-], starting with a letter or digit",
    );
  }
  return value;
}

/**
 * Parses a job id given as a JSON value: a positive safe integer. Types are strict, so the string
 * `"42"` is refused like any other wrong type; only a path segment spells an id as text (see
 * {@linkcode pathJobId}).
 */
export function jobId(value: unknown, field = "id"): number {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw invalid(field, "expected a positive integer job id");
  }
  return value;
}

/** Parses a job id from a URL path segment: 1 to 16 decimal digits naming a positive id. */
export function pathJobId(segment: string): number {
  if (!/^[0-9]{1,16}$/.test(segment)) throw invalid("id", "expected a positive integer job id");
  return jobId(Number(segment));
}

/** The fields each request body may hold, made once. */
const JOB_FIELDS = new Set([
  "payload",
  "attributes",
  "priority",
  "key",
  "group",
  "delay_ms",
  "run_at",
  "max_attempts",
  "lease_ms",
  "backoff",
  "key_ttl_ms",
  "on_duplicate",
]);
const BACKOFF_FIELDS = new Set(["base_ms", "max_ms"]);
const ATTRIBUTE_FIELDS = new Set(["type", "value"]);
const BATCH_FIELDS = new Set(["jobs", "atomic"]);
const LEASE_FIELDS = new Set(["max", "wait_ms", "lease_ms"]);
const ACK_FIELDS = new Set(["token", "result"]);
const NACK_FIELDS = new Set(["token", "error", "delay_ms", "dead"]);
const EXTEND_FIELDS = new Set(["token", "lease_ms"]);
const CHECKPOINT_FIELDS = new Set(["token", "data"]);
const PROGRESS_FIELDS = new Set(["token", "progress"]);
const REQUEUE_FIELDS = new Set(["ids"]);
const SUBSCRIBE_FIELDS = new Set(["prefetch", "lease_ms"]);
const NO_FIELDS = new Set<string>();

/**
 * Parses one job of an enqueue; `prefix` locates it in a batch (`jobs[3].`). `rawPayload` is the
 * payload's text as received, stored as it is; without it the parsed payload is serialised.
 */
export function parseJob(
  value: unknown,
  limits: RequestLimits,
  now: number,
  prefix = "",
  rawPayload?: string,
): NewJob {
  const body = asObject(value, prefix === "" ? "body" : prefix.slice(0, -1));
  rejectUnknown(body, JOB_FIELDS, prefix);
  if (!Object.hasOwn(body, "payload")) throw invalid(prefix + "payload", "is required");
  const payload = rawPayload === undefined
    ? jsonText(body.payload, prefix + "payload", limits.maxPayload)
    : withinLimit(rawPayload, prefix + "payload", limits.maxPayload);
  const attributes = has(body, "attributes") && body.attributes !== null
    ? parseAttributes(body.attributes, prefix + "attributes")
    : null;
  const priority = integer(body, "priority", PRIORITY_RANGE[0], PRIORITY_RANGE[1], prefix) ?? 0;
  const key = textField(body, "key", MAX_KEY_BYTES, prefix);
  const group = textField(body, "group", MAX_GROUP_BYTES, prefix);
  const delay = integer(body, "delay_ms", 0, MAX_DELAY_MS, prefix);
  const runAt = integer(body, "run_at", 0, Number.MAX_SAFE_INTEGER, prefix);
  if (delay !== undefined && runAt !== undefined) {
    throw invalid(prefix + "delay_ms", "give delay_ms or run_at, not both");
  }
  // Absent: the queue's default, else the server's, resolved by the store as it stores the job.
  const maxAttempts = integer(body, "max_attempts", 1, MAX_ATTEMPTS, prefix) ?? null;
  const leaseMs = integer(body, "lease_ms", MIN_LEASE_MS, MAX_LEASE_MS, prefix) ?? null;
  const keyTtl = integer(body, "key_ttl_ms", 1, MAX_KEY_TTL_MS, prefix) ?? null;
  if (keyTtl !== null && key === null) {
    throw invalid(prefix + "key_ttl_ms", "needs a key: it is how long the key blocks duplicates");
  }
  let onDuplicate: OnDuplicate = "ignore";
  if (has(body, "on_duplicate") && body.on_duplicate !== null) {
    if (!(ON_DUPLICATE as readonly unknown[]).includes(body.on_duplicate)) {
      throw invalid(prefix + "on_duplicate", `expected one of ${ON_DUPLICATE.join(", ")}`);
    }
    onDuplicate = body.on_duplicate as OnDuplicate;
    if (key === null && onDuplicate !== "ignore") {
      throw invalid(prefix + "on_duplicate", "needs a key: duplicates are found by key");
    }
  }
  let backoff: Backoff | null = null;
  if (has(body, "backoff") && body.backoff !== null) {
    const b = asObject(body.backoff, prefix + "backoff");
    rejectUnknown(b, BACKOFF_FIELDS, prefix + "backoff.");
    const base = integer(b, "base_ms", 1, MAX_DELAY_MS, prefix + "backoff.");
    const max = integer(b, "max_ms", 1, MAX_DELAY_MS, prefix + "backoff.");
    if (base === undefined) throw invalid(prefix + "backoff.base_ms", "is required");
    if (max === undefined) throw invalid(prefix + "backoff.max_ms", "is required");
    if (max < base) throw invalid(prefix + "backoff.max_ms", "must be at least base_ms");
    backoff = { base_ms: base, max_ms: max };
  }
  return {
    payload,
    attributes,
    priority,
    key,
    group,
    run_at: delay !== undefined ? now + delay : Math.max(runAt ?? now, now),
    max_attempts: maxAttempts,
    lease_ms: leaseMs,
    backoff,
    key_ttl_ms: keyTtl,
    on_duplicate: onDuplicate,
  };
}

/**
 * A job's `attributes`: an object of at most `MAX_ATTRIBUTES` members, each `{"type", "value"}`
 * by the rules of core/attributes.ts; answers their stored text (null for none). `field` names
 * the member in errors, and each attribute by its name.
 */
function parseAttributes(value: unknown, field: string): string | null {
  const body = asObject(value, field);
  const names = Object.keys(body);
  if (names.length > MAX_ATTRIBUTES) {
    throw invalid(field, `at most ${MAX_ATTRIBUTES} attributes, not ${names.length}`);
  }
  const out = new Map<string, Attribute>();
  for (const name of names) {
    const where = `${field}.${name}`;
    const problem = attributeNameProblem(name);
    if (problem !== null) throw invalid(where, problem);
    const attribute = asObject(body[name], where);
    rejectUnknown(attribute, ATTRIBUTE_FIELDS, where + ".");
    const { type, value: text } = attribute;
    if (typeof type !== "string") throw invalid(where + ".type", "expected a string");
    const typeProblem = attributeTypeProblem(type);
    if (typeProblem !== null) throw invalid(where + ".type", typeProblem);
    if (typeof text !== "string") throw invalid(where + ".value", "expected a string");
    const valueProblem = attributeValueProblem(type, text);
    if (valueProblem !== null) throw invalid(where + ".value", valueProblem);
    out.set(name, { type, value: text });
  }
  const stored = attributesText(out);
  if (stored !== null && utf8Length(stored) > MAX_ATTRIBUTES_BYTES) {
    throw new TegamiError(
      "payload_too_large",
      `Invalid "${field}": over the limit of ${MAX_ATTRIBUTES_BYTES} bytes of attributes`,
    );
  }
  return stored;
}

/**
 * An optional text member of a job (`key`, `group`): absent or null is null, else a non-empty
 * string of at most `maxBytes` UTF-8 bytes that SQLite stores and reads back unchanged.
 */
export function textField(
  body: Fields,
  name: string,
  maxBytes: number,
  prefix: string,
): string | null {
  if (!has(body, name) || body[name] === null) return null;
  const value = body[name];
  if (typeof value !== "string" || value.length === 0) {
    throw invalid(prefix + name, "expected a non-empty string");
  }
  // A lone surrogate cannot be stored as UTF-8: SQLite would turn every one into U+FFFD,
  // so two different keys (or groups) would collide.
  if (!value.isWellFormed()) {
    throw invalid(prefix + name, "expected well-formed Unicode (it holds a lone surrogate)");
  }
  // Nor can a NUL: SQLite keeps it, but reads the text back cut at the first one, so the
  // value shown and delivered would differ from the one stored (found by fuzz_http_test.ts).
  if (value.includes("\u0000")) {
    throw invalid(prefix + name, "expected no NUL (U+0000) characters");
  }
  if (utf8Length(value) > maxBytes) {
    throw invalid(prefix + name, `longer than ${maxBytes} bytes`);
  }
  return value;
}

/** A parsed enqueue: the jobs to store, and how the caller is answered. */
export interface EnqueueRequest {
  /** The jobs to store (for a batch with `atomic: false`, those that passed validation). */
  jobs: NewJob[];
  /** True for `{jobs: [...]}`: answered with a `jobs` array. */
  batch: boolean;
  /**
   * For `{jobs: [...], atomic: false}`, one entry per job sent, in order: the error that refused
   * it, or null when it is among `jobs`. Null for a single job or an all-or-nothing batch.
   */
  refused: (TegamiError | null)[] | null;
}

/**
 * Parses an enqueue body: one job, or `{jobs: [...]}` for an all-or-nothing batch, or
 * `{jobs: [...], atomic: false}` where each job stands alone (one invalid job is refused alone,
 * as if each had been sent in its own request). `source`, the JSON text `value` was parsed from,
 * lets each payload be stored as the text received.
 */
export function parseEnqueue(
  value: unknown,
  limits: RequestLimits,
  now: number,
  source?: string,
): EnqueueRequest {
  const body = asObject(value);
  const text = (span: Span | undefined) =>
    span === undefined ? undefined : source!.slice(span.start, span.end);
  if (!Object.hasOwn(body, "jobs")) {
    const raw = source === undefined ? undefined : text(memberSpan(source, "payload"));
    return { jobs: [parseJob(body, limits, now, "", raw)], batch: false, refused: null };
  }
  rejectUnknown(body, BATCH_FIELDS);
  if (has(body, "atomic") && body.atomic !== null && typeof body.atomic !== "boolean") {
    throw invalid("atomic", "expected true or false");
  }
  if (!Array.isArray(body.jobs)) throw invalid("jobs", "expected an array of jobs");
  if (body.jobs.length === 0) throw invalid("jobs", "expected at least one job");
  if (body.jobs.length > limits.maxBatch) {
    throw invalid("jobs", `${body.jobs.length} jobs is over the batch limit of ${limits.maxBatch}`);
  }
  const jobsSpan = source === undefined ? undefined : memberSpan(source, "jobs");
  const elements = jobsSpan === undefined ? null : elementSpans(source!, jobsSpan.start);
  const parse = (job: unknown, i: number) => {
    const element = elements?.[i];
    const raw = element === undefined
      ? undefined
      : text(memberSpan(source!, "payload", element.start));
    return parseJob(job, limits, now, `jobs[${i}].`, raw);
  };
  if (body.atomic !== false) return { jobs: body.jobs.map(parse), batch: true, refused: null };
  const jobs: NewJob[] = [];
  const refused = body.jobs.map((job, i) => {
    try {
      jobs.push(parse(job, i));
      return null;
    } catch (error) {
      if (error instanceof TegamiError) return error;
      throw error;
    }
  });
  return { jobs, batch: true, refused };
}

/**
 * Gives a one-job enqueue the trace context of its request's `traceparent` and `tracestate`
 * headers (null: absent) as attributes, unless the job's own attributes carry a `traceparent`.
 * A batch carries trace context per job, in each job's attributes, so the headers are only
 * checked. Throws `validation_failed` naming the header for a value W3C Trace Context refuses or
 * a job with no room for it, `payload_too_large` when the attributes would pass their limit.
 */
export function applyTraceHeaders(
  request: EnqueueRequest,
  traceparent: string | null,
  tracestate: string | null,
): void {
  if (traceparent === null && tracestate === null) return;
  const job = request.batch ? undefined : request.jobs[0];
  const attributes = readAttributes(job?.attributes ?? null);
  const problem = addTraceHeaders(attributes, traceparent, tracestate);
  if (problem !== null) {
    throw new TegamiError(
      "validation_failed",
      `Invalid "${problem.field}" header: ${problem.problem}`,
    );
  }
  if (job === undefined) return;
  const stored = attributesText(attributes);
  if (stored !== null && utf8Length(stored) > MAX_ATTRIBUTES_BYTES) {
    throw new TegamiError(
      "payload_too_large",
      `Invalid "traceparent" header: with it the job's attributes pass ${MAX_ATTRIBUTES_BYTES} bytes`,
    );
  }
  job.attributes = stored;
}

/**
 * The answer to an enqueue: `{id, deduplicated, duplicate}` for one job, else `{jobs: [...]}` with
 * one entry per job sent — `{id, deduplicated, duplicate}`, or `{error: {code, message}}` for a job an
 * `atomic: false` batch refused. `out` answers `request.jobs`, in order.
 */
export function enqueueAnswer(
  request: EnqueueRequest,
  out: readonly Pick<Enqueued, "id" | "deduplicated" | "duplicate">[],
): Record<string, unknown> {
  const one = (e: Pick<Enqueued, "id" | "deduplicated" | "duplicate">) => ({
    id: e.id,
    deduplicated: e.deduplicated,
    duplicate: e.duplicate,
  });
  if (!request.batch) return one(out[0]);
  if (request.refused === null) return { jobs: out.map(one) };
  let next = 0;
  return {
    jobs: request.refused.map((error) => {
      if (error !== null) return { error: { code: error.code, message: error.message } };
      return one(out[next++]);
    }),
  };
}

/** A lease (pull) request. */
export interface LeaseRequest {
  /** Most jobs to take. */
  max: number;
  /** How long to wait for a job, ms. */
  wait_ms: number;
  /** The lease length, or null for each job's own or the server's. */
  lease_ms: number | null;
}

/** Parses a lease (pull) body; an absent body means the defaults. */
export function parseLease(value: unknown): LeaseRequest {
  const body = asObject(value === undefined ? {} : value);
  rejectUnknown(body, LEASE_FIELDS);
  return {
    max: integer(body, "max", 1, MAX_LEASE_BATCH) ?? 1,
    wait_ms: integer(body, "wait_ms", 0, MAX_WAIT_MS) ?? 0,
    lease_ms: integer(body, "lease_ms", MIN_LEASE_MS, MAX_LEASE_MS) ?? null,
  };
}

/** The lease `token` of a settle request's body. */
export function leaseToken(body: Fields): string {
  if (typeof body.token !== "string" || body.token.length === 0 || body.token.length > 256) {
    throw invalid("token", "expected the lease token string from the delivery");
  }
  return body.token;
}

/** Parses an ack body. */
export function parseAck(
  value: unknown,
  limits: RequestLimits,
): { token: string; result: string | null } {
  const body = asObject(value);
  rejectUnknown(body, ACK_FIELDS);
  return {
    token: leaseToken(body),
    result: has(body, "result") ? jsonText(body.result, "result", limits.maxPayload) : null,
  };
}

/** Parses a nack body. */
export function parseNack(
  value: unknown,
): { token: string; error: string | null; delay_ms: number | null; dead: boolean } {
  const body = asObject(value);
  rejectUnknown(body, NACK_FIELDS);
  let error: string | null = null;
  if (has(body, "error") && body.error !== null) {
    if (typeof body.error !== "string") throw invalid("error", "expected a string");
    const cut = body.error.length > MAX_ERROR_CHARS
      ? body.error.slice(0, MAX_ERROR_CHARS) + "…[cut]"
      : body.error;
    // Stored as SQLite text, which is read back cut at a NUL and turns a lone surrogate into
    // U+FFFD: make both U+FFFD here so the error kept is exactly the one recorded, whole.
    error = cut.replaceAll("\u0000", "\uFFFD").toWellFormed();
  }
  if (has(body, "dead") && body.dead !== null && typeof body.dead !== "boolean") {
    throw invalid("dead", "expected true or false");
  }
  return {
    token: leaseToken(body),
    error,
    delay_ms: integer(body, "delay_ms", 0, MAX_DELAY_MS) ?? null,
    dead: body.dead === true,
  };
}

/** Parses an extend body. */
export function parseExtend(
  value: unknown,
): { token: string; lease_ms: number | null } {
  const body = asObject(value);
  rejectUnknown(body, EXTEND_FIELDS);
  return {
    token: leaseToken(body),
    lease_ms: integer(body, "lease_ms", MIN_LEASE_MS, MAX_LEASE_MS) ?? null,
  };
}

/** Parses a checkpoint body. */
export function parseCheckpoint(
  value: unknown,
  limits: RequestLimits,
): { token: string; data: string } {
  const body = asObject(value);
  rejectUnknown(body, CHECKPOINT_FIELDS);
  if (!Object.hasOwn(body, "data")) throw invalid("data", "is required");
  return { token: leaseToken(body), data: jsonText(body.data, "data", limits.maxPayload) };
}

/** Parses a progress report body: `{token, progress}`, `progress` any JSON value up to 4 KiB. */
export function parseProgress(value: unknown): { token: string; progress: string } {
  const body = asObject(value);
  rejectUnknown(body, PROGRESS_FIELDS);
  if (!Object.hasOwn(body, "progress")) throw invalid("progress", "is required");
  return {
    token: leaseToken(body),
    progress: jsonText(body.progress, "progress", MAX_PROGRESS_BYTES),
  };
}

/** Parses a dead-letter requeue body: `{ids?}`. */
export function parseRequeue(value: unknown): { ids: number[] | null } {
  const body = asObject(value === undefined ? {} : value);
  rejectUnknown(body, REQUEUE_FIELDS);
  if (!has(body, "ids") || body.ids === null) return { ids: null };
  if (!Array.isArray(body.ids)) throw invalid("ids", "expected an array of job ids");
  if (body.ids.length > MAX_REQUEUE_IDS) {
    throw invalid("ids", `more than ${MAX_REQUEUE_IDS} ids`);
  }
  return {
    ids: body.ids.map((id, i) => jobId(id, `ids[${i}]`)),
  };
}

/**
 * Reads integer query parameters, refusing any parameter not in `allowed`, given twice (which one
 * would count is a guess), or given empty (`?limit=` is not a number, and not its absence).
 */
function queryReader(params: URLSearchParams, allowed: ReadonlySet<string>) {
  const seen = new Set<string>();
  for (const [name, value] of params) {
    if (!allowed.has(name)) throw invalid(name, "unknown query parameter");
    if (seen.has(name)) throw invalid(name, "given more than once");
    if (value === "") throw invalid(name, "empty: give a value or leave the parameter out");
    seen.add(name);
  }
  return (name: string, fallback: number, min: number, max: number): number => {
    const raw = params.get(name);
    if (raw === null) return fallback;
    if (!/^[0-9]{1,16}$/.test(raw)) throw invalid(name, "expected a non-negative integer");
    const n = Number(raw);
    if (n < min || n > max) throw invalid(name, `expected an integer from ${min} to ${max}`);
    return n;
  };
}

/** The query of a paged list: the dead letters, queues, schedules. */
const PAGE_QUERY = new Set(["limit", "after"]);
const WAIT_QUERY = new Set(["wait_ms"]);
const FLOWS_QUERY = new Set(["limit", "after", "order"]);
const JOBS_QUERY = new Set(["state", "order", "limit", "after"]);
const ORDERS = new Set(["oldest", "newest"]);

/** Parses the query string of a listing paged by id: the dead letters, the flows. */
export function parseDeadQuery(params: URLSearchParams): { limit: number; after: number } {
  const read = queryReader(params, PAGE_QUERY);
  return {
    limit: read("limit", 100, 1, MAX_LIST_LIMIT),
    after: read("after", 0, 0, Number.MAX_SAFE_INTEGER),
  };
}

/** A page of the flow listing. */
export interface FlowPage {
  /** Most flows in the page. */
  limit: number;
  /** The cursor: flows past this id in the page's order; 0 from the start. */
  after: number;
  /** True for newest first (ids descending). */
  newest: boolean;
}

/**
 * Parses the flow listing's query string: `order` (`oldest`, the default, or `newest`), `limit`
 * (1–1000, default 100) and `after` (an id cursor in the listing's order; 0 or absent from the
 * start).
 */
export function parseFlowsQuery(params: URLSearchParams): FlowPage {
  const read = queryReader(params, FLOWS_QUERY);
  const order = params.get("order") ?? "oldest";
  if (!ORDERS.has(order)) throw invalid("order", "expected oldest or newest");
  return {
    limit: read("limit", 100, 1, MAX_LIST_LIMIT),
    after: read("after", 0, 0, Number.MAX_SAFE_INTEGER),
    newest: order === "newest",
  };
}

/**
 * Parses the query string of a call that may wait for a job's end (`GET /v1/jobs/{id}`, an
 * enqueue): `wait_ms`, 0 (the default: answer at once) to the longest long-poll.
 */
export function parseWaitQuery(params: URLSearchParams): number {
  return queryReader(params, WAIT_QUERY)("wait_ms", 0, 0, MAX_WAIT_MS);
}

/**
 * Parses the job browser's query string: `state` (required), `order` (`oldest`, the default, or
 * `newest`), `limit` (1–1000, default 100) and `after` (an id cursor in the listing's order).
 */
export function parseJobsQuery(params: URLSearchParams): JobPage {
  const read = queryReader(params, JOBS_QUERY);
  const state = params.get("state");
  if (state === null || !(JOB_STATES as readonly string[]).includes(state)) {
    throw invalid("state", `expected one of ${JOB_STATES.join(", ")}`);
  }
  const order = params.get("order") ?? "oldest";
  if (!ORDERS.has(order)) throw invalid("order", "expected oldest or newest");
  const after = read("after", 0, 0, Number.MAX_SAFE_INTEGER);
  return {
    state: state as JobState,
    order: order as JobPage["order"],
    after: after === 0 ? null : after,
    limit: read("limit", 100, 1, MAX_LIST_LIMIT),
  };
}

/** A page of a list sorted by name (queues, schedules). */
export interface NamePage {
  /** Most entries on the page; null for all of them. */
  limit: number | null;
  /** Only entries whose names sort after this one (the cursor); null from the first. */
  after: string | null;
}

/**
 * Parses the query string of a list sorted by name: `limit` (1–1000; absent for the whole list)
 * and `after` (a name, checked by `checkName`, which the listed names must sort after).
 */
export function parseNamePage(
  params: URLSearchParams,
  checkName: (value: unknown, field: string) => string,
): NamePage {
  const read = queryReader(params, PAGE_QUERY);
  const limit = read("limit", 0, 1, MAX_LIST_LIMIT);
  const after = params.get("after");
  return {
    limit: limit === 0 ? null : limit,
    after: after === null ? null : checkName(after, "after"),
  };
}

/**
 * The page of `entries` (in name order, as both stores list them: byte order, which for the names'
 * ASCII is JavaScript's string order) that `page` asks for, and the cursor for the next: the
 * page's last name when the page is full, else null.
 */
export function pageByName<T>(
  entries: readonly T[],
  page: NamePage,
  nameOf: (entry: T) => string,
): { entries: readonly T[]; nextAfter: string | null } {
  const after = page.after;
  const past = after === null ? entries : entries.filter((entry) => nameOf(entry) > after);
  const shown = page.limit === null ? past : past.slice(0, page.limit);
  const full = page.limit !== null && shown.length === page.limit;
  return { entries: shown, nextAfter: full ? nameOf(shown[shown.length - 1]) : null };
}

/** Checks a body that takes no fields (absent, or `{}`). */
export function parseEmpty(value: unknown): void {
  if (value === undefined) return;
  rejectUnknown(asObject(value), NO_FIELDS);
}

/** A WebSocket subscription's settings. */
export interface SubscribeRequest {
  /** Most unsettled jobs pushed at once. */
  prefetch: number;
  /** The lease length for its jobs, or null for each job's own or the server's. */
  leaseMs: number | null;
}

/** Parses a `subscribe` frame's fields (`prefetch` 1–1000, default 1; `lease_ms`). */
export function parseSubscribe(body: Fields): SubscribeRequest {
  rejectUnknown(body, SUBSCRIBE_FIELDS);
  return {
    prefetch: integer(body, "prefetch", 1, MAX_PREFETCH) ?? 1,
    leaseMs: integer(body, "lease_ms", MIN_LEASE_MS, MAX_LEASE_MS) ?? null,
  };
}
