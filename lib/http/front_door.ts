/**
 * The front door: tegami's own accept loop, so that no client can crash or stall the server by
 * holding connections.
 *
 * Why it exists. `Deno.serve` in Deno 2.9.6 runs its accept loop in Rust and turns an accept
 * error into a rejection of `server.finished` ("Uncaught (in promise) Http: Error: Too many open
 * files"), which ends the process; it also gives no hook per connection, so idle, half-sent and
 * slow connections can neither be counted nor timed out. `node:http` and `node:net` survive
 * EMFILE but silently stop accepting for good (measured), and `Deno.serve` cannot be handed a
 * connection accepted in JavaScript (`Deno.serveHttp`, which could, is deprecated and out of the
 * types). Each gap, its upstream issue and the test that fails once it closes (so that this file
 * can shrink): docs/architecture.md, "Why tegami has its own front door". So the front door
 * owns the public socket: it accepts with back-off on EMFILE/ENFILE, counts every connection
 * (HTTP and WebSocket alike), answers `503` past the limit, and times out connections that send
 * no request. Plain requests (http1.ts: a strict HTTP/1.1 head, a body of known length) are
 * read and answered here, and a WebSocket handshake among them makes the connection a socket
 * served here (lib/ws/frame_socket.ts); from the first request that is anything else (a chunked
 * body, HTTP/1.0, …) the connection is relayed byte for byte to a private `Deno.serve` on
 * loopback, which parses HTTP and upgrades WebSockets itself; the private server refuses any peer
 * that is not one of the front door's own relays.
 *
 * The price of the relay, measured and documented in docs/operations.md: three descriptors per
 * relayed connection (the client's, both ends of the relay) and a copy of every byte through one
 * more socket pair.
 *
 * @module
 */

import { type PeerGroup, PeerGroups } from "./peer_groups.ts";
import type { Logger } from "../observe/log.ts";
import { type Deadline, deadlinesOf } from "./deadline_queue.ts";
import {
  closesConnection,
  type Parsed,
  parsePlainRequest,
  PLAIN_HEAD_MAX,
  writeAll,
  writeResponse,
} from "./http1.ts";
import { ArrivedRequest, type HttpRequest } from "./http_request.ts";
import { httpDate } from "./http_date.ts";
import { judgeServed, refusalAnswer } from "./request_target.ts";
import { type Answer, json, toResponse } from "./respond.ts";
import {
  type FrameSocket,
  type Handover,
  offerUpgrade,
  UpgradeAnswer,
} from "../ws/frame_socket.ts";

/** Options of {@linkcode openFrontDoor}. */
export interface FrontDoorOptions {
  /** Interface to listen on. */
  hostname: string;
  /** Port; 0 picks a free one. */
  port: number;
  /** TLS certificate and key (PEM), to terminate TLS at the front door. */
  tls?: { cert: string; key: string };
  /** Answers a request. A `101` answer marks its connection as a WebSocket, never timed out. */
  handler: (request: HttpRequest) => Promise<Answer>;
  /** Most client connections open at once; past it (and nothing idle to close) → 503. */
  maxConnections: number;
  /** Time a new connection has to deliver its first complete request head, in ms. */
  headerTimeoutMs: number;
  /**
   * Time a kept-alive connection may wait for its next request head, and an answer for the
   * client to take its next bytes, in ms.
   */
  idleTimeoutMs: number;
  /**
   * Paths whose requests always go through the relay: long-lived streamed answers (the event
   * stream). They gain nothing from the front door's own HTTP, and `Deno.serve` hands their
   * chunks to the socket without holding them in JavaScript memory, which matters when many
   * readers stall. @default none
   */
  relayPaths?: readonly string[];
  /** The log. */
  log: Logger;
  /** Counts events for the metrics. */
  onEvent?: (event: FrontDoorEvent) => void;
}

/** What the front door reports to the metrics. */
export type FrontDoorEvent =
  | "accepted"
  | "refused_limit"
  | "evicted_idle"
  | "timed_out_header"
  | "timed_out_idle"
  | "timed_out_write"
  | "accept_error"
  | "cut_at_shutdown";

/** A listening front door. */
export interface FrontDoor {
  /** The public address. */
  readonly addr: Deno.NetAddr;
  /** Client connections open now. */
  readonly connections: number;
  /**
   * Stops accepting, lets requests in flight finish for up to `graceMs`, then cuts every
   * connection still open; resolves when all are closed.
   */
  shutdown(graceMs: number): Promise<void>;
}

/** Descriptors a client connection may hold: its own and, when relayed, both ends of the relay. */
export const DESCRIPTORS_PER_CONNECTION = 3;

/**
 * Descriptors kept free: the process's own (about 30: database, WAL, runtime threads), and room
 * for closed connections whose descriptors the runtime has not let go of yet.
 */
export const RESERVED_DESCRIPTORS = 192;

const ACCEPT_BACKOFF_MIN_MS = 5;
const ACCEPT_BACKOFF_MAX_MS = 1000;
const WARN_EVERY_MS = 10_000;
const RELAY_BUFFER_MIN = 2 * 1024;
const RELAY_BUFFER_MAX = 64 * 1024;
const MAX_REFUSING = 64;
/** A connection's buffer while a request head arrives: the longest head the parser reads. */
const HEAD_BUFFER = PLAIN_HEAD_MAX + RELAY_BUFFER_MIN;
const REFUSE_WAIT_MS = 1000;
/** How long a timed-out connection's 408 may take to be written before the connection closes. */
const TIMEOUT_ANSWER_WAIT_MS = 1000;

interface Client {
  readonly id: number;
  readonly conn: Deno.Conn;
  relay: Deno.Conn | null;
  /** Requests in flight on this connection. */
  busy: number;
  /**
   * The WebSocket it became, if upgraded (only here: a relayed connection's handshake is
   * refused, see deno_socket.ts).
   */
  socket: FrameSocket | null;
  /** Bytes of a request arrived that the private server has not turned into a request yet. */
  partial: boolean;
  /**
   * True when the connection was relayed from HTTP/2's preface on: its requests name their
   * authority in `:authority`, and need no `Host`.
   */
  http2: boolean;
  /** When the connection last became idle (accepted, or its last response completed). */
  idleSince: number;
  /** The address group it came from, which the connection limit's eviction weighs. */
  readonly group: PeerGroup;
  /** The header or idle timeout armed for it, if any. */
  deadline: Deadline | undefined;
  closed: boolean;
  done: Promise<void>;
}

/**
 * A warning that says itself at most once per interval, with the count of those it held back,
 * so a flood of accept errors cannot flood the log.
 */
function rateLimitedWarn(log: Logger, message: string): (fields: Record<string, string>) => void {
  let last = -Infinity;
  let held = 0;
  return (fields) => {
    const now = performance.now();
    if (now - last < WARN_EVERY_MS) {
      held++;
      return;
    }
    last = now;
    log.warn(message, { ...fields, suppressed: held });
    held = 0;
  };
}

/** The raw answer to a connection past the limit: written before any request is read. */
function busyAnswer(): Uint8Array {
  const body = JSON.stringify({
    error: {
      code: "unavailable",
      message: "Cannot take the connection: the server is at its connection limit; retry later",
    },
  });
  return new TextEncoder().encode(
    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n" +
      `date: ${httpDate()}\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  );
}

/** The raw answer to a request whose head did not arrive within `ms`. */
function headTimeoutAnswer(ms: number): Uint8Array {
  const body = JSON.stringify({
    error: {
      code: "request_timeout",
      message: `Cannot read the request: its head did not arrive within ${ms} ms`,
    },
  });
  return new TextEncoder().encode(
    "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n" +
      `date: ${httpDate()}\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
  );
}

/** The first line of HTTP/2's connection preface (RFC 9113 §3.4). */
const HTTP2_PREFACE = new TextEncoder().encode("PRI * HTTP/2.0\r\n");

function startsWith(bytes: Uint8Array, prefix: Uint8Array): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

/** True for the errors that mean "out of descriptors" (EMFILE, ENFILE). */
export function isDescriptorExhaustion(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  return /os error (23|24)\b|Too many open files/i.test(message);
}

/** Opens the front door and its private HTTP server. */
export async function openFrontDoor(options: FrontDoorOptions): Promise<FrontDoor> {
  const { log } = options;
  const event = options.onEvent ?? (() => {});
  const clients = new Map<number, Client>();
  const peers = new PeerGroups();
  // The private server finds a request's client by the relay's local port.
  const byRelayPort = new Map<number, Client>();
  let nextId = 1;
  let accepting = true;
  // The limit in force: lowered for good when descriptors run out below it, so the next
  // connections make room or get 503 instead of meeting EMFILE (the descriptor limit cannot
  // always be read: Deno asks for --allow-all to read /proc/self/limits).
  let limit = options.maxConnections;
  const learnLimit = () => {
    const lowered = Math.max(1, clients.size - 8);
    if (lowered >= limit) return;
    limit = lowered;
    log.warn("Connection limit lowered: the process ran out of file descriptors", {
      max_connections: limit,
    });
  };
  const warnAccept = rateLimitedWarn(
    log,
    "Cannot accept connections: out of file descriptors; backing off",
  );
  const warnLimit = rateLimitedWarn(
    log,
    "Connection limit reached: new connections answered 503",
  );

  const closeClient = (client: Client) => {
    if (client.closed) return;
    client.closed = true;
    client.deadline?.cancel();
    try {
      client.conn.close();
    } catch { /* already closed */ }
    if (client.relay !== null) {
      try {
        client.relay.close();
      } catch { /* already closed */ }
    }
  };

  // Armed and cancelled at every request: a push and a flag each instead of a runtime timer.
  const arm = (client: Client, ms: number, why: FrontDoorEvent) => {
    client.deadline?.cancel();
    client.deadline = deadlinesOf(ms).set(() => {
      client.deadline = undefined;
      if (client.busy > 0 || client.socket !== null || client.closed) return;
      event(why);
      // A request begun but not finished in time can still be told why (as Node does): 408.
      // A connection that sent nothing has nobody waiting for an answer.
      if (!client.partial) {
        closeClient(client);
        return;
      }
      // A client that does not read may never take the answer: closed after a moment anyway.
      const close = () => closeClient(client);
      deadlinesOf(TIMEOUT_ANSWER_WAIT_MS).set(close);
      client.conn.write(headTimeoutAnswer(ms)).catch(() => {}).finally(close);
    });
  };

  // The private server: it listens on loopback, port 0, and serves only the relays.
  const serveRelayed = async (
    request: Request,
    info: Deno.ServeHandlerInfo<Deno.NetAddr>,
  ): Promise<Response> => {
    const client = byRelayPort.get(info.remoteAddr.port);
    if (client === undefined) {
      return new Response(
        JSON.stringify({
          error: { code: "forbidden", message: "Cannot serve: connect to the public address" },
        }),
        { status: 403, headers: { "content-type": "application/json", connection: "close" } },
      );
    }
    client.busy++;
    // The request the relayed bytes began is here: until more bytes come, none is begun.
    client.partial = false;
    client.deadline?.cancel();
    client.deadline = undefined;
    let response: Response;
    try {
      // The same rule as for the requests parsed here, before the API sees the URL the private
      // server made: from `Host` and the target, or the absolute-form target itself.
      const refusal = judgeServed(
        request.method,
        request.url,
        request.headers.get("host"),
        client.http2,
      );
      response = toResponse(
        refusal === null ? await options.handler(request) : refusalAnswer(refusal),
      );
    } catch (error) {
      client.busy--;
      throw error;
    }
    // An answer that ends the connection (a body that timed out) may leave the body unread:
    // the private server would wait for it, so the relay tells it the client is done.
    const ends = response.headers.get("connection")?.toLowerCase() === "close";
    info.completed.catch(() => {}).finally(() => {
      if (ends) client.relay?.closeWrite().catch(() => {});
      client.busy--;
      if (client.busy === 0 && !client.closed) {
        client.idleSince = performance.now();
        arm(client, options.idleTimeoutMs, "timed_out_idle");
      }
    });
    return response;
  };
  // Every private server started; the last one takes new relays. Its accept loop dies on
  // EMFILE like any Deno.serve (the connections it holds keep being served): the rejection is
  // caught, and a new one is started on a new port, with back-off while descriptors are short.
  const inners: Deno.HttpServer<Deno.NetAddr>[] = [];
  let innerPort = 0;
  let restarting = false;
  const startInner = () => {
    const inner = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      serveRelayed,
    );
    inners.push(inner);
    innerPort = inner.addr.port;
    inner.finished.catch((error) => {
      if (!accepting) return;
      learnLimit();
      warnAccept({ error: String(error).slice(0, 200) });
      void restartInner();
    });
  };
  const restartInner = async () => {
    if (restarting) return;
    restarting = true;
    innerPort = 0; // relays wait for the new one
    let backoff = ACCEPT_BACKOFF_MIN_MS;
    while (accepting) {
      try {
        startInner();
        break;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(ACCEPT_BACKOFF_MAX_MS, backoff * 2);
      }
    }
    restarting = false;
  };
  startInner();

  let listener: Deno.Listener;
  try {
    listener = options.tls !== undefined
      ? Deno.listenTls({ hostname: options.hostname, port: options.port, ...options.tls })
      : Deno.listen({ hostname: options.hostname, port: options.port });
  } catch (error) {
    await Promise.all(inners.map((inner) => inner.shutdown().catch(() => {})));
    throw error;
  }

  /**
   * Closes an idle connection (no request in flight, not `spare`; a WebSocket that has not
   * authenticated counts as idle since it was accepted): the longest idle of the address group
   * holding the most idle connections (peer_groups.ts). False if none. So sockets that never send
   * their token cannot keep token holders out by holding every slot, and a flood of them from one
   * address closes its own before anyone else's.
   */
  const evictIdle = (spare?: Client): boolean => {
    const victim = peers.pick(
      clients,
      (client) =>
        client.busy === 0 && !client.closed && client !== spare &&
        (client.socket === null || client.socket.unauthenticated),
    );
    if (victim === null) return false;
    event("evicted_idle");
    if (victim.socket === null) closeClient(victim);
    else {
      // A socket that has not sent its token is told why, with a close frame the moment before
      // its connection ends (1013: try again later), rather than seeing the connection cut.
      victim.closed = true;
      victim.deadline?.cancel();
      victim.socket.closeAtOnce(1013, "Connection limit reached: connect again later");
    }
    return true;
  };

  // Refused connections still being answered: each holds a descriptor for up to a second.
  let refusing = 0;
  const refuse = async (conn: Deno.Conn) => {
    event("refused_limit");
    warnLimit({ limit: String(limit) });
    if (refusing < MAX_REFUSING) {
      refusing++;
      try {
        // Wait for the request's first bytes: an HTTP client that gets an answer before it has
        // sent its request takes it for a broken connection, not for a 503.
        const buffer = new Uint8Array(4096);
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          conn.read(buffer).catch(() => null),
          new Promise((resolve) => timer = setTimeout(resolve, REFUSE_WAIT_MS)),
        ]);
        clearTimeout(timer);
        await conn.write(busyAnswer());
      } catch {
        /* the client left */
      } finally {
        refusing--;
      }
    }
    try {
      conn.close();
    } catch { /* already closed */ }
  };

  /**
   * Copies `from` to `to` until either ends. With `stall`, a write that `to` takes no byte of
   * within `stall.ms` calls `stall.onStall` (which closes both): a client that stops reading an
   * answer that never completes (an event stream) cannot hold its connection, the relay's and
   * their buffers for as long as it stays connected.
   */
  const pump = async (
    from: Deno.Conn,
    to: Deno.Conn,
    onData?: () => void,
    stall?: { ms: number; onStall: () => void },
  ) => {
    // A small buffer while the traffic is small (an idle connection, a WebSocket, holds only it:
    // ten thousand of them cost 40 MiB, not 1.3 GiB), a large one while reads fill it.
    let buffer = new Uint8Array(RELAY_BUFFER_MIN);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null) break;
        onData?.();
        let at = 0;
        while (at < n) {
          const deadline = stall === undefined
            ? undefined
            : deadlinesOf(stall.ms).set(stall.onStall);
          try {
            at += await to.write(buffer.subarray(at, n));
          } finally {
            deadline?.cancel();
          }
        }
        if (n === buffer.length && buffer.length < RELAY_BUFFER_MAX) {
          buffer = new Uint8Array(RELAY_BUFFER_MAX);
        } else if (n < RELAY_BUFFER_MIN && buffer.length > RELAY_BUFFER_MIN) {
          buffer = new Uint8Array(RELAY_BUFFER_MIN);
        }
      }
      await to.closeWrite().catch(() => {});
    } catch {
      // Either side broke off: the other is closed below.
    }
  };

  const scheme = options.tls === undefined ? "http" : "https";
  const relayPaths = options.relayPaths ?? [];
  const relayed = (target: string) => {
    const path = target.split("?", 1)[0];
    return relayPaths.some((p) => path === p);
  };
  /**
   * Answers the connection's plain requests here (http1.ts) until one is not; answers the bytes
   * from that request on, for the relay, or null once the connection is done. One read is kept
   * in flight while a request is answered, so a caller that goes away is seen at once (its
   * request's signal is aborted, as `Deno.serve` does).
   */
  const servePlain = async (client: Client): Promise<Handover | null> => {
    const conn = client.conn;
    // An answer the client takes no byte of within the idle timeout ends the connection.
    const stall = {
      ms: options.idleTimeoutMs,
      onStall: () => {
        event("timed_out_write");
        closeClient(client);
      },
    };
    let buffer = new Uint8Array(RELAY_BUFFER_MIN);
    let start = 0;
    let end = 0;
    /** Where the parser's check of an incomplete head stopped: it resumes there. */
    let scanned = 0;
    /** The read in flight into `buffer.subarray(end)`, if any; the buffer stays put meanwhile. */
    let reading: Promise<void> | null = null;
    /** True once the client's end of the stream (or an error) was read. */
    let ended = false;
    /** The request being answered, told (its signal aborted) when its caller's stream ends. */
    let current: ArrivedRequest | null = null;
    const startRead = () => {
      reading = conn.read(buffer.subarray(end)).then((n) => {
        reading = null;
        if (n === null) {
          ended = true;
          current?.abort();
          return;
        }
        if (client.busy === 0) client.partial = true;
        end += n;
        // While a request is answered a read stays in flight, to see its caller go.
        if (current !== null && end < buffer.length) startRead();
      }, () => {
        reading = null;
        ended = true;
        current?.abort();
      });
    };
    /** What the relay must pass on: the bytes from `from` on, and those of the read in flight. */
    const handOver = (from: number): Handover => {
      const rest = buffer.slice(from, end);
      if (reading === null) return { rest, more: null };
      const at = end;
      const more = reading.then(() => (end === at ? null : buffer.slice(at, end)));
      return { rest, more };
    };
    for (;;) {
      const parsed: Parsed = start === end
        ? { kind: "incomplete", scanned: start }
        : parsePlainRequest(buffer, start, end, scanned);
      if (parsed.kind === "other") return handOver(start);
      if (parsed.kind === "refused") {
        // Nothing after the refused head can be read with certainty: the connection ends.
        await writeResponse(conn, refusalAnswer(parsed.refusal), true, stall).catch(() => {});
        return null;
      }
      if (parsed.kind === "incomplete") {
        scanned = parsed.scanned;
        if (reading === null) {
          if (ended) return null;
          if (start > 0) {
            buffer.copyWithin(0, start, end);
            end -= start;
            scanned -= start;
            start = 0;
          }
          if (end === buffer.length) {
            // Room for the longest head the parser reads: a longer one goes to the relay.
            if (buffer.length >= HEAD_BUFFER) return handOver(0);
            const grown = new Uint8Array(HEAD_BUFFER);
            grown.set(buffer.subarray(0, end));
            buffer = grown;
          }
          startRead();
        }
        await reading;
        continue;
      }
      const plain = parsed.request;
      if (relayed(plain.target)) return handOver(start);
      if (plain.bodyEnd > end && reading !== null) {
        await reading; // the read in flight holds bytes of this body: wait for them first
        continue;
      }
      const arrived = Math.min(end, plain.bodyEnd);
      let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
      /** Bytes of the body not yet read from the connection. */
      let unread = plain.bodyEnd - arrived;
      if (unread > 0) {
        // The rest of the body is read as the handler asks for it, with its timeout and budget.
        const first = buffer.slice(plain.bodyStart, arrived);
        body = new ReadableStream<Uint8Array>({
          start(controller) {
            if (first.length > 0) controller.enqueue(first);
          },
          async pull(controller) {
            const chunk = new Uint8Array(Math.min(unread, RELAY_BUFFER_MAX));
            const n = await conn.read(chunk).catch(() => null);
            if (n === null) {
              ended = true;
              controller.error(new Error("the connection ended before the body was complete"));
              return;
            }
            unread -= n;
            controller.enqueue(chunk.subarray(0, n));
            if (unread === 0) controller.close();
          },
        });
      } else if (plain.bodyEnd > plain.bodyStart) {
        body = buffer.slice(plain.bodyStart, plain.bodyEnd);
      }
      // A Host the URL parser refuses (a port past 65535) is the API's 400, as through the relay.
      const request = new ArrivedRequest(
        plain.method,
        `${scheme}://${plain.host}${plain.target}`,
        plain.headers,
        body,
      );
      if (plain.websocket) offerUpgrade(request);
      start = scanned = arrived;
      client.busy++;
      client.partial = false;
      client.deadline?.cancel();
      client.deadline = undefined;
      current = request;
      if (ended) request.abort();
      else if (unread === 0 && reading === null) {
        if (start === end) {
          start = end = scanned = 0;
          // An idle connection holds a small buffer (ten thousand of them: 20 MiB, not 640).
          if (buffer.length > RELAY_BUFFER_MIN) buffer = new Uint8Array(RELAY_BUFFER_MIN);
        }
        if (end < buffer.length) startRead(); // sees the caller go away while it waits
      }
      let response: Answer;
      try {
        response = await options.handler(request);
      } catch {
        response = json(500, {
          error: { code: "internal", message: "Cannot answer: server error" },
        });
      }
      current = null;
      if (response instanceof UpgradeAnswer) {
        // The connection is a WebSocket from here on, served on this socket, not relayed.
        client.socket = response.socket;
        client.busy--;
        await response.socket.serve(conn, response.head, handOver(start));
        return null;
      }
      // A body left unread (refused before it was read) leaves no way to find the next request.
      const close = !plain.keepAlive || unread > 0 || closesConnection(response) || !accepting;
      // The end of the caller's stream is taken as its leaving, as `Deno.serve` does (the
      // signal is aborted); the answer is still written, for a caller that only half-closed.
      const written = await writeResponse(conn, response, close, stall).then(
        () => true,
        () => false,
      );
      client.busy--;
      if (!written || close) return null;
      client.partial = start < end;
      if (start === end && reading === null && buffer.length > RELAY_BUFFER_MIN) {
        start = end = scanned = 0;
        buffer = new Uint8Array(RELAY_BUFFER_MIN); // after a body that was streamed
      }
      client.idleSince = performance.now();
      arm(client, options.idleTimeoutMs, "timed_out_idle");
    }
  };

  const serveClient = async (client: Client) => {
    const rest = await servePlain(client);
    if (rest === null) return;
    client.http2 = startsWith(rest.rest, HTTP2_PREFACE);
    let relay: Deno.TcpConn | null = null;
    for (let attempt = 0; relay === null; attempt++) {
      try {
        if (innerPort === 0) throw new Deno.errors.ConnectionRefused("restarting");
        relay = await Deno.connect({ hostname: "127.0.0.1", port: innerPort });
      } catch (error) {
        // Out of descriptors for the relay: make room by closing an idle connection and try
        // again shortly; only when nothing can be freed is the client refused.
        // Out of descriptors (or the private server restarting after it ran out): make room by
        // closing an idle connection and try again shortly; refuse only when nothing helps.
        const short = isDescriptorExhaustion(error) || innerPort === 0 || restarting;
        if (isDescriptorExhaustion(error)) learnLimit();
        if (!short || attempt === 5 || (!evictIdle(client) && !restarting)) {
          warnAccept({ error: String(error).slice(0, 200) });
          await refuse(client.conn);
          client.closed = true;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 20 * (attempt + 1)));
      }
    }
    if (client.closed) {
      relay.close();
      return;
    }
    client.relay = relay;
    const port = (relay.localAddr as Deno.NetAddr).port;
    byRelayPort.set(port, client);
    try {
      relay.setNoDelay(true);
    } catch { /* closed meanwhile: the pumps end at once */ }
    // The connection lasts as long as the private server's side: a client that half-closes
    // after its request still gets the answer (its end of file is passed on, and the private
    // server closes once it has answered), and closing the client ends the upstream pump.
    void (async () => {
      try {
        await writeAll(relay, rest.rest);
        const more = await rest.more;
        if (more !== null) await writeAll(relay, more);
      } catch {
        closeClient(client);
        return;
      }
      await pump(client.conn, relay, () => {
        if (client.busy === 0) client.partial = true;
      });
    })();
    await pump(relay, client.conn, undefined, {
      ms: options.idleTimeoutMs,
      onStall: () => {
        event("timed_out_write");
        closeClient(client);
      },
    });
    byRelayPort.delete(port);
    closeClient(client);
  };

  const admit = (conn: Deno.Conn) => {
    if (clients.size >= limit && !evictIdle()) {
      void refuse(conn);
      return;
    }
    event("accepted");
    // Answers and frames are written whole, each as soon as it is ready: Nagle's algorithm would
    // hold a write behind the client's delayed ACK of the one before (40 ms for a WebSocket's
    // second push in a row).
    try {
      if ("setNoDelay" in conn) (conn as Deno.TcpConn).setNoDelay(true);
    } catch { /* not a TCP socket */ }
    const client: Client = {
      id: nextId++,
      conn,
      relay: null,
      busy: 0,
      socket: null,
      partial: false,
      http2: false,
      idleSince: performance.now(),
      group: peers.join(conn.remoteAddr),
      deadline: undefined,
      closed: false,
      done: Promise.resolve(),
    };
    clients.set(client.id, client);
    arm(client, options.headerTimeoutMs, "timed_out_header");
    client.done = serveClient(client).finally(() => {
      closeClient(client);
      clients.delete(client.id);
      peers.leave(client.group);
    });
  };

  const acceptLoop = (async () => {
    let backoff = ACCEPT_BACKOFF_MIN_MS;
    while (accepting) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (!accepting || error instanceof Deno.errors.BadResource) break;
        // EMFILE/ENFILE, or a connection reset before it was accepted: never fatal. Back off so a
        // descriptor shortage does not become a busy loop, and keep serving the connections held.
        event("accept_error");
        if (isDescriptorExhaustion(error)) learnLimit();
        warnAccept({ error: String(error).slice(0, 200) });
        await new Promise((resolve) => setTimeout(resolve, backoff));
        backoff = Math.min(ACCEPT_BACKOFF_MAX_MS, backoff * 2);
        continue;
      }
      backoff = ACCEPT_BACKOFF_MIN_MS;
      admit(conn);
    }
  })();

  let stopping: Promise<void> | null = null;
  return {
    addr: listener.addr as Deno.NetAddr,
    get connections() {
      return clients.size;
    },
    shutdown(graceMs: number) {
      stopping ??= (async () => {
        accepting = false;
        try {
          listener.close();
        } catch { /* already closed */ }
        await acceptLoop;
        // Connections answered here that wait for their next request close now; those with a
        // request in flight close after its answer; WebSockets served here close when the
        // server's close handshake (sent before this) ends.
        for (const client of clients.values()) {
          if (client.relay === null && client.busy === 0 && client.socket === null) {
            closeClient(client);
          }
        }
        // The private server closes idle connections at once and the others after their
        // answer; each relay forwards what it holds before it closes, so no answer is cut.
        const graceful = Promise.all(inners.map((inner) => inner.shutdown().catch(() => {})));
        const all = () => Promise.all([...clients.values()].map((c) => c.done));
        let timer: ReturnType<typeof setTimeout> | undefined;
        const expired = new Promise<"expired">((resolve) => {
          timer = setTimeout(() => resolve("expired"), graceMs);
        });
        const outcome = await Promise.race([all().then(() => "done" as const), expired]);
        clearTimeout(timer);
        if (outcome === "expired") {
          for (const client of clients.values()) {
            if (!client.closed) event("cut_at_shutdown");
            closeClient(client);
          }
          await all();
        }
        await graceful;
      })();
      return stopping;
    },
  };
}
