/**
 * A job's attributes: named, typed values stored with the job and given back with every
 * delivery, beside its payload. They are Amazon SQS's message attributes, so a message sent
 * through the SQS API keeps them when taken through tegami's own API and the other way round:
 * at most 10, a name of letters, digits, `_`, `-` and `.` (not starting with `AWS.` or
 * `Amazon.`, no `..`, no leading or trailing `.`, at most 256 characters), a type `String`,
 * `Number` or `Binary` with an optional `.label`, and a value of that type (a `Binary` value as
 * base64). Trace context (`traceparent`) is an ordinary `String` attribute.
 *
 * The rules are pure and shared by every door: tegami's API refuses a bad attribute with
 * `validation_failed` naming it, the SQS API with AWS's error. A job stores its attributes as
 * one JSON text, sorted by name, or null when it has none.
 *
 * @module
 */

/** One attribute. */
export interface Attribute {
  /** `String`, `Number` or `Binary`, with an optional `.label`. */
  type: string;
  /** Its value: text for `String` and `Number`, base64 for `Binary`. */
  value: string;
}

/** The most attributes a job may carry. */
export const MAX_ATTRIBUTES = 10;
/**
 * The most bytes of a job's attributes as stored (their JSON text, which answers carry as it
 * is): small enough that a delivery stays within `JOB_OVERHEAD_BYTES` of its user values.
 */
export const MAX_ATTRIBUTES_BYTES = 4096;

const NAME = /^[A-Za-z0-9_.-]{1,256}$/;
const TYPE = /^(String|Number|Binary)(\.[^\s]{1,249})?$/;
const NUMBER = /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** What is wrong with an attribute's name, or null when it is a valid one. */
export function attributeNameProblem(name: string): string | null {
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

/** What is wrong with an attribute's type, or null when it is a valid one. */
export function attributeTypeProblem(type: string): string | null {
  return TYPE.test(type) ? null : "types are String, Number or Binary, with an optional .label";
}

/**
 * A character XML 1.0 cannot carry, or a lone surrogate: text SQS refuses (its query protocol
 * answers in XML), so neither a message body nor an attribute may hold one.
 */
// deno-lint-ignore no-control-regex
export const NOT_XML_TEXT = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

/** What is wrong with an attribute's value for its (valid) type, or null. */
export function attributeValueProblem(type: string, value: string): string | null {
  if (type.startsWith("Number")) return NUMBER.test(value) ? null : "is not a number";
  if (type.startsWith("Binary")) return BASE64.test(value) ? null : "is not base64";
  if (NOT_XML_TEXT.test(value)) {
    return "holds a control character or a lone surrogate";
  }
  return null;
}

/** Whether an attribute of `type` holds bytes (its value is base64). */
export function isBinaryType(type: string): boolean {
  return type.startsWith("Binary");
}

/**
 * The stored form of valid attributes: their JSON text with the names sorted (each member
 * `{"type", "value"}`), or null for none.
 */
export function attributesText(attributes: ReadonlyMap<string, Attribute>): string | null {
  if (attributes.size === 0) return null;
  // Written member by member: an object would put names that look like integers first.
  const members = [...attributes.keys()].sort(byName).map((name) => {
    const { type, value } = attributes.get(name)!;
    return `${JSON.stringify(name)}:${JSON.stringify({ type, value })}`;
  });
  return `{${members.join(",")}}`;
}

/** Names in code-unit order (byte order for the ASCII names attributes may have). */
function byName(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The attributes of a stored text (null: none), by name in byte order. */
export function readAttributes(text: string | null): Map<string, Attribute> {
  const out = new Map<string, Attribute>();
  if (text === null) return out;
  const entries = Object.entries(JSON.parse(text) as Record<string, Attribute>);
  entries.sort(([a], [b]) => byName(a, b));
  for (const [name, a] of entries) out.set(name, { type: a.type, value: a.value });
  return out;
}
