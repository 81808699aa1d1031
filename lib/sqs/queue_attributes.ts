/**
 * SQS queue attributes, mapped onto a tegami queue's settings and counts (see docs/sqs.md):
 *
 * - `VisibilityTimeout` is the queue's `lease_ms` (0 becomes tegami's shortest lease, 100 ms);
 * - `RedrivePolicy`'s `maxReceiveCount` is its `max_attempts`, after which a job is dead (a
 *   queue made by `CreateQueue` without one gets 1000, tegami's most: there is no "receive for
 *   ever"), and its `deadLetterTargetArn` (a queue of this server) is its `dead_letter_queue`,
 *   where such a job moves; without one it stays in the queue's own dead list;
 * - a FIFO queue (name ending `.fifo`) has `group_limit` 1, one job of a group in flight; a
 *   standard queue made here has the largest `group_limit`, so groups only take turns;
 * - `MessageRetentionPeriod` is its `retain_pending_ms`: a message not received that long after
 *   it became visible is deleted by the sweep (a queue made here gets AWS's 4 days; a queue
 *   without the setting keeps its messages and answers no such attribute);
 * - the `Approximate…` counts are the queue's pending, leased and delayed jobs.
 *
 * What tegami cannot keep yet (tags, `Policy`, KMS, a queue's default delay or
 * wait time, a per-queue size limit) is refused when it would differ from
 * what tegami does, with an error that says so, rather than accepted and forgotten.
 *
 * @module
 */

import {
  DEFAULT_MAX_ATTEMPTS,
  MAX_ATTEMPTS,
  MAX_LEASE_MS,
  MIN_LEASE_MS,
  QUEUE_NAME,
} from "../core/limits.ts";
import {
  defaultQueueSettings,
  isDefaultSettings,
  MAX_GROUP_LIMIT,
  type QueueSettings,
} from "../core/queue_settings.ts";
import type { QueueCounts } from "../store/store.ts";
import { isFifo, queueArn, type SqsIdentity } from "./queue_url.ts";
import { SqsError } from "./sqs_error.ts";

/** What the attribute rules need from the server. */
export interface AttributeContext {
  /** Account and region, for the ARN. */
  identity: SqsIdentity;
  /** The server's lease length (`--lease`), ms: a queue's visibility timeout without its own. */
  defaultLeaseMs: number;
  /** The largest message body, bytes. */
  maxMessageBytes: number;
}

/** SQS's default message retention, seconds (4 days), and its bounds. */
export const DEFAULT_RETENTION_SECONDS = 345_600;
const MIN_RETENTION_SECONDS = 60;
const MAX_RETENTION_SECONDS = 1_209_600;

/** SQS's default visibility timeout, seconds. */
export const DEFAULT_VISIBILITY_SECONDS = 30;
/** The longest visibility timeout, seconds (12 hours, tegami's longest lease too). */
export const MAX_VISIBILITY_SECONDS: number = MAX_LEASE_MS / 1000;
/** `max_attempts` of a queue made without a redrive policy. */
export const NO_REDRIVE_ATTEMPTS: number = MAX_ATTEMPTS;

/** The attribute names GetQueueAttributes knows (`All` aside). */
export const QUEUE_ATTRIBUTE_NAMES: readonly string[] = [
  "All",
  "Policy",
  "VisibilityTimeout",
  "MaximumMessageSize",
  "MessageRetentionPeriod",
  "ApproximateNumberOfMessages",
  "ApproximateNumberOfMessagesNotVisible",
  "CreatedTimestamp",
  "LastModifiedTimestamp",
  "QueueArn",
  "ApproximateNumberOfMessagesDelayed",
  "DelaySeconds",
  "ReceiveMessageWaitTimeSeconds",
  "RedrivePolicy",
  "FifoQueue",
  "ContentBasedDeduplication",
  "KmsMasterKeyId",
  "KmsDataKeyReusePeriodSeconds",
  "DeduplicationScope",
  "FifoThroughputLimit",
  "RedriveAllowPolicy",
  "SqsManagedSseEnabled",
];
const KNOWN = new Set(QUEUE_ATTRIBUTE_NAMES);

/** Whether a queue exists as SQS sees it: settings, a pause, or jobs waiting, in flight or dead. */
export function sqsQueueExists(stats: QueueCounts): boolean {
  const c = stats.counts;
  return !isDefaultSettings(stats.settings) || stats.paused ||
    c.pending + c.delayed + c.leased + c.dead > 0;
}

/** The settings `CreateQueue` gives a new queue before its attributes are applied. */
export function newQueueSettings(queue: string): QueueSettings {
  return {
    ...defaultQueueSettings(),
    lease_ms: DEFAULT_VISIBILITY_SECONDS * 1000,
    max_attempts: NO_REDRIVE_ATTEMPTS,
    retain_pending_ms: DEFAULT_RETENTION_SECONDS * 1000,
    group_limit: isFifo(queue) ? 1 : MAX_GROUP_LIMIT,
  };
}

function invalidValue(name: string, reason: string): SqsError {
  return new SqsError(
    "InvalidAttributeValue",
    `Invalid value for the parameter ${name}. ${reason}`,
  );
}

function notStored(name: string, what: string): SqsError {
  return invalidValue(
    name,
    `tegami cannot ${what} yet (it has no place to keep it): this attribute is not supported`,
  );
}

function seconds(name: string, text: string, max: number): number {
  if (!/^[0-9]{1,10}$/.test(text) || Number(text) > max) {
    throw invalidValue(name, `Expected a whole number of seconds from 0 to ${max}.`);
  }
  return Number(text);
}

/** What a `RedrivePolicy` says: after how many receives, and to which queue (null: none). */
interface Redrive {
  maxReceiveCount: number;
  deadLetterQueue: string | null;
}

/** The queue a `deadLetterTargetArn` of this server's account and region names, or an error. */
function targetQueue(arn: unknown, queue: string, identity: SqsIdentity): string {
  const prefix = queueArn(identity, "");
  if (typeof arn !== "string" || !arn.startsWith(prefix)) {
    throw invalidValue(
      "RedrivePolicy",
      `deadLetterTargetArn must be the ARN of a queue of this server (${prefix}NAME).`,
    );
  }
  const target = arn.slice(prefix.length);
  if (!QUEUE_NAME.test(target)) {
    throw invalidValue("RedrivePolicy", "deadLetterTargetArn names no valid queue.");
  }
  if (target === queue) {
    throw invalidValue("RedrivePolicy", "A queue cannot be its own dead-letter queue.");
  }
  if (isFifo(target) !== isFifo(queue)) {
    throw invalidValue(
      "RedrivePolicy",
      "The dead-letter queue of a FIFO queue must be a FIFO queue, and of a standard queue a " +
        "standard queue.",
    );
  }
  return target;
}

/** What a `RedrivePolicy` of `queue` says, or an error. */
function redrive(text: string, queue: string, identity: SqsIdentity): Redrive {
  if (text === "") return { maxReceiveCount: NO_REDRIVE_ATTEMPTS, deadLetterQueue: null };
  let policy: unknown;
  try {
    policy = text.length > 4096 ? undefined : JSON.parse(text);
  } catch {
    policy = undefined;
  }
  if (typeof policy !== "object" || policy === null || Array.isArray(policy)) {
    throw invalidValue("RedrivePolicy", "Expected a JSON object with maxReceiveCount.");
  }
  const fields = policy as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (key !== "maxReceiveCount" && key !== "deadLetterTargetArn") {
      throw invalidValue("RedrivePolicy", `Unknown member ${JSON.stringify(key.slice(0, 64))}.`);
    }
  }
  const count = typeof fields.maxReceiveCount === "string"
    ? Number(fields.maxReceiveCount)
    : fields.maxReceiveCount;
  if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 1) {
    throw invalidValue("RedrivePolicy", "maxReceiveCount must be a whole number from 1.");
  }
  if (count > MAX_ATTEMPTS) {
    throw invalidValue("RedrivePolicy", `maxReceiveCount must be at most ${MAX_ATTEMPTS} here.`);
  }
  const deadLetterQueue = fields.deadLetterTargetArn === undefined
    ? null
    : targetQueue(fields.deadLetterTargetArn, queue, identity);
  return { maxReceiveCount: count, deadLetterQueue };
}

/**
 * The settings after applying SQS attributes to `settings` (CreateQueue, SetQueueAttributes);
 * refuses an unknown attribute, a bad value, and a value tegami cannot keep.
 */
export function applyAttributes(
  queue: string,
  settings: QueueSettings,
  attributes: ReadonlyMap<string, string>,
  ctx: AttributeContext,
  creating: boolean,
): QueueSettings {
  const out = { ...settings };
  const fifo = isFifo(queue);
  for (const [name, value] of attributes) {
    const onlyFifo = () => {
      if (!fifo) {
        throw new SqsError(
          "InvalidAttributeName",
          `Unknown Attribute ${name}: only FIFO queues have it.`,
        );
      }
    };
    const fixed = (wanted: string, what: string) => {
      if (value !== wanted) throw notStored(name, what);
    };
    switch (name) {
      case "VisibilityTimeout":
        out.lease_ms = Math.max(
          MIN_LEASE_MS,
          seconds(name, value, MAX_VISIBILITY_SECONDS) * 1000,
        );
        break;
      case "RedrivePolicy": {
        const policy = redrive(value, queue, ctx.identity);
        out.max_attempts = policy.maxReceiveCount;
        out.dead_letter_queue = policy.deadLetterQueue;
        break;
      }
      case "FifoQueue":
        if (value !== "true" && value !== "false") {
          throw invalidValue(name, "Expected true or false.");
        }
        if ((value === "true") !== fifo) {
          throw invalidValue(
            name,
            fifo
              ? "A queue whose name ends in .fifo is a FIFO queue."
              : "The name of a FIFO queue must end with the .fifo suffix.",
          );
        }
        if (!creating) {
          throw new SqsError("InvalidAttributeName", "FifoQueue can only be set at creation.");
        }
        break;
      case "ContentBasedDeduplication":
        onlyFifo();
        fixed("true", "keep content-based deduplication off for a FIFO queue");
        break;
      case "DeduplicationScope":
        onlyFifo();
        fixed("queue", "deduplicate per message group");
        break;
      case "FifoThroughputLimit":
        onlyFifo();
        fixed("perQueue", "keep a throughput limit per message group");
        break;
      case "DelaySeconds":
        fixed("0", "keep a queue's default delay");
        break;
      case "ReceiveMessageWaitTimeSeconds":
        fixed("0", "keep a queue's default wait time");
        break;
      case "MaximumMessageSize":
        fixed(String(ctx.maxMessageBytes), "keep a size limit per queue");
        break;
      case "SqsManagedSseEnabled":
        fixed("false", "encrypt messages at rest");
        break;
      case "MessageRetentionPeriod": {
        const period = seconds(name, value, MAX_RETENTION_SECONDS);
        if (period < MIN_RETENTION_SECONDS) {
          throw invalidValue(
            name,
            `Expected a whole number of seconds from ${MIN_RETENTION_SECONDS} to ` +
              `${MAX_RETENTION_SECONDS}.`,
          );
        }
        out.retain_pending_ms = period * 1000;
        break;
      }
      case "Policy":
      case "RedriveAllowPolicy":
      case "KmsMasterKeyId":
      case "KmsDataKeyReusePeriodSeconds":
        throw notStored(name, `keep ${name}`);
      default:
        throw new SqsError("InvalidAttributeName", `Unknown Attribute ${name.slice(0, 128)}.`);
    }
  }
  if (creating && fifo && !attributes.has("FifoQueue")) {
    throw invalidValue(
      "FifoQueue",
      "The name of a FIFO queue ends with .fifo and its attributes must hold FifoQueue=true.",
    );
  }
  return out;
}

/** Whether two settings are the same. */
export function sameSettings(a: QueueSettings, b: QueueSettings): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The attributes `names` asks for (`All`: every one), from the queue's stats. */
export function readAttributes(
  stats: QueueCounts,
  names: readonly string[],
  ctx: AttributeContext,
): Record<string, string> {
  for (const name of names) {
    if (!KNOWN.has(name)) {
      throw new SqsError("InvalidAttributeName", `Unknown Attribute ${name.slice(0, 128)}.`);
    }
  }
  const all = names.includes("All");
  const wanted = (name: string) => all || names.includes(name);
  const queue = stats.name;
  const settings = stats.settings;
  const out: Record<string, string> = {};
  const put = (name: string, value: () => string) => {
    if (wanted(name)) out[name] = value();
  };
  put("QueueArn", () => queueArn(ctx.identity, queue));
  put("ApproximateNumberOfMessages", () => String(stats.counts.pending));
  put("ApproximateNumberOfMessagesNotVisible", () => String(stats.counts.leased));
  put("ApproximateNumberOfMessagesDelayed", () => String(stats.counts.delayed));
  put(
    "VisibilityTimeout",
    () => String(Math.floor((settings.lease_ms ?? ctx.defaultLeaseMs) / 1000)),
  );
  put("MaximumMessageSize", () => String(ctx.maxMessageBytes));
  const retain = settings.retain_pending_ms;
  if (retain !== null) put("MessageRetentionPeriod", () => String(Math.floor(retain / 1000)));
  put("DelaySeconds", () => "0");
  put("ReceiveMessageWaitTimeSeconds", () => "0");
  const attempts = settings.max_attempts ?? DEFAULT_MAX_ATTEMPTS;
  const target = settings.dead_letter_queue;
  if (target !== null) {
    put("RedrivePolicy", () =>
      JSON.stringify({
        deadLetterTargetArn: queueArn(ctx.identity, target),
        maxReceiveCount: attempts,
      }));
  } else if (attempts !== NO_REDRIVE_ATTEMPTS) {
    put("RedrivePolicy", () => JSON.stringify({ maxReceiveCount: attempts }));
  }
  put("SqsManagedSseEnabled", () => "false");
  if (isFifo(queue)) {
    put("FifoQueue", () => "true");
    put("ContentBasedDeduplication", () => "true");
    put("DeduplicationScope", () => "queue");
    put("FifoThroughputLimit", () => "perQueue");
  }
  return out;
}
