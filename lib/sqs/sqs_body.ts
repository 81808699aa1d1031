/**
 * Reading an SQS request's body as bytes, under the rules tegami's own API reads its bodies by:
 * refused past `--max-body` as soon as the `Content-Length` or the bytes say so, held against the
 * request-body memory budget while they arrive, within `--body-timeout`. The bytes are kept as
 * they came: the signature covers them, and the query protocol's are not JSON.
 *
 * @module
 */

import type { BodyBudget } from "../http/body_budget.ts";
import { type Deadline, deadlinesOf } from "../http/deadline_queue.ts";
import type { HttpRequest } from "../http/http_request.ts";
import { SqsError } from "./sqs_error.ts";

/** How a body is read. */
export interface SqsBodyOptions {
  /** The most bytes. */
  limit: number;
  /** Time the whole body has to arrive, ms. @default none */
  timeoutMs?: number;
  /** The budget the bytes being read are held against. @default none */
  budget?: BodyBudget;
}

const EMPTY = new Uint8Array(0);

function tooLarge(limit: number): SqsError {
  return new SqsError(
    "RequestEntityTooLarge",
    `Cannot read the request body: it is over the limit of ${limit} bytes`,
  );
}

function truncated(error: unknown): SqsError {
  return new SqsError(
    "SerializationException",
    "Cannot read the request body: the connection ended before the body was complete",
    { cause: error },
  );
}

/** Reads the whole body of `request` as bytes (empty for none). */
export async function readSqsBody(
  request: HttpRequest,
  options: SqsBodyOptions,
): Promise<Uint8Array> {
  const { limit } = options;
  const length = request.headers.get("content-length");
  const declared = length !== null && /^[0-9]{1,16}$/.test(length) ? Number(length) : null;
  if (declared !== null && declared > limit) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  if (declared === 0 || (declared === null && request.body === null)) return EMPTY;
  const arrived = request.takeArrived?.() ?? null;
  if (arrived !== null) {
    if (arrived.byteLength > limit) throw tooLarge(limit);
    return arrived;
  }
  let timer: Deadline | undefined;
  const deadline = options.timeoutMs === undefined ? null : new Promise<never>((_, reject) => {
    timer = deadlinesOf(options.timeoutMs!).set(() => {
      request.body?.cancel().catch(() => {});
      reject(
        new SqsError(
          "RequestTimeout",
          `Cannot read the request body: it did not arrive within ${options.timeoutMs} ms`,
        ),
      );
    });
  });
  deadline?.catch(() => {});
  try {
    const read = readChunks(request, limit, options.budget);
    if (deadline === null) return await read;
    read.catch(() => {});
    return await Promise.race([read, deadline]);
  } finally {
    timer?.cancel();
  }
}

async function readChunks(
  request: HttpRequest,
  limit: number,
  budget: BodyBudget | undefined,
): Promise<Uint8Array> {
  if (request.body === null) return EMPTY;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw truncated(error);
      }
      if (chunk.done) break;
      const value = chunk.value;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge(limit);
      }
      try {
        budget?.take(value.byteLength);
      } catch (error) {
        size -= value.byteLength;
        await reader.cancel().catch(() => {});
        throw error;
      }
      chunks.push(value);
    }
  } finally {
    budget?.give(size);
  }
  if (chunks.length === 1) return chunks[0];
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
