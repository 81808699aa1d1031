/**
 * Queue URLs and ARNs: a queue's URL is `<origin>/<account>/<name>`, the origin being the one the
 * client called (so the URL works from wherever it asked), and its ARN
 * `arn:aws:sqs:<region>:<account>:<name>`. A queue whose name ends in `.fifo` is a FIFO queue.
 *
 * @module
 */

import { QUEUE_NAME } from "../core/limits.ts";
import { SqsError } from "./sqs_error.ts";

/** Where the SQS API answers: the account id and region its URLs and ARNs carry. */
export interface SqsIdentity {
  /** The account id in queue URLs and ARNs (12 digits). */
  readonly account: string;
  /** The region in ARNs. */
  readonly region: string;
}

/** The suffix of a FIFO queue's name. */
export const FIFO_SUFFIX = ".fifo";

/** Whether the queue is a FIFO queue (its name ends in `.fifo`). */
export function isFifo(queue: string): boolean {
  return queue.endsWith(FIFO_SUFFIX);
}

/** The URL of `queue` as seen from `origin` (`http://host:port`). */
export function queueUrl(origin: string, identity: SqsIdentity, queue: string): string {
  return `${origin}/${identity.account}/${encodeURIComponent(queue)}`;
}

/** The ARN of `queue`. */
export function queueArn(identity: SqsIdentity, queue: string): string {
  return `arn:aws:sqs:${identity.region}:${identity.account}:${queue}`;
}

function noSuchQueue(): SqsError {
  return new SqsError("QueueDoesNotExist", "The specified queue does not exist.");
}

/**
 * The queue a path `/<account>/<name>` names (the path of a queue URL), or null when the path
 * does not have that shape or names another account.
 */
export function queueOfPath(path: string, identity: SqsIdentity): string | null {
  const parts = path.split("/");
  if (parts.length !== 3 || parts[0] !== "" || parts[1] !== identity.account) return null;
  let name: string;
  try {
    name = decodeURIComponent(parts[2]);
  } catch {
    return null;
  }
  return QUEUE_NAME.test(name) ? name : null;
}

/** Queue URLs already read, with the queue each names (null: none), per identity. */
const readUrls = new WeakMap<SqsIdentity, Map<string, string | null>>();
/** The most queue URLs remembered per identity before starting over. */
const READ_URLS_CAP = 1024;
/** The longest text remembered (a queue URL is far shorter; a longer text is parsed each time). */
const READ_URL_MOST = 512;

/** The queue a `QueueUrl` names, or `QueueDoesNotExist`. Only its path is read. */
export function queueOfUrl(text: string, identity: SqsIdentity): string {
  // A client sends its queue's URL with every call: each text is parsed once.
  let read = readUrls.get(identity);
  if (read === undefined) {
    read = new Map();
    readUrls.set(identity, read);
  }
  let queue = read.get(text);
  if (queue === undefined) {
    let path: string | null;
    try {
      path = new URL(text).pathname;
    } catch {
      path = null;
    }
    queue = path === null ? null : queueOfPath(path, identity);
    if (text.length <= READ_URL_MOST) {
      if (read.size >= READ_URLS_CAP) read.clear();
      read.set(text, queue);
    }
  }
  if (queue === null) throw noSuchQueue();
  return queue;
}

/** A queue name given to `CreateQueue` or `GetQueueUrl`, checked. */
export function checkQueueName(name: string): string {
  if (!QUEUE_NAME.test(name)) {
    throw new SqsError(
      "InvalidParameterValue",
      "Can only include alphanumeric characters, hyphens, underscores, periods and colons, " +
        "1 to 128 in all, starting with a letter or digit: " + JSON.stringify(name.slice(0, 200)),
    );
  }
  return name;
}
