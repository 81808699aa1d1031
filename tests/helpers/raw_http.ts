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

/** One answer read off the wire. */
export interface RawAnswer {
  /** The status code. */
  status: number;
  /** The header fields, names lower-cased (a repeated one keeps its last value). */
  headers: Map<string, string>;
  /** The body (chunked bodies decoded). */
  body: string;
}

/**
 * Splits the bytes a server wrote into its answers, in order. `bodiless` counts the first answers
 * that had no body whatever their `content-length` says (those to HEAD requests). An answer cut
 * short ends the list.
 */
export function splitAnswers(text: string, bodiless = 0): RawAnswer[] {
  const answers: RawAnswer[] = [];
  let at = 0;
  while (at < text.length) {
    const headEnd = text.indexOf("\r\n\r\n", at);
    if (headEnd < 0) break;
    const lines = text.slice(at, headEnd).split("\r\n");
    const status = Number(lines[0].split(" ")[1]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
    }
    at = headEnd + 4;
    let body = "";
    if (answers.length < bodiless || status === 204 || status === 304 || status < 200) {
      // no body
    } else if (headers.get("transfer-encoding")?.toLowerCase() === "chunked") {
      for (;;) {
        const lineEnd = text.indexOf("\r\n", at);
        if (lineEnd < 0) return answers;
        const size = parseInt(text.slice(at, lineEnd), 16);
        at = lineEnd + 2;
        if (size === 0) {
          at = text.indexOf("\r\n", at) + 2;
          break;
        }
        body += text.slice(at, at + size);
        at += size + 2;
      }
    } else {
      const length = Number(headers.get("content-length") ?? 0);
      body = text.slice(at, at + length);
      at += length;
    }
    answers.push({ status, headers, body });
  }
  return answers;
}

/**
 * Sends `bytes` on a new connection to `port` and answers everything the server wrote until it
 * closed, or until `quietMs` passed without a byte once something arrived, or `ms` in all.
 */
export async function exchange(
  port: number,
  bytes: string,
  { quietMs = 150, ms = 3000 }: { quietMs?: number; ms?: number } = {},
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const data = new TextEncoder().encode(bytes);
  try {
    let at = 0;
    while (at < data.length) at += await conn.write(data.subarray(at));
  } catch {
    // the server closed early (a refusal): what it wrote is still read below
  }
  const started = performance.now();
  const buffer = new Uint8Array(64 * 1024);
  let text = "";
  let reading: Promise<number | null> | null = null;
  try {
    for (;;) {
      const left = ms - (performance.now() - started);
      if (left <= 0) break;
      reading ??= conn.read(buffer);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const wait = text === "" ? left : Math.min(left, quietMs);
      const n = await Promise.race([
        reading,
        new Promise<"quiet">((resolve) => timer = setTimeout(() => resolve("quiet"), wait)),
      ]);
      clearTimeout(timer);
      if (n === "quiet") break;
      reading = null;
      if (n === null) break;
      text += decoder.decode(buffer.subarray(0, n));
    }
  } catch {
    // reset by the peer: what arrived is the answer
  } finally {
    conn.close();
    await reading?.catch(() => null);
  }
  return text;
}
