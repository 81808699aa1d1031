/**
 * The SQS JSON protocol (`awsJson1_0`): `POST /` with `Content-Type: application/x-amz-json-1.0`
 * and `X-Amz-Target: AmazonSQS.<Action>`, the input as a JSON object keyed by member names; the
 * answer is the output object as JSON, an error `{"__type": "com.amazonaws.sqs#<Code>",
 * "message": …}` with the header `x-amzn-query-error: <query code>;<Sender|Receiver>`, which
 * SDKs built query-compatible read to name the error as the query protocol did.
 *
 * @module
 */

import { refuseCostlyJson } from "../api/json_depth.ts";
import type { Shape } from "./shapes.ts";
import { invalidParameter, SqsError } from "./sqs_error.ts";
import { base64Bytes, type WireMap, type WireStruct, type WireValue } from "./wire_values.ts";

/** The `Content-Type` of the JSON protocol. */
export const AMZ_JSON = "application/x-amz-json-1.0";

/** The prefix of `X-Amz-Target` values. */
export const TARGET_PREFIX = "AmazonSQS.";

/** Parses and checks a JSON request body against the action's input shape. */
export function decodeJson(text: string, shape: Shape): WireStruct {
  if (text === "") return {};
  let value: unknown;
  try {
    refuseCostlyJson(text, "the request body");
    value = JSON.parse(text);
  } catch (error) {
    throw new SqsError(
      "SerializationException",
      `Cannot parse the request body as JSON: ${(error as Error).message.slice(0, 200)}`,
    );
  }
  if (value === null) return {};
  return check(value, shape, "") as WireStruct;
}

function typeName(value: unknown): string {
  return Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
}

function check(value: unknown, shape: Shape, path: string): WireValue {
  const name = path === "" ? "the request" : path;
  const wrong = (expected: string) =>
    new SqsError(
      "SerializationException",
      `Cannot read ${name.slice(0, 128)}: expected ${expected}, got ${typeName(value)}`,
    );
  switch (shape.t) {
    case "string":
      if (typeof value !== "string") throw wrong("a string");
      return value;
    case "int":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) throw wrong("an integer");
      return value;
    case "bool":
      if (typeof value !== "boolean") throw wrong("a boolean");
      return value;
    case "blob":
      if (typeof value !== "string") throw wrong("base64 text");
      return base64Bytes(value, name);
    case "list": {
      if (!Array.isArray(value)) throw wrong("an array");
      return value.map((item, i) => check(item, shape.member, `${path}[${i}]`));
    }
    case "map": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw wrong("an object");
      }
      const out: WireMap = new Map();
      for (const [key, item] of Object.entries(value)) {
        out.set(key, check(item, shape.valueShape, `${path}.${key}`));
      }
      return out;
    }
    case "struct": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw wrong("an object");
      }
      const record = value as Record<string, unknown>;
      const out: WireStruct = {};
      for (const [member, spec] of Object.entries(shape.members)) {
        if (!Object.hasOwn(record, member)) continue;
        const item = record[member];
        // SDKs leave unset members out; a null is read the same way.
        if (item === null) continue;
        out[member] = check(item, spec.shape, path === "" ? member : `${path}.${member}`);
      }
      return out;
    }
  }
}

/** The JSON error body. */
export function encodeJsonError(error: SqsError): string {
  return JSON.stringify({ __type: `com.amazonaws.sqs#${error.code}`, message: error.message });
}

/** The `x-amzn-query-error` header value of an error. */
export function queryErrorHeader(error: SqsError): string {
  return `${error.kind.query};${error.kind.fault}`;
}

/** The action an `X-Amz-Target` names, or an error. */
export function targetAction(target: string | null): string {
  if (target === null || !target.startsWith(TARGET_PREFIX)) {
    throw invalidParameter("X-Amz-Target", `expected "${TARGET_PREFIX}<Action>"`);
  }
  return target.slice(TARGET_PREFIX.length);
}
