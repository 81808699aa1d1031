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
  return check(value, shape, null, null) as WireStruct;
}

function typeName(value: unknown): string {
  return Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
}

/** Where a value sits in the request: a chain made into text only for an error. */
type Path = { up: Path; key: string | number } | null;

function pathText(path: Path): string {
  if (path === null) return "the request";
  let text = "";
  for (let at: Path = path; at !== null; at = at.up) {
    text = typeof at.key === "number" ? `[${at.key}]${text}` : `.${at.key}${text}`;
  }
  return text.slice(1);
}

/** The path of member `key` (null: the value itself) under `up`. */
function at(up: Path, key: string | number | null): Path {
  return key === null ? up : { up, key };
}

function wrong(value: unknown, up: Path, key: string | number | null, expected: string) {
  return new SqsError(
    "SerializationException",
    `Cannot read ${pathText(at(up, key)).slice(0, 128)}: expected ${expected}, got ` +
      typeName(value),
  );
}

/**
 * `value` checked against `shape`, as member `key` of the value at `up`. It runs for every
 * member of every request, so a path is made only for a container, never for a leaf.
 */
function check(value: unknown, shape: Shape, up: Path, key: string | number | null): WireValue {
  switch (shape.t) {
    case "string":
      if (typeof value !== "string") throw wrong(value, up, key, "a string");
      return value;
    case "int":
      if (typeof value !== "number" || !Number.isSafeInteger(value)) {
        throw wrong(value, up, key, "an integer");
      }
      return value;
    case "bool":
      if (typeof value !== "boolean") throw wrong(value, up, key, "a boolean");
      return value;
    case "blob":
      if (typeof value !== "string") throw wrong(value, up, key, "base64 text");
      return base64Bytes(value, pathText(at(up, key)));
    case "list": {
      if (!Array.isArray(value)) throw wrong(value, up, key, "an array");
      const here = at(up, key);
      const out: WireValue[] = new Array(value.length);
      for (let i = 0; i < value.length; i++) out[i] = check(value[i], shape.member, here, i);
      return out;
    }
    case "map": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw wrong(value, up, key, "an object");
      }
      const here = at(up, key);
      const out: WireMap = new Map();
      for (const name in value) {
        if (!Object.hasOwn(value, name)) continue;
        const item = (value as Record<string, unknown>)[name];
        out.set(name, check(item, shape.valueShape, here, name));
      }
      return out;
    }
    case "struct": {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        throw wrong(value, up, key, "an object");
      }
      const here = at(up, key);
      const record = value as Record<string, unknown>;
      const out: WireStruct = {};
      const members = shape.members;
      for (const member in members) {
        if (!Object.hasOwn(record, member)) continue;
        const item = record[member];
        // SDKs leave unset members out; a null is read the same way.
        if (item === null) continue;
        out[member] = check(item, members[member].shape, here, member);
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
