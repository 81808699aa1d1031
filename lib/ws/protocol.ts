/**
 * The WebSocket protocol v1: decoding client frames and encoding server frames. Pure functions,
 * no sockets — the per-connection logic is in `connection.ts`, the Deno glue in `deno_socket.ts`.
 *
 * Text frames, one JSON object each, with an `op`. Any client frame may carry `ref` (a string or
 * number, echoed in the reply). Replies are `{op:"ok", ref, …answer}` or
 * `{op:"error", ref?, code, message, id?}`. The full description, with an example of every
 * frame, is docs/protocol.md.
 *
 * @module
 */

import { invalid, TegamiError } from "../core/errors.ts";
import { type Delivery, deliveryMembers } from "../core/job.ts";
import { asObject, jobId, queueName } from "../api/requests.ts";

/** Operations a client may send. */
export type ClientOp =
  | "auth"
  | "subscribe"
  | "unsubscribe"
  | "ack"
  | "nack"
  | "extend"
  | "checkpoint"
  | "enqueue";

const OPS: ReadonlySet<string> = new Set<ClientOp>([
  "auth",
  "subscribe",
  "unsubscribe",
  "ack",
  "nack",
  "extend",
  "checkpoint",
  "enqueue",
]);

/** Operations that name a job by `id`. */
const JOB_OPS: ReadonlySet<string> = new Set(["ack", "nack", "extend", "checkpoint"]);
/** Operations that name a queue. */
const QUEUE_OPS: ReadonlySet<string> = new Set(["subscribe", "unsubscribe", "enqueue"]);

/** A decoded client frame: its op, ref, the job or queue it names, and the remaining fields. */
export interface ClientFrame {
  /** The operation. */
  op: ClientOp;
  /** The caller's reference, echoed in the reply. */
  ref: string | number | undefined;
  /** The job, for ack/nack/extend/checkpoint. */
  id: number;
  /** The queue, for subscribe/unsubscribe/enqueue. */
  queue: string;
  /** The other fields, for the shared request parsers. */
  body: Record<string, unknown>;
  /** The frame as received, so an enqueued payload is stored as its text. */
  text: string;
}

/**
 * The ref of a frame if it has a readable one (a string of at most 256 characters, or a number),
 * even when the rest is invalid, so the error reply can echo it. `null` is no ref, like absence.
 */
export function refOf(value: unknown): string | number | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const ref = (value as Record<string, unknown>).ref;
  if (typeof ref === "number" && Number.isFinite(ref)) return ref;
  if (typeof ref === "string" && ref.length <= 256) return ref;
  return undefined;
}

/** Parses a frame's text; throws `invalid_json` or `validation_failed`. */
export function decodeFrame(text: string): ClientFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TegamiError(
      "invalid_json",
      `Cannot parse the frame: ${(error as Error).message.slice(0, 200)}`,
    );
  }
  const frame = asObject(value, "frame");
  const { op, ref, id, queue, ...body } = frame;
  if (typeof op !== "string" || !OPS.has(op)) {
    throw invalid("op", `expected one of ${[...OPS].join(", ")}`);
  }
  // An optional field given as null is absent, `ref` included.
  if (ref !== undefined && ref !== null && refOf(frame) === undefined) {
    throw invalid("ref", "expected a string of at most 256 characters or a number");
  }
  if (!JOB_OPS.has(op) && id !== undefined) throw invalid("id", "unknown field");
  if (!QUEUE_OPS.has(op) && queue !== undefined) throw invalid("queue", "unknown field");
  return {
    op: op as ClientOp,
    ref: refOf(frame),
    id: JOB_OPS.has(op) ? jobId(id) : 0,
    queue: QUEUE_OPS.has(op) ? queueName(queue) : "",
    body,
    text,
  };
}

/** The `ok` reply: `{op:"ok", ref?, …answer}`. */
export function okFrame(ref: string | number | undefined, answer: Record<string, unknown>): string {
  return JSON.stringify(ref === undefined ? { op: "ok", ...answer } : { op: "ok", ref, ...answer });
}

/** The `error` reply. */
export function errorFrame(ref: string | number | undefined, error: TegamiError): string {
  const frame: Record<string, unknown> = { op: "error" };
  if (ref !== undefined) frame.ref = ref;
  frame.code = error.code;
  frame.message = error.message;
  if (error.id !== undefined) frame.id = error.id;
  return JSON.stringify(frame);
}

/** The `job` frame pushing a delivery. */
export function jobFrame(delivery: Delivery): string {
  return `{"op":"job",${deliveryMembers(delivery)}}`;
}

/** The `cancel` frame: the job this connection holds was cancelled; its ack will fail. */
export function cancelFrame(id: number): string {
  return `{"op":"cancel","id":${id}}`;
}

/** The `expired` frame: the lease this connection held ran out. */
export function expiredFrame(id: number): string {
  return `{"op":"expired","id":${id}}`;
}
