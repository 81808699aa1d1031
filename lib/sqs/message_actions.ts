/**
 * The SQS actions on messages: SendMessage(Batch), ReceiveMessage, DeleteMessage(Batch) and
 * ChangeMessageVisibility(Batch), over the broker's enqueue, long-poll lease, ack, extend and
 * release.
 *
 * A message is a job whose payload is the body as a JSON string; a job whose payload is any
 * other JSON is received with that JSON's text as its body. The message id is the job's id, the
 * receipt handle its lease (`receipt_handle.ts`). A FIFO queue's message group is the job's group
 * (one in flight per group, in order), its deduplication id the job's key, held 5 minutes.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { utf8Length } from "../api/requests.ts";
import { NOT_XML_TEXT } from "../core/attributes.ts";
import { TegamiError } from "../core/errors.ts";
import type { Delivery, NewJob } from "../core/job.ts";
import { MIN_LEASE_MS } from "../core/limits.ts";
import {
  type Action,
  type ActionCall,
  batchEntries,
  callQueue,
  failedEntry,
  queueSettingsOf,
  type SqsServices,
  stringInput,
} from "./action_context.ts";
import {
  jobAttributes,
  type MessageAttribute,
  messageAttributes,
  parseMessageAttributes,
  selectAttributes,
} from "./message_attributes.ts";
import { md5OfAttributes, md5OfBody } from "./message_md5.ts";
import type { QueueSettings } from "../core/queue_settings.ts";
import {
  MAX_VISIBILITY_SECONDS,
  queueDelaySeconds,
  queueMaxMessageBytes,
  queueWaitSeconds,
} from "./queue_attributes.ts";
import { isFifo } from "./queue_url.ts";
import {
  AWS_TRACE_HEADER,
  parseSystemAttributes,
  traceHeaderOf,
  withTraceHeader,
} from "./trace_header.ts";
import { parseReceiptHandle, queueTag, receiptHandle } from "./receipt_handle.ts";
import { invalidParameter, missingParameter, SqsError, toSqsError } from "./sqs_error.ts";
import { bytesBase64, type WireMap, type WireStruct } from "./wire_values.ts";

/** How long a FIFO message's deduplication id holds, ms (AWS's 5-minute window). */
export const DEDUP_WINDOW_MS = 5 * 60 * 1000;
/** The longest per-message delay, seconds. */
export const MAX_DELAY_SECONDS = 900;
/** The most bytes of bodies in one SendMessageBatch. */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** The most messages one ReceiveMessage answers. */
export const MAX_RECEIVE = 10;
/** The longest long poll, seconds. */
export const MAX_WAIT_SECONDS = 20;

/** The message attributes of a receive that asked for none, or of a job that has none. */
const NO_ATTRIBUTES: ReadonlyMap<string, MessageAttribute> = new Map();

/** Message group and deduplication ids: 1 to 128 printable ASCII characters. */
const ID_TEXT = /^[\x21-\x7e]{1,128}$/;

const encoder = new TextEncoder();

/** The body a job's payload is received as: a JSON string's text, else the JSON itself. */
export function bodyOf(payload: string): string {
  if (payload.charCodeAt(0) === 0x22) {
    const value = JSON.parse(payload);
    if (typeof value === "string") return value;
  }
  return payload;
}

/** The zero-padded sequence number of a FIFO message (its job id). */
export function sequenceNumber(id: number): string {
  return String(id).padStart(20, "0");
}

/** A message ready to store, and what the answer says about it. */
interface Prepared {
  job: NewJob;
  md5: string;
  /** The MD5 of its message attributes, when it has any. */
  md5OfAttributes: string | null;
  /** The MD5 of its message system attributes, when it has any. */
  md5OfSystemAttributes: string | null;
  bodyBytes: number;
}

/** Reads and checks one message of SendMessage(Batch) into the job that stores it. */
function prepare(
  services: SqsServices,
  queue: string,
  settings: QueueSettings,
  entry: WireStruct,
  now: number,
): Prepared {
  const body = stringInput(entry, "MessageBody");
  if (body === undefined || body === "") throw missingParameter("MessageBody");
  if (NOT_XML_TEXT.test(body)) {
    throw new SqsError(
      "InvalidMessageContents",
      "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to " +
        "#xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
    );
  }
  const bodyBytes = utf8Length(body);
  const payload = JSON.stringify(body);
  const limit = queueMaxMessageBytes(settings, services);
  // The JSON text is longer than the body by its quotes and escapes: only a body near the
  // payload limit needs it measured.
  if (
    bodyBytes > limit ||
    (bodyBytes + 2 > services.maxPayload / 6 &&
      encoder.encode(payload).length > services.maxPayload)
  ) {
    throw invalidParameter(
      "MessageBody",
      `Message must be shorter than ${limit + 1} bytes (its JSON text within ` +
        `${services.maxPayload}).`,
    );
  }
  const attributes = parseMessageAttributes(entry.MessageAttributes as WireMap | undefined);
  const trace = parseSystemAttributes(entry.MessageSystemAttributes as WireMap | undefined);
  const stored = withTraceHeader(attributes, trace);
  const fifo = isFifo(queue);
  const delay = entry.DelaySeconds as number | undefined;
  if (delay !== undefined) {
    if (delay < 0 || delay > MAX_DELAY_SECONDS) {
      throw invalidParameter("DelaySeconds", `Must be between 0 and ${MAX_DELAY_SECONDS}.`);
    }
    if (fifo && delay !== 0) {
      throw invalidParameter(
        "DelaySeconds",
        "The request includes a parameter that is not valid for this queue type.",
      );
    }
  }
  const group = stringInput(entry, "MessageGroupId");
  if (group !== undefined && !ID_TEXT.test(group)) {
    throw invalidParameter("MessageGroupId", "1 to 128 printable ASCII characters.");
  }
  const dedup = stringInput(entry, "MessageDeduplicationId");
  if (dedup !== undefined && !ID_TEXT.test(dedup)) {
    throw invalidParameter("MessageDeduplicationId", "1 to 128 printable ASCII characters.");
  }
  let key: string | null = null;
  if (fifo) {
    if (group === undefined) throw missingParameter("MessageGroupId");
    // Content-based deduplication is always on: a message without its own id is known by the
    // SHA-256 of its body, as AWS computes it.
    key = dedup ?? createHash("sha256").update(body, "utf8").digest("hex");
  } else if (dedup !== undefined) {
    throw invalidParameter(
      "MessageDeduplicationId",
      "The request includes a parameter that is not valid for this queue type.",
    );
  }
  return {
    job: {
      payload,
      attributes: stored.size === 0 ? null : jobAttributes(stored),
      priority: 0,
      key,
      key_ttl_ms: key === null ? null : DEDUP_WINDOW_MS,
      on_duplicate: "ignore",
      group: group ?? null,
      run_at: now + (delay ?? queueDelaySeconds(settings)) * 1000,
      max_attempts: null,
      lease_ms: null,
      backoff: null,
    },
    md5: md5OfBody(body),
    md5OfAttributes: attributes.size === 0 ? null : md5OfAttributes(attributes),
    md5OfSystemAttributes: trace?.md5 ?? null,
    bodyBytes,
  };
}

function sent(queue: string, prepared: Prepared, id: number): Record<string, string> {
  const out: Record<string, string> = {
    MD5OfMessageBody: prepared.md5,
    MessageId: String(id),
  };
  if (prepared.md5OfAttributes !== null) out.MD5OfMessageAttributes = prepared.md5OfAttributes;
  if (prepared.md5OfSystemAttributes !== null) {
    out.MD5OfMessageSystemAttributes = prepared.md5OfSystemAttributes;
  }
  if (isFifo(queue)) out.SequenceNumber = sequenceNumber(id);
  return out;
}

const sendMessage: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const settings = await queueSettingsOf(services, queue);
  const prepared = prepare(services, queue, settings, call.input, services.clock.now());
  const [out] = await services.broker.enqueue(queue, [prepared.job]);
  return sent(queue, prepared, out.id);
};

const sendMessageBatch: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const entries = batchEntries(call.input);
  const settings = await queueSettingsOf(services, queue);
  const now = services.clock.now();
  const failed: unknown[] = [];
  const ready: { id: string; prepared: Prepared }[] = [];
  let bytes = 0;
  for (const entry of entries) {
    const id = entry.Id as string;
    try {
      const prepared = prepare(services, queue, settings, entry, now);
      bytes += prepared.bodyBytes;
      ready.push({ id, prepared });
    } catch (error) {
      failed.push(failedEntry(call, id, toSqsError(error)));
    }
  }
  if (bytes > MAX_BATCH_BYTES) {
    throw new SqsError(
      "BatchRequestTooLong",
      `Batch requests cannot be longer than ${MAX_BATCH_BYTES} bytes. You have sent ${bytes} bytes.`,
    );
  }
  const stored = ready.length === 0
    ? []
    : await services.broker.enqueue(queue, ready.map((r) => r.prepared.job));
  return {
    Successful: ready.map((r, i) => ({ Id: r.id, ...sent(queue, r.prepared, stored[i].id) })),
    Failed: failed,
  };
};

/** The message system attributes ReceiveMessage may be asked for. */
const SYSTEM_ATTRIBUTES = new Set([
  "All",
  "SenderId",
  "SentTimestamp",
  "ApproximateReceiveCount",
  "ApproximateFirstReceiveTimestamp",
  "SequenceNumber",
  "MessageDeduplicationId",
  "MessageGroupId",
  "AWSTraceHeader",
  "DeadLetterQueueSourceArn",
]);

function integerInRange(input: WireStruct, name: string, min: number, max: number) {
  const value = input[name] as number | undefined;
  if (value !== undefined && (value < min || value > max)) {
    throw invalidParameter(name, `Must be between ${min} and ${max}, if provided.`);
  }
  return value;
}

function messageOf(
  queue: string,
  tag: string,
  delivery: Delivery,
  wanted: ReadonlySet<string>,
  attributeNames: readonly string[],
): Record<string, unknown> {
  const { job, lease } = delivery;
  const body = bodyOf(job.payload);
  const message: Record<string, unknown> = {
    MessageId: String(job.id),
    ReceiptHandle: receiptHandle(job.id, lease.token, tag),
    MD5OfBody: md5OfBody(body),
    Body: body,
  };
  const all = wanted.has("All");
  const attributes: Record<string, string> = {};
  const put = (name: string, value: string | null) => {
    if (value !== null && (all || wanted.has(name))) attributes[name] = value;
  };
  put("SentTimestamp", String(job.created_at));
  put("ApproximateReceiveCount", String(job.attempts));
  put("MessageGroupId", job.group);
  if (all || wanted.has(AWS_TRACE_HEADER)) put(AWS_TRACE_HEADER, traceHeaderOf(job.attributes));
  if (isFifo(queue)) {
    put("SequenceNumber", sequenceNumber(job.id));
    put("MessageDeduplicationId", job.key);
  }
  if (Object.keys(attributes).length > 0) message.Attributes = attributes;
  // Most messages carry no attributes, or are received without asking for them.
  const chosen = job.attributes === null || attributeNames.length === 0
    ? NO_ATTRIBUTES
    : selectAttributes(messageAttributes(job.attributes), attributeNames);
  if (chosen.size > 0) {
    message.MD5OfMessageAttributes = md5OfAttributes(chosen);
    const out: Record<string, Record<string, string>> = {};
    for (const [name, a] of chosen) {
      out[name] = a.binaryValue !== null
        ? { DataType: a.dataType, BinaryValue: bytesBase64(a.binaryValue) }
        : { DataType: a.dataType, StringValue: a.stringValue ?? "" };
    }
    message.MessageAttributes = out;
  }
  return message;
}

const receiveMessage: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const { input } = call;
  const max = integerInRange(input, "MaxNumberOfMessages", 1, MAX_RECEIVE) ?? 1;
  const wait = integerInRange(input, "WaitTimeSeconds", 0, MAX_WAIT_SECONDS);
  const visibility = integerInRange(input, "VisibilityTimeout", 0, MAX_VISIBILITY_SECONDS);
  const wanted = new Set<string>();
  for (const list of [input.AttributeNames, input.MessageSystemAttributeNames]) {
    for (const name of (list as string[] | undefined) ?? []) {
      if (SYSTEM_ATTRIBUTES.has(name)) wanted.add(name);
    }
  }
  const settings = await queueSettingsOf(services, queue);
  // The queue's visibility timeout as it is now, not as it was when the job was sent.
  const leaseMs = visibility !== undefined
    ? Math.max(MIN_LEASE_MS, visibility * 1000)
    : settings.lease_ms;
  const signal = call.signal;
  const waitMs = (wait ?? queueWaitSeconds(settings)) * 1000;
  const deliveries = await services.broker.lease(queue, max, waitMs, leaseMs, signal);
  if (signal.aborted && deliveries.length > 0) {
    // The caller left while it waited: the jobs go back at once, their attempt not counted.
    await services.broker.release(
      deliveries.map((d) => ({ id: d.job.id, token: d.lease.token, undelivered: true })),
    );
    return {};
  }
  // AWS leaves Messages out of an empty answer.
  if (deliveries.length === 0) return {};
  const names = (input.MessageAttributeNames as string[] | undefined) ?? [];
  const tag = queueTag(queue);
  return { Messages: deliveries.map((d) => messageOf(queue, tag, d, wanted, names)) };
};

/**
 * A receipt handle of `queue`'s job: its job and token, after checking the job's queue — by the
 * handle's queue tag, or, where tokens restrict queues (or the handle has no tag), by reading
 * the job's queue. `gone` is known only when the queue was read.
 */
async function receiptOf(services: SqsServices, call: ActionCall, queue: string, handle: unknown) {
  if (typeof handle !== "string" || handle === "") throw missingParameter("ReceiptHandle");
  const receipt = parseReceiptHandle(handle);
  const otherQueue = () =>
    new SqsError(
      "ReceiptHandleIsInvalid",
      `The input receipt handle "${handle.slice(0, 128)}" is not a valid receipt handle for ` +
        "this queue.",
    );
  if (receipt.queueTag !== null && receipt.queueTag !== queueTag(queue)) throw otherQueue();
  if (receipt.queueTag !== null && !call.readsJobQueue) return { ...receipt, gone: false };
  const owner = await services.broker.queueOf(receipt.id);
  if (owner !== null && owner !== queue) throw otherQueue();
  return { ...receipt, gone: owner === null };
}

/**
 * Deletes the message a handle received. A stale handle (the job was received again since, or
 * is gone) succeeds without deleting anything, as AWS documents: the token fences it.
 */
async function deleteOne(
  services: SqsServices,
  call: ActionCall,
  queue: string,
  handle: unknown,
): Promise<void> {
  const receipt = await receiptOf(services, call, queue, handle);
  if (receipt.gone) return;
  try {
    await services.broker.ack(receipt.id, receipt.token, null);
  } catch (error) {
    if (
      error instanceof TegamiError && (error.code === "lease_lost" || error.code === "not_found")
    ) {
      return;
    }
    throw error;
  }
}

const deleteMessage: Action = async (services, call) => {
  const queue = callQueue(services, call);
  await deleteOne(services, call, queue, call.input.ReceiptHandle);
  return undefined;
};

const deleteMessageBatch: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const entries = batchEntries(call.input);
  const outcomes = await Promise.all(entries.map(async (entry) => {
    try {
      await deleteOne(services, call, queue, entry.ReceiptHandle);
      return null;
    } catch (error) {
      return toSqsError(error);
    }
  }));
  return batchAnswer(call, entries, outcomes);
};

function batchAnswer(call: ActionCall, entries: WireStruct[], outcomes: (SqsError | null)[]) {
  const successful: { Id: string }[] = [];
  const failed: unknown[] = [];
  entries.forEach((entry, i) => {
    const id = entry.Id as string;
    const error = outcomes[i];
    if (error === null) successful.push({ Id: id });
    else failed.push(failedEntry(call, id, error));
  });
  return { Successful: successful, Failed: failed };
}

/** Why a visibility change found no lease to change. */
async function notChangeable(services: SqsServices, id: number): Promise<SqsError> {
  const job = await services.broker.get(id);
  if (job !== null && job.state !== "leased") {
    return new SqsError("MessageNotInflight", "The message referred to is not in flight.");
  }
  return invalidParameter(
    "ReceiptHandle",
    "Message does not exist or is not available for visibility timeout change.",
  );
}

/**
 * Sets a received message's visibility timeout from now: 0 makes it visible at once (the lease
 * ends as an expiry would, the receive counted), more extends or shortens the lease.
 */
async function changeOne(
  services: SqsServices,
  call: ActionCall,
  queue: string,
  handle: unknown,
  seconds: unknown,
): Promise<void> {
  if (typeof seconds !== "number") throw missingParameter("VisibilityTimeout");
  if (seconds < 0 || seconds > MAX_VISIBILITY_SECONDS) {
    throw invalidParameter(
      "VisibilityTimeout",
      `Must be between 0 and ${MAX_VISIBILITY_SECONDS}.`,
    );
  }
  const receipt = await receiptOf(services, call, queue, handle);
  if (receipt.gone) throw await notChangeable(services, receipt.id);
  if (seconds === 0) {
    const ended = await services.broker.release([{ id: receipt.id, token: receipt.token }]);
    if (ended.length === 0) throw await notChangeable(services, receipt.id);
    return;
  }
  try {
    await services.broker.extend(receipt.id, receipt.token, Math.max(MIN_LEASE_MS, seconds * 1000));
  } catch (error) {
    if (
      error instanceof TegamiError && (error.code === "lease_lost" || error.code === "not_found")
    ) {
      throw await notChangeable(services, receipt.id);
    }
    throw error;
  }
}

const changeMessageVisibility: Action = async (services, call) => {
  const queue = callQueue(services, call);
  await changeOne(services, call, queue, call.input.ReceiptHandle, call.input.VisibilityTimeout);
  return undefined;
};

const changeMessageVisibilityBatch: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const entries = batchEntries(call.input);
  const outcomes = await Promise.all(entries.map(async (entry) => {
    try {
      await changeOne(services, call, queue, entry.ReceiptHandle, entry.VisibilityTimeout);
      return null;
    } catch (error) {
      return toSqsError(error);
    }
  }));
  return batchAnswer(call, entries, outcomes);
};

/** The message actions, by name. */
export const MESSAGE_ACTIONS: Readonly<Record<string, Action>> = {
  SendMessage: sendMessage,
  SendMessageBatch: sendMessageBatch,
  ReceiveMessage: receiveMessage,
  DeleteMessage: deleteMessage,
  DeleteMessageBatch: deleteMessageBatch,
  ChangeMessageVisibility: changeMessageVisibility,
  ChangeMessageVisibilityBatch: changeMessageVisibilityBatch,
};
