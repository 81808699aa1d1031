/**
 * Decoding UTF-8 that must be valid (request bodies, WebSocket text frames) at the speed of
 * decoding that need not be: the runtime's fatal decoder costs several times its replacing one on
 * ASCII text, short or long (docs/performance.md).
 * Invalid UTF-8 always decodes to at least one U+FFFD, so text without one came from valid bytes;
 * text with one (invalid bytes, or a U+FFFD the sender meant) is decoded again by the fatal
 * decoder, which throws for the first and answers the same text for the second.
 *
 * @module
 */

/** Decodes bytes that must be valid UTF-8; throws a `TypeError` when they are not. */
export type StrictUtf8Decode = (bytes: Uint8Array) => string;

/**
 * A strict decoder. With `keepBom`, a leading byte-order mark stays in the text (a WebSocket
 * message's bytes are its text); without, it is dropped, as `TextDecoder` does by default.
 */
export function strictUtf8Decoder(keepBom = false): StrictUtf8Decode {
  const replacing = new TextDecoder("utf-8", { ignoreBOM: keepBom });
  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: keepBom });
  return (bytes) => {
    const text = replacing.decode(bytes);
    return text.indexOf("\uFFFD") < 0 ? text : fatal.decode(bytes);
  };
}
