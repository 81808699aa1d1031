/**
 * The front door's own HTTP/1.1: the plain requests that make up almost all of a queue's traffic
 * — a request head and, if any, a body of known length, all arrived — parsed here and answered
 * without the relay to the private server, and WebSocket handshakes (the front door then serves
 * the socket itself: lib/ws/frame_socket.ts). Everything else — chunked or unknown-length bodies,
 * `Expect`, other upgrades, `HEAD`, HTTP/1.0, anything this parser is not certain of — is left
 * where it starts, and the connection goes on through the relay to `Deno.serve` from that byte
 * on. The parser is strict on purpose: it declines rather than guesses, so the two never
 * disagree about where a request ends (no request smuggling between them).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { deadlinesOf } from "./deadline_queue.ts";
import { httpDate } from "./http_date.ts";
import {
  invalidHost,
  MAX_REQUEST_LINE,
  missingHost,
  type TargetRefusal,
  tooLong,
  validHost,
} from "./request_target.ts";
import { type Answer, JsonAnswer } from "./respond.ts";

/** A request whose head and body are in the buffer. */
export interface PlainRequest {
  /** The method, upper case. */
  method: string;
  /** The request target (origin form: `/path?query`). */
  target: string;
  /** The `Host` header. */
  host: string;
  /** The header fields in arrival order, names lower-cased. */
  headers: [string, string][];
  /** Where the body starts in the buffer. */
  bodyStart: number;
  /** Where the body ends (`bodyStart` for none): where the next request starts. It may lie
   * beyond what has arrived, for a body still on its way. */
  bodyEnd: number;
  /** False when the client asked to close the connection after the answer. */
  keepAlive: boolean;
  /**
   * True for a WebSocket handshake: a `GET` without a body whose `Upgrade` is `websocket` and
   * whose `Connection` names `upgrade` (what else the handshake needs is the upgrade's to check).
   */
  websocket: boolean;
}

/** What a buffer holds at its start. */
export type Parsed =
  | { kind: "request"; request: PlainRequest }
  /** The request's head has not all arrived yet; bytes before `scanned` need no second look. */
  | { kind: "incomplete"; scanned: number }
  /** Not a request this parser answers: the relay's HTTP server must read it. */
  | { kind: "other" }
  /**
   * A request refused before anything else is read (a request line past the limit, a missing,
   * repeated or invalid `Host`): the answer is `refusal`, and the connection closes after it.
   */
  | { kind: "refused"; refusal: TargetRefusal };

/** The largest head this parser reads; longer ones go to the relay's server. */
export const PLAIN_HEAD_MAX = 8 * 1024;

const OTHER: Parsed = { kind: "other" };
/** Origin-form targets only, without `#` (never part of a request target). */
const REQUEST_LINE = /^([A-Z]{1,16}) (\/[\x21\x22\x24-\x7e]*) HTTP\/1\.1$/;
/** A host name or address and an optional port: nothing that could change the URL's path. */
const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;
/** How a request line begins: a method and a space. */
const REQUEST_LINE_START = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,15} /;
const FIELD_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What a head may not hold: a byte other than printable ASCII and tab, a CR or LF alone. */
const NOT_PLAIN = /[^\t\x20-\x7e\r\n]|\r(?!\n)|(?<!\r)\n/;
const LENGTH = /^[0-9]{1,15}$/;
/** Methods answered here; the others (HEAD, CONNECT, TRACE, …) go to the relay's server. */
const METHODS = new Set(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * Reads the request at `bytes[start..end)`. A request is answered here only if its head is
 * ASCII, well formed, at most {@linkcode PLAIN_HEAD_MAX} bytes, names one `Host`, has no
 * `Transfer-Encoding` or `Expect`, no `Upgrade` but a WebSocket handshake's, and at most one
 * `Content-Length`. The answer comes as soon as the head is complete: the body may still be
 * arriving.
 */
export function parsePlainRequest(
  bytes: Uint8Array,
  start: number,
  end: number,
  scanned = start,
): Parsed {
  // Every byte of the head must be printable ASCII, tab, or CR and LF as a pair. A head that has
  // come whole is found with the runtime's byte search and checked as text by one expression;
  // one still arriving is checked a byte at a time, each byte once (before `scanned`, checked by
  // an earlier call), so a head sent a byte at a time costs linear time.
  const limit = Math.min(end, start + PLAIN_HEAD_MAX);
  const headEnd = findHeadEnd(bytes, start, Math.max(start, scanned - 3), limit);
  if (headEnd < 0) {
    if (!plainBytes(bytes, start, Math.max(start, scanned), limit)) return OTHER;
    if (end - start < PLAIN_HEAD_MAX) return { kind: "incomplete", scanned: limit };
    // A request line that has not ended within the limit is too long for any server here to
    // read (RFC 9112 §3: 414); a long head of short lines goes to the relay's server.
    const line = bytes.subarray(start, start + MAX_REQUEST_LINE);
    return line.indexOf(0x0a) < 0 && REQUEST_LINE_START.test(asciiHead(line, 0, 16))
      ? { kind: "refused", refusal: tooLong() }
      : OTHER;
  }
  const head = asciiHead(bytes, start, headEnd);
  if (NOT_PLAIN.test(head)) return OTHER; // a control or non-ASCII byte, a CR or LF alone
  const lines = head.split("\r\n");
  const line = REQUEST_LINE.exec(lines[0]);
  if (line === null || !METHODS.has(line[1])) return OTHER;
  const headers: [string, string][] = [];
  let host: string | null = null;
  let hosts = 0;
  let length: number | null = null;
  let keepAlive = true;
  let upgrade: string | null = null;
  let connectionUpgrade = false;
  for (let i = 1; i < lines.length; i++) {
    const text = lines[i];
    const colon = text.indexOf(":");
    // obs-fold, a space before the colon, an empty name
    if (colon < 1 || !FIELD_NAME.test(text.slice(0, colon))) return OTHER;
    const name = text.slice(0, colon).toLowerCase();
    // The head holds no whitespace but spaces and tabs, the field's optional whitespace.
    const value = text.slice(colon + 1).trim();
    switch (name) {
      case "host":
        hosts++;
        // A Host this parser's quick check does not know may still be valid (an underscore, a
        // sub-delim): the relay's server reads it, and the same rule judges it there.
        if (!HOST.test(value) && validHost(value)) return OTHER;
        host = value;
        break;
      case "content-length":
        if (length !== null || !LENGTH.test(value)) return OTHER;
        length = Number(value);
        break;
      case "upgrade":
        if (upgrade !== null) return OTHER;
        upgrade = value.toLowerCase();
        break;
      case "transfer-encoding":
      case "expect":
        return OTHER;
      case "connection":
        for (const token of value.toLowerCase().split(",")) {
          const option = token.trim();
          if (option === "upgrade") connectionUpgrade = true;
          if (option === "close") keepAlive = false;
        }
        break;
    }
    headers.push([name, value]);
  }
  // RFC 9112 §3.2: a request without Host, with two, or with an invalid one is 400.
  if (host === null) return { kind: "refused", refusal: missingHost() };
  if (hosts > 1 || !HOST.test(host)) return { kind: "refused", refusal: invalidHost() };
  const bodyStart = headEnd + 4;
  const bodyLength = length ?? 0;
  if (bodyLength > 0 && line[1] === "GET") return OTHER; // a Request cannot carry it
  // Only a WebSocket handshake is upgraded here; any other upgrade goes to the relay's server.
  const websocket = upgrade !== null || connectionUpgrade;
  if (websocket && (upgrade !== "websocket" || !connectionUpgrade || line[1] !== "GET")) {
    return OTHER;
  }
  return {
    kind: "request",
    request: {
      method: line[1],
      target: line[2],
      host,
      headers,
      bodyStart,
      bodyEnd: bodyStart + bodyLength,
      keepAlive,
      websocket,
    },
  };
}

const ASCII_HEAD = new TextDecoder();

/**
 * The text of a head already checked to be printable ASCII (with tabs and CRLFs), which any
 * ASCII-compatible decoding reads alike: the runtime's native UTF-8 decoder does it faster than
 * `String.fromCharCode` over the bytes.
 */
function asciiHead(bytes: Uint8Array, start: number, end: number): string {
  return ASCII_HEAD.decode(bytes.subarray(start, end));
}

/**
 * Where the head in `bytes[start..limit)` ends (the index of its CRLFCRLF), searching from
 * `from`, or -1 when it has not ended there.
 */
function findHeadEnd(bytes: Uint8Array, start: number, from: number, limit: number): number {
  // Searched within the limit only: past it may lie a large body, or bytes of no request.
  const head = bytes.subarray(0, limit);
  for (let lf = head.indexOf(0x0a, from); lf >= 0; lf = head.indexOf(0x0a, lf + 1)) {
    if (
      lf - 3 >= start && bytes[lf - 1] === 0x0d && bytes[lf - 2] === 0x0a && bytes[lf - 3] === 0x0d
    ) {
      return lf - 3;
    }
  }
  return -1;
}

/**
 * True when `bytes[from..limit)` of a head starting at `start` are printable ASCII, tabs, and CR
 * and LF as pairs. Each byte looks back, so a check may resume anywhere.
 */
function plainBytes(bytes: Uint8Array, start: number, from: number, limit: number): boolean {
  for (let i = from; i < limit; i++) {
    const b = bytes[i];
    // CR only before LF, LF only after CR.
    const afterCr = i > start && bytes[i - 1] === 0x0d;
    if (afterCr !== (b === 0x0a)) return false;
    if (b === 0x0a || (b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0d) continue;
    return false; // a control byte or a non-ASCII one
  }
  return true;
}

const REASONS: Record<number, string> = {
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  301: "Moved Permanently",
  302: "Found",
  304: "Not Modified",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  422: "Unprocessable Content",
  426: "Upgrade Required",
  429: "Too Many Requests",
  500: "Internal Server Error",
  503: "Service Unavailable",
};

/** Header fields of a response that the writer sets itself. */
const FRAMING = new Set(["connection", "content-length", "transfer-encoding", "keep-alive"]);

const encoder = new TextEncoder();
const NO_BYTES = new Uint8Array(0);

/** The head of `response`, framed by `framing` (a `content-length` or chunked field). */
function responseHead(response: Answer, framing: string, close: boolean): string {
  const reason = REASONS[response.status] ??
    (response instanceof Response ? response.statusText : "");
  let head = `HTTP/1.1 ${response.status} ${reason}\r\n`;
  for (const [name, value] of response.headers) {
    if (!FRAMING.has(name)) head += `${name}: ${value}\r\n`;
  }
  head += `date: ${httpDate()}\r\n${framing}`;
  if (close) head += "connection: close\r\n";
  return head + "\r\n";
}

/** Statuses whose answers have no body (and no `content-length`). */
function bodiless(status: number): boolean {
  return status === 204 || status === 304 || (status >= 100 && status < 200);
}

/** True when a response asks for its connection to end after it. */
export function closesConnection(response: Answer): boolean {
  return response.headers.get("connection")?.toLowerCase() === "close";
}

/**
 * Writes `response` to `conn`: a body that is one chunk (any body built from a string or bytes)
 * with `content-length` and head and body in one write; a streamed one chunked, as it comes.
 * `close` adds `connection: close`. With `stall`, a write the client takes no byte of within
 * `stall.ms` calls `stall.onStall` (which closes the connection). Rejects if the connection
 * breaks (the body is cancelled).
 */
export async function writeResponse(
  conn: Deno.Conn,
  response: Answer,
  close: boolean,
  stall?: Stall,
): Promise<void> {
  const put = (bytes: Uint8Array) => writeAll(conn, bytes, stall);
  if (response instanceof JsonAnswer) {
    await put(wholeAnswer(response, encoder.encode(response.text), close));
    return;
  }
  const body = response.body;
  if (body === null || bodiless(response.status)) {
    await body?.cancel().catch(() => {});
    await put(wholeAnswer(response, NO_BYTES, close));
    return;
  }
  const reader = body.getReader();
  try {
    const first = await reader.read();
    // A body built from a string or bytes is done at its second read, at once; a stream's next
    // chunk may be seconds away, and what it has must not wait for it.
    const next = first.done ? Promise.resolve(first) : reader.read();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const second = await Promise.race([
      next,
      new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), 0)),
    ]);
    clearTimeout(timer);
    if (second !== null && second.done) {
      await put(wholeAnswer(response, first.done ? NO_BYTES : first.value, close));
      return;
    }
    // The head goes with the first chunk's size line; what was ready at once is one chunk, as
    // `Deno.serve` sends it. A chunk's bytes are written as they are, never copied: a stream's
    // chunks can be large (an event-stream snapshot), and many readers may be stalled at once.
    const head = responseHead(response, "transfer-encoding: chunked\r\n", close);
    const ready = second === null ? [first.value!] : [first.value!, second.value];
    await writeChunk(put, ready, head);
    if (second === null) {
      const later = await next;
      if (later.done) {
        await put(encoder.encode("0\r\n\r\n"));
        return;
      }
      await writeChunk(put, [later.value]);
    }
    for (;;) {
      const more = await reader.read();
      if (more.done) break;
      await writeChunk(put, [more.value]);
    }
    await put(encoder.encode("0\r\n\r\n"));
  } catch (error) {
    await reader.cancel().catch(() => {});
    throw error;
  }
}

/**
 * `response`'s head and `payload`, in one buffer to write: framed by `content-length`, or with no
 * body at all for a status that has none.
 */
function wholeAnswer(response: Answer, payload: Uint8Array, close: boolean): Uint8Array {
  const none = bodiless(response.status);
  const body = none ? NO_BYTES : payload;
  const head = responseHead(response, none ? "" : `content-length: ${body.length}\r\n`, close);
  const bytes = new Uint8Array(head.length + body.length);
  const { read, written } = encoder.encodeInto(head, bytes);
  if (read !== head.length || written !== head.length) {
    return Buffer.concat([encoder.encode(head), body]); // a field value that is not ASCII
  }
  bytes.set(body, head.length);
  return bytes;
}

/** Writes `parts` as one chunk of a chunked body, after `before` (nothing for no bytes). */
async function writeChunk(
  put: (bytes: Uint8Array) => Promise<void>,
  parts: Uint8Array[],
  before = "",
): Promise<void> {
  const size = parts.reduce((n, part) => n + part.length, 0);
  if (size === 0) {
    if (before !== "") await put(encoder.encode(before));
    return; // an empty chunk would end the body
  }
  await put(encoder.encode(`${before}${size.toString(16)}\r\n`));
  for (const part of parts) await put(part);
  await put(CRLF);
}

const CRLF = new Uint8Array([0x0d, 0x0a]);

/** What to do about a write the client does not take. */
export interface Stall {
  /** How long a write may wait for the client to take a byte, ms. */
  ms: number;
  /** Called when one waits longer; it closes the connection, which makes the write reject. */
  onStall: () => void;
}

/**
 * Writes all of `bytes` to `conn`. With `stall`, a write the client takes no byte of within
 * `stall.ms` calls `stall.onStall`: a client that sends requests and never reads the answers
 * cannot keep its connection busy, out of reach of every other timeout.
 */
export async function writeAll(conn: Deno.Conn, bytes: Uint8Array, stall?: Stall): Promise<void> {
  let at = 0;
  while (at < bytes.length) {
    if (stall === undefined) {
      at += await conn.write(bytes.subarray(at));
      continue;
    }
    const stalled = deadlinesOf(stall.ms).set(stall.onStall);
    try {
      at += await conn.write(bytes.subarray(at));
    } finally {
      stalled.cancel();
    }
  }
}
