/**
 * Message attributes as `SendMessage` carries them, read from a decoded request and checked by
 * the rules of core/attributes.ts (AWS's): at most 10, a name of letters, digits, `_`, `-` and
 * `.` (not starting with `AWS.` or `Amazon.`, no `..`, no leading or trailing `.`, at most 256
 * characters), a data type `String`, `Number` or `Binary` with an optional `.label`, and the
 * value that type needs. They are a job's attributes, stored with it (binary values as base64)
 * and given back by `ReceiveMessage` and by tegami's own API alike.
 *
 * @module
 */

import {
  type Attribute,
  attributeNameProblem,
  attributesText,
  attributeTypeProblem,
  attributeValueProblem,
  isBinaryType,
  MAX_ATTRIBUTES,
  MAX_ATTRIBUTES_BYTES,
  readAttributes,
} from "../core/attributes.ts";
import { invalidParameter, SqsError } from "./sqs_error.ts";
import { base64Bytes, bytesBase64, type WireMap, type WireStruct } from "./wire_values.ts";

/** One message attribute. */
export interface MessageAttribute {
  /** `String`, `Number` or `Binary`, with an optional `.label`. */
  dataType: string;
  /** The value of a `String` or `Number` attribute, else null. */
  stringValue: string | null;
  /** The value of a `Binary` attribute, else null. */
  binaryValue: Uint8Array | null;
}

export { MAX_ATTRIBUTES };

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
    const problem = attributeNameProblem(name);
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
    if (attributeTypeProblem(dataType) !== null || dataType.length > 256) {
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
    if (dataType.startsWith("Number") && attributeValueProblem(dataType, stringValue) !== null) {
      throw new SqsError(
        "InvalidParameterValue",
        `Can't cast the value of message (user) attribute '${name}' to a number.`,
      );
    }
    if (attributeValueProblem(dataType, stringValue) !== null) {
      throw new SqsError(
        "InvalidParameterValue",
        `Message attribute '${name}' holds characters that are not valid: valid unicode ` +
          "characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to " +
          "#x10FFFF",
      );
    }
    out.set(name, { dataType, stringValue, binaryValue: null });
  }
  return out;
}

/** Message attributes as a job stores them (binary values as base64); null for none. */
export function jobAttributes(attributes: ReadonlyMap<string, MessageAttribute>): string | null {
  const out = new Map<string, Attribute>();
  for (const [name, a] of attributes) {
    out.set(name, {
      type: a.dataType,
      value: a.binaryValue !== null ? bytesBase64(a.binaryValue) : a.stringValue ?? "",
    });
  }
  const text = attributesText(out);
  if (text !== null && new TextEncoder().encode(text).length > MAX_ATTRIBUTES_BYTES) {
    throw invalidParameter(
      "MessageAttributes",
      `Message attributes must take at most ${MAX_ATTRIBUTES_BYTES} bytes as tegami stores them ` +
        "(their JSON text).",
    );
  }
  return text;
}

/** A job's stored attributes as message attributes. */
export function messageAttributes(text: string | null): Map<string, MessageAttribute> {
  const out = new Map<string, MessageAttribute>();
  for (const [name, a] of readAttributes(text)) {
    out.set(
      name,
      isBinaryType(a.type)
        ? { dataType: a.type, stringValue: null, binaryValue: base64Bytes(a.value, name) }
        : { dataType: a.type, stringValue: a.value, binaryValue: null },
    );
  }
  return out;
}

/**
 * Which of `attributes` a `MessageAttributeNames` list asks for: every one for `All` or `.*`,
 * those named, and those starting with a `prefix.` given as `prefix.*`.
 */
export function selectAttributes(
  attributes: ReadonlyMap<string, MessageAttribute>,
  names: readonly string[],
): Map<string, MessageAttribute> {
  const out = new Map<string, MessageAttribute>();
  if (names.length === 0 || attributes.size === 0) return out;
  const all = names.includes("All") || names.includes(".*");
  const prefixes = names.filter((n) => n.endsWith(".*")).map((n) => n.slice(0, -1));
  for (const [name, a] of attributes) {
    if (all || names.includes(name) || prefixes.some((p) => name.startsWith(p))) out.set(name, a);
  }
  return out;
}
