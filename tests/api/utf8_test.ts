/**
 * The strict UTF-8 decoder of bodies and frames: it answers exactly what the runtime's fatal
 * decoder answers, text for valid bytes (a U+FFFD the sender meant included) and a `TypeError`
 * for invalid ones, and keeps or drops a leading byte-order mark as asked.
 */

import assert from "node:assert/strict";
import { strictUtf8Decoder } from "../../lib/api/utf8.ts";
import { utf8Length } from "../../lib/api/requests.ts";

const bytes = (...values: number[]) => new Uint8Array(values);
const encode = (text: string) => new TextEncoder().encode(text);

Deno.test("strictUtf8Decoder answers the text of valid UTF-8, a meant U+FFFD included", () => {
  const decode = strictUtf8Decoder();
  for (
    const text of ["", '{"payload":1}', "é, 日本, 😀", "a\uFFFDb", "\uFFFD", "x".repeat(100_000)]
  ) {
    assert.equal(decode(encode(text)), text);
  }
});

Deno.test("strictUtf8Decoder throws a TypeError for every kind of invalid UTF-8", () => {
  const decode = strictUtf8Decoder();
  const fatal = new TextDecoder("utf-8", { fatal: true });
  const invalid: [string, Uint8Array][] = [
    ["a lone continuation byte", bytes(0x61, 0x80, 0x62)],
    ["a sequence cut at the end", bytes(0x61, 0xe6, 0x97)],
    ["an overlong encoding of '/'", bytes(0xc0, 0xaf)],
    ["a surrogate encoded as UTF-8", bytes(0xed, 0xa0, 0x80)],
    ["a code point past U+10FFFF", bytes(0xf4, 0x90, 0x80, 0x80)],
    ["a byte never used in UTF-8", bytes(0xff)],
    ["invalid bytes beside a meant U+FFFD", new Uint8Array([...encode("\uFFFD"), 0x80])],
  ];
  for (const [what, input] of invalid) {
    assert.throws(() => fatal.decode(input), TypeError, `the runtime refuses ${what}`);
    assert.throws(() => decode(input), TypeError, what);
  }
});

Deno.test("strictUtf8Decoder keeps a leading byte-order mark only when asked", () => {
  const withBom = new Uint8Array([0xef, 0xbb, 0xbf, ...encode("{}")]);
  assert.equal(strictUtf8Decoder()(withBom), "{}");
  assert.equal(strictUtf8Decoder(true)(withBom), "\uFEFF{}");
  // The replacing pass and the fatal one agree on the mark when a U+FFFD sends the text to both.
  const bomAndReplacement = new Uint8Array([0xef, 0xbb, 0xbf, ...encode("\uFFFD")]);
  assert.equal(strictUtf8Decoder()(bomAndReplacement), "\uFFFD");
  assert.equal(strictUtf8Decoder(true)(bomAndReplacement), "\uFEFF\uFFFD");
});

Deno.test("utf8Length counts the bytes of ASCII and of every wider character", () => {
  for (const text of ["", "ascii only", "é", "日本", "😀", "a😀é日", "\u007f\u0080\u07ff\u0800"]) {
    assert.equal(utf8Length(text), encode(text).byteLength, JSON.stringify(text));
  }
});
