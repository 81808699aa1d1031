/**
 * A WebSocket test client over the standard `WebSocket`: it queues every frame the server sends
 * so a test can await the one it cares about (`next(predicate)`), send requests with a `ref` and
 * await their reply (`request`), and see how the socket closed (`closed`). It is an async
 * disposable: `await using ws = await WsClient.connect(wsUrl(server.url))`.
 *
 * @module
 */

import { checkServerFrame } from "./api_schemas.ts";

/** A frame from the server: a parsed JSON object with an `op`. */
// deno-lint-ignore no-explicit-any
export type Frame = { op: string; [field: string]: any };

/** How a socket closed. */
export interface CloseInfo {
  /** The close code (1005 when none was given, 1006 when the connection dropped). */
  code: number;
  /** The close reason. */
  reason: string;
}

/** Options of {@linkcode WsClient.connect}. */
export interface WsClientOptions {
  /** Extra handshake headers (Deno-only), e.g. `Authorization`. */
  headers?: HeadersInit;
  /** How long to wait for the socket to open, ms. @default 2000 */
  timeoutMs?: number;
  /** Subprotocols to offer (`Sec-WebSocket-Protocol`), e.g. `tegami.v2`. */
  protocols?: string | string[];
}

/** The default wait for a frame, ms: generous, since a passing test never waits this long. */
export const FRAME_TIMEOUT_MS = 2000;

/** The WebSocket URL of a test server's `/v1/ws`, from its base URL. */
export function wsUrl(baseUrl: string): string {
  return baseUrl.replace(/^http/, "ws") + "/v1/ws";
}

interface Waiter {
  predicate: (frame: Frame) => boolean;
  resolve: (frame: Frame) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

/** A connected test client. */
export class WsClient implements AsyncDisposable {
  /** The underlying socket. */
  readonly socket: WebSocket;
  /** Resolves when the socket has closed, with the code and reason. */
  readonly closed: Promise<CloseInfo>;
  #frames: Frame[] = [];
  #waiters = new Set<Waiter>();
  #closeInfo: CloseInfo | null = null;
  #refs = 0;

  private constructor(socket: WebSocket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => {
      socket.addEventListener("close", (event) => {
        this.#closeInfo = { code: event.code, reason: event.reason };
        for (const waiter of [...this.#waiters]) {
          this.#drop(waiter);
          waiter.reject(
            new Error(`Socket closed with ${event.code} ${event.reason} while waiting for a frame`),
          );
        }
        resolve(this.#closeInfo);
      });
    });
    socket.addEventListener("message", (event) => {
      const text = typeof event.data === "string"
        ? event.data
        : new TextDecoder().decode(event.data as ArrayBuffer);
      // Every frame must agree with the AsyncAPI document; a mismatch fails the test.
      checkServerFrame(text);
      this.#frames.push(JSON.parse(text));
      this.#match();
    });
  }

  /** Opens a socket and waits until it is open; rejects if the handshake fails. */
  static connect(url: string, options: WsClientOptions = {}): Promise<WsClient> {
    const socket = new WebSocket(url, {
      headers: options.headers,
      ...(options.protocols === undefined ? {} : { protocols: [options.protocols].flat() }),
    });
    socket.binaryType = "arraybuffer";
    const client = new WsClient(socket);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        socket.close();
        reject(new Error(`Cannot open ${url}: no answer in ${options.timeoutMs ?? 2000} ms`));
      }, options.timeoutMs ?? 2000);
      socket.addEventListener("open", () => {
        clearTimeout(timer);
        resolve(client);
      }, { once: true });
      socket.addEventListener("error", () => {
        clearTimeout(timer);
        // The close event follows; wait for it so no socket resource outlives the test.
        client.closed.then((info) =>
          reject(new Error(`Cannot open ${url}: closed with ${info.code} ${info.reason}`))
        );
      }, { once: true });
    });
  }

  /** Frames received and not yet taken by {@linkcode WsClient.next}. */
  get frames(): readonly Frame[] {
    return this.#frames;
  }

  /** Sends an object as a JSON text frame, or a string or bytes as they are. */
  send(frame: Record<string, unknown> | string | Uint8Array): void {
    if (typeof frame === "string" || frame instanceof Uint8Array) this.socket.send(frame);
    else this.socket.send(JSON.stringify(frame));
  }

  /**
   * Takes the first received frame matching `predicate` (any frame by default), waiting for it
   * up to `timeoutMs`. Frames that do not match stay queued for later calls.
   */
  next(
    predicate: (frame: Frame) => boolean = () => true,
    timeoutMs = FRAME_TIMEOUT_MS,
  ): Promise<Frame> {
    const at = this.#frames.findIndex(predicate);
    if (at >= 0) return Promise.resolve(this.#frames.splice(at, 1)[0]);
    if (this.#closeInfo !== null) {
      const { code, reason } = this.#closeInfo;
      return Promise.reject(new Error(`Socket closed with ${code} ${reason}; no such frame`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#drop(waiter);
          reject(
            new Error(
              `No matching frame in ${timeoutMs} ms; queued: ${JSON.stringify(this.#frames)}`,
            ),
          );
        }, timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Takes the next `job` frame, of `queue` if given. */
  nextJob(queue?: string, timeoutMs = FRAME_TIMEOUT_MS): Promise<Frame> {
    return this.next(
      (f) => f.op === "job" && (queue === undefined || f.queue === queue),
      timeoutMs,
    );
  }

  /** Takes `n` job frames (of `queue` if given), in arrival order. */
  async jobs(n: number, queue?: string, timeoutMs = FRAME_TIMEOUT_MS): Promise<Frame[]> {
    const out: Frame[] = [];
    for (let i = 0; i < n; i++) out.push(await this.nextJob(queue, timeoutMs));
    return out;
  }

  /**
   * Sends `frame` with a fresh `ref` (unless it has one) and answers the `ok` or `error` reply
   * carrying that ref.
   */
  request(frame: Record<string, unknown>, timeoutMs = FRAME_TIMEOUT_MS): Promise<Frame> {
    const ref = frame.ref ?? `r${++this.#refs}`;
    this.send({ ...frame, ref });
    return this.next((f) => (f.op === "ok" || f.op === "error") && f.ref === ref, timeoutMs);
  }

  /** Sends `frame` and answers its `ok` reply; throws with the error frame otherwise. */
  async ok(frame: Record<string, unknown>, timeoutMs = FRAME_TIMEOUT_MS): Promise<Frame> {
    const reply = await this.request(frame, timeoutMs);
    if (reply.op !== "ok") {
      throw new Error(`${JSON.stringify(frame)} was refused: ${JSON.stringify(reply)}`);
    }
    return reply;
  }

  /** Subscribes to a queue and answers the `ok` reply. */
  subscribe(queue: string, prefetch: number, more: Record<string, unknown> = {}): Promise<Frame> {
    return this.ok({ op: "subscribe", queue, prefetch, ...more });
  }

  /**
   * Waits `ms` of real time and answers the frames matching `predicate` that arrived meanwhile
   * (left queued). Use only to show that something does *not* happen.
   */
  async quietFor(ms: number, predicate: (frame: Frame) => boolean = () => true): Promise<Frame[]> {
    await new Promise((resolve) => setTimeout(resolve, ms));
    return this.#frames.filter(predicate);
  }

  /** Resolves with the close once the server has closed the socket; throws after `timeoutMs`. */
  async closedWithin(timeoutMs = FRAME_TIMEOUT_MS): Promise<CloseInfo> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`The socket is still open after ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.closed, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Closes with `code` (1000 by default) and waits for the close to complete. */
  async close(code = 1000, reason = ""): Promise<CloseInfo> {
    if (this.#closeInfo === null && this.socket.readyState < WebSocket.CLOSING) {
      this.socket.close(code, reason);
    }
    return await this.closed;
  }

  /** Closes the socket if still open and waits for it. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #match(): void {
    for (const waiter of [...this.#waiters]) {
      const at = this.#frames.findIndex(waiter.predicate);
      if (at < 0) continue;
      const [frame] = this.#frames.splice(at, 1);
      this.#drop(waiter);
      waiter.resolve(frame);
    }
  }

  #drop(waiter: Waiter): void {
    clearTimeout(waiter.timer);
    this.#waiters.delete(waiter);
  }
}

/**
 * Polls `check` every few ms of real time until it answers true; throws after `timeoutMs`. For
 * effects that travel over the network (a close seen by the server), never for leases or
 * delays, which move with the test clock.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = FRAME_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!await check()) {
    if (Date.now() > deadline) {
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
