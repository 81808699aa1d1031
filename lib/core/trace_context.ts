/**
 * Trace context (W3C Trace Context, the form OpenTelemetry propagates): a job carries it as two
 * ordinary `String` attributes, `traceparent` and `tracestate`, stored with the job and given
 * back with every delivery. The doors that take it from elsewhere — tegami's API from the
 * `traceparent` and `tracestate` request headers of a one-job enqueue, the SQS API from a
 * message's `AWSTraceHeader` system attribute — apply the rules here, so each door accepts and
 * refuses the same values.
 *
 * A `traceparent` is `version-traceid-parentid-flags` in lowercase hex (W3C Trace Context §3.2):
 * version `00` is exactly 55 characters; a later version (not `ff`) may carry more after a `-`,
 * which is kept as sent; neither id may be all zeros. A `tracestate` is a list of at most 32
 * `key=value` members (§3.3). An AWS X-Ray trace header
 * (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`) is the same
 * trace and parent ids split differently, so it converts both ways.
 *
 * @module
 */

import { type Attribute, MAX_ATTRIBUTES } from "./attributes.ts";

/** The attribute (and header) that carries a job's W3C `traceparent`. */
export const TRACEPARENT = "traceparent";
/** The attribute (and header) that carries a job's W3C `tracestate`. */
export const TRACESTATE = "tracestate";

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const LATER_VERSION = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZEROS = /^0+$/;

/** The parts of a valid `traceparent`. */
export interface Traceparent {
  /** Two lowercase hex digits; `00` today. */
  version: string;
  /** 32 lowercase hex digits, not all zeros. */
  traceId: string;
  /** 16 lowercase hex digits, not all zeros: the span that sent the job. */
  parentId: string;
  /** Two lowercase hex digits; bit 0 is `sampled`. */
  flags: string;
}

/** The parts of a `traceparent`, or null when it is not a valid one (see the module doc). */
export function parseTraceparent(value: string): Traceparent | null {
  let parts: RegExpExecArray | null;
  let version = "00";
  if (value.startsWith("00-")) {
    parts = VERSION_00.exec(value);
    if (parts === null) return null;
    parts.splice(1, 0, version);
  } else {
    // §3.2.4: a receiver of a later version reads the version-00 fields it knows; only `ff`
    // is forbidden, and whatever follows them must start with a `-`.
    parts = LATER_VERSION.exec(value);
    if (parts === null || parts[1] === "ff") return null;
    version = parts[1];
  }
  const [, , traceId, parentId, flags] = parts;
  if (ZEROS.test(traceId) || ZEROS.test(parentId)) return null;
  return { version, traceId, parentId, flags };
}

/** What is wrong with a `traceparent`, or null when it is valid. */
export function traceparentProblem(value: string): string | null {
  if (parseTraceparent(value) !== null) return null;
  if (/^[0-9a-f]{2}-0{32}-/.test(value)) return "the trace id must not be all zeros";
  if (/^[0-9a-f]{2}-[0-9a-f]{32}-0{16}-/.test(value)) return "the parent id must not be all zeros";
  if (value.startsWith("ff-")) return "version ff is not allowed";
  return "expected version-traceid-parentid-flags in lowercase hex " +
    "(00-<32 hex digits>-<16 hex digits>-<2 hex digits>)";
}

// §3.3.1: key = simple-key / multi-tenant-key; value = 0*255(chr) nblk-chr.
const KEY = "(?:[a-z][a-z0-9_*/-]{0,255}|[a-z0-9][a-z0-9_*/-]{0,240}@[a-z][a-z0-9_*/-]{0,13})";
const VALUE = "[\\x20-\\x2b\\x2d-\\x3c\\x3e-\\x7e]{0,255}[\\x21-\\x2b\\x2d-\\x3c\\x3e-\\x7e]";
const MEMBER = new RegExp(`^${KEY}=${VALUE}$`);

/** A `tracestate`'s members, without the optional white space around them and empty ones. */
function tracestateMembers(value: string): string[] {
  return value.split(",").map((m) => m.replace(/^[ \t]+|[ \t]+$/g, "")).filter((m) => m !== "");
}

/** The most members a `tracestate` holds (W3C Trace Context §3.3.1). */
export const MAX_TRACESTATE_MEMBERS = 32;

/** What is wrong with a `tracestate`, or null when it is valid (empty members are allowed). */
export function tracestateProblem(value: string): string | null {
  const present = tracestateMembers(value);
  if (present.length > MAX_TRACESTATE_MEMBERS) {
    return `at most ${MAX_TRACESTATE_MEMBERS} members, not ${present.length}`;
  }
  const keys = new Set<string>();
  for (const member of present) {
    if (!MEMBER.test(member)) return `expected key=value members, not "${member.slice(0, 64)}"`;
    const key = member.slice(0, member.indexOf("="));
    if (keys.has(key)) return `the key "${key}" appears twice`;
    keys.add(key);
  }
  return null;
}

/**
 * What a request's trace headers add to a job's attributes: `attributes` (the job's, by name)
 * gains `traceparent` and `tracestate` from the headers unless it already holds a `traceparent`
 * (the job's own trace context wins, and is not mixed with the headers'). Answers the problem
 * when the headers cannot be added, naming the header: an invalid value, a `tracestate` without
 * a `traceparent`, or no room among the job's attributes. Leaves `attributes` unchanged then.
 */
export function addTraceHeaders(
  attributes: Map<string, Attribute>,
  traceparent: string | null,
  tracestate: string | null,
): { field: string; problem: string } | null {
  if (traceparent === null) {
    return tracestate === null
      ? null
      : { field: TRACESTATE, problem: "needs a traceparent header beside it" };
  }
  const problem = traceparentProblem(traceparent);
  if (problem !== null) return { field: TRACEPARENT, problem };
  const stateProblem = tracestate === null ? null : tracestateProblem(tracestate);
  if (stateProblem !== null) return { field: TRACESTATE, problem: stateProblem };
  if (attributes.has(TRACEPARENT)) return null;
  const state = tracestate === null ? "" : tracestateMembers(tracestate).join(",");
  const adding = state === "" || attributes.has(TRACESTATE) ? 1 : 2;
  if (attributes.size + adding > MAX_ATTRIBUTES) {
    return {
      field: TRACEPARENT,
      problem:
        `the job's attributes leave no room for the trace context (at most ${MAX_ATTRIBUTES})`,
    };
  }
  attributes.set(TRACEPARENT, { type: "String", value: traceparent });
  if (adding === 2) attributes.set(TRACESTATE, { type: "String", value: state });
  return null;
}

const XRAY_ROOT = /^1-([0-9a-f]{8})-([0-9a-f]{24})$/;
const SPAN_ID = /^[0-9a-f]{16}$/;

/**
 * The `traceparent` of an AWS X-Ray trace header (`Root=1-<8 hex>-<24 hex>;Parent=<16 hex>`,
 * optionally `;Sampled=0|1|?` and other fields, in any order), or null when it holds no valid
 * root and parent. `Sampled=1` is the sampled flag; anything else leaves it clear.
 */
export function traceparentFromXRay(header: string): string | null {
  const fields = new Map<string, string>();
  for (const part of header.split(";")) {
    const at = part.indexOf("=");
    if (at < 1) continue;
    const name = part.slice(0, at).trim();
    if (!fields.has(name)) fields.set(name, part.slice(at + 1).trim());
  }
  const root = XRAY_ROOT.exec(fields.get("Root") ?? "");
  const parent = fields.get("Parent") ?? "";
  if (root === null || !SPAN_ID.test(parent)) return null;
  const traceId = root[1] + root[2];
  if (ZEROS.test(traceId) || ZEROS.test(parent)) return null;
  return `00-${traceId}-${parent}-${fields.get("Sampled") === "1" ? "01" : "00"}`;
}

/**
 * The AWS X-Ray trace header of a `traceparent`
 * (`Root=1-<first 8 hex>-<last 24 hex>;Parent=<parent id>;Sampled=<flag>`), or null when it is
 * not a valid one.
 */
export function xrayFromTraceparent(traceparent: string): string | null {
  const parts = parseTraceparent(traceparent);
  if (parts === null) return null;
  const sampled = parseInt(parts.flags, 16) & 1;
  return `Root=1-${parts.traceId.slice(0, 8)}-${parts.traceId.slice(8)};Parent=${parts.parentId};` +
    `Sampled=${sampled}`;
}
