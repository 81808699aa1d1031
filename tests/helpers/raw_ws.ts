/**
 * A minimal WebSocket client over `Deno.connect`, for what the standard `WebSocket` hides: the
 * HTTP status of a refused upgrade ({@linkcode upgradeStatus}), and a peer that misbehaves on
 * purpose ({@linkcode RawWs}): it never reads unless asked and never answers a ping unless told
 * to, so a test can play a dead or slow consumer. Frames it sends are masked, as RFC 6455
 * requires of clients.
 *
 * @module
 */

/** WebSocket opcodes. */
export const OPCODE = {
  continuation: 0x0,
  text: 0x1,
  binary: 0x2,
  close: 0x8,
  ping: 0x9,
  pong: 0xa,
} as const;

/** A frame as read from the wire. */
export interface RawFrame {
  /** The FIN bit. */
  fin: boolean;
  /** The opcode. */
  opcode: number;
  /** The unmasked payload. */
  payload: Uint8Array;
}

/** The server's answer to a handshake. */
export interface HandshakeAnswer {
  /** HTTP status (101 when upgraded). */
  status: number;
  /** Response headers. */
  headers: Headers;
  /** The body, parsed as JSON when it is JSON (empty string for 101). */
  // deno-lint-ignore no-explicit-any
  body: any;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function indexOfHeadEnd(buf: Uint8Array): number {
  for (let i = 0; i + 3 < buf.length; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  }
  return -1;
}

/** Options of a raw handshake. */
export interface RawOptions {
  /** Extra or overriding request headers (`Host`, `Origin`, `Authorization`, …). */
  headers?: Record<string, string>;
  /** How long to wait for the answer, ms. @default 2000 */
  timeoutMs?: number;
}

/** A TCP connection with a read buffer and reads that can time out without being lost. */
class Wire {
  readonly conn: Deno.TcpConn;
  buf: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  eof = false;
  #reading: Promise<Uint8Array | null> | null = null;

  constructor(conn: Deno.TcpConn) {
    this.conn = conn;
  }

  /** Reads more bytes into the buffer; false at end of stream; throws after `timeoutMs`. */
  async more(timeoutMs: number): Promise<boolean> {
    if (this.eof) return false;
    this.#reading ??= (async () => {
      const chunk = new Uint8Array(256 * 1024);
      try {
        const n = await this.conn.read(chunk);
        return n === null ? null : chunk.subarray(0, n);
      } catch {
        return null; // reset or closed: the same as the end for a test
      }
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    const got = await Promise.race([this.#reading, timeout]);
    clearTimeout(timer);
    if (got === "timeout") throw new Error(`Nothing read from the server in ${timeoutMs} ms`);
    this.#reading = null;
    if (got === null) {
      this.eof = true;
      return false;
    }
    this.buf = concat(this.buf, got);
    return true;
  }

  async write(bytes: Uint8Array): Promise<void> {
    let done = 0;
    while (done < bytes.length) done += await this.conn.write(bytes.subarray(done));
  }

  /** Closes the connection and waits for a read in progress to give up. */
  async close(): Promise<void> {
    try {
      this.conn.close();
    } catch {
      // already closed
    }
    if (this.#reading !== null) await this.#reading;
    this.#reading = null;
  }
}

async function handshake(url: string, options: RawOptions): Promise<[HandshakeAnswer, Wire]> {
  const target = new URL(url);
  const conn = await Deno.connect({
    hostname: target.hostname,
    port: Number(target.port || (target.protocol === "wss:" ? 443 : 80)),
  });
  const wire = new Wire(conn);
  const timeoutMs = options.timeoutMs ?? 2000;
  try {
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    const headers = new Map<string, [string, string]>();
    const put = (name: string, value: string) => headers.set(name.toLowerCase(), [name, value]);
    put("Host", target.host);
    put("Upgrade", "websocket");
    put("Connection", "Upgrade");
    put("Sec-WebSocket-Key", key);
    put("Sec-WebSocket-Version", "13");
    for (const [name, value] of Object.entries(options.headers ?? {})) put(name, value);
    let head = `GET ${target.pathname}${target.search} HTTP/1.1\r\n`;
    for (const [name, value] of headers.values()) head += `${name}: ${value}\r\n`;
    await wire.write(encoder.encode(head + "\r\n"));

    let end: number;
    while ((end = indexOfHeadEnd(wire.buf)) < 0) {
      if (!await wire.more(timeoutMs)) throw new Error("The server closed during the handshake");
    }
    const lines = decoder.decode(wire.buf.subarray(0, end)).split("\r\n");
    wire.buf = wire.buf.subarray(end + 4);
    const status = Number(lines[0].split(" ")[1]);
    const answerHeaders = new Headers();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      answerHeaders.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    let body: unknown = "";
    if (status !== 101) {
      const length = Number(answerHeaders.get("content-length") ?? 0);
      while (wire.buf.length < length && await wire.more(timeoutMs));
      const text = decoder.decode(wire.buf.subarray(0, length));
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    return [{ status, headers: answerHeaders, body }, wire];
  } catch (error) {
    await wire.close();
    throw error;
  }
}

/**
 * Sends a WebSocket handshake and answers the server's HTTP status, headers and body, then
 * drops the connection (an accepted upgrade is simply abandoned).
 */
export async function upgradeStatus(
  url: string,
  options: RawOptions = {},
): Promise<HandshakeAnswer> {
  const [answer, wire] = await handshake(url, options);
  await wire.close();
  return answer;
}

/** A client frame (masked with a random key, as RFC 6455 requires) as bytes. */
export function maskedFrame(opcode: number, payload: Uint8Array, fin = true): Uint8Array {
  const n = payload.length;
  const lengthBytes = n < 126 ? 0 : n < 65536 ? 2 : 8;
  const frame = new Uint8Array(2 + lengthBytes + 4 + n);
  const view = new DataView(frame.buffer);
  frame[0] = (fin ? 0x80 : 0) | opcode;
  if (lengthBytes === 0) frame[1] = 0x80 | n;
  else if (lengthBytes === 2) {
    frame[1] = 0x80 | 126;
    view.setUint16(2, n);
  } else {
    frame[1] = 0x80 | 127;
    view.setBigUint64(2, BigInt(n));
  }
  const maskAt = 2 + lengthBytes;
  const mask = crypto.getRandomValues(new Uint8Array(4));
  frame.set(mask, maskAt);
  for (let i = 0; i < n; i++) frame[maskAt + 4 + i] = payload[i] ^ mask[i & 3];
  return frame;
}

/** A raw WebSocket client that does only what it is told. */
export class RawWs implements AsyncDisposable {
  readonly #wire: Wire;

  private constructor(wire: Wire) {
    this.#wire = wire;
  }

  /** Opens a WebSocket; throws with the status if the server does not upgrade. */
  static async connect(url: string, options: RawOptions = {}): Promise<RawWs> {
    const [answer, wire] = await handshake(url, options);
    if (answer.status !== 101) {
      await wire.close();
      throw new Error(`Cannot open ${url}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
    }
    return new RawWs(wire);
  }

  /** Writes bytes as they are, framed or not (protocol fuzzing). */
  async writeRaw(bytes: Uint8Array): Promise<void> {
    await this.#wire.write(bytes);
  }

  /** Sends one masked frame. */
  async sendFrame(opcode: number, payload: Uint8Array, fin = true): Promise<void> {
    await this.#wire.write(maskedFrame(opcode, payload, fin));
  }

  /** Sends a text frame; an object is sent as JSON. */
  send(frame: Record<string, unknown> | string): Promise<void> {
    const text = typeof frame === "string" ? frame : JSON.stringify(frame);
    return this.sendFrame(OPCODE.text, encoder.encode(text));
  }

  /** Answers a ping (only when a test asks for it). */
  pong(payload: Uint8Array = new Uint8Array(0)): Promise<void> {
    return this.sendFrame(OPCODE.pong, payload);
  }

  /** Reads the next frame of any kind, pings included; null at the end of the stream. */
  async readFrame(timeoutMs = 2000): Promise<RawFrame | null> {
    const wire = this.#wire;
    for (;;) {
      const frame = this.#parse();
      if (frame !== null) return frame;
      if (!await wire.more(timeoutMs)) return null;
    }
  }

  /**
   * Reads frames until a text frame that parses to an object matching `predicate`; skips
   * control frames without answering them. Throws at the end of the stream.
   */
  // deno-lint-ignore no-explicit-any
  async next(predicate: (frame: any) => boolean = () => true, timeoutMs = 2000): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const frame = await this.readFrame(Math.max(1, deadline - Date.now()));
      if (frame === null) throw new Error("The server closed the connection");
      if (frame.opcode !== OPCODE.text) continue;
      const value = JSON.parse(decoder.decode(frame.payload));
      if (predicate(value)) return value;
    }
  }

  /**
   * Reads (without answering pings) until the server's close frame or the end of the stream;
   * answers the close code (null if the stream ended without one) and the pings seen.
   */
  async closed(timeoutMs = 2000): Promise<{ code: number | null; pings: number }> {
    const deadline = Date.now() + timeoutMs;
    let pings = 0;
    for (;;) {
      const frame = await this.readFrame(Math.max(1, deadline - Date.now()));
      if (frame === null) return { code: null, pings };
      if (frame.opcode === OPCODE.ping) pings++;
      if (frame.opcode === OPCODE.close) {
        const code = frame.payload.length >= 2
          ? new DataView(frame.payload.buffer, frame.payload.byteOffset).getUint16(0)
          : 1005;
        return { code, pings };
      }
    }
  }

  /** Drops the TCP connection without a closing handshake. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.#wire.close();
  }

  #parse(): RawFrame | null {
    const buf = this.#wire.buf;
    if (buf.length < 2) return null;
    const masked = (buf[1] & 0x80) !== 0;
    let length = buf[1] & 0x7f;
    let at = 2;
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    if (length === 126) {
      if (buf.length < 4) return null;
      length = view.getUint16(2);
      at = 4;
    } else if (length === 127) {
      if (buf.length < 10) return null;
      length = Number(view.getBigUint64(2));
      at = 10;
    }
    const maskAt = at;
    if (masked) at += 4;
    if (buf.length < at + length) return null;
    const payload = buf.slice(at, at + length);
    if (masked) { for (let i = 0; i < length; i++) payload[i] ^= buf[maskAt + (i & 3)]; }
    this.#wire.buf = buf.subarray(at + length);
    return { fin: (buf[0] & 0x80) !== 0, opcode: buf[0] & 0x0f, payload };
  }
}
