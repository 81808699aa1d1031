/**
 * Which jobs of a queue a bulk action takes: the filter, its validation, and the one rule that
 * says whether a job matches it. Every store applies {@linkcode jobMatches} to the rows it reads
 * in {@linkcode Store.findJobs}, so the engines cannot disagree about what matches.
 *
 * A payload path names a value inside the payload: members separated by dots (`tenant.id`), a
 * segment of decimal digits taking that element of an array (`items.0.sku`; on an object it is a
 * member name like any other). A member whose name contains a dot cannot be named.
 *
 * @module
 */

import { invalid } from "./errors.ts";
import { JOB_STATES, type JobState } from "./job.ts";
import { MAX_GROUP_BYTES, MAX_KEY_BYTES } from "./limits.ts";

/** A payload path and the JSON value found there. */
export interface PayloadEquals {
  /** The path, parsed: member names and array indexes (as digit strings). */
  path: readonly string[];
  /** The value it must equal (JSON equality: object members in any order). */
  equals: unknown;
}

/** Which of a queue's jobs a bulk action takes; every condition given must hold. */
export interface JobFilter {
  /** The queue. */
  queue: string;
  /** The states taken, or null for any. */
  states: readonly JobState[] | null;
  /** Only jobs created at or after this time (ms), or null. */
  created_from: number | null;
  /** Only jobs created before this time (ms), or null. */
  created_to: number | null;
  /** Only jobs finished at or after this time (ms), or null; unfinished jobs never match. */
  finished_from: number | null;
  /** Only jobs finished before this time (ms), or null; unfinished jobs never match. */
  finished_to: number | null;
  /** Only jobs whose `last_error` contains this text (case-sensitive), or null. */
  error_contains: string | null;
  /** Only jobs of this ordering group, or null. */
  group: string | null;
  /** Only jobs whose key starts with this text, or null. */
  key_prefix: string | null;
  /** Only jobs whose payload holds this value at this path, or null. */
  payload: PayloadEquals | null;
}

/** One window of a queue's jobs read for a bulk action (`Store.findJobs`). */
export interface FoundJobs {
  /** The matching jobs' ids, ascending. */
  ids: number[];
  /** How many of the queue's jobs the window held (each one examined). */
  examined: number;
  /** The cursor to continue from (the window's last id), or null when no job lies past it. */
  next: number | null;
}

/** What {@linkcode jobMatches} reads of a job. */
export interface FilterRow {
  /** The job's state. */
  state: JobState;
  /** When it was enqueued. */
  created_at: number;
  /** When it finished, or null. */
  finished_at: number | null;
  /** Its last error, or null. */
  last_error: string | null;
  /** Its ordering group, or null. */
  group: string | null;
  /** Its key, or null. */
  key: string | null;
  /**
   * Its payload as JSON text; null when the filter has no payload condition, so that a store need
   * not read payloads (up to --max-payload each) it will not look at (see {@linkcode readsPayload}).
   */
  payload: string | null;
}

/** The longest payload path, in characters. */
export const MAX_PATH_CHARS = 256;
/** The most segments a payload path has. */
export const MAX_PATH_SEGMENTS = 32;
/** The longest `error_contains`, in characters. */
export const MAX_ERROR_TEXT_CHARS = 1024;

const FILTER_FIELDS = new Set([
  "states",
  "created_from",
  "created_to",
  "finished_from",
  "finished_to",
  "error_contains",
  "group",
  "key_prefix",
  "payload",
]);

/** A filter on `queue` that takes every job. */
export function everyJob(queue: string): JobFilter {
  return {
    queue,
    states: null,
    created_from: null,
    created_to: null,
    finished_from: null,
    finished_to: null,
    error_contains: null,
    group: null,
    key_prefix: null,
    payload: null,
  };
}

/**
 * Parses a payload path (`tenant.id`, `items.0.sku`) into its segments; throws
 * `validation_failed` naming `field` for an empty path, an empty segment or one too long.
 */
export function parsePayloadPath(text: unknown, field = "filter.payload.path"): string[] {
  if (typeof text !== "string" || text === "") {
    throw invalid(field, 'expected a path such as "tenant.id"');
  }
  if (text.length > MAX_PATH_CHARS) {
    throw invalid(field, `longer than ${MAX_PATH_CHARS} characters`);
  }
  const segments = text.split(".");
  if (segments.some((s) => s === "")) {
    throw invalid(field, "a segment is empty (paths are member names joined by single dots)");
  }
  if (segments.length > MAX_PATH_SEGMENTS) {
    throw invalid(field, `more than ${MAX_PATH_SEGMENTS} segments`);
  }
  return segments;
}

/** The value at `path` inside `value`, or undefined where the path leads nowhere. */
export function valueAt(value: unknown, path: readonly string[]): unknown {
  let here = value;
  for (const segment of path) {
    if (Array.isArray(here)) {
      if (!/^(0|[1-9][0-9]*)$/.test(segment)) return undefined;
      here = here[Number(segment)];
    } else if (here !== null && typeof here === "object") {
      if (!Object.hasOwn(here, segment)) return undefined;
      here = (here as Record<string, unknown>)[segment];
    } else return undefined;
  }
  return here;
}

/** JSON equality: same type and value, arrays in order, object members in any order. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => jsonEqual(item, b[i]));
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  const bo = b as Record<string, unknown>;
  return ka.every((k) =>
    Object.hasOwn(bo, k) && jsonEqual((a as Record<string, unknown>)[k], bo[k])
  );
}

/** True when {@linkcode jobMatches} reads a job's payload under `filter`. */
export function readsPayload(filter: JobFilter): boolean {
  return filter.payload !== null;
}

/** True when the job `row` meets every condition of `filter` (its queue is the caller's). */
export function jobMatches(filter: JobFilter, row: FilterRow): boolean {
  if (filter.states !== null && !filter.states.includes(row.state)) return false;
  if (filter.created_from !== null && row.created_at < filter.created_from) return false;
  if (filter.created_to !== null && row.created_at >= filter.created_to) return false;
  if (filter.finished_from !== null || filter.finished_to !== null) {
    if (row.finished_at === null) return false;
    if (filter.finished_from !== null && row.finished_at < filter.finished_from) return false;
    if (filter.finished_to !== null && row.finished_at >= filter.finished_to) return false;
  }
  if (filter.error_contains !== null) {
    if (row.last_error === null || !row.last_error.includes(filter.error_contains)) return false;
  }
  if (filter.group !== null && row.group !== filter.group) return false;
  if (filter.key_prefix !== null) {
    if (row.key === null || !row.key.startsWith(filter.key_prefix)) return false;
  }
  if (filter.payload !== null) {
    if (row.payload === null) return false;
    let payload: unknown;
    try {
      payload = JSON.parse(row.payload);
    } catch {
      return false;
    }
    const found = valueAt(payload, filter.payload.path);
    if (found === undefined || !jsonEqual(found, filter.payload.equals)) return false;
  }
  return true;
}

function time(value: unknown, field: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(field, "expected a time in ms since the epoch (a non-negative integer)");
  }
  return value;
}

function text(value: unknown, field: string, maxBytes: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || value === "") {
    throw invalid(field, "expected a non-empty string");
  }
  if (new TextEncoder().encode(value).length > maxBytes) {
    throw invalid(field, `longer than ${maxBytes} bytes`);
  }
  return value;
}

/**
 * Validates a filter as the API takes it (an object, or absent for every job of the queue) into
 * a {@linkcode JobFilter} on `queue`; throws `validation_failed` naming the field at fault.
 */
export function parseJobFilter(queue: string, value: unknown): JobFilter {
  const filter = everyJob(queue);
  if (value === undefined || value === null) return filter;
  if (typeof value !== "object" || Array.isArray(value)) {
    throw invalid("filter", "expected an object");
  }
  const body = value as Record<string, unknown>;
  for (const name of Object.keys(body)) {
    if (!FILTER_FIELDS.has(name)) throw invalid(`filter.${name}`, "unknown field");
  }
  if (body.states !== undefined && body.states !== null) {
    const states = typeof body.states === "string" ? [body.states] : body.states;
    if (!Array.isArray(states) || states.length === 0) {
      throw invalid("filter.states", `expected a non-empty array of ${JOB_STATES.join(", ")}`);
    }
    for (const [i, state] of states.entries()) {
      if (!JOB_STATES.includes(state)) {
        throw invalid(`filter.states[${i}]`, `expected one of ${JOB_STATES.join(", ")}`);
      }
    }
    filter.states = JOB_STATES.filter((s) => states.includes(s));
  }
  filter.created_from = time(body.created_from, "filter.created_from");
  filter.created_to = time(body.created_to, "filter.created_to");
  filter.finished_from = time(body.finished_from, "filter.finished_from");
  filter.finished_to = time(body.finished_to, "filter.finished_to");
  for (const [from, to] of [["created_from", "created_to"], ["finished_from", "finished_to"]]) {
    const a = filter[from as "created_from"];
    const b = filter[to as "created_to"];
    if (a !== null && b !== null && b <= a) throw invalid(`filter.${to}`, `not after ${from}`);
  }
  const error = body.error_contains;
  if (typeof error === "string" && error.length > MAX_ERROR_TEXT_CHARS) {
    throw invalid("filter.error_contains", `longer than ${MAX_ERROR_TEXT_CHARS} characters`);
  }
  filter.error_contains = text(error, "filter.error_contains", 4 * MAX_ERROR_TEXT_CHARS);
  filter.group = text(body.group, "filter.group", MAX_GROUP_BYTES);
  filter.key_prefix = text(body.key_prefix, "filter.key_prefix", MAX_KEY_BYTES);
  if (body.payload !== undefined && body.payload !== null) {
    const payload = body.payload as Record<string, unknown>;
    if (typeof payload !== "object" || Array.isArray(payload)) {
      throw invalid("filter.payload", 'expected {"path": "tenant.id", "equals": value}');
    }
    for (const name of Object.keys(payload)) {
      if (name !== "path" && name !== "equals") {
        throw invalid(`filter.payload.${name}`, "unknown field");
      }
    }
    if (!Object.hasOwn(payload, "equals")) {
      throw invalid("filter.payload.equals", "expected the JSON value to compare with");
    }
    filter.payload = { path: parsePayloadPath(payload.path), equals: payload.equals };
  }
  return filter;
}

/** The filter as the API shows it: without the queue (the task names it), the path joined again. */
export function filterView(filter: JobFilter): Record<string, unknown> {
  const { queue: _queue, ...view }: Record<string, unknown> = { ...filter };
  view.payload = filter.payload === null
    ? null
    : { path: filter.payload.path.join("."), equals: filter.payload.equals };
  return view;
}
