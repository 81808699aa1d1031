/**
 * Raw HTTP over a TCP connection, for tests that must send bytes no HTTP client would (half-sent
 * heads, requests back to back, bodies in pieces) and read exactly what the server answers.
 */

const decoder = new TextDecoder();

/** Reads until the peer closes (or `ms` pass); answers the text and how long it took. */
export async function readToClose(
  conn: Deno.Conn,
  ms = 10_000,
): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  let text = "";
  const buffer = new Uint8Array(16 * 1024);
  const timer = setTimeout(() => conn.close(), ms);
  try {
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      text += decoder.decode(buffer.subarray(0, n));
    }
  } catch {
    // closed by the timer or reset by the peer: either way, done
  } finally {
    clearTimeout(timer);
  }
  return { text, ms: performance.now() - started };
}
