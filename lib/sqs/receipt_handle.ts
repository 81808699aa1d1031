/**
 * Receipt handles: the job's id, a tag of its queue and the lease's token, as one opaque
 * base64url text. Each receive takes a new lease, so each receive gives a new handle, and a
 * handle holds only while its lease does: a consumer that was too slow cannot delete a copy
 * received again by another (the token fences it, as on tegami's own API).
 *
 * The queue tag (a 32-bit FNV-1a hash of the queue's name) lets a delete or a visibility change
 * tell a handle of another queue without reading the job's queue from the store. It is not a
 * secret and not a proof: where tokens restrict queues, the job's queue is still read
 * (`message_actions.ts`). A handle made before tags (version 1) has none.
 *
 * @module
 */

import { SqsError } from "./sqs_error.ts";

/** What a receipt handle carries. */
export interface Receipt {
  /** The job. */
  id: number;
  /** The lease's token. */
  token: string;
  /** The tag of the queue it was received from (8 hex digits), or null in a version-1 handle. */
  queueTag: string | null;
}

const BASE64URL = /^[A-Za-z0-9_-]{1,256}$/;
const CONTENT = /^(?:1|2:([0-9a-f]{8})):([1-9][0-9]{0,15}):([A-Za-z0-9_-]{1,64})$/;

/** The tag of a queue name in its receipt handles: FNV-1a, 32 bits, 8 lowercase hex digits. */
export function queueTag(queue: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < queue.length; i++) {
    hash ^= queue.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** The receipt handle of a lease of job `id` received from the queue whose tag is `tag`. */
export function receiptHandle(id: number, token: string, tag: string): string {
  return btoa(`2:${tag}:${id}:${token}`).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The job, token and queue tag a receipt handle carries, or `ReceiptHandleIsInvalid`. */
export function parseReceiptHandle(handle: string): Receipt {
  const invalid = () =>
    new SqsError(
      "ReceiptHandleIsInvalid",
      `The input receipt handle "${handle.slice(0, 128)}" is not a valid receipt handle.`,
    );
  if (!BASE64URL.test(handle) || handle.length % 4 === 1) throw invalid();
  let text: string;
  try {
    text = atob(handle.replaceAll("-", "+").replaceAll("_", "/"));
  } catch {
    throw invalid();
  }
  const match = CONTENT.exec(text);
  if (match === null) throw invalid();
  const id = Number(match[2]);
  if (!Number.isSafeInteger(id)) throw invalid();
  return { id, token: match[3], queueTag: match[1] ?? null };
}
