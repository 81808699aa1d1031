/**
 * The server's own WebSocket (RFC 6455) on a connection the front door holds, so that frames go
 * between the client's socket and the protocol without the relay to `Deno.serve`: one read and
 * one write per batch of frames instead of four socket operations and a copy per frame (the
 * relay's price, measured in docs/performance.md).
 *
 * What it does: the handshake's checks and its `101` (written by the front door, before the
 * first frames, in the same write), text and binary messages (fragmented ones too) up to a size
 * limit (a larger one closes with 1009 before it is buffered), UTF-8 checked (1007), ping/pong,
 * the close handshake (echoing the client's code; the server closes the TCP connection), a
 * heartbeat as `Deno.upgradeWebSocket`'s `idleTimeout` (a ping after an interval with nothing
 * received; closed with 1001 after a second one), and every protocol violation failed with 1002.
 * No extension is negotiated (no compression), as with `Deno.upgradeWebSocket`. Frames sent in
 * one turn of the event loop go out in one write. Unlike the runtime's socket, it can stop
 * reading ({@linkcode FrameSocket.holdReading}), which the connection does while it has many
 * frames in progress: a client that sends faster than it is answered waits on TCP instead of
 * being refused.
 *
 * A request reaches it only through the front door (`offerUpgrade`): with `--front-door off`,
 * or a connection the front door relays, `deno_socket.ts` upgrades through the runtime as before.
 *
 * @module
 */

import { createHash } from "node:crypto";
import {
  closePayload,
  HANDSHAKE_GUID,
  headLength,
  OP,
  readFrameHead,
  unmask,
  writeFrameHead,
} from "../client/websocket_frames.ts";
import { strictUtf8Decoder } from "../api/utf8.ts";
import { TegamiError } from "../core/errors.ts";
import { MAX_AUTH_FRAME_BYTES } from "../core/limits.ts";
import { type Deadline, deadlinesOf } from "../http/deadline_queue.ts";
import type { HttpRequest } from "../http/http_request.ts";
import type { SocketLike } from "./connection.ts";

/** What the socket hands its messages and its end to. */
export interface FrameHandlers {
  /** One whole message: text, or the bytes of a binary one. */
  onMessage(data: string | Uint8Array): void;
  /**
   * The client broke the protocol: `code` is 1002 (framing), 1007 (a text frame not UTF-8) or
   * 1009 (a message over the size limit, of which the socket kept nothing). The socket closes
   * with `code` and `reason` if the handler has not closed it.
   */
  onViolation(code: number, reason: string): void;
  /** The connection ended (once). */
  onClose(): void;
}

/** Settings of a {@linkcode FrameSocket}. */
export interface FrameSocketOptions {
  /** The largest message, in bytes; a larger one is refused before it is read. */
  maxMessage: number;
  /** Heartbeat interval, ms: a ping after this long with nothing received, a close after two. */
  pingIntervalMs: number;
  /**
   * The memory budget shared with request bodies: a message buffer over 16 KiB is held against
   * it while it exists, and a socket whose buffer it cannot hold is closed with 1013 (try again
   * later). @default none
   */
  budget?: MemoryBudget;
}

/** Memory shared by many holders: `take` throws when `bytes` do not fit, taking nothing. */
export interface MemoryBudget {
  /** Takes `bytes`, or throws. */
  take(bytes: number): void;
  /** Gives back `bytes` taken before. */
  give(bytes: number): void;
}

/**
 * A connection's bytes that whoever takes it over (this socket after an upgrade, the relay after
 * a request the front door declines) must read first: those read, and those being read.
 */
export interface Handover {
  /** Bytes already read from the connection and not yet used. */
  rest: Uint8Array;
  /** The bytes a read in flight brings, or null at the end of the stream. */
  more: Promise<Uint8Array | null> | null;
}

/** How long a close the server sent waits for the client's, ms, before the connection ends. */
export const CLOSE_WAIT_MS = 1000;
/** The read buffer of a connection with small frames (a WebSocket holds only it while idle). */
const READ_BUFFER_MIN = 2 * 1024;
/**
 * Rounds of microtasks a write waits for after the first frame of a turn is sent, so that frames
 * a few promise hops behind it share its write (see `FrameSocket.#flushAfter`).
 */
const FLUSH_HOPS = 12;
/** Frames joined into one write up to this many bytes; a larger frame is written on its own. */
const WRITE_BATCH = 64 * 1024;
/** The first buffer of a fragmented message; it at least doubles as the message grows. */
const FRAGMENTS_MIN = 4 * 1024;
/**
 * A socket's read buffer or fragment buffer up to this size is not held against the memory
 * budget (every socket has such buffers); a larger one is, whole, while it exists.
 */
const UNBUDGETED_BYTES = 16 * 1024;
const NO_BYTES = new Uint8Array(0);

/** The opcode of bytes in the write queue that are written as they are (the `101`). */
const RAW = -1;

const encoder = new TextEncoder();
// A leading BOM is part of the message (a decoder would drop it by default).
const utf8 = strictUtf8Decoder(true);
const KEY = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

/** Requests whose connection the front door can hand to a {@linkcode FrameSocket}. */
const offered = new WeakSet<HttpRequest>();

/** Marks `request` as one the front door parsed itself and can upgrade here. */
export function offerUpgrade(request: HttpRequest): void {
  offered.add(request);
}

/**
 * The answer to an upgrade that the front door completes: it carries the socket, and its status
 * reads 101 (the Fetch API cannot build a `101` response: its statuses start at 200).
 */
export class UpgradeAnswer extends Response {
  /** The socket the connection becomes. */
  readonly socket: FrameSocket;
  /** The `101` head to write before the first frame. */
  readonly head: Uint8Array;

  /** An answer for `socket`, with the handshake's `head`; its `status` is 101. */
  constructor(socket: FrameSocket, head: Uint8Array) {
    super(null, { status: 200 });
    this.socket = socket;
    this.head = head;
    // What the metrics and the log see: the status `Deno.upgradeWebSocket`'s answer has.
    Object.defineProperty(this, "status", { value: 101 });
  }
}

/**
 * Checks a WebSocket handshake's headers, wherever it is upgraded (here, or by the runtime, which
 * is more lenient): `Connection: Upgrade`, `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key`
 * of 16 bytes in base64.
 * Answers the key; throws `validation_failed`.
 */
export function checkHandshake(headers: { get(name: string): string | null }): string {
  const key = headers.get("sec-websocket-key") ?? "";
  const connection = (headers.get("connection") ?? "").toLowerCase().split(",");
  if (
    !KEY.test(key) || headers.get("sec-websocket-version") !== "13" ||
    !connection.some((token) => token.trim() === "upgrade")
  ) {
    throw new TegamiError(
      "validation_failed",
      "Cannot upgrade: not a valid WebSocket handshake (it needs Connection: Upgrade, " +
        "Sec-WebSocket-Version: 13 and a Sec-WebSocket-Key of 16 bytes in base64)",
    );
  }
  return key;
}

/**
 * Accepts the WebSocket handshake of `request` here, if the front door offered it; null when
 * the runtime must upgrade it. `protocol` is the subprotocol the answer names, if any. Throws
 * `validation_failed` for a handshake that is not valid (no 16-byte key, a version other
 * than 13).
 */
export function upgradeHere(
  request: HttpRequest,
  protocol: string | undefined,
  options: FrameSocketOptions,
): UpgradeAnswer | null {
  if (!offered.has(request)) return null;
  const key = checkHandshake(request.headers);
  const accept = createHash("sha1").update(key + HANDSHAKE_GUID).digest("base64");
  const head = "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n" +
    `sec-websocket-accept: ${accept}\r\n` +
    (protocol === undefined ? "" : `sec-websocket-protocol: ${protocol}\r\n`) + "\r\n";
  return new UpgradeAnswer(new FrameSocket(options), encoder.encode(head));
}

/** A server-side WebSocket on a connection; it sends nothing until {@linkcode serve} runs. */
export class FrameSocket implements SocketLike {
  readonly #options: FrameSocketOptions;
  #handlers: FrameHandlers | null = null;
  #conn: Deno.Conn | null = null;
  /**
   * What waits to be written: the payloads of frames, whose opcodes are in `#outOps` (their
   * heads are made at the write, in its buffer), or bytes to write as they are (opcode RAW).
   */
  #out: Uint8Array[] = [];
  #outOps: number[] = [];
  /** Bytes in `#out` and in the write in flight. */
  #queued = 0;
  #flushing = false;
  /** The connection ends once what is queued is written (after a close frame). */
  #endAfterWrite = false;
  #closeSent = false;
  #ended = false;
  #closeTimer: ReturnType<typeof setTimeout> | undefined;
  #heartbeat: Deadline | undefined;
  /** Bytes arrived since the last heartbeat. */
  #heard = false;
  #pinged = false;
  /** Reading is held (see {@linkcode holdReading}); `#release` resumes the read loop. */
  #holding = false;
  #release: (() => void) | null = null;
  /**
   * A fragmented message so far: its bytes, in one buffer that grows as they come (never a list
   * of fragments, so empty continuation frames cost nothing held), and its opcode (0: none in
   * progress).
   */
  #fragments: Uint8Array = NO_BYTES;
  #fragmentBytes = 0;
  #fragmentOp = 0;
  /** Memory held against the budget for the read buffer and for the fragments (see #hold). */
  readonly #held = { read: 0, fragments: 0 };
  /** Frames taken off `#out` into writes so far, and the place of the pong queued last. */
  #written = 0;
  #pongAt = -1;
  /**
   * True while the client has not authenticated (set by the protocol): the front door may close
   * such a socket to make room at its connection limit, as it does an idle connection.
   */
  unauthenticated = false;
  #finished!: () => void;
  /** Resolves when the connection has ended. */
  readonly finished: Promise<void> = new Promise((resolve) => this.#finished = resolve);

  /** A socket with `options`' limits. */
  constructor(options: FrameSocketOptions) {
    this.#options = options;
  }

  /** Where the socket's messages and end go. */
  bind(handlers: FrameHandlers): void {
    this.#handlers = handlers;
  }

  /** Bytes accepted by `send` and not yet written to the connection. */
  get bufferedAmount(): number {
    return this.#queued;
  }

  /** Sends a text message; nothing once a close was sent or the connection ended. */
  send(text: string): void {
    if (this.#closeSent || this.#ended) return;
    this.#queue(OP.text, encoder.encode(text));
  }

  /**
   * Stops (`true`) or resumes (`false`) taking frames from the connection. While held, nothing
   * more is read: what the client sends waits in the connection's buffers, and its writes
   * block once they are full (TCP's own backpressure).
   */
  holdReading(hold: boolean): void {
    this.#holding = hold;
    if (!hold) this.#resume();
  }

  #resume(): void {
    const release = this.#release;
    this.#release = null;
    release?.();
  }

  /** Starts the close handshake with `code` and `reason`. */
  close(code: number, reason: string): void {
    if (this.#closeSent || this.#ended) return;
    this.#sendClose(closePayload(code, reason));
    // A client that never answers (or never reads) must not keep the connection.
    this.#closeTimer ??= setTimeout(() => this.#end(), CLOSE_WAIT_MS);
  }

  /**
   * Sends a close frame with `code` and `reason` and ends the connection as soon as it is
   * written, without waiting for the client's own close frame: for a socket that must give up
   * its connection now (the connection limit's eviction). A client that does not read holds it
   * for CLOSE_WAIT_MS at most.
   */
  closeAtOnce(code: number, reason: string): void {
    if (this.#ended) return;
    if (!this.#closeSent) this.#sendClose(closePayload(code, reason));
    this.#endAfterClose();
  }

  /**
   * Serves the socket on `conn`: writes `head` (the `101`) with what was sent meanwhile, then
   * reads frames, `handover`'s bytes first; resolves when the connection has ended.
   */
  async serve(conn: Deno.Conn, head: Uint8Array, handover: Handover): Promise<void> {
    this.#conn = conn;
    if (this.#ended) {
      conn.close(); // closed before it was served: the 101 would answer nobody
      return;
    }
    this.#out.unshift(head);
    this.#outOps.unshift(RAW);
    this.#queued += head.length;
    void this.#flush();
    this.#armHeartbeat();
    try {
      await this.#read(conn, handover);
    } catch {
      // The connection broke (or was closed under the read): the socket ends below.
    }
    // A close frame being written ends the connection once it is out (or after CLOSE_WAIT_MS);
    // anything else — the end of the stream, an error — ends it now.
    if (!this.#endAfterWrite) this.#end();
    await this.finished;
  }

  /** Reads and handles frames until the stream ends or the socket stops reading. */
  async #read(conn: Deno.Conn, handover: Handover): Promise<void> {
    let buffer = new Uint8Array(Math.max(READ_BUFFER_MIN, handover.rest.length));
    buffer.set(handover.rest);
    let start = 0;
    let end = handover.rest.length;
    let pending = handover.more;
    /** Bytes of a frame being passed over (one that came after the server's close). */
    let skip = 0;
    for (;;) {
      // Every whole frame in the buffer, then room for the next one.
      for (;;) {
        if (this.#ended || this.#endAfterWrite) return;
        if (this.#holding) {
          await new Promise<void>((resolve) => this.#release = resolve);
          continue;
        }
        if (skip > 0) {
          const n = Math.min(skip, end - start);
          start += n;
          skip -= n;
          if (skip > 0) break;
        }
        const frame = readFrameHead(buffer, start, end);
        if (frame === null) break;
        const whole = frame.headLength + frame.length;
        // Once the server has sent its close, only the client's close matters: the rest is
        // passed over unread, however large, and the connection ends with the close
        // handshake (or CLOSE_WAIT_MS after the server's close).
        if (this.#closeSent && (frame.op !== OP.close || frame.length > 125)) {
          skip = whole;
          continue;
        }
        const refusal = this.#refusal(frame.fin, frame.rsv, frame.op, frame.masked, frame.length);
        if (refusal !== null) {
          this.#fail(refusal[0], refusal[1]);
          skip = whole;
          continue;
        }
        if (end - start < whole) {
          if (start + whole > buffer.length) {
            if (!this.#hold("read", Math.max(whole, READ_BUFFER_MIN))) continue;
            const grown = new Uint8Array(Math.max(whole, READ_BUFFER_MIN));
            grown.set(buffer.subarray(start, end));
            end -= start;
            start = 0;
            buffer = grown;
          }
          break;
        }
        const at = start + frame.headLength;
        unmask(buffer, at, frame.length, buffer.subarray(at - 4, at));
        start = at + frame.length;
        this.#frame(frame.fin, frame.op, buffer.subarray(at, start));
      }
      if (start === end) {
        start = end = 0;
        // An idle socket holds a small buffer, whatever its last frame's size.
        if (buffer.length > READ_BUFFER_MIN) {
          buffer = new Uint8Array(READ_BUFFER_MIN);
          this.#hold("read", 0);
        }
      } else if (end === buffer.length) {
        buffer.copyWithin(0, start, end);
        end -= start;
        start = 0;
      }
      if (pending !== null) {
        const more = await pending;
        pending = null;
        if (more === null) return;
        if (more.length > buffer.length - end) {
          const grown = new Uint8Array(end - start + more.length + READ_BUFFER_MIN);
          grown.set(buffer.subarray(start, end));
          end -= start;
          start = 0;
          buffer = grown;
        }
        buffer.set(more, end);
        end += more.length;
      } else {
        const n = await conn.read(buffer.subarray(end));
        if (n === null) return;
        end += n;
      }
      this.#heard = true;
    }
  }

  /** The close code and reason a frame's head earns, or null for a frame to read. */
  #refusal(
    fin: boolean,
    rsv: number,
    op: number,
    masked: boolean,
    length: number,
  ): [number, string] | null {
    if (!masked) return [1002, "unmasked frame"];
    if (rsv !== 0) return [1002, "reserved bits set"]; // no extension is negotiated
    if (op >= OP.close) {
      if (op > OP.pong) return [1002, `unknown opcode ${op}`];
      if (!fin || length > 125) return [1002, "control frame fragmented or over 125 bytes"];
      return null;
    }
    if (op > OP.binary) return [1002, `unknown opcode ${op}`];
    if (op === OP.continuation && this.#fragmentOp === 0) {
      return [1002, "continuation frame with no message begun"];
    }
    if (op !== OP.continuation && this.#fragmentOp !== 0) {
      return [1002, "new message inside a fragmented one"];
    }
    // Before auth only a small auth frame is taken: a larger one is refused from its head, so
    // sockets without a token cannot fill the memory budget with messages being received.
    if (this.unauthenticated && this.#fragmentBytes + length > MAX_AUTH_FRAME_BYTES) {
      return [1008, `frame over ${MAX_AUTH_FRAME_BYTES} bytes before auth`];
    }
    if (this.#fragmentBytes + length > this.#options.maxMessage) {
      return [1009, `frame over ${this.#options.maxMessage} bytes`];
    }
    return null;
  }

  /** Handles one frame whose payload is `payload` (valid until the next read). */
  #frame(fin: boolean, op: number, payload: Uint8Array): void {
    switch (op) {
      case OP.ping:
        if (!this.#closeSent) this.#pong(payload);
        return;
      case OP.pong:
        return;
      case OP.close:
        this.#closed(payload);
        return;
    }
    if (!fin || this.#fragmentOp !== 0) {
      if (op !== OP.continuation) this.#fragmentOp = op;
      if (!this.#appendFragment(payload)) return;
      if (!fin) return;
      op = this.#fragmentOp;
      payload = this.#fragments.subarray(0, this.#fragmentBytes);
      this.#dropFragments();
    }
    if (this.#closeSent) return; // what follows the server's close is not read
    let data: string | Uint8Array;
    if (op === OP.text) {
      try {
        data = utf8(payload);
      } catch {
        this.#fail(1007, "text frame not UTF-8");
        return;
      }
    } else data = payload.slice();
    this.#handlers?.onMessage(data);
  }

  /**
   * The client's close frame: answered with its code (or 1002/1007 for a malformed one), and the
   * server then ends the connection.
   */
  #closed(payload: Uint8Array): void {
    let answer: Uint8Array = payload.slice(0, 2);
    if (payload.length === 1 || (payload.length >= 2 && !validCloseCode(closeCodeOf(payload)))) {
      answer = closePayload(1002, "");
    } else if (payload.length > 2) {
      try {
        utf8(payload.subarray(2));
      } catch {
        answer = closePayload(1007, "");
      }
    }
    if (!this.#closeSent) this.#sendClose(answer);
    this.#endAfterClose();
  }

  /**
   * Adds a fragment's bytes to the message being assembled; the buffer at least doubles when it
   * grows (never past the message limit) and is held against the memory budget. False when the
   * budget cannot hold it: the connection is then failed (1013, try again later).
   */
  #appendFragment(payload: Uint8Array): boolean {
    const needed = this.#fragmentBytes + payload.length;
    if (needed > this.#fragments.length) {
      const size = Math.min(
        Math.max(needed, 2 * this.#fragments.length, FRAGMENTS_MIN),
        this.#options.maxMessage,
      );
      if (!this.#hold("fragments", size)) return false;
      const grown = new Uint8Array(size);
      grown.set(this.#fragments.subarray(0, this.#fragmentBytes));
      this.#fragments = grown;
    }
    this.#fragments.set(payload, this.#fragmentBytes);
    this.#fragmentBytes = needed;
    return true;
  }

  #dropFragments(): void {
    this.#fragments = NO_BYTES;
    this.#fragmentBytes = 0;
    this.#fragmentOp = 0;
    this.#hold("fragments", 0);
  }

  /**
   * Holds `bytes` of memory for `what` (the read buffer, the fragments) against the budget shared
   * with request bodies, giving back what it held before; answers false, holding nothing for it,
   * when the budget cannot take them, and fails the connection (1013: try again later). Buffers
   * up to {@linkcode UNBUDGETED_BYTES} are not counted: every socket has one.
   */
  #hold(what: "read" | "fragments", bytes: number): boolean {
    const budget = this.#options.budget;
    if (budget === undefined) return true;
    const counted = bytes > UNBUDGETED_BYTES ? bytes : 0;
    if (counted === this.#held[what]) return true;
    budget.give(this.#held[what]);
    this.#held[what] = 0;
    if (counted === 0) return true;
    try {
      budget.take(counted);
    } catch {
      this.#fail(1013, "the server is holding as many large messages as it can; retry later");
      return false;
    }
    this.#held[what] = counted;
    return true;
  }

  /**
   * Fails the connection: a close frame with `code` (unless one was sent), then the end once the
   * client answers it or after CLOSE_WAIT_MS. The connection is not cut at once: bytes left
   * unread would reset it, and the client might never see why it was closed.
   */
  #fail(code: number, reason: string): void {
    this.#dropFragments();
    if (!this.#closeSent) this.#handlers?.onViolation(code, reason); // it may close the socket
    if (!this.#closeSent) this.#sendClose(closePayload(code, reason));
    this.#closeTimer ??= setTimeout(() => this.#end(), CLOSE_WAIT_MS);
  }

  #sendClose(payload: Uint8Array): void {
    this.#closeSent = true;
    this.#queue(OP.close, payload);
  }

  /** Ends the connection once the close frame is written (at once if nothing is queued). */
  #endAfterClose(): void {
    this.#endAfterWrite = true;
    if (!this.#flushing && this.#out.length === 0) this.#end();
    // A client that does not read cannot hold the connection with a close frame it never takes.
    this.#closeTimer ??= setTimeout(() => this.#end(), CLOSE_WAIT_MS);
  }

  /**
   * Answers a ping. A pong still waiting to be written takes this ping's payload instead of a
   * second pong being queued (RFC 6455 §5.5.3 lets a pong answer only the latest ping), so a
   * client that pings without reading holds one pong here, not one per ping.
   */
  #pong(payload: Uint8Array): void {
    const at = this.#pongAt - this.#written;
    if (at >= 0 && at < this.#outOps.length && this.#outOps[at] === OP.pong) {
      this.#queued += payload.length - this.#out[at].length;
      this.#out[at] = payload.slice();
      return;
    }
    this.#pongAt = this.#written + this.#out.length;
    this.#queue(OP.pong, payload.slice());
  }

  #queue(op: number, payload: Uint8Array): void {
    this.#out.push(payload);
    this.#outOps.push(op);
    this.#queued += headLength(payload.length, false) + payload.length;
    if (!this.#flushing && this.#conn !== null) {
      this.#flushing = true;
      this.#flushAfter(FLUSH_HOPS);
    }
  }

  /**
   * Writes what waits once `hops` more rounds of microtasks have run. A commit's fsync releases
   * a consumer's push and its batch's reply through promise chains of different lengths: the
   * push is sent a few hops after the fsync, the reply several hops later. A write at the first
   * frame's own microtask would carry the push alone and the reply would take a second write
   * (and wake the client twice); waiting these hops lets both go in one, at no cost but the hops,
   * since nothing else runs between them.
   */
  #flushAfter(hops: number): void {
    if (hops === 0) void this.#flush();
    else queueMicrotask(() => this.#flushAfter(hops - 1));
  }

  async #flush(): Promise<void> {
    const conn = this.#conn!;
    this.#flushing = true;
    try {
      while (this.#out.length > 0) {
        let take = 0;
        let bytes = 0;
        while (take < this.#out.length && (take === 0 || bytes < WRITE_BATCH)) {
          const length = this.#out[take].length;
          bytes += this.#outOps[take++] === RAW ? length : headLength(length, false) + length;
        }
        const chunk = this.#joined(take, bytes);
        let at = 0;
        while (at < chunk.length) at += await conn.write(chunk.subarray(at));
        if (this.#ended) return;
        this.#queued -= bytes;
      }
    } catch {
      this.#end();
      return;
    } finally {
      this.#flushing = false;
    }
    if (this.#endAfterWrite) this.#end();
  }

  /** The first `take` parts of what waits, taken out, as `bytes` bytes to write. */
  #joined(take: number, bytes: number): Uint8Array {
    const parts = this.#out.splice(0, take);
    const ops = this.#outOps.splice(0, take);
    this.#written += take;
    if (take === 1 && ops[0] === RAW) return parts[0];
    const chunk = new Uint8Array(bytes);
    let at = 0;
    for (let i = 0; i < take; i++) {
      if (ops[i] !== RAW) at = writeFrameHead(chunk, at, ops[i], parts[i].length, false);
      chunk.set(parts[i], at);
      at += parts[i].length;
    }
    return chunk;
  }

  #armHeartbeat(): void {
    this.#heartbeat = deadlinesOf(this.#options.pingIntervalMs).set(() => {
      if (this.#ended) return;
      // While reading is held the client's pongs wait unread: it is not the one that is silent.
      if (this.#heard || this.#holding) {
        this.#heard = false;
        this.#pinged = false;
      } else if (!this.#pinged) {
        this.#pinged = true;
        if (!this.#closeSent) this.#queue(OP.ping, new Uint8Array(0));
      } else {
        // Two intervals without a byte: the client is gone (or frozen), as the runtime decides.
        if (!this.#closeSent) this.#sendClose(closePayload(1001, "No response from ping frame."));
        this.#endAfterClose();
        return;
      }
      this.#armHeartbeat();
    });
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#closeTimer);
    this.#heartbeat?.cancel();
    this.#resume(); // a read loop held ends now
    this.#out = [];
    this.#outOps = [];
    this.#queued = 0;
    this.#pongAt = -1;
    this.#dropFragments();
    this.#hold("read", 0); // gives back what the read buffer held
    try {
      this.#conn?.close();
    } catch {
      // already closed
    }
    this.#finished();
    this.#handlers?.onClose();
  }
}

/** The close code at the start of a close frame's payload. */
function closeCodeOf(payload: Uint8Array): number {
  return (payload[0] << 8) | payload[1];
}

/** Close codes a client may send (RFC 6455 §7.4): the defined ones, and 3000–4999. */
function validCloseCode(code: number): boolean {
  if (code >= 3000 && code <= 4999) return true;
  return code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006;
}
