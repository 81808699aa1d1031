/**
 * Building HTTP answers: JSON bodies (from objects or pre-built JSON text) and error bodies.
 *
 * @module
 */

import type { TegamiError } from "../core/errors.ts";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

/** The text of each answer built here, so the front door can send it without reading the body. */
const texts = new WeakMap<Response, string>();

/** The body of `response` as text, if it was built here and not read yet; else undefined. */
export function textOf(response: Response): string | undefined {
  return response.bodyUsed ? undefined : texts.get(response);
}

/** A JSON answer from a value. */
export function json(status: number, value: unknown): Response {
  return jsonText(status, JSON.stringify(value));
}

/** A JSON answer from text that is already JSON. */
export function jsonText(status: number, text: string): Response {
  const response = new Response(text, { status, headers: JSON_HEADERS });
  texts.set(response, text);
  return response;
}

/** The error answer `{"error": {"code", "message"}}` with the code's status. */
export function errorResponse(error: TegamiError): Response {
  const response = json(error.status, { error: { code: error.code, message: error.message } });
  if (error.retryAfter !== undefined) {
    response.headers.set("retry-after", String(error.retryAfter));
  }
  // A body that timed out is still arriving: the connection cannot be reused.
  if (error.code === "request_timeout") response.headers.set("connection", "close");
  return response;
}
