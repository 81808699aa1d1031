/**
 * Building HTTP answers: JSON bodies (from objects or pre-built JSON text) and error bodies.
 *
 * A JSON answer is a {@linkcode JsonAnswer}, not a Fetch `Response`: making a `Response` with
 * headers costs more than the front door's whole parse of a small request (its `Headers` above
 * all), and the front door only needs the status, the headers and the text.
 * {@linkcode toResponse} makes the `Response` where `Deno.serve` answers instead.
 *
 * @module
 */

import type { TegamiError } from "../core/errors.ts";

const JSON_TYPE = "application/json; charset=utf-8";
/** A header field's name (RFC 9110 token). */
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * The fields of a {@linkcode JsonAnswer}, as a `Headers` is read: names lower-cased, and a name
 * or value that could not be sent (a CR or LF would split the answer) refused.
 */
export class AnswerHeaders implements Iterable<[string, string]> {
  readonly #fields: [string, string][] = [["content-type", JSON_TYPE]];

  /** Sets field `name` (any case) to `value`, replacing the one set before. */
  set(name: string, value: string): void {
    if (!FIELD_NAME.test(name) || /[\r\n\0]/.test(value)) {
      throw new TypeError(`Cannot set the header field ${JSON.stringify(name)}: not a valid field`);
    }
    name = name.toLowerCase();
    const at = this.#fields.findIndex((field) => field[0] === name);
    if (at >= 0) this.#fields[at][1] = value;
    else this.#fields.push([name, value]);
  }

  /** The value of field `name` (any case), or null. */
  get(name: string): string | null {
    const key = name.toLowerCase();
    return this.#fields.find((field) => field[0] === key)?.[1] ?? null;
  }

  /** The fields in the order they were set. */
  [Symbol.iterator](): Iterator<[string, string]> {
    return this.#fields[Symbol.iterator]();
  }
}

/** An answer whose body is JSON text. */
export class JsonAnswer {
  /** The HTTP status. */
  readonly status: number;
  /** The body. */
  readonly text: string;
  /** The header fields (`content-type` first). */
  readonly headers: AnswerHeaders = new AnswerHeaders();

  /** An answer of `status` with the JSON `text` as its body. */
  constructor(status: number, text: string) {
    this.status = status;
    this.text = text;
  }
}

/** What the API answers: a JSON answer, or a `Response` (metrics, assets, streams, upgrades). */
export type Answer = JsonAnswer | Response;

/** `answer` as a Fetch `Response` (for `Deno.serve`). */
export function toResponse(answer: Answer): Response {
  if (answer instanceof Response) return answer;
  return new Response(answer.text, { status: answer.status, headers: [...answer.headers] });
}

/** A JSON answer from a value. */
export function json(status: number, value: unknown): JsonAnswer {
  return new JsonAnswer(status, JSON.stringify(value));
}

/** A JSON answer from text that is already JSON. */
export function jsonText(status: number, text: string): JsonAnswer {
  return new JsonAnswer(status, text);
}

/** The error answer `{"error": {"code", "message"}}` with the code's status. */
export function errorResponse(error: TegamiError): JsonAnswer {
  const answer = json(error.status, { error: { code: error.code, message: error.message } });
  if (error.retryAfter !== undefined) answer.headers.set("retry-after", String(error.retryAfter));
  // A body that timed out is still arriving: the connection cannot be reused.
  if (error.code === "request_timeout") answer.headers.set("connection", "close");
  return answer;
}
