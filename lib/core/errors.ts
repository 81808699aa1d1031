/**
 * The closed set of error codes shared by the HTTP API, the WebSocket protocol and the client.
 *
 * Every failure a caller can see is a {@linkcode TegamiError} carrying one of these codes. The
 * status table is a `Record<ErrorCode, number>`, so adding a code without a status is a type
 * error. Anything that is not a `TegamiError` is reported as `internal` and its message is never
 * echoed to the caller.
 *
 * @module
 */

/** Every error code tegami answers with. */
export type ErrorCode =
  | "invalid_json"
  | "validation_failed"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "request_timeout"
  | "lease_lost"
  | "conflict"
  | "payload_too_large"
  | "unsupported_media_type"
  | "rate_limited"
  | "internal"
  | "unavailable";

/** The HTTP status of each error code. */
export const STATUS_OF: Readonly<Record<ErrorCode, number>> = {
  invalid_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  request_timeout: 408,
  lease_lost: 409,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

/** All error codes, in the order of {@linkcode STATUS_OF}. */
export const ERROR_CODES: readonly ErrorCode[] = Object.keys(STATUS_OF) as ErrorCode[];

/**
 * The words in the message of an `unavailable` answer whose write may have been made after all
 * (on PostgreSQL, a connection lost during COMMIT), so that a reader — a log search, a client, the
 * crash campaign — can tell that unknown outcome from a refusal. See docs/reliability.md.
 */
export const OUTCOME_UNKNOWN: string = "may or may not have been made";

/** An error with a stable code, safe to show to the caller. */
export class TegamiError extends Error {
  /** The stable code, one of {@linkcode ErrorCode}. */
  readonly code: ErrorCode;
  /** The job the error is about, when there is one. */
  readonly id?: number;
  /** Seconds after which a retry may succeed (HTTP `Retry-After`), when the server knows. */
  readonly retryAfter?: number;

  /** Makes an error with a code and a sentence-case message. */
  constructor(
    code: ErrorCode,
    message: string,
    options?: { id?: number; cause?: unknown; retryAfter?: number },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "TegamiError";
    this.code = code;
    if (options?.id !== undefined) this.id = options.id;
    if (options?.retryAfter !== undefined) this.retryAfter = options.retryAfter;
  }

  /** The HTTP status for this error's code. */
  get status(): number {
    return STATUS_OF[this.code];
  }
}

/** The JSON body of an error answer. */
export interface ErrorBody {
  /** The code and message. */
  error: { code: ErrorCode; message: string };
}

/**
 * Rebuilds an error the server sent (an HTTP error body's `error`, or an `error` frame), on the
 * client's side.
 */
export function errorFromWire(
  error: { code?: unknown; message?: unknown; id?: unknown },
): TegamiError {
  return new TegamiError(
    (error.code as ErrorCode | undefined) ?? "internal",
    String(error.message ?? error.code ?? "Unknown error"),
    typeof error.id === "number" ? { id: error.id } : undefined,
  );
}

/**
 * Turns anything thrown into a `TegamiError`: a `TegamiError` is kept, anything else becomes
 * `internal` with a fixed message, so driver details never reach a caller.
 */
export function toTegamiError(error: unknown): TegamiError {
  if (error instanceof TegamiError) return error;
  return new TegamiError("internal", "Internal error: see the server log", { cause: error });
}

/** The longest field name an error message repeats, in characters; a longer one is cut. */
const MAX_FIELD_CHARS = 128;

/** Shorthand for a `validation_failed` error whose message names the field. */
export function invalid(field: string, problem: string): TegamiError {
  // An unknown field's name is the client's own text: a message stays short whatever it sent.
  const name = field.length > MAX_FIELD_CHARS ? `${field.slice(0, MAX_FIELD_CHARS)}…` : field;
  return new TegamiError("validation_failed", `Invalid "${name}": ${problem}`);
}

/** Shorthand for a `not_found` error about a job. */
export function jobNotFound(id: number): TegamiError {
  return new TegamiError("not_found", `Cannot find job ${id}: no such job`, { id });
}

/** Shorthand for a `lease_lost` error about a job. */
export function leaseLost(id: number, action: string): TegamiError {
  return new TegamiError(
    "lease_lost",
    `Cannot ${action} job ${id}: the token does not hold the current lease`,
    { id },
  );
}

/** Shorthand for the `unavailable` error of a request that arrives while the server stops. */
export function shuttingDown(cause?: unknown): TegamiError {
  return new TegamiError("unavailable", "Cannot take the request: the server is shutting down", {
    cause,
  });
}
