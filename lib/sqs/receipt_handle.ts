/**
 * Receipt handles: the job's id and the lease's token, as one opaque base64url text. Each
 * receive takes a new lease, so each receive gives a new handle, and a handle holds only while
 * its lease does: a consumer that was too slow cannot delete a copy received again by another
 * (the token fences it, as on tegami's own API).
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
}

const VERSION = "1";
const BASE64URL = /^[A-Za-z0-9_-]{1,256}$/;
const CONTENT = /^1:([1-9][0-9]{0,15}):([A-Za-z0-9_-]{1,64})$/;

/** The receipt handle of a lease. */
export function receiptHandle(id: number, token: string): string {
  return btoa(`${VERSION}:${id}:${token}`).replaceAll("+", "-").replaceAll("/", "_")
    .replace(/=+$/, "");
}

/** The job and token a receipt handle carries, or `ReceiptHandleIsInvalid`. */
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
  const id = Number(match[1]);
  if (!Number.isSafeInteger(id)) throw invalid();
  return { id, token: match[2] };
}
