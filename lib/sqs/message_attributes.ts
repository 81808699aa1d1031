/**
 * Message attributes as `SendMessage` carries them, read from a decoded request and checked by
 * AWS's rules: at most 10, a name of letters, digits, `_`, `-` and `.` (not starting with `AWS.`
 * or `Amazon.`, no `..`, no leading or trailing `.`, at most 256 characters), a data type
 * `String`, `Number` or `Binary` with an optional `.label`, and the value that type needs.
 *
 * tegami cannot store attributes with a job yet, so the SQS API refuses a message that carries
 * any, after checking them (see `message_md5.ts` for their digest).
 *
 * @module
 */

import { invalidParameter, SqsError } from "./sqs_error.ts";
import type { WireMap, WireStruct } from "./wire_values.ts";

/** One message attribute. */
export interface MessageAttribute {
  /** `String`, `Number` or `Binary`, with an optional `.label`. */
  dataType: string;
  /** The value of a `String` or `Number` attribute, else null. */
  stringValue: string | null;
  /** The value of a `Binary` attribute, else null. */
  binaryValue: Uint8Array | null;
}

/** The most attributes a message may carry. */
export const MAX_ATTRIBUTES = 10;

const NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const DATA_TYPE = /^(String|Number|Binary)(\.[^\s]{1,250})?$/;
const NUMBER = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;

function nameProblem(name: string): string | null {
  if (!NAME.test(name)) {
    return "names hold 1 to 256 letters, digits, underscores, hyphens and periods";
  }
  const lower = name.toLowerCase();
  if (lower.startsWith("aws.") || lower.startsWith("amazon.")) {
    return "names starting with AWS. or Amazon. are reserved";
  }
  if (name.includes("..") || name.startsWith(".") || name.endsWith(".")) {
    return "names must not start or end with a period, nor hold two in a row";
  }
  return null;
}

/** Reads and checks the `MessageAttributes` of a message (`param` names them in errors). */
export function parseMessageAttributes(
  map: WireMap | undefined,
  param = "MessageAttributes",
): Map<string, MessageAttribute> {
  const out = new Map<string, MessageAttribute>();
  if (map === undefined) return out;
  if (map.size > MAX_ATTRIBUTES) {
    throw invalidParameter(
      param,
      `Number of message attributes [${map.size}] exceeds the ` +
        `allowed maximum [${MAX_ATTRIBUTES}].`,
    );
  }
  for (const [name, raw] of map) {
    const problem = nameProblem(name);
    if (problem !== null) {
      throw new SqsError(
        "InvalidParameterValue",
        `Message attribute name '${name.slice(0, 256)}' is invalid: ${problem}.`,
      );
    }
    const value = raw as WireStruct;
    const dataType = value.DataType;
    if (typeof dataType !== "string" || dataType === "") {
      throw new SqsError(
        "InvalidParameterValue",
        `The message attribute '${name}' must contain a non-empty attribute type.`,
      );
    }
    if (!DATA_TYPE.test(dataType) || dataType.length > 256) {
      throw new SqsError(
        "InvalidParameterValue",
        `The type of message attribute '${name}' is invalid: expected String, Number or ` +
          "Binary, with an optional .label.",
      );
    }
    if (value.StringListValues !== undefined || value.BinaryListValues !== undefined) {
      throw new SqsError(
        "InvalidParameterValue",
        `Message attribute '${name}': StringListValues and BinaryListValues are reserved by AWS.`,
      );
    }
    const binary = dataType.startsWith("Binary");
    const stringValue = value.StringValue;
    const binaryValue = value.BinaryValue;
    if (binary) {
      if (!(binaryValue instanceof Uint8Array) || stringValue !== undefined) {
        throw new SqsError(
          "InvalidParameterValue",
          `The message attribute '${name}' with type 'Binary' must use field 'Binary'.`,
        );
      }
      out.set(name, { dataType, stringValue: null, binaryValue });
      continue;
    }
    if (typeof stringValue !== "string" || binaryValue !== undefined) {
      throw new SqsError(
        "InvalidParameterValue",
        `The message attribute '${name}' with type '${dataType.split(".")[0]}' must use ` +
          "field 'String'.",
      );
    }
    if (dataType.startsWith("Number") && !NUMBER.test(stringValue)) {
      throw new SqsError(
        "InvalidParameterValue",
        `Can't cast the value of message (user) attribute '${name}' to a number.`,
      );
    }
    out.set(name, { dataType, stringValue, binaryValue: null });
  }
  return out;
}
