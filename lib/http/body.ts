/**
 * Reading a JSON request body with the size limit enforced while reading: a body over the
 * limit is refused with 413 as soon as its `Content-Length` or its bytes say so, never buffered
 * whole.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

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

/**
 * Reads and parses the body as JSON, answering the value and the text it was parsed from. An
 * empty body is `undefined`. A `Content-Type` other than JSON is `unsupported_media_type`; a
 * missing one is read as JSON.
 */
export async function readJsonBody(request: Request, limit: number): Promise<JsonBody> {
  const contentType = request.headers.get("content-type");
  const length = request.headers.get("content-length");
  // One plain length is trusted (the HTTP layer never delivers more); anything else — a header
  // sent twice arrives as "2000, 2000" — is read counting bytes against the limit.
  const declared = length !== null && /^[0-9]{1,16}$/.test(length) ? Number(length) : null;
  if (declared !== null && declared > limit) {
    await request.body?.cancel().catch(() => {});
    throw tooLarge(limit);
  }
  // With a declared length, `request.body` is never touched: making the stream costs more than
  // parsing a small job.
  let bytes: Uint8Array;
  if (declared !== null) bytes = await readDeclared(request, limit);
  else if (request.body === null) return EMPTY;
  else bytes = await readChunked(request, limit);
  if (bytes.byteLength === 0) return EMPTY;
  if (contentType !== null && !isJsonType(contentType)) {
    throw new TegamiError(
      "unsupported_media_type",
      `Cannot read the request body: Content-Type "${contentType.slice(0, 100)}" is not JSON`,
    );
  }
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    throw new TegamiError("invalid_json", "Cannot parse the request body: it is not valid UTF-8");
  }
  try {
    return { value: JSON.parse(text), text };
  } catch (error) {
    throw new TegamiError(
      "invalid_json",
      `Cannot parse the request body: ${(error as Error).message.slice(0, 200)}`,
    );
  }
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
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
async function readDeclared(request: Request, limit: number): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await request.bytes();
  } catch (error) {
    throw truncated(error);
  }
  if (bytes.byteLength > limit) throw tooLarge(limit); // never expected; the limit holds anyway
  return bytes;
}

/** A chunked body of unknown length: read piece by piece, refused once it passes `limit`. */
async function readChunked(request: Request, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body!.getReader();
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
    chunks.push(value);
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
