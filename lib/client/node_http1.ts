/**
 * An HTTP/1.1 client on `node:net` for the producer's plain `http://` requests on Node (RFC 9112):
 * one request at a time per connection, connections kept alive in a pool per host and reused,
 * each request's head and body written with one write, Nagle off. `node:http` builds a
 * `ClientRequest`, an `IncomingMessage` and their streams for every request; this reads the
 * answer straight from the socket's `data` events. Answers framed by `content-length`, by
 * `transfer-encoding: chunked` or by the end of the connection are read; `https://` keeps
 * `node:https`.
 *
 * @module
 */

import { concatBytes } from "./bytes.ts";
import type { NetSocket, NodeNet } from "./node_runtime.ts";

/** An answer: its status and its body as text. */
export interface Answer {
  /** The HTTP status. */
  status: number;
  /** The body, decoded as UTF-8. */
  text: string;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);

/** The request a connection is answering. */
interface Exchange {
  method: string;
  resolve: (answer: Answer) => void;
  reject: (error: unknown) => void;
}

/** One kept-alive connection to a host, answering one request at a time. */
class Connection {
  readonly #socket: NetSocket;
  readonly #release: (connection: Connection) => void;
  readonly #forget: (connection: Connection) => void;
  #buffer: Uint8Array = EMPTY;
  #exchange: Exchange | null = null;
  /** The answer being read: its status, once its head is in, and how its body ends. */
  #status = 0;
  #framing: "head" | "length" | "chunked" | "close" = "head";
  #left = 0;
  #keepAlive = true;
  #parts: Uint8Array[] = [];
  #closed = false;

  constructor(
    net: NodeNet,
    host: string,
    port: number,
    release: (connection: Connection) => void,
    forget: (connection: Connection) => void,
  ) {
    this.#release = release;
    this.#forget = forget;
    this.#socket = net.connect({ host, port });
    this.#socket.setNoDelay(true);
    this.#socket.on("data", (chunk) => this.#received(chunk));
    this.#socket.on("error", (error) => this.#gone(error));
    this.#socket.on("close", () => this.#gone(null));
  }

  /** Sends one request (`bytes`: head and body) and reads its answer into `exchange`. */
  send(bytes: Uint8Array, exchange: Exchange): void {
    this.#exchange = exchange;
    this.#framing = "head";
    this.#parts = [];
    this.#socket.ref();
    this.#socket.write(bytes);
  }

  #gone(error: unknown): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#forget(this);
    this.#socket.destroy();
    const exchange = this.#exchange;
    this.#exchange = null;
    if (exchange === null) return;
    if (this.#framing === "close") {
      this.#done(exchange);
      return;
    }
    exchange.reject(error ?? new Error("The connection closed before the answer ended"));
  }

  #received(chunk: Uint8Array): void {
    if (this.#exchange === null) {
      // Bytes nobody asked for: the connection is out of step, so end it.
      this.#gone(new Error("The server sent bytes without a request"));
      return;
    }
    let bytes = chunk;
    if (this.#buffer.length > 0) {
      bytes = new Uint8Array(this.#buffer.length + chunk.length);
      bytes.set(this.#buffer);
      bytes.set(chunk, this.#buffer.length);
    }
    let at = 0;
    try {
      at = this.#parse(bytes);
    } catch (error) {
      this.#gone(error);
      return;
    }
    this.#buffer = at === bytes.length ? EMPTY : bytes.subarray(at);
  }

  /** Reads what `bytes` completes of the answer; answers how many bytes it used. */
  #parse(bytes: Uint8Array): number {
    let at = 0;
    for (;;) {
      const exchange = this.#exchange;
      if (exchange === null) return at;
      if (this.#framing === "head") {
        const end = headEnd(bytes, at);
        if (end < 0) return at;
        const head = decoder.decode(bytes.subarray(at, end - 4));
        at = end;
        this.#head(head, exchange.method);
      } else if (this.#framing === "length") {
        const n = Math.min(this.#left, bytes.length - at);
        if (n > 0) this.#parts.push(bytes.slice(at, at + n));
        at += n;
        this.#left -= n;
        if (this.#left > 0) return at;
        this.#done(exchange);
      } else if (this.#framing === "chunked") {
        if (this.#left > 0) {
          // Inside a chunk's data, then its CRLF.
          const n = Math.min(this.#left, bytes.length - at);
          const data = Math.min(n, this.#left - 2);
          if (data > 0) this.#parts.push(bytes.slice(at, at + data));
          at += n;
          this.#left -= n;
          if (this.#left > 0) return at;
          continue;
        }
        const line = lineEnd(bytes, at);
        if (line < 0) return at;
        const size = parseInt(decoder.decode(bytes.subarray(at, line - 2)).split(";")[0], 16);
        if (!Number.isFinite(size) || size < 0) throw new Error("A chunk's size is not hex");
        if (size > 0) {
          at = line;
          this.#left = size + 2;
          continue;
        }
        // The last chunk: trailer fields up to an empty line.
        let end = line;
        for (;;) {
          const next = lineEnd(bytes, end);
          if (next < 0) return at;
          const empty = next - end === 2;
          end = next;
          if (empty) break;
        }
        at = end;
        this.#done(exchange);
      } else {
        // Until the connection ends.
        if (at < bytes.length) this.#parts.push(bytes.slice(at));
        return bytes.length;
      }
    }
  }

  /** Takes in an answer's head: its status and how its body is framed. */
  #head(head: string, method: string): void {
    const lines = head.split("\r\n");
    const status = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0]);
    if (status === null) throw new Error(`The server answered "${lines[0].slice(0, 40)}"`);
    const code = Number(status[2]);
    let length = -1;
    let chunked = false;
    let connection = "";
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(":");
      if (colon < 0) continue;
      const name = lines[i].slice(0, colon).trim().toLowerCase();
      const value = lines[i].slice(colon + 1).trim().toLowerCase();
      if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = value.endsWith("chunked");
      else if (name === "connection") connection = value;
    }
    if (code >= 100 && code < 200) return; // an interim answer: the final one follows
    this.#status = code;
    this.#keepAlive = status[1] === "1"
      ? !connection.includes("close")
      : connection.includes("keep-alive");
    if (method === "HEAD" || code === 204 || code === 304) {
      this.#framing = "length";
      this.#left = 0;
    } else if (chunked) {
      this.#framing = "chunked";
      this.#left = 0;
    } else if (length >= 0 && Number.isSafeInteger(length)) {
      this.#framing = "length";
      this.#left = length;
    } else {
      this.#framing = "close";
      this.#keepAlive = false;
    }
  }

  #done(exchange: Exchange): void {
    this.#exchange = null;
    const parts = this.#parts;
    this.#parts = [];
    this.#framing = "head";
    const text = parts.length === 1 ? decoder.decode(parts[0]) : decoder.decode(concatBytes(parts));
    exchange.resolve({ status: this.#status, text });
    if (this.#closed) return;
    if (this.#keepAlive) {
      this.#socket.unref();
      this.#release(this);
    } else this.#gone(null);
  }
}

/** The end of the head (after its blank line) starting at `at`, or -1. */
function headEnd(bytes: Uint8Array, at: number): number {
  for (let i = at + 3; i < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i - 1] === 13 && bytes[i - 2] === 10 && bytes[i - 3] === 13) {
      return i + 1;
    }
  }
  return -1;
}

/** The end of the line (after its CRLF) starting at `at`, or -1. */
function lineEnd(bytes: Uint8Array, at: number): number {
  for (let i = at + 1; i < bytes.length; i++) {
    if (bytes[i] === 10 && bytes[i - 1] === 13) return i + 1;
  }
  return -1;
}

/** Sends requests to `http://` URLs over kept-alive `node:net` connections. */
export class Http1Client {
  readonly #net: NodeNet;
  /** Idle connections by `host:port`. */
  readonly #idle = new Map<string, Connection[]>();

  /** A client over `net`; connections are opened on demand. */
  constructor(net: NodeNet) {
    this.#net = net;
  }

  /** Sends one request to `url` (`http://` only); answers its status and body. */
  request(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const slash = url.indexOf("/", 7);
      const authority = url.slice(7, slash < 0 ? url.length : slash);
      const path = slash < 0 ? "/" : url.slice(slash);
      const bytes = body === undefined ? EMPTY : encoder.encode(body);
      let head = `${method} ${path} HTTP/1.1\r\nhost: ${authority}\r\n`;
      for (const name in headers) head += `${name}: ${headers[name]}\r\n`;
      if (body !== undefined || method === "POST" || method === "PUT") {
        head += `content-length: ${bytes.length}\r\n`;
      }
      head += "\r\n";
      const headBytes = encoder.encode(head);
      const message = new Uint8Array(headBytes.length + bytes.length);
      message.set(headBytes);
      message.set(bytes, headBytes.length);
      this.#connection(authority).send(message, { method, resolve, reject });
    });
  }

  /** An idle connection to `authority`, or a new one. */
  #connection(authority: string): Connection {
    const idle = this.#idle.get(authority);
    const reused = idle?.pop();
    if (reused !== undefined) return reused;
    const colon = authority.lastIndexOf(":");
    const bracket = authority.lastIndexOf("]");
    const hasPort = colon > bracket;
    const host = (hasPort ? authority.slice(0, colon) : authority).replace(/^\[|\]$/g, "");
    const port = hasPort ? Number(authority.slice(colon + 1)) : 80;
    return new Connection(
      this.#net,
      host,
      port,
      (connection) => {
        const list = this.#idle.get(authority);
        if (list === undefined) this.#idle.set(authority, [connection]);
        else list.push(connection);
      },
      (connection) => {
        const list = this.#idle.get(authority);
        const at = list?.indexOf(connection) ?? -1;
        if (at >= 0) list!.splice(at, 1);
      },
    );
  }
}
