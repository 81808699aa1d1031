/**
 * What every SQS action is given: the server's parts ({@linkcode SqsServices}) and the call
 * ({@linkcode ActionCall}: the decoded input, who is calling, from where), and the helpers
 * actions share to find their queue.
 *
 * @module
 */

import { requireQueue } from "../auth/tokens.ts";
import type { Principal } from "../auth/tokens.ts";
import type { Broker } from "../core/broker.ts";
import type { Clock } from "../core/clock.ts";
import { isDefaultSettings, type QueueSettings } from "../core/queue_settings.ts";
import type { QueueCounts } from "../store/store.ts";
import type { AttributeContext } from "./queue_attributes.ts";
import { sqsQueueExists } from "./queue_attributes.ts";
import { queueOfUrl } from "./queue_url.ts";
import { missingParameter, SqsError, type SqsErrorCode } from "./sqs_error.ts";
import type { WireStruct } from "./wire_values.ts";

/** The server's parts the actions use. */
export interface SqsServices extends AttributeContext {
  /** The broker. */
  broker: Broker;
  /** The clock (jobs' times). */
  clock: Clock;
  /** The largest job payload, bytes of its JSON text (`--max-payload`). */
  maxPayload: number;
}

/** One call of an action. */
export interface ActionCall {
  /** The decoded input, by JSON member names. */
  input: WireStruct;
  /** Who calls. */
  principal: Principal;
  /** The origin the client called (`http://host:port`), for the queue URLs answered. */
  origin: string;
  /** The queue the request's path names (a request sent to a queue URL), or null. */
  pathQueue: string | null;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
  /** The protocol, which decides how a batch entry's error code is written. */
  protocol: "json" | "query";
  /**
   * Whether access depends on the queue (tokens are on): then a receipt handle's job has its
   * queue read from the store, not taken from the handle's tag.
   */
  readsJobQueue: boolean;
}

/** An action: the call in, the output object (or nothing) out. */
export type Action = (services: SqsServices, call: ActionCall) => Promise<unknown>;

/** A string member of the input, or undefined. */
export function stringInput(input: WireStruct, name: string): string | undefined {
  const value = input[name];
  return typeof value === "string" ? value : undefined;
}

/** A required string member of the input, or `MissingParameter`. */
export function requiredString(input: WireStruct, name: string): string {
  const value = stringInput(input, name);
  if (value === undefined || value === "") throw missingParameter(name);
  return value;
}

/** The queue a call is about: its `QueueUrl`, or the queue URL it was sent to. */
export function callQueue(services: SqsServices, call: ActionCall): string {
  const url = stringInput(call.input, "QueueUrl");
  const queue = url !== undefined && url !== ""
    ? queueOfUrl(url, services.identity)
    : call.pathQueue ?? (() => {
      throw missingParameter("QueueUrl");
    })();
  requireQueue(call.principal, queue);
  return queue;
}

/**
 * The settings of a queue SQS sees, or `QueueDoesNotExist`: what the message actions need on
 * every call. A queue with settings of its own exists (every queue CreateQueue makes has some),
 * so one read of its settings answers; only a queue without any has its counts read, which on
 * PostgreSQL count its jobs.
 */
export async function queueSettingsOf(
  services: SqsServices,
  queue: string,
): Promise<QueueSettings> {
  const settings = await services.broker.settings(queue);
  if (!isDefaultSettings(settings)) return settings;
  return (await existingQueue(services, queue)).settings;
}

/** The queue's stats, or `QueueDoesNotExist` when SQS would not see it. */
export async function existingQueue(services: SqsServices, queue: string): Promise<QueueCounts> {
  const [stats] = await services.broker.stats(queue);
  if (stats === undefined || !sqsQueueExists(stats)) {
    throw new SqsError("QueueDoesNotExist", "The specified queue does not exist.");
  }
  return stats;
}

/** A failed batch entry, its code written as the call's protocol writes codes. */
export function failedEntry(
  call: ActionCall,
  id: string,
  error: SqsError,
): { Id: string; SenderFault: boolean; Code: string; Message: string } {
  const code: SqsErrorCode = error.code;
  return {
    Id: id,
    SenderFault: error.kind.fault === "Sender",
    Code: call.protocol === "json" ? code : error.kind.query,
    Message: error.message,
  };
}

/** The most entries in one batch request. */
export const MAX_BATCH_ENTRIES = 10;

const BATCH_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * The entries of a batch request, checked as AWS checks them: 1 to 10, each with a distinct `Id`
 * of 1 to 80 letters, digits, hyphens and underscores.
 */
export function batchEntries(input: WireStruct): WireStruct[] {
  const entries = input.Entries;
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new SqsError(
      "EmptyBatchRequest",
      "There should be at least one entry in the request.",
    );
  }
  if (entries.length > MAX_BATCH_ENTRIES) {
    throw new SqsError(
      "TooManyEntriesInBatchRequest",
      `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ` +
        `${entries.length}.`,
    );
  }
  const seen = new Set<string>();
  for (const raw of entries) {
    const id = (raw as WireStruct).Id;
    if (typeof id !== "string" || !BATCH_ID.test(id)) {
      throw new SqsError(
        "InvalidBatchEntryId",
        "A batch entry id can only contain alphanumeric characters, hyphens and underscores. " +
          "It can be at most 80 letters long.",
      );
    }
    if (seen.has(id)) {
      throw new SqsError("BatchEntryIdsNotDistinct", `Id ${id} repeated.`);
    }
    seen.add(id);
  }
  return entries as WireStruct[];
}
