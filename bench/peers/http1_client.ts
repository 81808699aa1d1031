/**
 * A lean HTTP/1.1 keep-alive client over `Deno.connect`, for the bench's producers: one request
 * at a time per connection, a pool of connections for requests in flight. It puts the same bytes
 * on the wire as `fetch` (a POST with a JSON body), at a fraction of the driver's CPU, so the
 * driver takes less of the machine from the server under test (`--fetch` uses `fetch` instead).
 *
 * It reads `Content-Length` and chunked bodies; it does not follow redirects or speak TLS.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An answer: status and body text. */
export interface Http1Response {
  /** Status code. */
  status: number;
  /** Body, decoded as UTF-8. */
  body: string;
}

/** One keep-alive connection. */
class Http1Connection {
  readonly #conn: Deno.TcpConn;
  #buffer = new Uint8Array(16 * 1024);
  #end = 0;

  constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
    conn.setNoDelay(true);
  }

  async request(head: string, body: Uint8Array): Promise<Http1Response> {
    const headBytes = encoder.encode(`${head}Content-Length: ${body.length}\r\n\r\n`);
    const out = new Uint8Array(headBytes.length + body.length);
    out.set(headBytes, 0);
    out.set(body, headBytes.length);
    let chunk = out.subarray(0);
    while (chunk.length > 0) chunk = chunk.subarray(await this.#conn.write(chunk));
    return await this.#readResponse();
  }

  close(): void {
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }

  async #fill(): Promise<void> {
    if (this.#end === this.#buffer.length) {
      const bigger = new Uint8Array(this.#buffer.length * 2);
      bigger.set(this.#buffer);
      this.#buffer = bigger;
    }
    const n = await this.#conn.read(this.#buffer.subarray(this.#end));
    if (n === null) throw new Error("Connection closed by the server");
    this.#end += n;
  }

  /** Consumes `n` bytes from the front of the buffer. */
  #take(n: number): Uint8Array {
    const taken = this.#buffer.slice(0, n);
    this.#buffer.copyWithin(0, n, this.#end);
    this.#end -= n;
    return taken;
  }

  #indexOf(pattern: number[], from = 0): number {
    const buf = this.#buffer;
    outer: for (let i = from; i + pattern.length <= this.#end; i++) {
      for (let j = 0; j < pattern.length; j++) if (buf[i + j] !== pattern[j]) continue outer;
      return i;
    }
    return -1;
  }

  async #readResponse(): Promise<Http1Response> {
    let headEnd;
    while ((headEnd = this.#indexOf([13, 10, 13, 10])) < 0) await this.#fill();
    const head = decoder.decode(this.#take(headEnd + 4)).toLowerCase();
    const status = Number(head.slice(9, 12));
    const length = head.match(/\r\ncontent-length:\s*(\d+)/);
    if (length !== null) {
      const n = Number(length[1]);
      while (this.#end < n) await this.#fill();
      return { status, body: decoder.decode(this.#take(n)) };
    }
    if (/\r\ntransfer-encoding:[^\r]*chunked/.test(head)) {
      const parts: Uint8Array[] = [];
      for (;;) {
        let eol;
        while ((eol = this.#indexOf([13, 10])) < 0) await this.#fill();
        const size = parseInt(decoder.decode(this.#take(eol + 2)), 16);
        while (this.#end < size + 2) await this.#fill();
        const data = this.#take(size + 2).subarray(0, size);
        if (size === 0) break;
        parts.push(data);
      }
      return { status, body: parts.map((p) => decoder.decode(p)).join("") };
    }
    throw new Error(`Cannot read the response: neither Content-Length nor chunked:\n${head}`);
  }
}

/** A pool of keep-alive connections to one server; a connection per request in flight. */
export class Http1Client {
  readonly #hostname: string;
  readonly #port: number;
  readonly #host: string;
  readonly #idle: Http1Connection[] = [];
  readonly #all = new Set<Http1Connection>();

  /** A client for `url`'s host and port (`http:` only). */
  constructor(url: string) {
    const parsed = new URL(url);
    if (parsed.protocol !== "http:") throw new Error(`Cannot use ${url}: only http: is spoken`);
    this.#hostname = parsed.hostname;
    this.#port = Number(parsed.port || 80);
    this.#host = parsed.host;
  }

  /** POSTs `body` (JSON text) to `path`; answers status and body. */
  post(path: string, body: string): Promise<Http1Response> {
    const head = `POST ${path} HTTP/1.1\r\nHost: ${this.#host}\r\n` +
      "Content-Type: application/json\r\n";
    return this.request(head, encoder.encode(body));
  }

  /**
   * Sends a request of `head` (its request line and headers, each ending in CRLF, without
   * `Content-Length`, which is added) and `body` on an idle connection, or a new one.
   */
  async request(head: string, body: Uint8Array): Promise<Http1Response> {
    const conn = this.#idle.pop() ??
      new Http1Connection(await Deno.connect({ hostname: this.#hostname, port: this.#port }));
    this.#all.add(conn);
    try {
      const response = await conn.request(head, body);
      this.#idle.push(conn);
      return response;
    } catch (error) {
      this.#all.delete(conn);
      conn.close();
      throw error;
    }
  }

  /** Closes every connection. */
  close(): void {
    for (const conn of this.#all) conn.close();
    this.#all.clear();
    this.#idle.length = 0;
  }
}
