/**
 * The errors the SQS API answers with: AWS's codes, each with its query-protocol code (the one
 * older SDKs and query-compatible JSON clients read), its HTTP status and who is at fault.
 *
 * A `TegamiError` thrown by the broker becomes the nearest AWS error ({@linkcode toSqsError});
 * anything else is `InternalError`, its message never echoed.
 *
 * @module
 */

import { TegamiError } from "../core/errors.ts";

/** An AWS error code the SQS API answers with (the JSON protocol's name for it). */
export type SqsErrorCode =
  | "AccessDenied"
  | "BatchEntryIdsNotDistinct"
  | "BatchRequestTooLong"
  | "EmptyBatchRequest"
  | "IncompleteSignature"
  | "InternalError"
  | "InvalidAction"
  | "InvalidAttributeName"
  | "InvalidAttributeValue"
  | "InvalidBatchEntryId"
  | "InvalidClientTokenId"
  | "InvalidMessageContents"
  | "InvalidParameterValue"
  | "MessageNotInflight"
  | "MissingAuthenticationToken"
  | "MissingParameter"
  | "QueueDoesNotExist"
  | "QueueNameExists"
  | "ReceiptHandleIsInvalid"
  | "RequestEntityTooLarge"
  | "ResourceNotFoundException"
  | "RequestThrottled"
  | "RequestTimeout"
  | "SerializationException"
  | "ServiceUnavailable"
  | "SignatureDoesNotMatch"
  | "TooManyEntriesInBatchRequest"
  | "UnsupportedMediaType"
  | "UnsupportedOperation";

/** How an error code goes on the wire. */
export interface SqsErrorKind {
  /** The query protocol's code (`AWS.SimpleQueueService.NonExistentQueue`). */
  query: string;
  /** The HTTP status. */
  status: number;
  /** `Sender` when the request is at fault, `Receiver` when the server is. */
  fault: "Sender" | "Receiver";
}

const SENDER = (query: string, status = 400): SqsErrorKind => ({ query, status, fault: "Sender" });

/**
 * Every code's wire form. The query codes are botocore's (its query-protocol model of SQS names
 * them in each error shape's `error.code`); codes it does not name are AWS's common errors.
 */
export const SQS_ERRORS: Readonly<Record<SqsErrorCode, SqsErrorKind>> = {
  AccessDenied: SENDER("AccessDenied", 403),
  BatchEntryIdsNotDistinct: SENDER("AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
  BatchRequestTooLong: SENDER("AWS.SimpleQueueService.BatchRequestTooLong"),
  EmptyBatchRequest: SENDER("AWS.SimpleQueueService.EmptyBatchRequest"),
  IncompleteSignature: SENDER("IncompleteSignature"),
  InternalError: { query: "InternalError", status: 500, fault: "Receiver" },
  InvalidAction: SENDER("InvalidAction"),
  InvalidAttributeName: SENDER("InvalidAttributeName"),
  InvalidAttributeValue: SENDER("InvalidAttributeValue"),
  InvalidBatchEntryId: SENDER("AWS.SimpleQueueService.InvalidBatchEntryId"),
  InvalidClientTokenId: SENDER("InvalidClientTokenId", 403),
  InvalidMessageContents: SENDER("InvalidMessageContents"),
  InvalidParameterValue: SENDER("InvalidParameterValue"),
  MessageNotInflight: SENDER("AWS.SimpleQueueService.MessageNotInflight"),
  MissingAuthenticationToken: SENDER("MissingAuthenticationToken", 403),
  MissingParameter: SENDER("MissingParameter"),
  QueueDoesNotExist: SENDER("AWS.SimpleQueueService.NonExistentQueue"),
  QueueNameExists: SENDER("QueueAlreadyExists"),
  ReceiptHandleIsInvalid: SENDER("ReceiptHandleIsInvalid"),
  RequestEntityTooLarge: SENDER("RequestEntityTooLarge", 413),
  ResourceNotFoundException: SENDER("ResourceNotFoundException"),
  RequestThrottled: SENDER("RequestThrottled", 403),
  RequestTimeout: SENDER("RequestTimeout", 408),
  SerializationException: SENDER("SerializationException"),
  ServiceUnavailable: { query: "ServiceUnavailable", status: 503, fault: "Receiver" },
  SignatureDoesNotMatch: SENDER("SignatureDoesNotMatch", 403),
  TooManyEntriesInBatchRequest: SENDER("AWS.SimpleQueueService.TooManyEntriesInBatchRequest"),
  UnsupportedMediaType: SENDER("UnsupportedMediaType", 415),
  UnsupportedOperation: SENDER("AWS.SimpleQueueService.UnsupportedOperation"),
};

/** An error with an AWS code, safe to show to the caller. */
export class SqsError extends Error {
  /** The code. */
  readonly code: SqsErrorCode;

  /** Makes an error with a code and a message. */
  constructor(code: SqsErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SqsError";
    this.code = code;
  }

  /** How the code goes on the wire. */
  get kind(): SqsErrorKind {
    return SQS_ERRORS[this.code];
  }
}

/** `InvalidParameterValue` naming the parameter, in AWS's words. */
export function invalidParameter(name: string, reason: string): SqsError {
  return new SqsError(
    "InvalidParameterValue",
    `Value for parameter ${name.slice(0, 128)} is invalid. Reason: ${reason}`,
  );
}

/** `MissingParameter` naming the parameter. */
export function missingParameter(name: string): SqsError {
  return new SqsError("MissingParameter", `The request must contain the parameter ${name}.`);
}

/** `UnsupportedOperation` naming what tegami does not do yet. */
export function notYet(what: string): SqsError {
  return new SqsError("UnsupportedOperation", `${what} is not supported by tegami yet`);
}

/** Anything thrown, as the nearest SQS error; an unknown error is `InternalError`. */
export function toSqsError(error: unknown): SqsError {
  if (error instanceof SqsError) return error;
  if (error instanceof TegamiError) {
    const code: SqsErrorCode = (() => {
      switch (error.code) {
        case "invalid_json":
          return "SerializationException";
        case "validation_failed":
          return "InvalidParameterValue";
        case "unauthorized":
          return "MissingAuthenticationToken";
        case "forbidden":
          return "AccessDenied";
        case "not_found":
          return "QueueDoesNotExist";
        case "request_timeout":
          return "RequestTimeout";
        case "lease_lost":
          return "ReceiptHandleIsInvalid";
        case "conflict":
          return "InvalidParameterValue";
        case "payload_too_large":
          return "RequestEntityTooLarge";
        case "unsupported_media_type":
          return "UnsupportedMediaType";
        case "rate_limited":
          return "RequestThrottled";
        case "unavailable":
          return "ServiceUnavailable";
        case "internal":
          return "InternalError";
      }
    })();
    if (code === "InternalError") {
      return new SqsError(code, "Internal error: see the server log", { cause: error });
    }
    return new SqsError(code, error.message, { cause: error });
  }
  return new SqsError("InternalError", "Internal error: see the server log", { cause: error });
}
