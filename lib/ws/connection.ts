/**
 * One WebSocket connection's protocol state: authentication, subscriptions with credit, the
 * leases it holds, and the answers to its frames. It talks to the socket only through
 * {@linkcode SocketLike}, so tests can drive it with a fake socket; `deno_socket.ts` binds it to
 * `Deno.upgradeWebSocket`.
 *
 * Credit works like AMQP prefetch: a subscription holds at most `prefetch` unsettled jobs; an
 * ack, nack, expiry or cancel of one of them frees one credit and offers the queue again.
 * When the connection goes away, every lease it held returns to pending at once — except at
 * server shutdown, when leases are kept so consumers can ack after the restart.
 *
 * A connection may watch up to {@linkcode MAX_WATCHES} jobs: it is sent each one's progress
 * reports (`progressed`) and its outcome (`ended`, or `gone` when it was deleted first) as they
 * happen; a watch ends with its job.
 *
 * With auth on, a socket that did not authenticate on the upgrade must send `auth` first, and
 * within {@linkcode AUTH_TIMEOUT_MS}: otherwise sockets without a token could hold every
 * connection slot (they answer pings, so the heartbeat alone never ends them).
 *
 * @module
 */

import { strictUtf8Decoder } from "../api/utf8.ts";
import { type Access, OPERATIONS, requireAccess } from "../auth/operations.ts";
import { type Principal, requireQueue, type TokenSet } from "../auth/tokens.ts";
import type { Broker, LeaseHolder, LeaseNotice, Subscriber } from "../core/broker.ts";
import { hasEnded } from "../core/flow.ts";
import type { JobEvent } from "../core/job_watch.ts";
import type { Clock, TimerHandle } from "../core/clock.ts";
import { invalid, jobNotFound, TegamiError, toTegamiError } from "../core/errors.ts";
import type { Delivery, Job } from "../core/job.ts";
import { largestDeliveryBytes, MAX_AUTH_FRAME_BYTES, MAX_SUBSCRIPTIONS } from "../core/limits.ts";
import type { Logger } from "../observe/log.ts";
import {
  enqueueAnswer,
  parseAck,
  parseCheckpoint,
  parseEmpty,
  parseEnqueue,
  parseExtend,
  parseNack,
  parseProgress,
  parseSubscribe,
  type RequestLimits,
  utf8Length,
} from "../api/requests.ts";
import {
  type BatchItem,
  batchItems,
  batchReplyFrame,
  cancelFrame,
  type ClientFrame,
  decodeFrame,
  endedFrame,
  errorFrame,
  expiredFrame,
  goneFrame,
  jobFrames,
  jobsFrames,
  MAX_BATCH_FRAMES,
  okFrame,
  progressedFrame,
  refOf,
} from "./protocol.ts";
import { parseAddNodes, parseFlow } from "../api/flows.ts";
import { flowCreatedView } from "../api/views.ts";

/** What a connection needs from a socket. */
export interface SocketLike {
  /** Sends a text frame; may throw if the socket is gone. */
  send(text: string): void;
  /** Closes with a code and a reason. */
  close(code: number, reason: string): void;
  /** Bytes queued for sending and not yet written. */
  readonly bufferedAmount: number;
  /**
   * Set while the client has not authenticated, where the socket can tell its server (the front
   * door's own WebSocket: such a socket may be closed to make room at the connection limit).
   */
  unauthenticated?: boolean;
  /**
   * Stops (`true`) or resumes (`false`) reading the client's frames, where the socket can (the
   * front door's own WebSocket). Without it, frames past {@linkcode MAX_PENDING_FRAMES} are
   * refused with `rate_limited`.
   */
  holdReading?(hold: boolean): void;
}

/** The most jobs one connection watches at once. */
export const MAX_WATCHES = 1000;

/** One watched job: how to stop listening, and what was heard before the watch was allowed. */
interface Watch {
  stop: () => void;
  /** Null once the watch is allowed: events are sent as they come. */
  held: JobEvent[] | null;
}

/** Frames being processed at once per connection before `rate_limited`. */
export const MAX_PENDING_FRAMES = 4096;
/**
 * From this many frames being processed, a socket that can stop reading does: the frame it
 * reads last may be a whole batch, which then still fits under {@linkcode MAX_PENDING_FRAMES},
 * so a client of such a socket that sends faster than the server answers is slowed down, never
 * refused.
 */
export const HOLD_READING_AT = MAX_PENDING_FRAMES - MAX_BATCH_FRAMES;
/** A held socket reads again once this many frames or fewer are being processed. */
const RESUME_READING_AT = HOLD_READING_AT / 2;

/** Decodes a binary frame that must hold UTF-8 JSON. */
const strictUtf8 = strictUtf8Decoder();

/** At most one warning per this many ms about sockets closed before they authenticated. */
const UNAUTHENTICATED_WARN_MS = 10_000;
const unauthenticatedWarned = new WeakMap<Logger, { at: number; held: number }>();

function warnUnauthenticated(log: Logger, fields: Record<string, unknown>): void {
  const now = performance.now();
  const last = unauthenticatedWarned.get(log);
  if (last !== undefined && now - last.at < UNAUTHENTICATED_WARN_MS) {
    last.held++;
    return;
  }
  log.warn("WebSocket connection closed by the server", {
    ...fields,
    suppressed: last?.held ?? 0,
  });
  unauthenticatedWarned.set(log, { at: now, held: 0 });
}

/** How long a socket may stay open without authenticating when auth is on, ms. */
export const AUTH_TIMEOUT_MS = 10_000;
/** How often a connection paused for a full send buffer looks whether it has drained, ms. */
export const DRAIN_CHECK_MS = 25;

/**
 * How long a send buffer may stay past half of `maxBuffered` (where a push stops) without
 * shrinking before its client counts as not reading and is cut (1008), ms. A client that reads,
 * however slowly, shrinks it sooner.
 */
export const NOT_READING_MS = 5_000;

/** Close codes used by the server. */
export const CLOSE = {
  /** Server shutting down. */
  goingAway: 1001,
  /** Auth failure or a consumer too slow to keep up. */
  policy: 1008,
  /** Frame over the size limit. */
  tooBig: 1009,
} as const;

/** Settings of a connection. */
export interface ConnectionOptions {
  /** The broker. */
  broker: Broker;
  /** The clock. */
  clock: Clock;
  /** Request limits (payload, batch). */
  limits: RequestLimits;
  /** Tokens, or null when auth is off. */
  tokens: TokenSet | null;
  /** The caller, if authenticated at the upgrade; null means an `auth` frame must come first. */
  principal: Principal | null;
  /** The largest frame accepted, bytes; larger closes with 1009. */
  maxFrame: number;
  /** Bytes buffered for a slow reader before pushes stop. */
  pauseBuffered: number;
  /** Bytes buffered for a slow reader before the connection is cut. */
  maxBuffered: number;
  /** The log. */
  log: Logger;
  /** Called once when the connection is finished. */
  onFinished?: () => void;
  /**
   * The protocol version the client asked for on the upgrade: 2 pushes every job a
   * subscription is dealt at once in one `jobs` frame, 1 sends one `job` frame per job.
   * @default 1
   */
  version?: 1 | 2;
  /**
   * How long an unauthenticated socket may wait before sending `auth`; it is then closed with
   * 1008, so sockets without a token cannot hold connection slots. @default AUTH_TIMEOUT_MS
   */
  authTimeoutMs?: number;
  /** See {@linkcode NOT_READING_MS}. @default NOT_READING_MS */
  notReadingMs?: number;
}

/** One subscription of a connection: its queue, credit and jobs in flight. */
export class Subscription implements Subscriber {
  /** Jobs pushed and not yet settled. */
  inflight = 0;
  /** Credit promised to a claim in progress. */
  reserved = 0;
  /** False once unsubscribed or closed. */
  active = true;
  /** A subscription of `connection` to `queue`. */
  constructor(
    /** The connection that holds the leases. */
    readonly connection: Connection,
    /** The queue subscribed to. */
    readonly queue: string,
    /** Most jobs in flight at once. */
    public prefetch: number,
    /** The lease length asked for, or null for each job's own or the server's. */
    public leaseMs: number | null,
  ) {}
  /** Who holds the leases pushed to this subscription. */
  get holder(): LeaseHolder {
    return this.connection;
  }
  /** Jobs it can take now: prefetch less in flight and reserved, zero while the socket lags. */
  credit(): number {
    if (!this.active || !this.connection.canPush()) return 0;
    return Math.max(0, this.prefetch - this.inflight - this.reserved);
  }
  /** Jobs it could hold now, reservations aside. */
  room(): number {
    if (!this.active || !this.connection.canPush()) return 0;
    return Math.max(0, this.prefetch - this.inflight);
  }
  /** Promises `n` of its credit to a claim. */
  reserve(n: number): void {
    this.reserved += n;
  }
  /**
   * Hands over a claim's jobs, giving back the `reserved` credit; answers how many of them (the
   * first ones) were sent.
   */
  deliver(deliveries: Delivery[], reserved: number): number {
    this.reserved -= reserved;
    return this.connection.push(this, deliveries);
  }
}

/** A WebSocket client's session. */
export class Connection implements LeaseHolder {
  readonly #socket: SocketLike;
  readonly #options: ConnectionOptions;
  #principal: Principal | null;
  readonly #subs = new Map<string, Subscription>();
  readonly #leases = new Map<number, { token: string; sub: Subscription }>();
  readonly #watches = new Map<number, Watch>();
  #pending = 0;
  /** The socket was told to stop reading (see {@linkcode HOLD_READING_AT}). */
  #holding = false;
  /** While a batch's frames are being submitted: the queues whose credit they freed. */
  #deferredWakes: Set<string> | null = null;
  #drainTimer: ReturnType<typeof setTimeout> | null = null;
  /** Where a push stops: half of `maxBuffered`, so answers to the client's frames keep room. */
  readonly #pushStop: number;
  /** The send buffer past where a push stops: its size when it last shrank, and since when. */
  #stuck: { bytes: number; since: number } | null = null;
  #authTimer: TimerHandle | null = null;
  #finished = false;

  /** Binds protocol state to a socket. */
  constructor(socket: SocketLike, options: ConnectionOptions) {
    this.#socket = socket;
    this.#options = options;
    this.#pushStop = options.maxBuffered / 2;
    this.#principal = options.principal;
    if (options.tokens !== null && options.principal === null) {
      socket.unauthenticated = true;
      const wait = options.authTimeoutMs ?? AUTH_TIMEOUT_MS;
      this.#authTimer = options.clock.setTimer(() => {
        this.#authTimer = null;
        if (this.#principal !== null || this.#finished) return;
        this.#send(errorFrame(
          undefined,
          new TegamiError("unauthorized", `Cannot authenticate: no auth frame within ${wait} ms`),
        ));
        this.#close(CLOSE.policy, "authentication timed out", true);
      }, wait);
    }
  }

  /** How many leases this connection holds. */
  get leaseCount(): number {
    return this.#leases.size;
  }

  /**
   * True while jobs may be pushed: open, and the socket is keeping up. When it is not keeping
   * up, watches for the buffer to drain so delivery resumes by itself.
   */
  canPush(): boolean {
    if (this.#finished) return false;
    if (this.#socket.bufferedAmount < this.#options.pauseBuffered) return true;
    this.#watchDrain();
    return false;
  }

  /** Handles one incoming frame (text, or bytes read as UTF-8). */
  onMessage(data: string | Uint8Array): void {
    if (this.#finished) return;
    if (frameBytes(data, this.#options.maxFrame) > this.#options.maxFrame) {
      this.onViolation(CLOSE.tooBig, `frame over ${this.#options.maxFrame} bytes`);
      return;
    }
    // Before auth only an auth frame is taken, and one is small: a larger frame is not parsed.
    if (this.#principal === null && data.length > MAX_AUTH_FRAME_BYTES) {
      this.#refuseUnauthenticated(undefined);
      return;
    }
    let text: string;
    if (typeof data === "string") text = data;
    else {
      try {
        text = strictUtf8(data);
      } catch {
        // Before auth, nothing but a good auth frame is taken: garbage too ends the socket.
        if (this.#principal === null) {
          this.#refuseUnauthenticated(undefined);
          return;
        }
        this.#send(
          errorFrame(
            undefined,
            new TegamiError("invalid_json", "Cannot parse the frame: not UTF-8"),
          ),
        );
        return;
      }
    }
    let frame: ClientFrame;
    try {
      frame = decodeFrame(text);
    } catch (error) {
      const refused = toTegamiError(error);
      // A frame refused as invalid_json was not parsed (broken, or refused unparsed for its
      // nesting): it has no ref to echo. Any other refusal came after the parse.
      const ref = refused.code === "invalid_json" ? undefined : refOf(JSON.parse(text));
      if (this.#principal === null) {
        this.#refuseUnauthenticated(ref);
        return;
      }
      this.#send(errorFrame(ref, refused));
      return;
    }
    if (this.#principal === null && frame.op !== "auth") {
      this.#refuseUnauthenticated(frame.ref);
      return;
    }
    if (frame.op === "batch") {
      this.#batch(frame);
      return;
    }
    if (this.#pending >= MAX_PENDING_FRAMES) {
      this.#send(errorFrame(frame.ref, tooManyFrames()));
      return;
    }
    this.#began(1);
    this.#answer(frame).then(({ reply, fatal }) => {
      this.#send(reply);
      if (fatal) this.#close(CLOSE.policy, "authentication failed", true);
    }).finally(() => this.#answered(1));
  }

  /**
   * Handles a `batch`: its frames one after another, exactly as if each had come alone (each
   * starts before the next, so their writes reach the store in order and share commits), and one
   * reply holding every frame's own reply, sent once the last of them is answered.
   */
  #batch(batch: ClientFrame): void {
    let items: BatchItem[];
    try {
      items = batchItems(batch);
    } catch (error) {
      this.#send(errorFrame(batch.ref, toTegamiError(error)));
      return;
    }
    if (this.#pending + items.length > MAX_PENDING_FRAMES) {
      this.#send(errorFrame(batch.ref, tooManyFrames()));
      return;
    }
    this.#began(items.length);
    // The credit its settles free is offered once they are all submitted: one claim for all of
    // it, in the same transaction, instead of one for the first settle's and the rest a commit
    // later.
    this.#deferredWakes = new Set();
    let replies: (string | Promise<string>)[];
    try {
      // auth is refused inside a batch, so no reply here can be fatal.
      replies = items.map((item) =>
        "frame" in item
          ? this.#answer(item.frame).then((answered) => answered.reply)
          : errorFrame(item.ref, item.error)
      );
    } finally {
      const queues = this.#deferredWakes;
      this.#deferredWakes = null;
      for (const queue of queues) this.#options.broker.wake(queue);
    }
    Promise.all(replies).then((texts) => this.#send(batchReplyFrame(batch.ref, texts)))
      .finally(() => this.#answered(items.length));
  }

  /** `n` more frames are being processed; past the mark, the socket stops reading if it can. */
  #began(n: number): void {
    this.#pending += n;
    if (this.#pending >= HOLD_READING_AT && !this.#holding && this.#socket.holdReading) {
      this.#holding = true;
      this.#socket.holdReading(true);
    }
  }

  /** `n` frames were answered; a held socket reads again once few are left. */
  #answered(n: number): void {
    this.#pending -= n;
    if (this.#holding && this.#pending <= RESUME_READING_AT) {
      this.#holding = false;
      this.#socket.holdReading!(false);
    }
  }

  /**
   * Runs one decoded frame; answers its reply (`ok` or `error`) and whether the connection must
   * close once that reply is sent. Never rejects.
   */
  #answer(frame: ClientFrame): Promise<{ reply: string; fatal: boolean }> {
    return this.#handle(frame).then(
      (answer) => ({ reply: okFrame(frame.ref, answer), fatal: false }),
      (error) => {
        const failure = toTegamiError(error);
        if (failure.code === "internal") {
          this.#options.log.error("WebSocket frame failed", { op: frame.op, cause: String(error) });
        }
        // A wrong token ends the session; so does any failed auth before one succeeded. A
        // malformed auth frame on a socket already authenticated (or with auth off) is just
        // a malformed frame: an error reply, never a dropped connection.
        const fatal = frame.op === "auth" &&
          (failure.code === "unauthorized" || this.#principal === null);
        return { reply: errorFrame(frame.ref, failure), fatal };
      },
    );
  }

  /**
   * The client broke the WebSocket protocol (a frame over the size limit: 1009, which the socket
   * need not have kept): closes with `code` and `reason`, logged, and gives back the leases.
   */
  onViolation(code: number, reason: string): void {
    // A frame too large to take before auth is refused by the socket from its head: the client
    // is told as for any other frame before auth.
    if (code === CLOSE.policy && this.#principal === null) {
      this.#refuseUnauthenticated(undefined);
      return;
    }
    this.#close(code, reason, true);
  }

  /** The socket closed (by the client, a failed heartbeat, or us): give back its leases. */
  onClose(): void {
    this.#finish(true);
  }

  /** Closes with 1001 for a server shutdown, keeping leases so they can be acked after restart. */
  shutdown(): void {
    this.#close(CLOSE.goingAway, "server shutting down", false);
  }

  /**
   * Pushes claimed jobs; answers how many of them (the first ones) were sent: the broker puts the
   * others back at once. A socket whose buffer is already past `maxBuffered` belongs to a client
   * that is not reading: it is cut (1008) and nothing is sent. Otherwise frames go out until the
   * buffer reaches half of `maxBuffered`: a claim of large jobs stops there instead of cutting a
   * consumer that reads, the rest wait for it to catch up (pushes resume below `pauseBuffered`),
   * and answers to its frames still have room.
   */
  push(sub: Subscription, deliveries: Delivery[]): number {
    if (this.#finished || !sub.active || deliveries.length === 0) return 0;
    if (this.#socket.bufferedAmount > this.#options.maxBuffered) {
      this.#close(CLOSE.policy, "consumer is not reading its frames", true);
      return 0;
    }
    const frames = this.#options.version === 2
      ? jobsFrames(sub.queue, deliveries, largestDeliveryBytes(this.#options.limits.maxPayload))
      : jobFrames(deliveries);
    let sent = 0;
    for (const { frame, count } of frames) {
      if (sent > 0 && this.#socket.bufferedAmount >= this.#pushStop) break;
      try {
        this.#socket.send(frame);
      } catch {
        // The socket is gone. The frames already sent may have reached the consumer: #finish
        // releases their leases (registered below as they went out) with the attempt counted;
        // the broker puts back the rest, never sent, without.
        this.#finish(true);
        return sent;
      }
      for (let i = sent; i < sent + count; i++) {
        this.#leases.set(deliveries[i].job.id, { token: deliveries[i].lease.token, sub });
      }
      sub.inflight += count;
      sent += count;
    }
    // Stopped half way to maxBuffered: the rest go back, and delivery resumes once the buffer
    // drains (or the client is cut, if it never does).
    if (sent < deliveries.length) this.#watchDrain();
    return sent;
  }

  /** The broker's notice that a lease this connection held has ended. */
  leaseEnded(id: number, token: string, why: LeaseNotice): void {
    // The token matters: a settled job may already be leased to this connection again.
    if (!this.#freeCredit(id, token)) return;
    if (why === "cancelled") this.#send(cancelFrame(id));
    else if (why === "expired") this.#send(expiredFrame(id));
  }

  /**
   * Forgets a held lease (if `token` holds it), frees its credit and offers its queue again.
   * Answers whether the lease was held.
   */
  #freeCredit(id: number, token: string): boolean {
    const held = this.#leases.get(id);
    if (held === undefined || held.token !== token) return false;
    this.#leases.delete(id);
    held.sub.inflight--;
    if (!held.sub.active) return true;
    if (this.#deferredWakes !== null) this.#deferredWakes.add(held.sub.queue);
    else this.#options.broker.wake(held.sub.queue);
    return true;
  }

  /**
   * Frees the credit of a lease whose ack or nack was just submitted, and offers the queue
   * again at once: the claim joins the same transaction, right after the settle, so the next
   * job costs no extra commit. The settle runs first in that transaction; if it fails, the
   * lease was already over (`lease_lost`, `not_found`) or the whole transaction failed (and the
   * claim with it), so prefetch is never exceeded. The broker's later notice for this token
   * finds it gone and does nothing.
   */
  #settling(id: number, token: string): void {
    this.#freeCredit(id, token);
  }

  // ---- frames ----

  async #handle(frame: ClientFrame): Promise<Record<string, unknown>> {
    const { broker, limits } = this.#options;
    const body = frame.body;
    switch (frame.op) {
      case "auth":
        return this.#auth(body);
      case "subscribe": {
        this.#require(OPERATIONS.lease, frame.queue);
        const { prefetch, leaseMs } = parseSubscribe(body);
        let sub = this.#subs.get(frame.queue);
        if (sub === undefined) {
          if (this.#subs.size >= MAX_SUBSCRIPTIONS) {
            throw new TegamiError(
              "conflict",
              `Cannot subscribe to "${frame.queue}": a connection holds at most ` +
                `${MAX_SUBSCRIPTIONS} subscriptions; unsubscribe from one, or open another connection`,
            );
          }
          sub = new Subscription(this, frame.queue, prefetch, leaseMs);
          this.#subs.set(frame.queue, sub);
          broker.subscribe(sub);
        } else {
          sub.prefetch = prefetch;
          sub.leaseMs = leaseMs;
          broker.wake(frame.queue);
        }
        return { queue: frame.queue, prefetch };
      }
      case "unsubscribe": {
        parseEmpty(body);
        const sub = this.#subs.get(frame.queue);
        if (sub !== undefined) {
          sub.active = false;
          this.#subs.delete(frame.queue);
          broker.unsubscribe(sub);
        }
        return { queue: frame.queue };
      }
      case "enqueue": {
        this.#require(OPERATIONS.enqueue, frame.queue);
        const request = parseEnqueue(body, limits, this.#options.clock.now(), frame.text);
        const out = request.jobs.length === 0
          ? []
          : await broker.enqueue(frame.queue, request.jobs);
        return enqueueAnswer(request, out);
      }
      case "ack": {
        const req = parseAck(body, limits);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        const acked = broker.ack(frame.id, req.token, req.result);
        this.#settling(frame.id, req.token);
        await acked;
        return { id: frame.id, state: "done" };
      }
      case "nack": {
        const req = parseNack(body);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        const nacked = broker.nack(frame.id, req.token, req);
        this.#settling(frame.id, req.token);
        const out = await nacked;
        return { id: frame.id, state: out.state, run_at: out.run_at };
      }
      case "extend": {
        const req = parseExtend(body);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        return await broker.extend(frame.id, req.token, req.lease_ms);
      }
      case "checkpoint": {
        const req = parseCheckpoint(body, limits);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        return await broker.checkpoint(frame.id, req.token, req.data);
      }
      case "progress": {
        const req = parseProgress(body);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        return await broker.progress(frame.id, req.token, req.progress);
      }
      case "flow": {
        requireAccess(this.#principal!, OPERATIONS.createFlow);
        const flow = parseFlow(body, limits, this.#options.clock.now(), frame.text);
        this.#requireQueues(flow.nodes);
        return flowCreatedView(await broker.createFlow(flow)) as Record<string, unknown>;
      }
      case "add_nodes": {
        requireAccess(this.#principal!, OPERATIONS.addFlowNodes);
        const req = parseAddNodes(body, limits, this.#options.clock.now(), frame.text);
        if (this.#options.tokens !== null) await this.#requireJob(frame.id);
        this.#requireQueues(req.nodes);
        const created = await broker.addFlowNodes(frame.id, req.token, req.nodes);
        return flowCreatedView(created) as Record<string, unknown>;
      }
      case "watch":
        parseEmpty(body);
        return await this.#watch(frame.id);
      case "unwatch": {
        parseEmpty(body);
        this.#unwatch(frame.id);
        return { id: frame.id };
      }
      case "batch":
        // onMessage handles batches; a batch inside one is refused when it is decoded.
        throw invalid("op", "batch cannot be sent inside a batch");
    }
  }

  /**
   * Starts watching job `id` (or, watched already, answers its state again). The listener is in
   * place before the job is read, so nothing that happens between the two is missed; what it
   * hears is held back until the read shows the job exists and the caller may see its queue.
   * A job that has already ended gets its `ended` frame at once, and is not kept watched.
   */
  async #watch(id: number): Promise<Record<string, unknown>> {
    const broker = this.#options.broker;
    let watch = this.#watches.get(id);
    const fresh = watch === undefined;
    if (watch === undefined) {
      if (this.#watches.size >= MAX_WATCHES) {
        throw new TegamiError(
          "conflict",
          `Cannot watch job ${id}: a connection watches at most ${MAX_WATCHES} jobs; ` +
            `unwatch one, or wait for one to end`,
        );
      }
      const created: Watch = { stop: () => {}, held: [] };
      created.stop = broker.watchJob(id, (event) => this.#heard(id, created, event));
      this.#watches.set(id, created);
      watch = created;
    }
    let job: Job | null;
    try {
      job = await broker.get(id);
      if (job === null) throw jobNotFound(id);
      this.#require(OPERATIONS.readJob, job.queue);
    } catch (error) {
      if (fresh) this.#forget(id, watch);
      throw error;
    }
    const held = watch.held;
    watch.held = null;
    if (held !== null) { for (const event of held) this.#heard(id, watch, event); }
    if (hasEnded(job.state)) this.#heard(id, watch, { kind: "ended", job });
    return {
      id,
      state: job.state,
      progress: job.progress === null ? null : JSON.parse(job.progress),
      progress_at: job.progress_at,
    };
  }

  /** Sends what a watch heard, once it is allowed; an end ends the watch. */
  #heard(id: number, watch: Watch, event: JobEvent): void {
    if (this.#watches.get(id) !== watch) return;
    if (watch.held !== null) {
      watch.held.push(event);
      return;
    }
    if (event.kind === "progress") {
      this.#send(progressedFrame(id, event.progress, event.at));
      return;
    }
    this.#forget(id, watch);
    this.#send(event.kind === "ended" ? endedFrame(event.job) : goneFrame(id));
  }

  #unwatch(id: number): void {
    const watch = this.#watches.get(id);
    if (watch !== undefined) this.#forget(id, watch);
  }

  #forget(id: number, watch: Watch): void {
    if (this.#watches.get(id) !== watch) return;
    this.#watches.delete(id);
    watch.stop();
  }

  #auth(body: Record<string, unknown>): Record<string, unknown> {
    for (const name of Object.keys(body)) {
      if (name !== "token") throw invalid(name, "unknown field");
    }
    const tokens = this.#options.tokens;
    // Before a socket has authenticated (auth on), a frame without a usable token fails the auth
    // and ends the socket, as any failed auth does then. After, or with auth off, it is just a
    // malformed frame, refused like any other.
    const before = tokens !== null && this.#principal === null;
    const token = body.token ?? null;
    if (token !== null && typeof token !== "string") {
      if (before) {
        throw new TegamiError("unauthorized", "Cannot authenticate: the token is not a string");
      }
      throw invalid("token", "expected a string");
    }
    if (tokens === null) return { name: this.#principal?.name ?? "anonymous" };
    if (token === null) {
      if (before) {
        throw new TegamiError("unauthorized", "Cannot authenticate: the auth frame needs a token");
      }
      throw invalid("token", "expected the token to authenticate with");
    }
    const principal = tokens.authenticate(token);
    if (principal === null) {
      throw new TegamiError("unauthorized", "Cannot authenticate: the token is not valid");
    }
    this.#principal = principal;
    this.#clearAuthTimer();
    this.#socket.unauthenticated = false;
    return { name: principal.name };
  }

  #require(access: Access, queue: string): void {
    requireAccess(this.#principal!, access);
    requireQueue(this.#principal!, queue);
  }

  /** Checks this token may use the queue of every node (all of them, not some). */
  #requireQueues(nodes: readonly { queue: string }[]): void {
    if (!this.#principal!.limited) return;
    for (const queue of new Set(nodes.map((node) => node.queue))) {
      requireQueue(this.#principal!, queue);
    }
  }

  /** With auth on, checks this token may settle a lease on job `id`'s queue. */
  async #requireJob(id: number): Promise<void> {
    const queue = this.#leases.get(id)?.sub.queue ?? await this.#options.broker.queueOf(id);
    if (queue === null) throw jobNotFound(id);
    this.#require(OPERATIONS.settle, queue);
  }

  #refuseUnauthenticated(ref: string | number | undefined): void {
    this.#send(errorFrame(
      ref,
      new TegamiError("unauthorized", "Cannot take the frame: send auth {token} first"),
    ));
    this.#close(CLOSE.policy, "authentication required", true);
  }

  // ---- lifecycle ----

  #clearAuthTimer(): void {
    if (this.#authTimer !== null) this.#options.clock.clearTimer(this.#authTimer);
    this.#authTimer = null;
  }

  /**
   * Offers this connection's queues again once its send buffer has drained. No runtime tells
   * when a WebSocket's buffer empties, so look again shortly; without this, a consumer paused
   * for reading slowly would wait for the next enqueue, ack or expiry on its queues, which may
   * never come (all its leases may have expired meanwhile). Real time, not the injected clock:
   * this waits on socket I/O, not on anything a job's schedule depends on.
   */
  #watchDrain(): void {
    if (this.#drainTimer !== null || this.#finished) return;
    this.#drainTimer = setTimeout(() => {
      this.#drainTimer = null;
      if (this.#finished) return;
      if (this.#socket.bufferedAmount >= this.#options.pauseBuffered) {
        if (this.#notReading()) {
          this.#close(CLOSE.policy, "consumer is not reading its frames", true);
        } else this.#watchDrain();
        return;
      }
      for (const sub of this.#subs.values()) {
        if (sub.active) this.#options.broker.wake(sub.queue);
      }
    }, DRAIN_CHECK_MS);
  }

  /**
   * True once the send buffer has stayed past half of `maxBuffered` without shrinking for
   * {@linkcode NOT_READING_MS}: the client does not read what it is sent.
   */
  #notReading(): boolean {
    const bytes = this.#socket.bufferedAmount;
    if (bytes < this.#pushStop) {
      this.#stuck = null;
      return false;
    }
    const now = performance.now();
    if (this.#stuck === null || bytes < this.#stuck.bytes) {
      this.#stuck = { bytes, since: now };
      return false;
    }
    return now - this.#stuck.since >= (this.#options.notReadingMs ?? NOT_READING_MS);
  }

  #send(text: string): void {
    if (this.#finished) return;
    try {
      this.#socket.send(text);
    } catch {
      this.#finish(true);
      return;
    }
    // A client that keeps sending frames and never reads its answers would otherwise grow the
    // server's memory without bound, one answer at a time.
    if (this.#socket.bufferedAmount > this.#options.maxBuffered) {
      this.#close(CLOSE.policy, "client is not reading its frames", true);
    }
  }

  #close(code: number, reason: string, releaseLeases: boolean): void {
    if (this.#finished) return;
    if (code !== CLOSE.goingAway) {
      // Cut for failing auth, reading too slowly or an oversized frame: worth a look. Sockets
      // that never authenticated are told at most once per UNAUTHENTICATED_WARN_MS, with how
      // many were held back: anyone can open them, and a flood must not flood the log.
      const fields = { code, reason, client: this.#principal?.name };
      if (this.#principal === null && this.#options.tokens !== null) {
        warnUnauthenticated(this.#options.log, fields);
      } else this.#options.log.warn("WebSocket connection closed by the server", fields);
    }
    this.#finish(releaseLeases);
    try {
      this.#socket.close(code, reason);
    } catch {
      // already closed
    }
  }

  #finish(releaseLeases: boolean): void {
    if (this.#finished) return;
    this.#finished = true;
    if (this.#drainTimer !== null) clearTimeout(this.#drainTimer);
    this.#drainTimer = null;
    this.#clearAuthTimer();
    const broker = this.#options.broker;
    for (const sub of this.#subs.values()) {
      sub.active = false;
      broker.unsubscribe(sub);
    }
    this.#subs.clear();
    for (const watch of this.#watches.values()) watch.stop();
    this.#watches.clear();
    const held = [...this.#leases].map(([id, { token }]) => ({ id, token }));
    this.#leases.clear();
    broker.forgetHolder(held.map((l) => l.token));
    if (releaseLeases && held.length > 0 && !broker.closed) {
      broker.release(held).catch((error) =>
        this.#options.log.error("Releasing a closed connection's leases failed", {
          leases: held.length,
          cause: String(error),
        })
      );
    }
    this.#options.onFinished?.();
  }
}

function tooManyFrames(): TegamiError {
  return new TegamiError(
    "rate_limited",
    "Cannot take the frame: too many frames in progress; wait for replies",
  );
}

/**
 * A frame's size in bytes as it came over the wire: text frames are UTF-8, so a string's length
 * in UTF-16 units undercounts non-ASCII text up to threefold. Counted exactly only when the
 * answer could cross `limit`.
 */
function frameBytes(data: string | Uint8Array, limit: number): number {
  if (typeof data !== "string") return data.byteLength;
  if (data.length > limit || data.length * 3 <= limit) return data.length;
  return utf8Length(data);
}
