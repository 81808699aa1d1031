/**
 * The MD5 digests SQS answers with, computed as AWS computes them, since SDKs check them and
 * fail the call on a mismatch:
 *
 * - `MD5OfMessageBody` / `MD5OfBody`: the MD5 of the body's UTF-8 bytes, lowercase hex;
 * - `MD5OfMessageAttributes` (and `MD5OfMessageSystemAttributes`, the same over the system
 *   attributes): the attributes sorted by name, each written as its name, its data type, one
 *   transport byte (1 for a string value, 2 for a binary one) and its value, every text and
 *   value preceded by its length as a 4-byte big-endian integer; the MD5 of all that.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { md5Hex } from "./md5.ts";
import type { MessageAttribute } from "./message_attributes.ts";

/** The lowercase hex MD5 of a message body's UTF-8 bytes (in JavaScript: see `md5.ts`). */
export function md5OfBody(body: string): string {
  return md5Hex(body);
}

const encoder = new TextEncoder();

function lengthPrefixed(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(4 + bytes.length);
  new DataView(out.buffer).setUint32(0, bytes.length);
  out.set(bytes, 4);
  return out;
}

/** The lowercase hex MD5 of message attributes, as AWS computes it (names sorted). */
export function md5OfAttributes(attributes: ReadonlyMap<string, MessageAttribute>): string {
  const hash = createHash("md5");
  const names = [...attributes.keys()].sort();
  for (const name of names) {
    const attribute = attributes.get(name)!;
    hash.update(lengthPrefixed(encoder.encode(name)));
    hash.update(lengthPrefixed(encoder.encode(attribute.dataType)));
    if (attribute.binaryValue !== null) {
      hash.update(Uint8Array.of(2));
      hash.update(lengthPrefixed(attribute.binaryValue));
    } else {
      hash.update(Uint8Array.of(1));
      hash.update(lengthPrefixed(encoder.encode(attribute.stringValue ?? "")));
    }
  }
  return hash.digest("hex");
}
