/**
 * The values a decoded SQS request holds, whichever protocol carried it, and the checks both
 * decoders share: integers, booleans and base64 blobs.
 *
 * A decoded request is a {@linkcode WireStruct}: members by their JSON name; a list is an array,
 * a map a `Map` (so a member named `__proto__` is only a name), a blob its bytes.
 *
 * @module
 */

import { invalidParameter } from "./sqs_error.ts";

/** A decoded value. */
export type WireValue = string | number | boolean | Uint8Array | WireValue[] | WireMap | WireStruct;

/** A decoded map. */
export type WireMap = Map<string, WireValue>;

/** A decoded structure: members by JSON name. */
export type WireStruct = { [member: string]: WireValue | undefined };

const INTEGER = /^-?[0-9]{1,15}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** An integer written as text (query protocol), or `InvalidParameterValue` naming `name`. */
export function integerText(text: string, name: string): number {
  if (!INTEGER.test(text)) throw invalidParameter(name, "expected an integer");
  return Number(text);
}

/** A boolean written as text (query protocol), or `InvalidParameterValue` naming `name`. */
export function booleanText(text: string, name: string): boolean {
  if (text === "true") return true;
  if (text === "false") return false;
  throw invalidParameter(name, "expected true or false");
}

/** The bytes of a base64 text, or `InvalidParameterValue` naming `name`. */
export function base64Bytes(text: string, name: string): Uint8Array {
  if (!BASE64.test(text)) throw invalidParameter(name, "expected base64");
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

/** Bytes as base64 text. */
export function bytesBase64(bytes: Uint8Array): string {
  let raw = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    raw += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(raw);
}
