/**
 * A WebSocket client for Deno over a TCP connection with `TCP_NODELAY`, which the consumer uses
 * in Deno for `ws://` URLs. Deno's own `WebSocket` writes a frame's header and its payload as two
 * TCP writes without `TCP_NODELAY`, so Nagle's algorithm holds the payload of any frame over
 * 1 KiB until the server's delayed ACK (docs/performance.md, "Where the speed comes from") — and
 * any frame sent right after another waits the same way. This client writes each frame with one
 * write and turns Nagle off.
 *
 * It implements what the consumer needs of the standard `WebSocket` (RFC 6455): the handshake
 * with one subprotocol, text and binary messages (fragmented ones too), ping/pong, the close
 * handshake, and the `onopen`/`onmessage`/`onclose`/`onerror` handlers. Browsers and Node ≥ 22
 * keep using their own `WebSocket`, which sets `TCP_NODELAY`.
 *
 * @module
 */

import {
  closePayload,
  frameHead,
  HANDSHAKE_GUID,
  OP,
  readFrameHead,
  unmask,
} from "./websocket_frames.ts";
import { concatBytes } from "./bytes.ts";

/** The `WebSocket` constructor to use in this runtime for `consume`. */
export function nodelayWebSocket(): typeof WebSocket | null {
  const deno = (globalThis as { Deno?: { connect?: unknown } }).Deno;
  if (typeof deno?.connect !== "function") return null;
  return DenoWebSocket as unknown as typeof WebSocket;
}

/** A message event: the text (or bytes) of one message. */
export interface MessageLike {
  /** The message. */
  data: string | ArrayBuffer;
}

/** A close event: the close code and reason. */
export interface CloseLike {
  /** The close code. */
  code: number;
  /** The close reason. */
  reason: string;
  /** Whether the closing handshake completed. */
  wasClean: boolean;
}

/** A WebSocket client on a `Deno.TcpConn` with `TCP_NODELAY`. */
export class DenoWebSocket {
  /** The states, as the standard names them. */
  static readonly CONNECTING = 0;
  /** Open. */
  static readonly OPEN = 1;
  /** Closing. */
  static readonly CLOSING = 2;
  /** Closed. */
  static readonly CLOSED = 3;

  /** Called once the handshake succeeded. */
  onopen: ((event: Event) => void) | null = null;
  /** Called for each message. */
  onmessage: ((event: MessageLike) => void) | null = null;
  /** Called once when the connection ends. */
  onclose: ((event: CloseLike) => void) | null = null;
  /** Called when the connection fails (a close follows). */
  onerror: ((event: Event) => void) | null = null;
  /** The subprotocol the server chose, or "". */
  protocol = "";
  /** CONNECTING, OPEN, CLOSING or CLOSED. */
  readyState: number = DenoWebSocket.CONNECTING;
  /** How binary messages are handed over (only `arraybuffer`). */
  binaryType = "arraybuffer";
  /** Bytes accepted by send() and not yet written. */
  bufferedAmount = 0;

  #conn: Deno.TcpConn | null = null;
  #writing: Promise<void> = Promise.resolve();
  #closeSent = false;
  #closed = false;
  #fragments: Uint8Array[] = [];
  #fragmentOp = 0;

  /** Connects to a `ws://` URL, offering `protocols`. */
  constructor(url: string | URL, protocols?: string | string[]) {
    const target = new URL(url);
    if (target.protocol !== "ws:") {
      throw new TypeError(`Cannot connect to ${target.href}: only ws:// URLs are supported`);
    }
    const offered = protocols === undefined ? [] : [protocols].flat();
    this.#open(target, offered).catch(() => this.#end(1006, "", false, true));
  }

  /** Sends a text message (or bytes as a binary one). */
  send(data: string | ArrayBufferLike | ArrayBufferView): void {
    if (this.readyState === DenoWebSocket.CONNECTING) {
      throw new DOMException("Cannot send before the socket is open", "InvalidStateError");
    }
    if (this.readyState !== DenoWebSocket.OPEN) return;
    if (typeof data === "string") this.#write(OP.text, new TextEncoder().encode(data));
    else if (ArrayBuffer.isView(data)) {
      this.#write(OP.binary, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } else this.#write(OP.binary, new Uint8Array(data as ArrayBuffer));
  }

  /** Starts the close handshake. */
  close(code = 1000, reason = ""): void {
    if (this.readyState >= DenoWebSocket.CLOSING) return;
    if (this.readyState === DenoWebSocket.CONNECTING) {
      this.#end(1006, "", false, false);
      return;
    }
    this.readyState = DenoWebSocket.CLOSING;
    this.#sendClose(code, reason);
    // A server that never answers the close must not keep the connection forever.
    const timer = setTimeout(() => this.#end(code, reason, false, false), 2000);
    Deno.unrefTimer(timer);
  }

  async #open(url: URL, offered: string[]): Promise<void> {
    const conn = await Deno.connect({
      hostname: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(url.port || 80),
    });
    this.#conn = conn;
    conn.setNoDelay(true);
    if (this.#closed) {
      conn.close();
      return;
    }
    const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
    const lines = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      "Upgrade: websocket",
      "Connection: Upgrade",
      `Sec-WebSocket-Key: ${key}`,
      "Sec-WebSocket-Version: 13",
    ];
    if (offered.length > 0) lines.push(`Sec-WebSocket-Protocol: ${offered.join(", ")}`);
    await writeAll(conn, new TextEncoder().encode(lines.join("\r\n") + "\r\n\r\n"));
    const reader = new FrameReader(conn);
    const head = await reader.headers();
    const status = head.match(/^HTTP\/1\.1 (\d{3})/)?.[1];
    const header = (name: string) =>
      head.match(new RegExp(`^${name}:\\s*(.*?)\\s*$`, "im"))?.[1] ?? null;
    const digest = await crypto.subtle.digest(
      "SHA-1",
      new TextEncoder().encode(key + HANDSHAKE_GUID),
    );
    const accept = btoa(String.fromCharCode(...new Uint8Array(digest)));
    if (status !== "101" || header("sec-websocket-accept") !== accept) {
      throw new Error(`Cannot open ${url.href}: the upgrade answered ${status ?? "nothing"}`);
    }
    this.protocol = header("sec-websocket-protocol") ?? "";
    this.readyState = DenoWebSocket.OPEN;
    this.onopen?.(new Event("open"));
    await this.#read(reader);
  }

  async #read(reader: FrameReader): Promise<void> {
    for (;;) {
      const frame = await reader.frame();
      if (frame === null) {
        this.#end(1006, "", false, this.readyState === DenoWebSocket.OPEN);
        return;
      }
      const { fin, op, payload } = frame;
      if (op === OP.ping) this.#write(OP.pong, payload);
      else if (op === OP.pong) continue;
      else if (op === OP.close) {
        const code = payload.length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
        const reason = new TextDecoder().decode(payload.subarray(2));
        if (!this.#closeSent) this.#sendClose(code === 1005 ? 1000 : code, "");
        await this.#writing;
        this.#end(code, reason, true, false);
        return;
      } else {
        if (op !== OP.continuation) this.#fragmentOp = op;
        this.#fragments.push(payload);
        if (!fin) continue;
        const whole = concatBytes(this.#fragments);
        this.#fragments = [];
        if (this.readyState !== DenoWebSocket.OPEN) continue;
        const data = this.#fragmentOp === OP.text
          ? new TextDecoder().decode(whole)
          : whole.slice().buffer as ArrayBuffer;
        this.onmessage?.({ data });
      }
    }
  }

  #sendClose(code: number, reason: string): void {
    this.#closeSent = true;
    this.#write(OP.close, closePayload(code, reason));
  }

  /** Queues one frame: header and masked payload in one buffer, written with one write. */
  #write(op: number, payload: Uint8Array): void {
    const conn = this.#conn;
    if (conn === null || this.#closed) return;
    const frame = encodeFrame(op, payload);
    this.bufferedAmount += frame.length;
    this.#writing = this.#writing.then(async () => {
      try {
        await writeAll(conn, frame);
      } finally {
        this.bufferedAmount -= frame.length;
      }
    }).catch(() => this.#end(1006, "", false, true));
  }

  #end(code: number, reason: string, wasClean: boolean, failed: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.readyState = DenoWebSocket.CLOSED;
    try {
      this.#conn?.close();
    } catch {
      // already closed
    }
    if (failed) this.onerror?.(new Event("error"));
    this.onclose?.({ code, reason, wasClean });
  }
}

/** A client frame: FIN set, masked with a fresh key. */
function encodeFrame(op: number, payload: Uint8Array): Uint8Array {
  const head = frameHead(op, payload.length, true);
  const mask = crypto.getRandomValues(new Uint8Array(4));
  head.set(mask, head.length - 4);
  const frame = new Uint8Array(head.length + payload.length);
  frame.set(head);
  frame.set(payload, head.length);
  unmask(frame, head.length, payload.length, mask);
  return frame;
}

async function writeAll(conn: Deno.TcpConn, bytes: Uint8Array): Promise<void> {
  let at = 0;
  while (at < bytes.length) at += await conn.write(bytes.subarray(at));
}

/** Reads the upgrade's answer, then frames, from a connection. */
class FrameReader {
  readonly #conn: Deno.TcpConn;
  #buffer = new Uint8Array(64 * 1024);
  #start = 0;
  #end = 0;

  constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
  }

  /** The status line and headers, up to the blank line. */
  async headers(): Promise<string> {
    for (;;) {
      const text = new TextDecoder().decode(this.#buffer.subarray(this.#start, this.#end));
      const at = text.indexOf("\r\n\r\n");
      if (at >= 0) {
        this.#start += new TextEncoder().encode(text.slice(0, at + 4)).length;
        return text.slice(0, at);
      }
      if (!await this.#fill()) throw new Error("Connection closed during the upgrade");
    }
  }

  /** The next frame, or null at the end of the stream. */
  async frame(): Promise<{ fin: boolean; op: number; payload: Uint8Array } | null> {
    let head = readFrameHead(this.#buffer, this.#start, this.#end);
    while (head === null) {
      if (!await this.#fill(14)) return null;
      head = readFrameHead(this.#buffer, this.#start, this.#end);
    }
    if (!await this.#need(head.headLength + head.length)) return null;
    const at = this.#start + head.headLength;
    const payload = this.#buffer.slice(at, at + head.length);
    if (head.masked) {
      unmask(payload, 0, payload.length, this.#buffer.subarray(at - 4, at));
    }
    this.#start = at + head.length;
    return { fin: head.fin, op: head.op, payload };
  }

  async #need(n: number): Promise<boolean> {
    while (this.#end - this.#start < n) {
      if (!await this.#fill(n)) return false;
    }
    return true;
  }

  async #fill(want = 0): Promise<boolean> {
    if (this.#start > 0 && this.#start === this.#end) this.#start = this.#end = 0;
    const room = this.#buffer.length - this.#end;
    if (room < 16 * 1024 || this.#start + want > this.#buffer.length) {
      const size = Math.max(this.#buffer.length, (this.#end - this.#start + want) * 2);
      const next = new Uint8Array(size);
      next.set(this.#buffer.subarray(this.#start, this.#end));
      this.#end -= this.#start;
      this.#start = 0;
      this.#buffer = next;
    }
    const n = await this.#conn.read(this.#buffer.subarray(this.#end));
    if (n === null) return false;
    this.#end += n;
    return true;
  }
}
