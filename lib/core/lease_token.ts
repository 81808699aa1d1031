/**
 * Lease tokens: 128 random bits from the platform's CSPRNG, base64url without padding. The
 * random bytes are drawn 4 KiB at a time and each used once: one call into the CSPRNG per 256
 * tokens instead of one per token.
 *
 * @module
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const POOL_BYTES = 4096;
const TOKEN_BYTES = 16;

const pool = new Uint8Array(POOL_BYTES);
let used = POOL_BYTES;

/** A fresh, unguessable lease token (22 characters). */
export function newLeaseToken(): string {
  if (used === POOL_BYTES) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  const at = used;
  used += TOKEN_BYTES;
  let out = "";
  // 16 bytes = 5 groups of 3 bytes + 1 byte: 20 + 2 characters.
  for (let i = at; i < at + 15; i += 3) {
    const n = (pool[i] << 16) | (pool[i + 1] << 8) | pool[i + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] +
      ALPHABET[n & 63];
  }
  const last = pool[at + 15];
  return out + ALPHABET[last >> 2] + ALPHABET[(last & 3) << 4];
}
