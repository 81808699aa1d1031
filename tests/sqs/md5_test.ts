/**
 * The SQS API's own MD5 (lib/sqs/md5.ts) against `node:crypto`'s, over texts of every length
 * around the block and padding boundaries, multi-byte and astral characters, and RFC 1321's
 * test suite (appendix A.5).
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import { md5Hex } from "../../lib/sqs/md5.ts";

const reference = (text: string) => createHash("md5").update(text, "utf8").digest("hex");

Deno.test("md5Hex() answers RFC 1321's test suite", () => {
  const suite: [string, string][] = [
    ["", "d41d8cd98f00b204e9800998ecf8427e"],
    ["a", "0cc175b9c0f1b6a831c399e269772661"],
    ["abc", "900150983cd24fb0d6963f7d28e17f72"],
    ["message digest", "f96b697d7cb7938d525a2f31aaf161d0"],
    ["abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"],
    [
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
      "d174ab98d277d9f5a5611c2c9f419d9f",
    ],
    ["1234567890".repeat(8), "57edf4a22be3c955ac49da2e2107b67a"],
  ];
  for (const [text, digest] of suite) assert.equal(md5Hex(text), digest, JSON.stringify(text));
});

Deno.test("md5Hex() agrees with node:crypto on every length around the 64-byte blocks", () => {
  for (let n = 0; n <= 300; n++) {
    for (const unit of ["x", "é", "👋", "\u{10ffff}", "a\u0800"]) {
      const text = unit.repeat(n).slice(0, Math.max(n, 0));
      assert.equal(md5Hex(text), reference(text), `${n} × ${JSON.stringify(unit)}`);
    }
  }
  // Longer than the reused buffer, and after it, a short one again.
  for (const text of ["y".repeat(70_000), "é".repeat(30_000), "z"]) {
    assert.equal(md5Hex(text), reference(text));
  }
});

Deno.test("md5Hex() agrees with node:crypto on any text", () => {
  fc.assert(
    fc.property(fc.string({ unit: "grapheme", maxLength: 400 }), (text) => {
      assert.equal(md5Hex(text), reference(text));
    }),
    { numRuns: 2000 },
  );
});
