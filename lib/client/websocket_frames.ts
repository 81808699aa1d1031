/**
 * RFC 6455 framing, shared by the SDK's WebSocket client (`deno_websocket.ts`) and the server's
 * own WebSocket on the front door's connections (`lib/ws/frame_socket.ts`): a frame's head read
 * from bytes, frame heads built, payloads masked and unmasked. No I/O here.
 *
 * @module
 */

/** The frame opcodes. */
export const OP = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 } as const;

/** The GUID that the handshake's `Sec-WebSocket-Accept` is derived with. */
export const HANDSHAKE_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/** What a frame's head says. */
export interface FrameHead {
  /** The final fragment of its message. */
  fin: boolean;
  /** The three reserved bits (non-zero only with an extension, and none is negotiated). */
  rsv: number;
  /** The opcode. */
  op: number;
  /** Whether a masking key follows the length (always so from a client, never from a server). */
  masked: boolean;
  /** Bytes of the head, masking key included: the payload starts there. */
  headLength: number;
  /** Bytes of payload. A 64-bit length past 2^53 reads as a large inexact number. */
  length: number;
}

/** The head of the frame at `bytes[start..end)`, or null until all of the head has arrived. */
export function readFrameHead(bytes: Uint8Array, start: number, end: number): FrameHead | null {
  if (end - start < 2) return null;
  const b0 = bytes[start];
  const b1 = bytes[start + 1];
  let length = b1 & 127;
  let headLength = 2;
  if (length === 126) {
    if (end - start < 4) return null;
    length = (bytes[start + 2] << 8) | bytes[start + 3];
    headLength = 4;
  } else if (length === 127) {
    if (end - start < 10) return null;
    const high = ((bytes[start + 2] << 24) >>> 0) + (bytes[start + 3] << 16) +
      (bytes[start + 4] << 8) + bytes[start + 5];
    const low = ((bytes[start + 6] << 24) >>> 0) + (bytes[start + 7] << 16) +
      (bytes[start + 8] << 8) + bytes[start + 9];
    length = high * 2 ** 32 + low;
    headLength = 10;
  }
  const masked = (b1 & 128) !== 0;
  if (masked) headLength += 4;
  if (end - start < headLength) return null;
  return { fin: (b0 & 128) !== 0, rsv: (b0 >> 4) & 7, op: b0 & 15, masked, headLength, length };
}

/** The size of the head of a frame with `length` bytes of payload (a masked one: 4 more). */
export function headLength(length: number, masked: boolean): number {
  return 2 + (length < 126 ? 0 : length < 65536 ? 2 : 8) + (masked ? 4 : 0);
}

/**
 * Writes the head of a final frame of `op` with `length` bytes of payload into `bytes` at `at`,
 * with room for a masking key when `masked` (its four bytes are left for the caller to fill);
 * answers where the head ends.
 */
export function writeFrameHead(
  bytes: Uint8Array,
  at: number,
  op: number,
  length: number,
  masked: boolean,
): number {
  bytes[at] = 0x80 | op;
  const mask = masked ? 0x80 : 0;
  if (length < 126) {
    bytes[at + 1] = mask | length;
    at += 2;
  } else if (length < 65536) {
    bytes[at + 1] = mask | 126;
    bytes[at + 2] = length >> 8;
    bytes[at + 3] = length & 255;
    at += 4;
  } else {
    bytes[at + 1] = mask | 127;
    new DataView(bytes.buffer, bytes.byteOffset).setBigUint64(at + 2, BigInt(length));
    at += 10;
  }
  return masked ? at + 4 : at;
}

/**
 * The head of a final frame of `op` with `length` bytes of payload, with room for a masking key
 * when `masked` (the key's four bytes are left for the caller to fill).
 */
export function frameHead(op: number, length: number, masked: boolean): Uint8Array {
  const head = new Uint8Array(headLength(length, masked));
  writeFrameHead(head, 0, op, length, masked);
  return head;
}

/** XORs `bytes[at..at+length)` in place with the four-byte key at `bytes[keyAt..keyAt+4)`. */
export function unmask(bytes: Uint8Array, at: number, length: number, key: Uint8Array): void {
  const k0 = key[0], k1 = key[1], k2 = key[2], k3 = key[3];
  const end = at + length;
  let i = at;
  for (; i + 4 <= end; i += 4) {
    bytes[i] ^= k0;
    bytes[i + 1] ^= k1;
    bytes[i + 2] ^= k2;
    bytes[i + 3] ^= k3;
  }
  for (let j = 0; i < end; i++, j++) bytes[i] ^= key[j];
}

/** The payload of a close frame: the code, then the reason cut to fit a control frame. */
export function closePayload(code: number, reason: string): Uint8Array {
  const text = new TextEncoder().encode(reason);
  // A control frame carries at most 125 bytes: 2 for the code, 123 for the reason (cut on a
  // character boundary, so it stays UTF-8).
  let cut = Math.min(text.length, 123);
  while (cut > 0 && cut < text.length && (text[cut] & 0xc0) === 0x80) cut--;
  const payload = new Uint8Array(2 + cut);
  payload[0] = code >> 8;
  payload[1] = code & 255;
  payload.set(text.subarray(0, cut), 2);
  return payload;
}
