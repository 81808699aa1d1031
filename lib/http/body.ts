/**
 * Reading a JSON request body with the size limit enforced while reading: a body over the
 * limit is refused with 413 as soon as its `Content-Length` or its bytes say so, never buffered
 * whole.
 *
 * @module
 */

import { type Deadline, deadlinesOf } from "./deadline_queue.ts";
import { TegamiError } from "../core/errors.ts";
import type { BodyBudget } from "./body_budget.ts";
import { refuseCostlyJson } from "../api/json_depth.ts";
import { strictUtf8Decoder } from "../api/utf8.ts";
import type { HttpRequest } from "./http_request.ts";

function tooLarge(limit: number): TegamiError {
  return new TegamiError(
    "payload_too_large",
    `Cannot read the request body: it is over the limit of ${limit} bytes`,
  );
}

/** True when a `Content-Type` names JSON (`application/json`, `…+json`, any parameters). */
function isJsonType(contentType: string): boolean {
  const type = contentType.split(";", 1)[0].trim().toLowerCase();
  return type === "application/json" || (type.startsWith("application/") && type.endsWith("+json"));
}

/** A parsed JSON body and the text it was parsed from. */
export interface JsonBody {
  /** The parsed value; `undefined` for an empty body. */
  value: unknown;
  /** The body's text (empty for an empty body). */
  text: string;
}

/** How a body is read, beyond its size limit. */
export interface BodyOptions {
  /**
   * Refuse a non-JSON `Content-Type` even on an empty or absent body, so a body-less form POST
   * cannot pass (cross-site protection without tokens). @default false
   */
  strictType?: boolean;
  /** Time the whole body has to arrive, in ms; past it, `request_timeout`. @default none */
  timeoutMs?: number;
  /** The budget the bytes being read are held against. @default none */
  budget?: BodyBudget;
}

/** Bodies up to this declared size are read in one piece: cheaper than a stream for small jobs. */
const WHOLE_BODY_MAX = 64 * 1024;

/**
 * Reads and parses the body as JSON, answering the value and the text it was parsed from. An
 * empty body is `undefined`. A `Content-Type` other than JSON is `unsupported_media_type`; a
 * missing one is read as JSON. The bytes are counted against the limit (and the budget) as they
 * arrive, never buffered beyond them.
 */
export async function readJsonBody(
  request: HttpRequest,
  limit: number,
  options: BodyOptions = {},
): Promise<JsonBody> {
  const contentType = request.headers.get("content-type");
  const typeOk = contentType === null || isJsonType(contentType);
  if (!typeOk && options.strictType === true) {
    await request.body?.cancel().catch(() => {});
    throw unsupported(contentType!);
  }
  const bytes = await readBodyBytes(request, limit, options);
  if (bytes.byteLength === 0) return EMPTY;
  if (!typeOk) throw unsupported(contentType!);
  let text: string;
  try {
    text = strictUtf8(bytes);
  } catch {
    throw new TegamiError("invalid_json", "Cannot parse the request body: it is not valid UTF-8");
  }
  refuseCostlyJson(text, "the request body");
  try {
    return { value: JSON.parse(text), text };
  } catch (error) {
    throw new TegamiError(
      "invalid_json",
      `Cannot parse the request body: ${(error as Error).message.slice(0, 200)}`,
    );
  }
}

/**
 * Reads the whole body as bytes (empty for none), whatever its type: refused with
 * `payload_too_large` past `limit` as soon as the `Content-Length` or the bytes say so, within
 * `options.timeoutMs` (`request_timeout`), held against `options.budget` while it arrives.
 */
export async function readBodyBytes(
  request: HttpRequest,
  limit: number,
  options: Pick<BodyOptions, "timeoutMs" | "budget"> = {},
): Promise<Uint8Array> {
  const length = request.headers.get("content-length");
  // One plain length is trusted (the HTTP layer never delivers more); anything else — a header
  // sent twice arrives as "2000, 2000" — is read counting bytes against the limit.
  const declared = length !== null && /^[0-9]{1,16}$/.test(length) ? Number(length) : null;
  if (declared !== null && declared > limit) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  if (declared === 0 || (declared === null && request.body === null)) return NO_BYTES;
  // A body that arrived with its head (most of the front door's requests) is taken as it is: no
  // deadline can pass while it is read, and no bytes are still to come to hold against the
  // budget (it bounds the bodies being read; these are already in the connection's buffer).
  const arrived = request.takeArrived?.() ?? null;
  if (arrived !== null && arrived.byteLength > limit) throw tooLarge(limit);
  return arrived ?? await readArriving(request, declared, limit, options);
}

const NO_BYTES = new Uint8Array(0);

/**
 * Reads a body whose bytes may still be arriving: within `options.timeoutMs`, held against
 * `options.budget` while read, refused past `limit`.
 */
async function readArriving(
  request: HttpRequest,
  declared: number | null,
  limit: number,
  options: Pick<BodyOptions, "timeoutMs" | "budget">,
): Promise<Uint8Array> {
  let timer: Deadline | undefined;
  const deadline = options.timeoutMs === undefined ? null : new Promise<never>((_, reject) => {
    timer = deadlinesOf(options.timeoutMs!).set(() => {
      request.body?.cancel().catch(() => {});
      reject(
        new TegamiError(
          "request_timeout",
          `Cannot read the request body: it did not arrive within ${options.timeoutMs} ms`,
        ),
      );
    });
  });
  deadline?.catch(() => {});
  let bytes: Uint8Array;
  try {
    // With a small declared length, `request.body` is never touched: making the stream costs
    // more than parsing a small job. Its bytes are held against the budget up front.
    if (declared !== null && declared <= WHOLE_BODY_MAX) {
      options.budget?.take(declared);
      try {
        bytes = await raced(readDeclared(request, limit), deadline);
      } finally {
        options.budget?.give(declared);
      }
    } else {
      bytes = await raced(readChunked(request, limit, options.budget), deadline);
    }
  } finally {
    timer?.cancel();
  }
  return bytes;
}

/** `read`, unless `deadline` comes first; a read that loses the race is left to fail quietly. */
function raced<T>(read: Promise<T>, deadline: Promise<never> | null): Promise<T> {
  if (deadline === null) return read;
  read.catch(() => {});
  return Promise.race([read, deadline]);
}

function unsupported(contentType: string): TegamiError {
  return new TegamiError(
    "unsupported_media_type",
    `Cannot read the request body: Content-Type "${contentType.slice(0, 100)}" is not JSON`,
  );
}

const strictUtf8 = strictUtf8Decoder();
const EMPTY: JsonBody = { value: undefined, text: "" };

function truncated(error: unknown): TegamiError {
  // The client's framing broke off (a body shorter than its Content-Length, a connection
  // closed mid-body): a bad request, not a server fault, so it must never become a 500.
  return new TegamiError(
    "invalid_json",
    "Cannot read the request body: the connection ended before the body was complete",
    { cause: error },
  );
}

/**
 * A body with one plain `Content-Length` within the limit (checked by the caller) arrives whole:
 * the HTTP layer never delivers more than the declared length, so one read is safe.
 */
async function readDeclared(request: HttpRequest, limit: number): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await request.bytes();
  } catch (error) {
    throw truncated(error);
  }
  if (bytes.byteLength > limit) throw tooLarge(limit); // never expected; the limit holds anyway
  return bytes;
}

/**
 * A large or chunked body: read piece by piece, refused once it passes `limit` or the budget,
 * its bytes held against the budget until it is assembled.
 */
async function readChunked(
  request: HttpRequest,
  limit: number,
  budget: BodyBudget | undefined,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body === null) return new Uint8Array(0);
  const reader = request.body.getReader();
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (error) {
        throw truncated(error);
      }
      const { done, value } = chunk;
      if (done) break;
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
