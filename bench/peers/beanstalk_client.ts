/**
 * A minimal beanstalkd client over `Deno.connect`: `use`, `watch`, `ignore`, `put`, `reserve`,
 * `delete`, following beanstalkd's `doc/protocol.txt`. Commands may be pipelined: replies come
 * back in order, so each call queues a reader for its reply and writes are coalesced per tick.
 *
 * @module
 */

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const CRLF = encoder.encode("\r\n");

/** A reply that is not the one a command expects (`NOT_FOUND`, `TIMED_OUT`, `BAD_FORMAT` …). */
export class BeanstalkError extends Error {
  /** The reply word. */
  readonly reply: string;

  /** Makes the error for `command` answered by `reply`. */
  constructor(command: string, reply: string) {
    super(`beanstalkd answered "${command}" with ${reply}`);
    this.name = "BeanstalkError";
    this.reply = reply;
  }
}

/** A reserved job. */
export interface ReservedJob {
  /** Its id. */
  id: number;
  /** Its body. */
  body: Uint8Array;
}

type Reader = {
  command: string;
  /** `line` is the reply line without CRLF; `body` the data block for replies that carry one. */
  done: (line: string, body: Uint8Array | null) => void;
  fail: (error: Error) => void;
  /** Whether a reply line carries a data block, and its length. */
  bodyLength: (line: string) => number | null;
};

/** One connection to beanstalkd. */
export class BeanstalkClient {
  readonly #conn: Deno.TcpConn;
  readonly #readers: Reader[] = [];
  #outgoing: Uint8Array[] = [];
  #flushing = false;
  #buffer = new Uint8Array(64 * 1024);
  #start = 0;
  #end = 0;
  #closed = false;

  private constructor(conn: Deno.TcpConn) {
    this.#conn = conn;
    conn.setNoDelay(true);
    this.#readLoop();
  }

  /** Connects to beanstalkd on `hostname:port`. */
  static async connect(port: number, hostname = "127.0.0.1"): Promise<BeanstalkClient> {
    return new BeanstalkClient(await Deno.connect({ hostname, port }));
  }

  /** Puts new jobs on `tube` from now on. */
  async use(tube: string): Promise<void> {
    await this.#command(`use ${tube}`, "USING");
  }

  /** Adds `tube` to the watch list; answers how many tubes are watched. */
  async watch(tube: string): Promise<number> {
    const line = await this.#command(`watch ${tube}`, "WATCHING");
    return Number(line.split(" ")[1]);
  }

  /** Removes `tube` from the watch list. */
  async ignore(tube: string): Promise<void> {
    await this.#command(`ignore ${tube}`, "WATCHING");
  }

  /** Puts a job on the used tube; answers its id once beanstalkd has stored it. */
  async put(
    body: string | Uint8Array,
    options: { priority?: number; delay?: number; ttr?: number } = {},
  ): Promise<number> {
    const bytes = typeof body === "string" ? encoder.encode(body) : body;
    const { priority = 1024, delay = 0, ttr = 60 } = options;
    const line = await this.#command(
      `put ${priority} ${delay} ${ttr} ${bytes.length}`,
      "INSERTED",
      bytes,
    );
    return Number(line.split(" ")[1]);
  }

  /** Reserves the next ready job of the watched tubes, waiting for one (or `timeoutSeconds`). */
  async reserve(timeoutSeconds?: number): Promise<ReservedJob> {
    const command = timeoutSeconds === undefined
      ? "reserve"
      : `reserve-with-timeout ${timeoutSeconds}`;
    const { line, body } = await this.#send(command, "RESERVED", null, true);
    return { id: Number(line.split(" ")[1]), body: body! };
  }

  /** Deletes a reserved job. */
  async delete(id: number): Promise<void> {
    await this.#command(`delete ${id}`, "DELETED");
  }

  /** Closes the connection; pending commands fail. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
  }

  async #command(command: string, expect: string, data: Uint8Array | null = null): Promise<string> {
    return (await this.#send(command, expect, data, false)).line;
  }

  #send(
    command: string,
    expect: string,
    data: Uint8Array | null,
    withBody: boolean,
  ): Promise<{ line: string; body: Uint8Array | null }> {
    if (this.#closed) return Promise.reject(new Error("Cannot send: connection closed"));
    return new Promise((resolve, reject) => {
      this.#readers.push({
        command,
        done: (line, body) => {
          const word = line.split(" ", 1)[0];
          if (word === expect) resolve({ line, body });
          else reject(new BeanstalkError(command, line));
        },
        fail: reject,
        bodyLength: (line) =>
          withBody && line.startsWith(`${expect} `) ? Number(line.split(" ")[2]) : null,
      });
      this.#outgoing.push(encoder.encode(`${command}\r\n`));
      if (data !== null) this.#outgoing.push(data, CRLF);
      if (!this.#flushing) this.#flush();
    });
  }

  /** Writes everything queued so far in one go, then whatever was queued meanwhile. */
  async #flush(): Promise<void> {
    this.#flushing = true;
    await Promise.resolve(); // let the commands of this tick join the write
    try {
      while (this.#outgoing.length > 0) {
        const parts = this.#outgoing;
        this.#outgoing = [];
        let size = 0;
        for (const part of parts) size += part.length;
        let chunk = new Uint8Array(size);
        let at = 0;
        for (const part of parts) {
          chunk.set(part, at);
          at += part.length;
        }
        while (chunk.length > 0) chunk = chunk.subarray(await this.#conn.write(chunk));
      }
    } catch (error) {
      this.#failAll(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.#flushing = false;
    }
  }

  async #readLoop(): Promise<void> {
    try {
      for (;;) {
        if (this.#end === this.#buffer.length) this.#compact();
        const n = await this.#conn.read(this.#buffer.subarray(this.#end));
        if (n === null) break;
        this.#end += n;
        this.#parse();
      }
      this.#failAll(new Error("Connection closed by beanstalkd"));
    } catch (error) {
      this.#failAll(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Moves unread bytes to the front, growing the buffer if it is full of them. */
  #compact(): void {
    const unread = this.#end - this.#start;
    const target = unread > this.#buffer.length / 2
      ? new Uint8Array(this.#buffer.length * 2)
      : this.#buffer;
    target.set(this.#buffer.subarray(this.#start, this.#end), 0);
    this.#buffer = target;
    this.#start = 0;
    this.#end = unread;
  }

  /** Hands every complete reply in the buffer to its reader. */
  #parse(): void {
    const buf = this.#buffer;
    while (this.#readers.length > 0) {
      let eol = -1;
      for (let i = this.#start; i + 1 < this.#end; i++) {
        if (buf[i] === 13 && buf[i + 1] === 10) {
          eol = i;
          break;
        }
      }
      if (eol < 0) return;
      const line = decoder.decode(buf.subarray(this.#start, eol));
      const reader = this.#readers[0];
      const length = reader.bodyLength(line);
      let body: Uint8Array | null = null;
      let next = eol + 2;
      if (length !== null) {
        if (next + length + 2 > this.#end) {
          // Make room for the whole data block if it cannot fit, then wait for more bytes.
          if (next + length + 2 - this.#start > buf.length) this.#grow(next + length + 2);
          return;
        }
        body = buf.slice(next, next + length);
        next += length + 2;
      }
      this.#start = next;
      this.#readers.shift();
      reader.done(line, body);
    }
  }

  #grow(needed: number): void {
    const bigger = new Uint8Array(Math.max(needed - this.#start, this.#buffer.length) * 2);
    bigger.set(this.#buffer.subarray(this.#start, this.#end), 0);
    this.#end -= this.#start;
    this.#start = 0;
    this.#buffer = bigger;
  }

  #failAll(error: Error): void {
    this.#closed = true;
    for (const reader of this.#readers.splice(0)) reader.fail(error);
  }
}
