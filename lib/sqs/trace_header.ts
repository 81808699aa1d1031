/**
 * `AWSTraceHeader`, the one message system attribute SQS takes on a send: an AWS X-Ray trace
 * header (`Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1`). tegami
 * keeps a job's trace context as its W3C `traceparent` attribute (core/trace_context.ts), so the
 * header is stored converted to one, and a receive that asks for `AWSTraceHeader` gets it back
 * converted from the job's `traceparent` — whichever door the job came through.
 *
 * The `traceparent` is one of the job's attributes: at AWS the header does not count towards a
 * message's 10 attributes, here a message with 10 has no room for it and is refused (a job
 * carries at most 10 through every door), and it counts towards the 4096 bytes a job's
 * attributes take as stored.
 *
 * @module
 */

import { MAX_ATTRIBUTES, readAttributes } from "../core/attributes.ts";
import { TRACEPARENT, traceparentFromXRay, xrayFromTraceparent } from "../core/trace_context.ts";
import type { MessageAttribute } from "./message_attributes.ts";
import { md5OfAttributes } from "./message_md5.ts";
import { SqsError } from "./sqs_error.ts";
import type { WireMap, WireStruct } from "./wire_values.ts";

/** The name of the system attribute. */
export const AWS_TRACE_HEADER = "AWSTraceHeader";

/** A send's trace header, read and checked. */
export interface SentTraceHeader {
  /** The `traceparent` it converts to. */
  traceparent: string;
  /** `MD5OfMessageSystemAttributes`, computed over the system attributes as sent. */
  md5: string;
}

/**
 * Reads and checks a message's `MessageSystemAttributes`: null for none, else the trace header
 * it holds. Refuses, as `InvalidParameterValue`, another name, another type than `String`, and a
 * value that is not an X-Ray trace header with a `Root` and a `Parent`.
 */
export function parseSystemAttributes(map: WireMap | undefined): SentTraceHeader | null {
  if (map === undefined || map.size === 0) return null;
  for (const name of map.keys()) {
    if (name !== AWS_TRACE_HEADER) {
      throw new SqsError(
        "InvalidParameterValue",
        `Message system attribute name '${name.slice(0, 256)}' is invalid: the only one a ` +
          `message may carry is ${AWS_TRACE_HEADER}.`,
      );
    }
  }
  const value = map.get(AWS_TRACE_HEADER) as WireStruct;
  if (value.DataType !== "String") {
    throw new SqsError(
      "InvalidParameterValue",
      `The message system attribute '${AWS_TRACE_HEADER}' must be of type String.`,
    );
  }
  const header = value.StringValue;
  if (
    typeof header !== "string" || value.BinaryValue !== undefined ||
    value.StringListValues !== undefined || value.BinaryListValues !== undefined
  ) {
    throw new SqsError(
      "InvalidParameterValue",
      `The message system attribute '${AWS_TRACE_HEADER}' must use field 'String'.`,
    );
  }
  const traceparent = traceparentFromXRay(header);
  if (traceparent === null) {
    throw new SqsError(
      "InvalidParameterValue",
      `The message system attribute '${AWS_TRACE_HEADER}' must hold an X-Ray trace header ` +
        "with a Root and a Parent: Root=1-<8 hex digits>-<24 hex digits>;Parent=<16 hex " +
        "digits>;Sampled=0|1.",
    );
  }
  const sent = new Map<string, MessageAttribute>([
    [AWS_TRACE_HEADER, { dataType: "String", stringValue: header, binaryValue: null }],
  ]);
  return { traceparent, md5: md5OfAttributes(sent) };
}

/**
 * The message attributes a job stores: `attributes` as sent, with the trace header's
 * `traceparent` unless they carry their own (the message's own trace context wins). Refuses a
 * message whose attributes leave no room for it.
 */
export function withTraceHeader(
  attributes: Map<string, MessageAttribute>,
  sent: SentTraceHeader | null,
): Map<string, MessageAttribute> {
  if (sent === null || attributes.has(TRACEPARENT)) return attributes;
  if (attributes.size >= MAX_ATTRIBUTES) {
    throw new SqsError(
      "InvalidParameterValue",
      `The message system attribute '${AWS_TRACE_HEADER}' needs room among the message's ` +
        `attributes, where tegami keeps it as 'traceparent': send at most ${MAX_ATTRIBUTES - 1} ` +
        "message attributes with it.",
    );
  }
  const out = new Map(attributes);
  out.set(TRACEPARENT, { dataType: "String", stringValue: sent.traceparent, binaryValue: null });
  return out;
}

/**
 * The `AWSTraceHeader` a receive answers for a job's stored attributes (JSON text, or null):
 * its `traceparent` as an X-Ray trace header, or null when it has no valid one.
 */
export function traceHeaderOf(attributes: string | null): string | null {
  // Most jobs carry no trace context: only those that name it are parsed.
  if (attributes === null || !attributes.includes(`"${TRACEPARENT}"`)) return null;
  const traceparent = readAttributes(attributes).get(TRACEPARENT);
  if (traceparent === undefined || !traceparent.type.startsWith("String")) return null;
  return xrayFromTraceparent(traceparent.value);
}
