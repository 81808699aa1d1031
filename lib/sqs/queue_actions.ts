/**
 * The SQS actions on queues: CreateQueue, GetQueueUrl, ListQueues, DeleteQueue, PurgeQueue,
 * GetQueueAttributes and SetQueueAttributes, over the broker's settings, stats and cancels.
 *
 * A tegami queue exists implicitly; for SQS a queue exists while it has settings (CreateQueue
 * stores some), is paused, or holds waiting, in-flight or dead jobs (`sqsQueueExists`).
 *
 * @module
 */

import { requireQueue } from "../auth/tokens.ts";
import { TegamiError } from "../core/errors.ts";
import type { JobState } from "../core/job.ts";
import {
  defaultQueueSettings,
  MAX_TAGS,
  type QueueSettings,
  sortedStrings,
  tagProblem,
  withKept,
} from "../core/queue_settings.ts";
import {
  type Action,
  type ActionCall,
  callQueue,
  existingQueue,
  requiredString,
  type SqsServices,
  stringInput,
} from "./action_context.ts";
import {
  applyAttributes,
  checkRedriveAllowed,
  newQueueSettings,
  readAttributes,
  sameSettings,
  sqsQueueExists,
} from "./queue_attributes.ts";
import { checkQueueName, queueUrl } from "./queue_url.ts";
import { invalidParameter, missingParameter, SqsError } from "./sqs_error.ts";
import type { WireMap } from "./wire_values.ts";

/** The jobs of one page of a purge or delete: one page's cancels share group commits. */
const PURGE_PAGE = 1000;

/** String attributes of a `QueueAttributeMap`. */
function attributeMap(value: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!(value instanceof Map)) return out;
  for (const [name, v] of value as WireMap) {
    if (typeof v !== "string") throw invalidParameter(`Attribute ${name}`, "expected text");
    out.set(name, v);
  }
  return out;
}

function urlOf(services: SqsServices, call: ActionCall, queue: string): string {
  return queueUrl(call.origin, services.identity, queue);
}

/** Cancels (or, for finished jobs, removes) every job of `queue` in `states`, page by page. */
async function cancelAll(services: SqsServices, queue: string, states: JobState[]) {
  for (const state of states) {
    for (;;) {
      const page = await services.broker.listJobs(queue, {
        state,
        order: "oldest",
        after: null,
        limit: PURGE_PAGE,
      });
      if (page.length === 0) break;
      await Promise.all(page.map(async (job) => {
        try {
          await services.broker.cancel(job.id);
        } catch (error) {
          // Acked, cancelled or removed meanwhile: nothing left to do for it.
          if (!(error instanceof TegamiError) || error.code !== "not_found") throw error;
        }
      }));
      if (page.length < PURGE_PAGE) break;
    }
  }
}

/** A `TagMap` of the input, checked as AWS checks tags, or an empty map. */
function tagMap(value: unknown): Map<string, string> {
  const tags = attributeMap(value);
  for (const [key, v] of tags) {
    const problem = tagProblem(key, v);
    if (problem !== null) throw invalidParameter("Tags", `${problem}.`);
  }
  return tags;
}

/** `settings` with `tags` in place of their tags, or `InvalidParameterValue` past 50. */
function withTags(settings: QueueSettings, tags: Map<string, string>): QueueSettings {
  if (tags.size > MAX_TAGS) {
    throw invalidParameter("Tags", `Too many tags: a queue may have at most ${MAX_TAGS}.`);
  }
  return withKept(settings, settings.sqs_attributes, sortedStrings(tags));
}

/**
 * Refuses `settings` of `queue` whose dead-letter queue (when it is new) does not allow `queue`
 * as a source by its `RedriveAllowPolicy`.
 */
async function checkRedrive(
  services: SqsServices,
  queue: string,
  before: QueueSettings,
  settings: QueueSettings,
): Promise<void> {
  const target = settings.dead_letter_queue;
  if (target === null || target === before.dead_letter_queue) return;
  checkRedriveAllowed(queue, await services.broker.settings(target), services);
}

const createQueue: Action = async (services, call) => {
  const queue = checkQueueName(requiredString(call.input, "QueueName"));
  requireQueue(call.principal, queue);
  const tags = tagMap(call.input.tags);
  const attributes = attributeMap(call.input.Attributes);
  const [stats] = await services.broker.stats(queue);
  if (stats !== undefined && sqsQueueExists(stats)) {
    if (attributes.size > 0) {
      const wanted = applyAttributes(queue, stats.settings, attributes, services, true);
      if (!sameSettings(wanted, stats.settings)) {
        throw new SqsError(
          "QueueNameExists",
          "A queue already exists with the same name and a different value for an attribute.",
        );
      }
    }
    return { QueueUrl: urlOf(services, call, queue) };
  }
  const fresh = newQueueSettings(queue);
  const settings = withTags(applyAttributes(queue, fresh, attributes, services, true), tags);
  await checkRedrive(services, queue, fresh, settings);
  await services.broker.putSettings(queue, settings);
  return { QueueUrl: urlOf(services, call, queue) };
};

const getQueueUrl: Action = async (services, call) => {
  const queue = checkQueueName(requiredString(call.input, "QueueName"));
  const owner = stringInput(call.input, "QueueOwnerAWSAccountId");
  if (owner !== undefined && owner !== services.identity.account) {
    throw new SqsError("QueueDoesNotExist", "The specified queue does not exist.");
  }
  requireQueue(call.principal, queue);
  await existingQueue(services, queue);
  return { QueueUrl: urlOf(services, call, queue) };
};

/** Without MaxResults, ListQueues answers at most this many (as AWS does). */
const LIST_LIMIT = 1000;

/** A list's `NextToken`: the last queue name of the page, base64. */
function encodeToken(name: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(name)));
}

/** The queue name a `NextToken` carries, or `InvalidParameterValue`. */
function decodeToken(token: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(
      Uint8Array.from(atob(token), (c) => c.charCodeAt(0)),
    );
  } catch {
    throw invalidParameter("NextToken", "Invalid NextToken value.");
  }
}

const listQueues: Action = async (services, call) => {
  const prefix = stringInput(call.input, "QueueNamePrefix") ?? "";
  const max = call.input.MaxResults as number | undefined;
  if (max !== undefined && (max < 1 || max > LIST_LIMIT)) {
    throw invalidParameter("MaxResults", `Must be between 1 and ${LIST_LIMIT}, if provided.`);
  }
  const token = stringInput(call.input, "NextToken");
  const after = token === undefined || token === "" ? null : decodeToken(token);
  const all = await services.broker.stats();
  const names = all
    .filter((s) =>
      s.name.startsWith(prefix) && (after === null || s.name > after) &&
      call.principal.allowsQueue(s.name) && sqsQueueExists(s)
    )
    .map((s) => s.name);
  const page = names.slice(0, max ?? LIST_LIMIT);
  const out: Record<string, unknown> = {
    QueueUrls: page.map((name) => urlOf(services, call, name)),
  };
  if (max !== undefined && names.length > page.length) out.NextToken = encodeToken(page.at(-1)!);
  return out;
};

const deleteQueue: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  await cancelAll(services, queue, ["blocked", "pending", "delayed", "leased", "dead"]);
  await services.broker.putSettings(queue, defaultQueueSettings());
  if (stats.paused) await services.broker.setPaused(queue, false);
  return undefined;
};

const purgeQueue: Action = async (services, call) => {
  const queue = callQueue(services, call);
  await existingQueue(services, queue);
  await cancelAll(services, queue, ["blocked", "pending", "delayed", "leased"]);
  return undefined;
};

const getQueueAttributes: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  const names = (call.input.AttributeNames as string[] | undefined) ?? [];
  return { Attributes: readAttributes(stats, names, services) };
};

const setQueueAttributes: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  if (!(call.input.Attributes instanceof Map)) throw missingParameter("Attributes");
  const attributes = attributeMap(call.input.Attributes);
  const settings = applyAttributes(queue, stats.settings, attributes, services, false);
  await checkRedrive(services, queue, stats.settings, settings);
  if (!sameSettings(settings, stats.settings)) await services.broker.putSettings(queue, settings);
  return undefined;
};

const tagQueue: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  if (!(call.input.Tags instanceof Map)) throw missingParameter("Tags");
  const tags = new Map(Object.entries(stats.settings.tags ?? {}));
  for (const [key, value] of tagMap(call.input.Tags)) tags.set(key, value);
  const settings = withTags(stats.settings, tags);
  if (!sameSettings(settings, stats.settings)) await services.broker.putSettings(queue, settings);
  return undefined;
};

const untagQueue: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  const keys = call.input.TagKeys as string[] | undefined;
  if (keys === undefined || keys.length === 0) throw missingParameter("TagKeys");
  const tags = new Map(Object.entries(stats.settings.tags ?? {}));
  for (const key of keys) tags.delete(key);
  const settings = withTags(stats.settings, tags);
  if (!sameSettings(settings, stats.settings)) await services.broker.putSettings(queue, settings);
  return undefined;
};

const listQueueTags: Action = async (services, call) => {
  const queue = callQueue(services, call);
  const stats = await existingQueue(services, queue);
  const tags = stats.settings.tags;
  // AWS leaves Tags out when the queue has none.
  return tags ? { Tags: { ...tags } } : {};
};

const listDeadLetterSourceQueues: Action = async (services, call) => {
  const queue = callQueue(services, call);
  await existingQueue(services, queue);
  const max = call.input.MaxResults as number | undefined;
  if (max !== undefined && (max < 1 || max > LIST_LIMIT)) {
    throw invalidParameter("MaxResults", `Must be between 1 and ${LIST_LIMIT}, if provided.`);
  }
  const token = stringInput(call.input, "NextToken");
  const after = token === undefined || token === "" ? null : decodeToken(token);
  const names = (await services.broker.stats())
    .filter((s) =>
      s.settings.dead_letter_queue === queue && (after === null || s.name > after) &&
      call.principal.allowsQueue(s.name)
    )
    .map((s) => s.name);
  const page = names.slice(0, max ?? LIST_LIMIT);
  const out: Record<string, unknown> = {
    queueUrls: page.map((name) => urlOf(services, call, name)),
  };
  if (max !== undefined && names.length > page.length) out.NextToken = encodeToken(page.at(-1)!);
  return out;
};

/** The queue actions, by name. */
export const QUEUE_ACTIONS: Readonly<Record<string, Action>> = {
  CreateQueue: createQueue,
  GetQueueUrl: getQueueUrl,
  ListQueues: listQueues,
  DeleteQueue: deleteQueue,
  PurgeQueue: purgeQueue,
  GetQueueAttributes: getQueueAttributes,
  SetQueueAttributes: setQueueAttributes,
  TagQueue: tagQueue,
  UntagQueue: untagQueue,
  ListQueueTags: listQueueTags,
  ListDeadLetterSourceQueues: listDeadLetterSourceQueues,
};
