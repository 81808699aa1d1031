/**
 * A WebSocket client for Node over `node:net`, which the consumer uses on Node for `ws://` URLs.
 * Node's own `WebSocket` (undici's) goes through WHATWG streams, an `EventTarget` and a
 * `MessageEvent` for every message, and costs a Node worker more CPU per job than the rest of
 * the consumer; this client parses frames straight from the socket's `data` events and writes
 * each frame with one `write`, with Nagle off. It also gives Node 20 a consumer without
 * `--experimental-websocket`.
 *
 * It implements what the consumer needs of the standard `WebSocket` (RFC 6455), as
 * `deno_websocket.ts` does on Deno: the handshake with one subprotocol, text and binary messages
 * (fragmented ones too), ping/pong, the close handshake, and the `onopen`/`onmessage`/`onclose`/
 * `onerror` handlers. `wss://` keeps Node's own `WebSocket`.
 *
 * @module
 */

import { closePayload, HANDSHAKE_GUID, OP, readFrameHead, unmask } from "./websocket_frames.ts";
import { headLength, writeFrameHead } from "./websocket_frames.ts";
import { concatBytes } from "./bytes.ts";
import { type NetSocket, nodeBuiltin, type NodeNet } from "./node_runtime.ts";
import type { CloseLike, MessageLike } from "./deno_websocket.ts";

interface NodeCrypto {
  createHash(algorithm: "sha1"): {
    update(text: string): { digest(encoding: "base64"): string };
  };
}

/** The `WebSocket` constructor to use on Node for `consume`, or null elsewhere. */
export function nodeWebSocket(): typeof WebSocket | null {
  if (nodeBuiltin<NodeNet>("node:net") === null) return null;
  return NodeWebSocket as unknown as typeof WebSocket;
}

/** Random bytes for masking keys, drawn a page at a time rather than per frame. */
class MaskKeys {
  #bytes = new Uint8Array(4096);
  #at = this.#bytes.length;

  /** Writes the next four-byte key into `into` at `at`. */
  next(into: Uint8Array, at: number): void {
    if (this.#at === this.#bytes.length) {
      crypto.getRandomValues(this.#bytes);
      this.#at = 0;
    }
    into.set(this.#bytes.subarray(this.#at, this.#at + 4), at);
    this.#at += 4;
  }
}

const maskKeys = new MaskKeys();
const encoder = new TextEncoder();

/** A WebSocket client on a `node:net` socket with Nagle off. */
export class NodeWebSocket {
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
  readyState: number = NodeWebSocket.CONNECTING;
  /** How binary messages are handed over (only `arraybuffer`). */
  binaryType = "arraybuffer";

  readonly #socket: NetSocket;
  readonly #key: string;
  readonly #url: URL;
  readonly #decoder = new TextDecoder();
  /** Bytes read and not yet parsed (the upgrade's answer, then frames). */
  #buffer: Uint8Array = new Uint8Array(0);
  #closeSent = false;
  #closed = false;
  #fragments: Uint8Array[] = [];
  #fragmentOp = 0;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;

  /** Connects to a `ws://` URL, offering `protocols`. */
  constructor(url: string | URL, protocols?: string | string[]) {
    const target = new URL(url);
    if (target.protocol !== "ws:") {
      throw new TypeError(`Cannot connect to ${target.href}: only ws:// URLs are supported`);
    }
    const net = nodeBuiltin<NodeNet>("node:net");
    if (net === null) throw new TypeError("Cannot connect: NodeWebSocket runs only on Node");
    this.#url = target;
    const offered = protocols === undefined ? [] : [protocols].flat();
    const nonce = new Uint8Array(16);
    crypto.getRandomValues(nonce);
    this.#key = btoa(String.fromCharCode(...nonce));
    const socket = net.connect({
      host: target.hostname.replace(/^\[|\]$/g, ""),
      port: Number(target.port || 80),
    });
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on("connect", () => {
      const lines = [
        `GET ${target.pathname}${target.search} HTTP/1.1`,
        `Host: ${target.host}`,
        "Upgrade: websocket",
        "Connection: Upgrade",
        `Sec-WebSocket-Key: ${this.#key}`,
        "Sec-WebSocket-Version: 13",
      ];
      if (offered.length > 0) lines.push(`Sec-WebSocket-Protocol: ${offered.join(", ")}`);
      socket.write(encoder.encode(lines.join("\r\n") + "\r\n\r\n"));
    });
    socket.on("data", (chunk) => this.#received(chunk));
    socket.on("error", () => this.#end(1006, "", false, true));
    socket.on("close", () => this.#end(1006, "", false, this.readyState !== NodeWebSocket.CLOSING));
  }

  /** Bytes accepted by send() and not yet written to the socket. */
  get bufferedAmount(): number {
    return this.#socket.writableLength;
  }

  /** Sends a text message (or bytes as a binary one). */
  send(data: string | ArrayBufferLike | ArrayBufferView): void {
    if (this.readyState === NodeWebSocket.CONNECTING) {
      throw new DOMException("Cannot send before the socket is open", "InvalidStateError");
    }
    if (this.readyState !== NodeWebSocket.OPEN) return;
    if (typeof data === "string") this.#write(OP.text, encoder.encode(data));
    else if (ArrayBuffer.isView(data)) {
      this.#write(OP.binary, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    } else this.#write(OP.binary, new Uint8Array(data as ArrayBuffer));
  }

  /** Starts the close handshake. */
  close(code = 1000, reason = ""): void {
    if (this.readyState >= NodeWebSocket.CLOSING) return;
    if (this.readyState === NodeWebSocket.CONNECTING) {
      this.#end(1006, "", false, false);
      return;
    }
    this.readyState = NodeWebSocket.CLOSING;
    this.#sendClose(code, reason);
    // A server that never answers the close must not keep the connection forever.
    this.#closeTimer = setTimeout(() => this.#end(code, reason, false, false), 2000);
    (this.#closeTimer as { unref?: () => void }).unref?.();
  }

  /** Takes in a chunk: the upgrade's answer first, then as many whole frames as it completes. */
  #received(chunk: Uint8Array): void {
    if (this.#closed) return;
    let bytes = chunk;
    if (this.#buffer.length > 0) {
      bytes = new Uint8Array(this.#buffer.length + chunk.length);
      bytes.set(this.#buffer);
      bytes.set(chunk, this.#buffer.length);
    }
    let at = 0;
    if (this.readyState === NodeWebSocket.CONNECTING) {
      at = this.#upgraded(bytes);
      if (at < 0) {
        this.#buffer = bytes;
        return;
      }
      if (this.#closed) return;
    }
    while (!this.#closed) {
      const head = readFrameHead(bytes, at, bytes.length);
      if (head === null || bytes.length - at < head.headLength + head.length) break;
      const start = at + head.headLength;
      let payload = bytes.subarray(start, start + head.length);
      if (head.masked) {
        payload = payload.slice();
        unmask(payload, 0, payload.length, bytes.subarray(start - 4, start));
      }
      at = start + head.length;
      this.#frame(head.fin, head.op, payload);
    }
    // Node hands each chunk over for good, so what is left may stay a view of it.
    this.#buffer = at === bytes.length ? new Uint8Array(0) : bytes.subarray(at);
  }

  /**
   * Checks the upgrade's answer at the start of `bytes`: answers where the frames begin, or -1
   * while its headers are incomplete. A refused upgrade ends the socket.
   */
  #upgraded(bytes: Uint8Array): number {
    let end = -1;
    for (let i = 3; i < bytes.length; i++) {
      if (bytes[i] === 10 && bytes[i - 1] === 13 && bytes[i - 2] === 10 && bytes[i - 3] === 13) {
        end = i + 1;
        break;
      }
    }
    if (end < 0) return -1;
    const head = this.#decoder.decode(bytes.subarray(0, end));
    const status = head.match(/^HTTP\/1\.1 (\d{3})/)?.[1];
    const header = (name: string) =>
      head.match(new RegExp(`^${name}:\\s*(.*?)\\s*$`, "im"))?.[1] ?? null;
    const crypto = nodeBuiltin<NodeCrypto>("node:crypto")!;
    const accept = crypto.createHash("sha1").update(this.#key + HANDSHAKE_GUID).digest("base64");
    if (status !== "101" || header("sec-websocket-accept") !== accept) {
      this.#end(1006, "", false, true);
      return end;
    }
    this.protocol = header("sec-websocket-protocol") ?? "";
    this.readyState = NodeWebSocket.OPEN;
    this.onopen?.(new Event("open"));
    return end;
  }

  /** Handles one frame; `payload` is a view that is valid only during this call. */
  #frame(fin: boolean, op: number, payload: Uint8Array): void {
    if (op === OP.ping) this.#write(OP.pong, payload);
    else if (op === OP.pong) return;
    else if (op === OP.close) {
      const code = payload.length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
      const reason = this.#decoder.decode(payload.subarray(2));
      if (!this.#closeSent) this.#sendClose(code === 1005 ? 1000 : code, "");
      this.#end(code, reason, true, false);
    } else {
      if (op !== OP.continuation) this.#fragmentOp = op;
      let whole = payload;
      if (!fin || this.#fragments.length > 0) {
        this.#fragments.push(payload.slice());
        if (!fin) return;
        whole = concatBytes(this.#fragments);
        this.#fragments = [];
      }
      if (this.readyState !== NodeWebSocket.OPEN) return;
      const data = this.#fragmentOp === OP.text
        ? this.#decoder.decode(whole)
        : whole.slice().buffer as ArrayBuffer;
      this.onmessage?.({ data });
    }
  }

  #sendClose(code: number, reason: string): void {
    this.#closeSent = true;
    this.#write(OP.close, closePayload(code, reason));
  }

  /** Writes one frame: head and masked payload in one buffer, with one write. */
  #write(op: number, payload: Uint8Array): void {
    if (this.#closed) return;
    const frame = new Uint8Array(headLength(payload.length, true) + payload.length);
    const at = writeFrameHead(frame, 0, op, payload.length, true);
    maskKeys.next(frame, at - 4);
    frame.set(payload, at);
    unmask(frame, at, payload.length, frame.subarray(at - 4, at));
    this.#socket.write(frame);
  }

  #end(code: number, reason: string, wasClean: boolean, failed: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.readyState = NodeWebSocket.CLOSED;
    clearTimeout(this.#closeTimer);
    // After the close handshake, let the close frame reach the server before the FIN.
    if (wasClean) this.#socket.end();
    else this.#socket.destroy();
    if (failed) this.onerror?.(new Event("error"));
    this.onclose?.({ code, reason, wasClean });
  }

  /** The URL connected to. */
  get url(): string {
    return this.#url.href;
  }
}
