/**
 * The SQS query protocol: a request is `application/x-www-form-urlencoded` parameters
 * (`Action=SendMessage&Version=2012-11-05&QueueUrl=…&MessageBody=…`), its lists and maps
 * flattened with 1-based indexes (`AttributeName.1=All`, `Attribute.1.Name=VisibilityTimeout`,
 * `Attribute.1.Value=60`); an answer is XML, `<ActionResponse><ActionResult>…</ActionResult>
 * <ResponseMetadata><RequestId>…</RequestId></ResponseMetadata></ActionResponse>`, and an error
 * `<ErrorResponse><Error><Type/><Code/><Message/></Error><RequestId/></ErrorResponse>`.
 *
 * The names follow botocore's query serializer and parser over the shapes of `shapes.ts`.
 *
 * @module
 */

import type { Shape } from "./shapes.ts";
import { invalidParameter, missingParameter, type SqsError } from "./sqs_error.ts";
import {
  base64Bytes,
  booleanText,
  bytesBase64,
  integerText,
  type WireMap,
  type WireStruct,
  type WireValue,
} from "./wire_values.ts";

/** The XML namespace of SQS answers. */
export const SQS_XML_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/";

/** The most entries a flattened list or map may hold in one request. */
const MAX_INDEX = 1000;

/** Parameters with the index of every dotted prefix of their names. */
class Params {
  readonly #values: URLSearchParams;
  readonly #prefixes = new Set<string>();

  constructor(values: URLSearchParams) {
    this.#values = values;
    for (const name of values.keys()) {
      let at = name.indexOf(".");
      while (at >= 0) {
        this.#prefixes.add(name.slice(0, at));
        at = name.indexOf(".", at + 1);
      }
      this.#prefixes.add(name);
    }
  }

  get(name: string): string | undefined {
    return this.#values.get(name) ?? undefined;
  }

  has(name: string): boolean {
    return this.#prefixes.has(name);
  }
}

/** Decodes the parameters of an action into its input structure, by JSON member names. */
export function decodeQuery(values: URLSearchParams, shape: Shape): WireStruct {
  return decode(new Params(values), "", shape) as WireStruct ?? {};
}

function join(prefix: string, name: string): string {
  return prefix === "" ? name : `${prefix}.${name}`;
}

function decode(params: Params, name: string, shape: Shape): WireValue | undefined {
  switch (shape.t) {
    case "string":
      return params.get(name);
    case "int": {
      const text = params.get(name);
      return text === undefined ? undefined : integerText(text, name);
    }
    case "bool": {
      const text = params.get(name);
      return text === undefined ? undefined : booleanText(text, name);
    }
    case "blob": {
      const text = params.get(name);
      return text === undefined ? undefined : base64Bytes(text, name);
    }
    case "list": {
      if (!params.has(name)) return undefined;
      const out: WireValue[] = [];
      for (let i = 1; params.has(`${name}.${i}`); i++) {
        if (i > MAX_INDEX) throw invalidParameter(name, `more than ${MAX_INDEX} entries`);
        const item = decode(params, `${name}.${i}`, shape.member);
        if (item !== undefined) out.push(item);
      }
      return out;
    }
    case "map": {
      if (!params.has(name)) return undefined;
      const out: WireMap = new Map();
      for (let i = 1; params.has(`${name}.${i}`); i++) {
        if (i > MAX_INDEX) throw invalidParameter(name, `more than ${MAX_INDEX} entries`);
        const key = params.get(`${name}.${i}.${shape.key}`);
        if (key === undefined) throw missingParameter(`${name}.${i}.${shape.key}`);
        const value = decode(params, `${name}.${i}.${shape.value}`, shape.valueShape);
        if (value === undefined) throw missingParameter(`${name}.${i}.${shape.value}`);
        out.set(key, value);
      }
      return out;
    }
    case "struct": {
      if (name !== "" && !params.has(name)) return undefined;
      const out: WireStruct = {};
      for (const [member, spec] of Object.entries(shape.members)) {
        const wireName = spec.shape.t === "list" ? spec.shape.memberName : spec.loc ?? member;
        const value = decode(params, join(name, wireName), spec.shape);
        if (value !== undefined) out[member] = value;
      }
      return out;
    }
  }
}

// deno-lint-ignore no-control-regex
const NOT_XML = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;
// deno-lint-ignore no-control-regex
const NOT_XML_ALL = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

/**
 * Text as XML character data. A carriage return is written as a reference, or a parser would
 * read it as a line feed; a character XML cannot hold at all (NUL, a lone surrogate) becomes
 * U+FFFD.
 */
export function xmlText(text: string): string {
  if (NOT_XML.test(text)) text = text.replace(NOT_XML_ALL, "\ufffd");
  return text.replace(/[&<>"'\r]/g, (c) => XML_ENTITIES[c]);
}

const XML_ENTITIES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&apos;",
  "\r": "&#xD;",
};

function encode(value: unknown, shape: Shape): string {
  switch (shape.t) {
    case "string":
      return xmlText(String(value));
    case "int":
    case "bool":
      return String(value);
    case "blob":
      // Bytes, or base64 text already (what the JSON answer carries as it is).
      return typeof value === "string" ? xmlText(value) : bytesBase64(value as Uint8Array);
    case "struct": {
      let out = "";
      const record = value as Record<string, unknown>;
      for (const [member, spec] of Object.entries(shape.members)) {
        const v = record[member];
        if (v === undefined || v === null) continue;
        const s = spec.shape;
        if (s.t === "list") {
          for (const item of v as unknown[]) {
            out += `<${s.memberName}>${encode(item, s.member)}</${s.memberName}>`;
          }
        } else if (s.t === "map") {
          const name = spec.loc ?? member;
          const entries = v instanceof Map ? [...v] : Object.entries(v as object);
          for (const [key, item] of entries) {
            out += `<${name}><${s.key}>${xmlText(key)}</${s.key}>` +
              `<${s.value}>${encode(item, s.valueShape)}</${s.value}></${name}>`;
          }
        } else {
          const name = spec.loc ?? member;
          out += `<${name}>${encode(v, s)}</${name}>`;
        }
      }
      return out;
    }
    case "list":
    case "map":
      throw new TypeError("Cannot encode a list or map outside a structure");
  }
}

/** The XML answer of `action`: its result (when its output has a shape) and the request id. */
export function encodeXmlAnswer(
  action: string,
  shape: Shape | null,
  output: unknown,
  requestId: string,
): string {
  const result = shape === null
    ? ""
    : `<${action}Result>${encode(output ?? {}, shape)}</${action}Result>`;
  return `<?xml version="1.0"?><${action}Response xmlns="${SQS_XML_NAMESPACE}">${result}` +
    `<ResponseMetadata><RequestId>${requestId}</RequestId></ResponseMetadata>` +
    `</${action}Response>`;
}

/** The XML error answer. */
export function encodeXmlError(error: SqsError, requestId: string): string {
  const kind = error.kind;
  return `<?xml version="1.0"?><ErrorResponse xmlns="${SQS_XML_NAMESPACE}"><Error>` +
    `<Type>${kind.fault}</Type><Code>${xmlText(kind.query)}</Code>` +
    `<Message>${xmlText(error.message)}</Message><Detail/></Error>` +
    `<RequestId>${requestId}</RequestId></ErrorResponse>`;
}
