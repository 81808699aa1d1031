/**
 * What the API reads of a request ({@linkcode HttpRequest}), which both the Fetch API's `Request`
 * (from `Deno.serve`, and in tests) and the front door's own {@linkcode ArrivedRequest} offer.
 *
 * Why a request of its own: the front door parses every plain request itself (http1.ts), and
 * building a `Request` from what it parsed — its `Headers`, the WebIDL conversions, a signal
 * that follows another — is a large share of the main thread's work when every job comes in a
 * request of its own (docs/performance.md, "The front door's cost"). An `ArrivedRequest` keeps
 * the parsed fields as they are and builds a body stream or a signal only when a handler asks for
 * one.
 *
 * @module
 */

import { Buffer } from "node:buffer";

/** The header fields of a request, looked up by name (any case). */
export interface HeaderLookup {
  /** The field's value (repeated fields joined with ", "), or null when absent. */
  get(name: string): string | null;
  /** True when the field is present. */
  has(name: string): boolean;
}

/** What the API reads of a request. */
export interface HttpRequest {
  /** The method, upper case. */
  readonly method: string;
  /** The absolute URL. */
  readonly url: string;
  /** The header fields. */
  readonly headers: HeaderLookup;
  /** The body as a stream, or null for none. */
  readonly body: ReadableStream<Uint8Array> | null;
  /** Aborted when the caller goes away. */
  readonly signal: AbortSignal;
  /** The whole body (empty for none); rejects if the body cannot be read. */
  bytes(): Promise<Uint8Array>;
  /**
   * The whole body if every byte of it has already arrived, taken (the body then counts as
   * read); null otherwise, and then nothing is taken. Absent: the body is read with `bytes` or
   * `body`.
   */
  takeArrived?(): Uint8Array | null;
}

/** Header fields as parsed, names lower-cased, in arrival order. */
class FieldList implements HeaderLookup {
  readonly #fields: readonly [string, string][];

  constructor(fields: readonly [string, string][]) {
    this.#fields = fields;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    let value: string | null = null;
    for (const [field, text] of this.#fields) {
      if (field === key) value = value === null ? text : `${value}, ${text}`;
    }
    return value;
  }

  has(name: string): boolean {
    const key = name.toLowerCase();
    return this.#fields.some(([field]) => field === key);
  }
}

const EMPTY = new Uint8Array(0);

/**
 * A request the front door parsed: its fields as they arrived, and its body either whole (all
 * arrived with the head) or as a stream that reads the rest from the connection.
 */
export class ArrivedRequest implements HttpRequest {
  /** The method, upper case. */
  readonly method: string;
  /** The absolute URL. */
  readonly url: string;
  /** The header fields. */
  readonly headers: HeaderLookup;
  #whole: Uint8Array | null;
  #stream: ReadableStream<Uint8Array> | null;
  #used = false;
  #gone: AbortController | null = null;
  #aborted = false;

  /**
   * A request of `method` for `url` with `fields` (names lower-cased); `body` is its bytes when
   * they all arrived, a stream of them when some are still to come, or null for none.
   */
  constructor(
    method: string,
    url: string,
    fields: readonly [string, string][],
    body: Uint8Array | ReadableStream<Uint8Array> | null,
  ) {
    this.method = method;
    this.url = url;
    this.headers = new FieldList(fields);
    this.#whole = body instanceof Uint8Array ? body : null;
    this.#stream = body instanceof ReadableStream ? body : null;
  }

  /** The body as a stream (made on first use for a body that arrived whole), or null. */
  get body(): ReadableStream<Uint8Array> | null {
    if (this.#stream === null && this.#whole !== null) {
      const whole = this.#whole;
      this.#whole = null;
      this.#stream = new ReadableStream({
        start(controller) {
          controller.enqueue(whole);
          controller.close();
        },
      });
    }
    return this.#stream;
  }

  /** Aborted once the caller goes away (made on first use). */
  get signal(): AbortSignal {
    if (this.#gone === null) {
      this.#gone = new AbortController();
      if (this.#aborted) this.#gone.abort();
    }
    return this.#gone.signal;
  }

  /** Tells the request that its caller went away: its signal is aborted. */
  abort(): void {
    this.#aborted = true;
    this.#gone?.abort();
  }

  /** The body if it arrived whole with the head and was not read yet (then it is read), or null. */
  takeArrived(): Uint8Array | null {
    if (this.#used || this.#whole === null) return null;
    this.#used = true;
    const whole = this.#whole;
    this.#whole = null;
    return whole;
  }

  /** The whole body; rejects if it was read already or the connection ended before it did. */
  async bytes(): Promise<Uint8Array> {
    if (this.#used) throw new TypeError("Cannot read the body: it was read already");
    const whole = this.takeArrived();
    if (whole !== null) return whole;
    this.#used = true;
    const stream = this.#stream;
    if (stream === null) return EMPTY;
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
    return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
  }
}
