/**
 * Building HTTP answers: JSON bodies (from objects or pre-built JSON text) and error bodies.
 *
 * @module
 */

import type { TegamiError } from "../core/errors.ts";

const JSON_HEADERS = { "content-type": "application/json; charset=utf-8" };

/** A JSON answer from a value. */
export function json(status: number, value: unknown): Response {
  return new Response(JSON.stringify(value), { status, headers: JSON_HEADERS });
}

/** A JSON answer from text that is already JSON. */
export function jsonText(status: number, text: string): Response {
  return new Response(text, { status, headers: JSON_HEADERS });
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
