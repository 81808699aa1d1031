/**
 * Lease tokens: 128 random bits from the platform's CSPRNG, base64url without padding.
 *
 * @module
 */

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A fresh, unguessable lease token (22 characters). */
export function newLeaseToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let out = "";
  // 16 bytes = 5 groups of 3 bytes + 1 byte: 20 + 2 characters.
  for (let i = 0; i < 15; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += ALPHABET[n >> 18] + ALPHABET[(n >> 12) & 63] + ALPHABET[(n >> 6) & 63] +
      ALPHABET[n & 63];
  }
  return out + ALPHABET[bytes[15] >> 2] + ALPHABET[(bytes[15] & 3) << 4];
}
