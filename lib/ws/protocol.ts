/**
 * The WebSocket protocol (v1, and v2 which carries many per frame): decoding client frames and
 * encoding server frames. Pure functions, no sockets — the per-connection logic is in
 * `connection.ts`, the Deno glue in `deno_socket.ts`.
 *
 * Text frames, one JSON object each, with an `op`. Any client frame may carry `ref` (a string or
 * number, echoed in the reply). Replies are `{op:"ok", ref, …answer}` or
 * `{op:"error", ref?, code, message, id?}`.
 *
 * Many per frame, both ways: any client may send `{op:"batch", ref?, frames:[…]}`, which is its
 * frames handled one after another exactly as if sent alone, answered with one
 * `{op:"ok", ref?, replies:[…]}` holding each frame's own reply in order (one failing frame fails
 * nothing else). A client that asks for the {@linkcode PROTOCOL_V2} subprotocol on the upgrade
 * gets its pushes as `{op:"jobs", queue, jobs:[…]}`, every job a subscription is dealt at once in
 * one frame; without it, one `job` frame per job as in v1.
 *
 * Flows and waiting: `flow` creates a flow (the body of `POST /v1/flows`), `add_nodes` lets a
 * leased job add nodes to its flow; `watch {id}` has the server push `progressed` frames as the
 * job reports progress and one `ended` frame with its outcome when it ends. The full
 * description, with an example of every frame, is docs/protocol.md.
 *
 * @module
 */

import { refuseCostlyJson } from "../api/json_depth.ts";
import { invalid, TegamiError, toTegamiError } from "../core/errors.ts";
import { type Delivery, deliveryMembers, type Job } from "../core/job.ts";
import { asObject, jobId, queueName, utf8Length } from "../api/requests.ts";
import { elementSpans, memberSpan } from "../api/json_spans.ts";

/** Operations a client may send. */
export type ClientOp =
  | "auth"
  | "subscribe"
  | "unsubscribe"
  | "ack"
  | "nack"
  | "extend"
  | "checkpoint"
  | "progress"
  | "enqueue"
  | "flow"
  | "add_nodes"
  | "watch"
  | "unwatch"
  | "batch";

/** The WebSocket subprotocol (`Sec-WebSocket-Protocol`) that asks for `jobs` push frames. */
export const PROTOCOL_V2 = "tegami.v2";

/** The most frames one `batch` frame may carry. */
export const MAX_BATCH_FRAMES = 1000;

const OPS: ReadonlySet<string> = new Set<ClientOp>([
  "auth",
  "subscribe",
  "unsubscribe",
  "ack",
  "nack",
  "extend",
  "checkpoint",
  "progress",
  "enqueue",
  "flow",
  "add_nodes",
  "watch",
  "unwatch",
  "batch",
]);

/** Operations that name a job by `id`. */
const JOB_OPS: ReadonlySet<string> = new Set([
  "ack",
  "nack",
  "extend",
  "checkpoint",
  "progress",
  "add_nodes",
  "watch",
  "unwatch",
]);
/** Operations that name a queue. */
const QUEUE_OPS: ReadonlySet<string> = new Set(["subscribe", "unsubscribe", "enqueue"]);

/** A decoded client frame: its op, ref, the job or queue it names, and the remaining fields. */
export interface ClientFrame {
  /** The operation. */
  op: ClientOp;
  /** The caller's reference, echoed in the reply. */
  ref: string | number | undefined;
  /** The job, for ack/nack/extend/checkpoint/progress/add_nodes/watch/unwatch. */
  id: number;
  /** The queue, for subscribe/unsubscribe/enqueue. */
  queue: string;
  /** The other fields, for the shared request parsers. */
  body: Record<string, unknown>;
  /**
   * The frame as received, so an enqueued payload is stored as its text; inside a `batch`, only
   * for the operations that read it (enqueue, flow, add_nodes), else empty.
   */
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
  refuseCostlyJson(text, "the frame");
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new TegamiError(
      "invalid_json",
      `Cannot parse the frame: ${(error as Error).message.slice(0, 200)}`,
    );
  }
  return decodeValue(value, text);
}

/**
 * Checks a parsed frame; `text` is the JSON it was parsed from (for a frame inside a `batch`,
 * its slice of the batch's text). Throws `validation_failed`.
 */
export function decodeValue(value: unknown, text: string): ClientFrame {
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

/** One frame of a `batch`: decoded, or the error its reply will carry. */
export type BatchItem = { frame: ClientFrame } | {
  error: TegamiError;
  ref: string | number | undefined;
};

/**
 * The frames of a decoded `batch` frame, each decoded on its own so that a bad one fails alone.
 * Throws `validation_failed` when the batch itself is malformed (no `frames` array, too many).
 */
export function batchItems(batch: ClientFrame): BatchItem[] {
  const { frames, ...rest } = batch.body;
  for (const name of Object.keys(rest)) throw invalid(name, "unknown field");
  if (!Array.isArray(frames)) throw invalid("frames", "expected an array of frames");
  if (frames.length === 0) throw invalid("frames", "expected at least one frame");
  if (frames.length > MAX_BATCH_FRAMES) {
    throw invalid("frames", `${frames.length} frames is over the limit of ${MAX_BATCH_FRAMES}`);
  }
  // Each frame's own text, so that an enqueued payload is stored as the text received: found
  // (a scan of the batch's text) only if a frame needs it, which acks and nacks do not.
  const source = batch.text;
  let spans: ReturnType<typeof elementSpans> | null | undefined;
  return frames.map((value, i): BatchItem => {
    let text = "";
    if (carriesText(value)) {
      if (spans === undefined) {
        const span = memberSpan(source, "frames");
        spans = span === undefined ? null : elementSpans(source, span.start);
      }
      const at = spans?.[i];
      text = at === undefined ? JSON.stringify(value) : source.slice(at.start, at.end);
    }
    try {
      const frame = decodeValue(value, text);
      if (frame.op === "batch" || frame.op === "auth") {
        throw invalid(`frames[${i}].op`, `${frame.op} cannot be sent inside a batch`);
      }
      return { frame };
    } catch (error) {
      return { error: toTegamiError(error), ref: refOf(value) };
    }
  });
}

/** The operations whose handling reads the frame's own text (`ClientFrame.text`). */
const TEXT_OPS: ReadonlySet<unknown> = new Set(["enqueue", "flow", "add_nodes"]);

/** Whether `value`, a frame of a batch, is of an operation that reads its text. */
function carriesText(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    TEXT_OPS.has((value as Record<string, unknown>).op);
}

/** The reply to a `batch`: `{op:"ok", ref?, replies:[…]}`, `replies` being encoded frames. */
export function batchReplyFrame(ref: string | number | undefined, replies: string[]): string {
  const head = ref === undefined ? `{"op":"ok"` : `{"op":"ok","ref":${JSON.stringify(ref)}`;
  return `${head},"replies":[${replies.join(",")}]}`;
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

/** The v1 `job` frames pushing `deliveries`, one each, built when asked for. */
export function* jobFrames(deliveries: readonly Delivery[]): Generator<JobsFrame> {
  for (const delivery of deliveries) yield { frame: jobFrame(delivery), count: 1 };
}

/** One push frame (`job`, or v2 `jobs`) and how many of the deliveries it carries. */
export interface JobsFrame {
  /** The frame's text. */
  frame: string;
  /** The deliveries it pushes, the first ones not in an earlier frame. */
  count: number;
}

/**
 * The v2 `jobs` frames pushing, in order, the deliveries a subscription of `queue` was dealt: as
 * many jobs in each as keep it within `maxBytes` (at least one), so that with the largest `job`
 * frame's size there (`largestDeliveryBytes`) no `jobs` frame is larger than a `job` frame can be.
 * Each is built when asked for: a push that stops early builds no more.
 */
export function* jobsFrames(
  queue: string,
  deliveries: readonly Delivery[],
  maxBytes: number,
): Generator<JobsFrame> {
  const head = `{"op":"jobs","queue":${JSON.stringify(queue)},"jobs":[`;
  const empty = utf8Length(head) + 2; // and the closing "]}"
  let text = head;
  // The frame's UTF-8 size so far, or a bound above it while `exact` is false: a UTF-16 unit is
  // at most 3 bytes, so while the bound fits nothing needs counting (the usual case, far below
  // `maxBytes`); near it, the sizes are counted, and the split falls where exact sizes put it.
  let bytes = empty;
  let exact = true;
  let count = 0;
  for (const delivery of deliveries) {
    const item = `{${deliveryMembers(delivery)}}`;
    const comma = count > 0 ? 1 : 0;
    let size = 3 * item.length;
    if (bytes + comma + size > maxBytes) {
      if (!exact) {
        bytes = utf8Length(text) + 2;
        exact = true;
      }
      size = utf8Length(item);
      if (count > 0 && bytes + comma + size > maxBytes) {
        yield { frame: text + "]}", count };
        text = head;
        bytes = empty;
        count = 0;
      }
    } else exact = false;
    text += count > 0 ? "," + item : item;
    bytes += size + (count > 0 ? 1 : 0);
    count++;
  }
  if (count > 0) yield { frame: text + "]}", count };
}

/** The `cancel` frame: the job this connection holds was cancelled; its ack will fail. */
export function cancelFrame(id: number): string {
  return `{"op":"cancel","id":${id}}`;
}

/** The `expired` frame: the lease this connection held ran out. */
export function expiredFrame(id: number): string {
  return `{"op":"expired","id":${id}}`;
}

/** The `progressed` frame: a watched job reported progress (`progress` is its JSON text). */
export function progressedFrame(id: number, progress: string | null, at: number): string {
  return `{"op":"progressed","id":${id},"progress":${progress ?? "null"},"at":${at}}`;
}

/** The `gone` frame: a watched job is no longer stored, its end unread; the watch is over. */
export function goneFrame(id: number): string {
  return `{"op":"gone","id":${id}}`;
}

/**
 * The `ended` frame: a watched job ended (done, dead or cancelled), with its outcome. The job's
 * result is at most `--max-payload`, so this frame stays within a `job` frame's bound.
 */
export function endedFrame(job: Job): string {
  return `{"op":"ended","id":${job.id},"queue":${JSON.stringify(job.queue)},` +
    `"state":"${job.state}","result":${job.result ?? "null"},` +
    `"last_error":${JSON.stringify(job.last_error)},"attempts":${job.attempts},` +
    `"finished_at":${job.finished_at}}`;
}
