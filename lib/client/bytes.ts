/**
 * Joining chunks of bytes that arrived apart (a fragmented message, an answer read in pieces),
 * shared by the client's own WebSocket and HTTP/1.1 transports.
 *
 * @module
 */

/** The bytes of `parts` in order, as one array (the one part itself when there is only one). */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
