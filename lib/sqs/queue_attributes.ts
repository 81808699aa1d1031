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
 * - the `Approximate…` counts are the queue's pending, leased and delayed jobs;
 * - `DelaySeconds`, `ReceiveMessageWaitTimeSeconds`, `MaximumMessageSize`, `Policy`,
 *   `RedriveAllowPolicy`, `KmsMasterKeyId`, `KmsDataKeyReusePeriodSeconds` and
 *   `SqsManagedSseEnabled` are kept as written in the queue's `sqs_attributes` (a value equal to
 *   the attribute's default is not kept). The SQS API applies the first three (a send's delay, a
 *   receive's wait, a body's limit) and `RedriveAllowPolicy` when a `RedrivePolicy` names the
 *   queue; the others are stored and answered, not enforced.
 *
 * What tegami cannot keep (content-based deduplication off, per-group deduplication or
 * throughput) is refused when it would differ from what tegami does, with an error that says so,
 * rather than accepted and forgotten.
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
  MIN_MESSAGE_SIZE,
  type QueueSettings,
  settingsView,
  sortedStrings,
  sqsAttributeProblem,
  withKept,
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

function notSupported(name: string, what: string): SqsError {
  return invalidValue(name, `tegami cannot ${what}: this value is not supported`);
}

/**
 * The value a kept attribute has when the queue does not keep one (`MaximumMessageSize`: the
 * server's largest body), or null for one answered only when set.
 */
function keptDefault(name: string, ctx: AttributeContext): string | null {
  switch (name) {
    case "DelaySeconds":
    case "ReceiveMessageWaitTimeSeconds":
      return "0";
    case "MaximumMessageSize":
      return String(ctx.maxMessageBytes);
    case "SqsManagedSseEnabled":
      return "false";
    case "KmsDataKeyReusePeriodSeconds":
      return "300";
    default:
      return null;
  }
}

/** Kept attribute `name` of `settings`, or its default (null: none). */
function kept(settings: QueueSettings, name: string, ctx: AttributeContext): string | null {
  return settings.sqs_attributes?.[name] ?? keptDefault(name, ctx);
}

/** The delay of a message sent to the queue without its own `DelaySeconds`, seconds. */
export function queueDelaySeconds(settings: QueueSettings): number {
  return Number(settings.sqs_attributes?.DelaySeconds ?? 0);
}

/** The long poll of a receive without its own `WaitTimeSeconds`, seconds. */
export function queueWaitSeconds(settings: QueueSettings): number {
  return Number(settings.sqs_attributes?.ReceiveMessageWaitTimeSeconds ?? 0);
}

/** The largest body the queue takes, bytes: its `MaximumMessageSize`, within the server's. */
export function queueMaxMessageBytes(settings: QueueSettings, ctx: AttributeContext): number {
  const own = settings.sqs_attributes?.MaximumMessageSize;
  return own === undefined ? ctx.maxMessageBytes : Math.min(Number(own), ctx.maxMessageBytes);
}

/**
 * The value to keep for attribute `name` (its canonical text), or null to keep none (the
 * default, or an empty text that clears `Policy`, `RedriveAllowPolicy` or `KmsMasterKeyId`).
 */
function keptValue(name: string, value: string, ctx: AttributeContext): string | null {
  if (value === "" && keptDefault(name, ctx) === null) return null;
  const problem = sqsAttributeProblem(name, value);
  if (problem !== null) throw invalidValue(name, `${problem[0].toUpperCase()}${problem.slice(1)}.`);
  let canonical = value;
  if (/^\d+$/.test(value)) canonical = String(Number(value));
  if (name === "MaximumMessageSize" && Number(canonical) > ctx.maxMessageBytes) {
    throw invalidValue(
      name,
      `Expected a whole number from ${MIN_MESSAGE_SIZE} to ${ctx.maxMessageBytes} (this ` +
        "server's largest message).",
    );
  }
  return canonical === keptDefault(name, ctx) ? null : canonical;
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
  const keep = new Map(Object.entries(settings.sqs_attributes ?? {}));
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
      if (value !== wanted) throw notSupported(name, what);
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
      case "ReceiveMessageWaitTimeSeconds":
      case "MaximumMessageSize":
      case "SqsManagedSseEnabled":
      case "Policy":
      case "RedriveAllowPolicy":
      case "KmsMasterKeyId":
      case "KmsDataKeyReusePeriodSeconds": {
        const stored = keptValue(name, value, ctx);
        if (stored === null) keep.delete(name);
        else keep.set(name, stored);
        break;
      }
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
  return withKept(out, sortedStrings(keep), out.tags);
}

/**
 * Refuses a `RedrivePolicy` of `source` naming a dead-letter queue whose `RedriveAllowPolicy`
 * (in `target`'s settings) does not allow `source`.
 */
export function checkRedriveAllowed(
  source: string,
  target: QueueSettings,
  ctx: AttributeContext,
): void {
  const text = target.sqs_attributes?.RedriveAllowPolicy;
  if (text === undefined) return;
  const policy = JSON.parse(text) as { redrivePermission: string; sourceQueueArns?: string[] };
  const allowed = policy.redrivePermission === "allowAll" ||
    (policy.redrivePermission === "byQueue" &&
      (policy.sourceQueueArns ?? []).includes(queueArn(ctx.identity, source)));
  if (!allowed) {
    throw invalidValue(
      "RedrivePolicy",
      "The dead-letter queue's RedriveAllowPolicy does not allow this queue as a source.",
    );
  }
}

/** Whether two settings are the same (as the settings API shows them). */
export function sameSettings(a: QueueSettings, b: QueueSettings): boolean {
  return JSON.stringify(settingsView(a)) === JSON.stringify(settingsView(b));
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
  put("MaximumMessageSize", () => String(queueMaxMessageBytes(settings, ctx)));
  const retain = settings.retain_pending_ms;
  if (retain !== null) put("MessageRetentionPeriod", () => String(Math.floor(retain / 1000)));
  put("DelaySeconds", () => kept(settings, "DelaySeconds", ctx)!);
  put("ReceiveMessageWaitTimeSeconds", () => kept(settings, "ReceiveMessageWaitTimeSeconds", ctx)!);
  const stored = settings.sqs_attributes ?? {};
  for (const name of ["Policy", "RedriveAllowPolicy", "KmsMasterKeyId"]) {
    if (stored[name] !== undefined) put(name, () => stored[name]);
  }
  if (stored.KmsMasterKeyId !== undefined || stored.KmsDataKeyReusePeriodSeconds !== undefined) {
    put("KmsDataKeyReusePeriodSeconds", () => kept(settings, "KmsDataKeyReusePeriodSeconds", ctx)!);
  }
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
  put("SqsManagedSseEnabled", () => kept(settings, "SqsManagedSseEnabled", ctx)!);
  if (isFifo(queue)) {
    put("FifoQueue", () => "true");
    put("ContentBasedDeduplication", () => "true");
    put("DeduplicationScope", () => "queue");
    put("FifoThroughputLimit", () => "perQueue");
  }
  return out;
}
