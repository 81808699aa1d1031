/**
 * MD5 (RFC 1321) of a text's UTF-8 bytes, in JavaScript. SQS answers the MD5 of every body it
 * takes and gives, and a message's body is short: for those, `node:crypto`'s `createHash` costs
 * three runtime calls per digest, several times the hashing itself, so the SQS API hashes here.
 * Not for secrets: MD5 is only the checksum SQS clients verify.
 *
 * @module
 */

/** Per-round left rotations: each round's four, four times over. */
const SHIFTS = Uint8Array.from(
  [[7, 12, 17, 22], [5, 9, 14, 20], [4, 11, 16, 23], [6, 10, 15, 21]]
    .flatMap((four) => [...four, ...four, ...four, ...four]),
);

/** Per-round constants: the integer part of |sin(i + 1)| · 2³² (RFC 1321 §3.4). */
const K = Int32Array.from(
  { length: 64 },
  (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32),
);

/** Each byte as two lowercase hex digits. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

const encoder = new TextEncoder();
/** The padded message of short texts, reused; longer ones get their own. */
let scratch = new Uint8Array(4096);
const SCRATCH_MOST = 64 * 1024;
const words = new Int32Array(16);

/** The lowercase hex MD5 of `text`'s UTF-8 bytes. */
export function md5Hex(text: string): string {
  // UTF-8 takes at most 3 bytes per UTF-16 unit; 72 more hold the padding and the length.
  const room = text.length * 3 + 72;
  let buffer = scratch;
  if (room > buffer.length) {
    buffer = new Uint8Array(room);
    if (room <= SCRATCH_MOST) scratch = buffer;
  }
  const n = encoder.encodeInto(text, buffer).written;
  const padded = ((n + 8) >>> 6) + 1 << 6;
  buffer[n] = 0x80;
  buffer.fill(0, n + 1, padded - 8);
  // The length in bits, 64 bits little-endian.
  const bits = n * 8;
  const low = bits >>> 0;
  const high = Math.floor(bits / 2 ** 32);
  for (let i = 0; i < 4; i++) {
    buffer[padded - 8 + i] = low >>> (8 * i);
    buffer[padded - 4 + i] = high >>> (8 * i);
  }
  let a0 = 0x67452301, b0 = 0xefcdab89 | 0, c0 = 0x98badcfe | 0, d0 = 0x10325476;
  for (let off = 0; off < padded; off += 64) {
    for (let j = 0; j < 16; j++) {
      const at = off + j * 4;
      words[j] = buffer[at] | buffer[at + 1] << 8 | buffer[at + 2] << 16 | buffer[at + 3] << 24;
    }
    let a = a0, b = b0, c = c0, d = d0;
    for (let i = 0; i < 64; i++) {
      let f: number, g: number;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) & 15;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) & 15;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) & 15;
      }
      f = (f + a + K[i] + words[g]) | 0;
      a = d;
      d = c;
      c = b;
      const s = SHIFTS[i];
      b = (b + ((f << s) | (f >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  let hex = "";
  for (const word of [a0, b0, c0, d0]) {
    hex += HEX[word & 0xff] + HEX[(word >>> 8) & 0xff] + HEX[(word >>> 16) & 0xff] +
      HEX[word >>> 24];
  }
  return hex;
}
