/**
 * Validation of flow requests, shared by the transports: `POST /v1/flows` (`{key, nodes}`) and
 * `POST /v1/jobs/{id}/flow` (`{token, nodes}`). A node is a job as a one-job enqueue takes it,
 * read by the same parser (`parseJob`: the same options, limits and errors), plus its `ref`, its
 * `queue` and its `depends_on` edges; it carries no `key` (the flow does). Errors name the node:
 * `Invalid "nodes[3].depends_on[0]": …`. The graph's own rules (unique refs, known refs, no
 * self-edge, no cycle, the size limits) are core/flow.ts's, which the broker applies.
 *
 * @module
 */

import { invalid } from "../core/errors.ts";
import {
  MAX_FLOW_NODES,
  MAX_REF_CHARS,
  type NewEdge,
  type NewFlow,
  type NewFlowNode,
  ON_FAILURE,
  type OnFailure,
} from "../core/flow.ts";
import { MAX_KEY_BYTES } from "../core/limits.ts";
import { elementSpans, memberSpan, type Span } from "./json_spans.ts";
import {
  asObject,
  type Fields,
  has,
  leaseToken,
  parseJob,
  queueName,
  rejectUnknown,
  type RequestLimits,
  textField,
} from "./requests.ts";

const FLOW_FIELDS = new Set(["key", "nodes"]);
const ADD_FIELDS = new Set(["token", "nodes"]);
const EDGE_FIELDS = new Set(["ref", "on_failure"]);

/**
 * Parses the body of `POST /v1/flows`: `{key?, nodes}`. `source`, the JSON text `value` was
 * parsed from, lets each node's payload be stored as the text received.
 */
export function parseFlow(
  value: unknown,
  limits: RequestLimits,
  now: number,
  source?: string,
): NewFlow {
  const body = asObject(value);
  rejectUnknown(body, FLOW_FIELDS);
  const key = textField(body, "key", MAX_KEY_BYTES, "");
  return { key, nodes: parseNodes(body, limits, now, source) };
}

/** A parsed `POST /v1/jobs/{id}/flow`: the caller's lease token and the nodes to add. */
export interface AddNodesRequest {
  /** The lease token of the job adding the nodes. */
  token: string;
  /** The nodes. */
  nodes: NewFlowNode[];
}

/** Parses the body of `POST /v1/jobs/{id}/flow`: `{token, nodes}`. */
export function parseAddNodes(
  value: unknown,
  limits: RequestLimits,
  now: number,
  source?: string,
): AddNodesRequest {
  const body = asObject(value);
  rejectUnknown(body, ADD_FIELDS);
  const token = leaseToken(body);
  return { token, nodes: parseNodes(body, limits, now, source) };
}

/** The `nodes` member of a flow request, each node parsed; the count is checked first. */
function parseNodes(
  body: Fields,
  limits: RequestLimits,
  now: number,
  source: string | undefined,
): NewFlowNode[] {
  if (!has(body, "nodes")) throw invalid("nodes", "is required");
  const nodes = body.nodes;
  if (!Array.isArray(nodes)) throw invalid("nodes", "expected an array of nodes");
  if (nodes.length === 0) throw invalid("nodes", "expected at least one node");
  // Before any node is parsed: a request over the limit costs no more than its count.
  if (nodes.length > MAX_FLOW_NODES) {
    throw invalid("nodes", `at most ${MAX_FLOW_NODES} nodes per request, got ${nodes.length}`);
  }
  let elements: Span[] | null = null;
  if (source !== undefined) {
    const span = memberSpan(source, "nodes");
    if (span !== undefined) elements = elementSpans(source, span.start);
  }
  const out = new Array<NewFlowNode>(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const element = elements?.[i];
    const raw = element === undefined ? undefined : memberSpan(source!, "payload", element.start);
    out[i] = parseNode(
      nodes[i],
      i,
      limits,
      now,
      raw === undefined ? undefined : source!.slice(raw.start, raw.end),
    );
  }
  return out;
}

/**
 * One node: `ref`, `queue`, `depends_on` and the job's own fields, which `parseJob` reads (so a
 * node takes exactly what a one-job enqueue takes, except `key`).
 */
function parseNode(
  value: unknown,
  i: number,
  limits: RequestLimits,
  now: number,
  rawPayload: string | undefined,
): NewFlowNode {
  const at = `nodes[${i}]`;
  const node = asObject(value, at);
  if (has(node, "key") && node.key !== null) {
    throw invalid(`${at}.key`, "a flow's jobs carry no key: give the flow one");
  }
  const { ref, queue, depends_on, ...job } = node;
  return {
    ref: refText(ref, `${at}.ref`),
    queue: queueName(queue, `${at}.queue`),
    job: parseJob(job, limits, now, `${at}.`, rawPayload),
    depends_on: parseEdges(depends_on, `${at}.depends_on`),
  };
}

/** A node's `depends_on`: absent or null for none, else refs or `{ref, on_failure}` objects. */
function parseEdges(value: unknown, field: string): NewEdge[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    throw invalid(field, 'expected an array of refs or {"ref", "on_failure"} objects');
  }
  const edges = new Array<NewEdge>(value.length);
  for (let e = 0; e < value.length; e++) {
    const item = value[e];
    const at = `${field}[${e}]`;
    if (typeof item === "string") {
      edges[e] = { ref: refText(item, at), on_failure: ON_FAILURE[0] };
      continue;
    }
    const edge = asObject(item, at);
    rejectUnknown(edge, EDGE_FIELDS, `${at}.`);
    let rule: OnFailure = ON_FAILURE[0];
    if (has(edge, "on_failure") && edge.on_failure !== null) {
      if (!(ON_FAILURE as readonly unknown[]).includes(edge.on_failure)) {
        throw invalid(`${at}.on_failure`, `expected one of ${ON_FAILURE.join(", ")}`);
      }
      rule = edge.on_failure as OnFailure;
    }
    edges[e] = { ref: refText(edge.ref, `${at}.ref`), on_failure: rule };
  }
  return edges;
}

/**
 * A ref: 1 to {@linkcode MAX_REF_CHARS} characters of well-formed Unicode without NUL (stored
 * as text, which SQLite would cut at a NUL or change at a lone surrogate).
 */
function refText(value: unknown, field: string): string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_REF_CHARS) {
    throw invalid(field, `expected a ref: a string of 1 to ${MAX_REF_CHARS} characters`);
  }
  if (!value.isWellFormed()) {
    throw invalid(field, "expected well-formed Unicode (it holds a lone surrogate)");
  }
  if (value.includes("\u0000")) throw invalid(field, "expected no NUL (U+0000) characters");
  return value;
}

/** Parses a flow id from a URL path segment: 1 to 16 decimal digits naming a positive id. */
export function pathFlowId(segment: string): number {
  const n = /^[0-9]{1,16}$/.test(segment) ? Number(segment) : 0;
  if (!Number.isSafeInteger(n) || n < 1) throw invalid("id", "expected a positive integer flow id");
  return n;
}
