/**
 * The consumer side of the client: `consume(queue, handler, options)` holds a WebSocket,
 * runs the handler for each pushed job and settles it — resolve → ack with the return value as
 * the result, throw → nack with the error's message (a {@linkcode JobFailure} may ask for a
 * delay or for the dead letters). While a handler runs its lease is extended well before it
 * expires. Lost connections are retried with exponential backoff and full jitter, and the
 * subscription is renewed.
 *
 * Acks survive reconnects: an ack (or nack, extend, checkpoint) whose reply did not arrive is
 * sent again on the next connection with the same token. A repeated ack with the same token
 * is answered the same by the server while the job is stored, so nothing is acked twice or
 * lost; one answered `not_found` found the job deleted by the first (where done jobs are kept
 * no time) and counts as acked. After a server restart the old token still acks while its
 * lease lives.
 *
 * It speaks protocol v2 (`tegami.v2`): pushes arrive as `jobs` frames carrying every job the
 * server dealt at once, and the acks, nacks, extends and checkpoints of one tick go out as one
 * `batch` frame (one alone goes as it is). Each call still resolves on its own reply, which the
 * server sends only once that write is committed and fsynced.
 *
 * Uses only the standard `WebSocket`, except for `ws://` URLs in Deno (a client of its own with
 * Nagle off, see `deno_websocket.ts`) and on Node (one on `node:net`, see `node_websocket.ts`):
 * runs in Deno, browsers and Node (tested on 20, 22 and 24; Node 20 needs
 * `--experimental-websocket` for `wss://`).
 *
 * @module
 */

import { errorFromWire, TegamiError } from "../core/errors.ts";
import { baseUrl, type ConnectionOptions, type FlowNode, nodeBody } from "./producer.ts";
import {
  type FlowCreated,
  type OutcomeFrame,
  type Prerequisite,
  prerequisitesOf,
  webSocketFor,
} from "./flows.ts";
import { TickBatch } from "./tick_batch.ts";
import { ProgressReporter } from "./progress_reporter.ts";
import type { JobAttributes } from "./job_attributes.ts";
import { type ProcessSpan, Tracing, type TracingOptions } from "./tracing.ts";

/** The subprotocol asking the server for `jobs` push frames (see docs/protocol.md). */
const PROTOCOL_V2 = "tegami.v2";

/** Most frames in one `batch` (the server's limit). */
const MAX_BATCH_FRAMES = 1000;

/** Most characters of one `batch` frame. */
const MAX_FRAME_BYTES = 60_000;

/**
 * Most characters of one `batch` frame through Deno's own `WebSocket` (when passed in
 * explicitly): it writes a larger frame's header and payload as two TCP writes without
 * TCP_NODELAY, and Nagle's algorithm then holds the payload of a frame over 1 KiB until the
 * server's delayed ACK. See deno_websocket.ts, the client used in Deno by default.
 */
const MAX_STALLING_FRAME_BYTES = 1000;

/** The characters a `batch` frame adds around its frames. */
const BATCH_OVERHEAD = 40;

/** What a handler knows about the job it runs. */
export interface JobContext<T = unknown> {
  /** The job's id. */
  readonly id: number;
  /** Its queue. */
  readonly queue: string;
  /** Its ordering group, or null. */
  readonly group: string | null;
  /** This delivery's number, 1-based. */
  readonly attempt: number;
  /** Deliveries allowed before the job is dead. */
  readonly maxAttempts: number;
  /** The payload. */
  readonly payload: T;
  /** The job's attributes (its trace context among them), or null for none. */
  readonly attributes: JobAttributes | null;
  /** The checkpoint saved by an earlier attempt, or null. */
  readonly checkpoint: unknown;
  /** The last error of an earlier attempt, or null. */
  readonly lastError: string | null;
  /** Aborted when the job is cancelled, its lease expires, or the consumer gives up on it. */
  readonly signal: AbortSignal;
  /** Durably records progress; the next delivery of the job carries it. */
  saveCheckpoint(data: unknown): Promise<void>;
  /**
   * Reports progress (any JSON value up to 4 KiB), shown by `GET /v1/jobs/{id}` and the
   * dashboard. Reports are coalesced: one in flight at a time, the latest value winning; the
   * promise resolves once this value or a later one is recorded.
   */
  progress(value: unknown): Promise<void>;
  /** Extends the lease now (extension also happens automatically). */
  extend(leaseMs?: number): Promise<void>;
  /** For a job of a flow, the flow's id and the job's ref in it; else null. */
  readonly flow: { readonly id: number; readonly ref: string } | null;
  /**
   * For a flow's job, its prerequisites' outcomes in its `dependsOn` order (a failed one of an
   * `ignore` edge left out); empty for any other job.
   */
  readonly prerequisites: readonly Prerequisite[];
  /** How many outcomes the server left out to keep the delivery within its cap (read the flow). */
  readonly prerequisitesOmitted: number;
  /**
   * Adds nodes to this job's flow while the job runs (fan out once you know how many pieces
   * there are). They may depend on one another and on any node of the flow, this one included.
   */
  addNodes(nodes: FlowNode[]): Promise<FlowCreated>;
}

/** Handles one job; its return value becomes the ack's result. */
export type Handler<T = unknown> = (payload: T, context: JobContext<T>) => unknown;

/** Thrown by a handler to nack with a specific delay, or straight to the dead letters. */
export class JobFailure extends Error {
  /** Retry after this many ms instead of the backoff. */
  readonly delayMs?: number;
  /** Send the job to the dead letters now. */
  readonly dead: boolean;

  /** Makes a failure; `options` chooses the delay or dead. */
  constructor(message: string, options: { delayMs?: number; dead?: boolean } = {}) {
    super(message);
    this.name = "JobFailure";
    if (options.delayMs !== undefined) this.delayMs = options.delayMs;
    this.dead = options.dead ?? false;
  }
}

/** Options of {@linkcode consume}. */
export interface ConsumeOptions extends ConnectionOptions {
  /** Handlers running at once. @default 1 */
  concurrency?: number;
  /** Jobs held at once (running or waiting to run). @default concurrency */
  prefetch?: number;
  /** Lease length asked for. @default the job's own, else the server's */
  leaseMs?: number;
  /** First reconnect delay, ms (doubles per failure, with full jitter). @default 100 */
  reconnectInitialMs?: number;
  /** Longest reconnect delay, ms. @default 10_000 */
  reconnectMaxMs?: number;
  /** Told about failures that do not stop the consumer (lost acks, refused subscribe). */
  onError?: (error: unknown) => void;
  /**
   * The WebSocket constructor. @default for `ws://`, in Deno a client on a TCP connection with
   * Nagle off (Deno's own `WebSocket` stalls frames over 1 KiB until a delayed ACK) and on Node
   * one on `node:net`; else `globalThis.WebSocket`
   */
  WebSocket?: typeof WebSocket;
  /**
   * OpenTelemetry: a `process {queue}` span around each handler, linked to the producer's span
   * (or its child, with `process: "child"`), and an `ack` or `nack` span for its settlement,
   * when the application registered a tracer provider; `false` turns it off. See tracing.ts.
   * @default the OpenTelemetry API registered on globalThis, if any
   */
  tracing?: TracingOptions | false;
}

/** A running consumer. */
export interface Consumer {
  /** Handlers running now. */
  readonly running: number;
  /** True while the socket is open. */
  readonly connected: boolean;
  /** Resolves when the subscription is confirmed (each time after a reconnect, too). */
  ready(): Promise<void>;
  /**
   * Stops taking jobs, gives back those not started, waits for running handlers (and their
   * acks) up to `timeoutMs`, then aborts what is left and closes the socket.
   */
  close(timeoutMs?: number): Promise<void>;
}

interface JobFrame {
  id: number;
  queue: string;
  payload: unknown;
  attributes?: JobAttributes | null;
  attempt: number;
  max_attempts: number;
  checkpoint: unknown;
  last_error: string | null;
  group?: string | null;
  lease: { token: string; expires_at: number };
  flow?: { id: number; ref: string };
  prerequisites?: OutcomeFrame[];
  prerequisites_omitted?: number;
}

/** A request sent and not yet answered: its frame's text (ref included), resent on reconnect. */
interface Pending {
  ref: number;
  text: string;
  resolve: (answer: Record<string, unknown>) => void;
  reject: (error: unknown) => void;
  /** Whether it was sent again on a new connection, its first reply lost with the old one. */
  resent: boolean;
}

/**
 * A job handed to the handler, and its context. What most handlers never touch is made on first
 * use: the `AbortController` behind `signal` and the progress reporter. Its lease is extended by
 * the consumer's one extension timer, not a timer of its own.
 */
class RunningJob<T> implements JobContext<T> {
  readonly id: number;
  readonly queue: string;
  readonly group: string | null;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly payload: T;
  readonly attributes: JobAttributes | null;
  readonly checkpoint: unknown;
  readonly lastError: string | null;
  readonly flow: { readonly id: number; readonly ref: string } | null;
  readonly #outcomes: OutcomeFrame[] | undefined;
  #prerequisites: Prerequisite[] | null = null;
  readonly prerequisitesOmitted: number;
  /** Its `process` span, or null when nothing traces. */
  span: ProcessSpan | null = null;
  /** The lease token. */
  readonly token: string;
  /** The lease length each extension asks for. */
  readonly leaseMs: number;
  /** When the extension timer extends this lease next, ms since the epoch. */
  extendAt: number;
  /** Set once the handler returned or threw: its lease is no longer extended. */
  done = false;
  readonly #call: (frame: Record<string, unknown>) => Promise<Record<string, unknown>>;
  #abort: AbortController | null = null;
  #lost: unknown = undefined;
  #reporter: ProgressReporter | null = null;

  constructor(
    job: JobFrame,
    leaseMs: number,
    call: (frame: Record<string, unknown>) => Promise<Record<string, unknown>>,
  ) {
    this.id = job.id;
    this.queue = job.queue;
    this.group = job.group ?? null;
    this.attempt = job.attempt;
    this.maxAttempts = job.max_attempts;
    this.payload = job.payload as T;
    this.attributes = job.attributes ?? null;
    this.checkpoint = job.checkpoint;
    this.lastError = job.last_error;
    this.flow = job.flow ?? null;
    this.#outcomes = job.prerequisites;
    this.prerequisitesOmitted = job.prerequisites_omitted ?? 0;
    this.token = job.lease.token;
    this.leaseMs = leaseMs;
    // Extend at a third of the lease: two chances before it would expire.
    this.extendAt = Date.now() + extendEvery(leaseMs);
    this.#call = call;
  }

  get signal(): AbortSignal {
    if (this.#abort === null) {
      this.#abort = new AbortController();
      if (this.#lost !== undefined) this.#abort.abort(this.#lost);
    }
    return this.#abort.signal;
  }

  /** Aborts the handler's signal with `reason` (now, or when it is first read). */
  abort(reason: unknown): void {
    if (this.#lost !== undefined) return;
    this.#lost = reason;
    this.#abort?.abort(reason);
  }

  async saveCheckpoint(data: unknown): Promise<void> {
    await this.#call({ op: "checkpoint", id: this.id, token: this.token, data: data ?? null });
  }

  progress(value: unknown): Promise<void> {
    this.#reporter ??= new ProgressReporter((value) =>
      this.#call({ op: "progress", id: this.id, token: this.token, progress: value ?? null })
    );
    return this.#reporter.report(value);
  }

  get prerequisites(): readonly Prerequisite[] {
    this.#prerequisites ??= prerequisitesOf(this.#outcomes);
    return this.#prerequisites;
  }

  async addNodes(nodes: FlowNode[]): Promise<FlowCreated> {
    const answer = await this.#call({
      op: "add_nodes",
      id: this.id,
      token: this.token,
      nodes: nodes.map(nodeBody),
    });
    return {
      id: answer.id as number,
      deduplicated: answer.deduplicated as boolean,
      jobs: answer.jobs as Record<string, number>,
    };
  }

  async extend(leaseMs?: number): Promise<void> {
    await this.#call({
      op: "extend",
      id: this.id,
      token: this.token,
      lease_ms: leaseMs ?? this.leaseMs,
    });
  }
}

/** How often a lease of `leaseMs` is extended while its handler runs. */
function extendEvery(leaseMs: number): number {
  return Math.max(50, Math.floor(leaseMs / 3));
}

/** Consumes `queue`, running `handler` for each job. */
export function consume<T = unknown>(
  queue: string,
  handler: Handler<T>,
  options: ConsumeOptions = {},
): Consumer {
  const concurrency = options.concurrency ?? 1;
  const prefetch = options.prefetch ?? concurrency;
  const base = baseUrl(options.url);
  const wsUrl = base.replace(/^http/, "ws") + "/v1/ws";
  const Socket = webSocketFor(wsUrl, options.WebSocket, "consume");
  const frameBytes = "Deno" in globalThis && Socket === globalThis.WebSocket
    ? MAX_STALLING_FRAME_BYTES
    : MAX_FRAME_BYTES;
  const onError = options.onError ?? (() => {});
  const initialDelay = options.reconnectInitialMs ?? 100;
  const maxDelay = options.reconnectMaxMs ?? 10_000;
  const tracing = options.tracing === false ? null : new Tracing(options.tracing ?? {}, base);

  let ws: WebSocket | null = null;
  let connected = false;
  let closing = false;
  let stopped = false;
  let failures = 0;
  let nextRef = 1;
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  const pending = new Map<number, Pending>();
  const waiting: JobFrame[] = [];
  const active = new Map<string, RunningJob<T>>();
  /** Handlers running and requests tracked for close(), and who waits for them to end. */
  let unsettled = 0;
  let idleWaiters: (() => void)[] = [];
  /** The one timer that extends every running job's lease, and when it fires. */
  let extendTimer: ReturnType<typeof setTimeout> | undefined;
  let extendTimerAt = Infinity;
  let readyWaiters: (() => void)[] = [];
  let subscribed = false;

  const sendText = (text: string) => {
    if (ws !== null && connected) {
      try {
        ws.send(text);
      } catch {
        // The close event follows; pending requests are resent after reconnecting.
      }
    }
  };
  const sendRaw = (frame: Record<string, unknown>) => sendText(JSON.stringify(frame));

  /**
   * The requests of one tick, sent together: as `batch` frames of at most
   * {@linkcode MAX_FRAME_BYTES} each (a lone request as it is).
   */
  const outbox = new TickBatch<Pending>((requests) => {
    if (ws === null || !connected) return; // resent from `pending` once connected again
    let texts: string[] = [];
    let refs: number[] = [];
    let bytes = 0;
    const flush = () => {
      if (texts.length === 1) sendText(texts[0]);
      else if (texts.length > 1) {
        const ref = `b${nextRef++}`;
        batches.set(ref, refs);
        sendText(`{"op":"batch","ref":"${ref}","frames":[${texts.join(",")}]}`);
      }
      texts = [];
      refs = [];
      bytes = 0;
    };
    for (const { ref, text } of requests) {
      if (
        texts.length > 0 &&
        (bytes + text.length + BATCH_OVERHEAD > frameBytes ||
          texts.length >= MAX_BATCH_FRAMES)
      ) flush();
      texts.push(text);
      refs.push(ref);
      bytes += text.length + 1;
    }
    flush();
  });
  /** The refs of the requests each `batch` in flight carried, by the batch's ref. */
  const batches = new Map<string, number[]>();

  /**
   * Sends the request whose frame's text `textOf` makes with a fresh ref; `resolve` or `reject`
   * gets its reply. Survives reconnects (resent with its ref).
   */
  const request = (
    textOf: (ref: number) => string,
    resolve: (answer: Record<string, unknown>) => void,
    reject: (error: unknown) => void,
  ): Pending => {
    const ref = nextRef++;
    const entry: Pending = { ref, text: textOf(ref), resolve, reject, resent: false };
    pending.set(ref, entry);
    outbox.add(entry);
    return entry;
  };

  /** Sends a request and awaits its reply; survives reconnects (resent with its ref). */
  const call = (frame: Record<string, unknown>): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) =>
      request((ref) => JSON.stringify({ ...frame, ref }), resolve, reject)
    );

  /** Settles the request a reply answers. */
  const answered = (frame: Record<string, unknown>) => {
    const request = pending.get(frame.ref as number);
    if (request === undefined) return;
    pending.delete(frame.ref as number);
    if (frame.op === "ok") request.resolve(frame);
    else request.reject(errorFromWire(frame));
  };

  const onOpen = () => {
    connected = true;
    failures = 0;
    if (options.token !== undefined) sendRaw({ op: "auth", token: options.token, ref: 0 });
    const subscribe: Record<string, unknown> = { op: "subscribe", queue, prefetch, ref: -1 };
    if (options.leaseMs !== undefined) subscribe.lease_ms = options.leaseMs;
    if (!closing) sendRaw(subscribe);
    batches.clear();
    for (const entry of [...pending.values()]) {
      entry.resent = true;
      outbox.add(entry);
    }
  };

  const onFrame = (frame: Record<string, unknown>) => {
    switch (frame.op) {
      case "job":
        return onJob(frame as unknown as JobFrame);
      case "jobs":
        for (const job of frame.jobs as JobFrame[]) onJob(job);
        return;
      case "cancel":
      case "expired": {
        const id = frame.id as number;
        const at = waiting.findIndex((job) => job.id === id);
        if (at >= 0) waiting.splice(at, 1);
        for (const job of active.values()) {
          if (job.id === id) {
            job.abort(
              new TegamiError(
                "lease_lost",
                `Job ${id} ${frame.op === "cancel" ? "was cancelled" : "lease expired"}`,
              ),
            );
          }
        }
        return;
      }
      case "ok":
      case "error": {
        if (typeof frame.ref === "string" && frame.ref.startsWith("b")) {
          const refs = batches.get(frame.ref);
          batches.delete(frame.ref);
          if (refs === undefined) return;
          if (frame.op === "ok" && Array.isArray(frame.replies)) {
            for (const reply of frame.replies) answered(reply);
          } else {
            // The batch was refused whole (too many frames in flight): so is each request in it.
            const error = errorFromWire(frame);
            for (const ref of refs) {
              answered({ op: "error", ref, code: error.code, message: error.message });
            }
          }
          return;
        }
        const ref = frame.ref as number | undefined;
        if (ref === -1) {
          if (frame.op === "ok") {
            subscribed = true;
            const waiters = readyWaiters;
            readyWaiters = [];
            for (const resolve of waiters) resolve();
          } else onError(errorFromWire(frame));
          return;
        }
        if (ref === 0) {
          if (frame.op === "error") onError(errorFromWire(frame));
          return;
        }
        if (ref === undefined) {
          onError(errorFromWire(frame));
          return;
        }
        answered(frame);
        return;
      }
    }
  };

  const onJob = (job: JobFrame) => {
    if (closing) {
      track(call({ op: "nack", id: job.id, token: job.lease.token, delay_ms: 0 }));
      return;
    }
    waiting.push(job);
    pump();
  };

  const pump = () => {
    while (!closing && active.size < concurrency && waiting.length > 0) start(waiting.shift()!);
  };

  /** Counts `promise` as unsettled until it settles; its failure goes to `onError`. */
  const track = (promise: Promise<unknown>) => {
    unsettled++;
    promise.catch(onError).finally(settle);
  };
  const settle = () => {
    if (--unsettled > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  };

  /** Arms the extension timer for `at` unless it fires sooner already. */
  const armExtends = (at: number) => {
    if (at >= extendTimerAt) return;
    clearTimeout(extendTimer);
    extendTimerAt = at;
    extendTimer = setTimeout(extendDue, Math.max(0, at - Date.now()));
  };

  /** Extends every running job whose time came, then arms the timer for the next one. */
  const extendDue = () => {
    extendTimerAt = Infinity;
    const now = Date.now();
    let next = Infinity;
    for (const job of active.values()) {
      if (job.done) continue;
      if (job.extendAt <= now) {
        job.extendAt = now + extendEvery(job.leaseMs);
        job.extend().catch((error) => {
          if (error instanceof TegamiError && error.code === "lease_lost") job.abort(error);
          else onError(error);
        });
      }
      next = Math.min(next, job.extendAt);
    }
    if (next < Infinity && !stopped) armExtends(next);
  };

  const start = (frame: JobFrame) => {
    const leaseMs = options.leaseMs ?? Math.max(200, frame.lease.expires_at - Date.now());
    const job = new RunningJob<T>(frame, leaseMs, call);
    active.set(job.token, job);
    unsettled++;
    armExtends(job.extendAt);
    job.span = tracing?.process(frame) ?? null;
    let result: unknown;
    try {
      result = job.span === null
        ? handler(job.payload, job)
        : job.span.run(() => handler(job.payload, job));
    } catch (error) {
      finish(job, error, true);
      return;
    }
    if (typeof (result as PromiseLike<unknown> | null)?.then === "function") {
      (result as PromiseLike<unknown>).then(
        (value) => finish(job, value, false),
        (error) => finish(job, error, true),
      );
    } else finish(job, result, false);
  };

  /** Acks (or, for a failure, nacks) a job whose handler ended; frees its place once answered. */
  const finish = (job: RunningJob<T>, outcome: unknown, failed: boolean) => {
    job.done = true;
    let tail = "";
    if (failed) {
      tail = `,"error":${JSON.stringify(errorText(outcome))}`;
      if (outcome instanceof JobFailure) {
        if (outcome.delayMs !== undefined) tail += `,"delay_ms":${JSON.stringify(outcome.delayMs)}`;
        if (outcome.dead) tail += `,"dead":true`;
      }
    } else if (outcome !== undefined) {
      let result: string | undefined;
      try {
        result = JSON.stringify(outcome);
      } catch (error) {
        finish(job, new Error(`Cannot send the handler's result: ${errorText(error)}`), true);
        return;
      }
      if (result !== undefined) tail = `,"result":${result}`;
    }
    const op = failed ? "nack" : "ack";
    const head = `{"op":"${op}","id":${job.id},"token":${JSON.stringify(job.token)}${tail},"ref":`;
    let settled: ((error?: unknown) => void) | null = null;
    if (job.span !== null) {
      job.span.end(failed, outcome);
      settled = job.span.settle(op);
    }
    const done = () => {
      active.delete(job.token);
      pump();
      settle();
    };
    const traced = settled ?? (() => {});
    const entry = request((ref) => `${head}${ref}}`, () => {
      traced();
      done();
    }, (error) => {
      // An ack sent again whose job is gone: the first one went through, its reply lost with
      // the connection, and deleted the job (where done jobs are kept no time) or the sweep did.
      if (
        entry.resent && op === "ack" && error instanceof TegamiError && error.code === "not_found"
      ) {
        traced();
        done();
        return;
      }
      traced(error);
      onError(error);
      done();
    });
  };

  const connect = () => {
    if (stopped) return;
    const socket = new Socket(wsUrl, PROTOCOL_V2);
    ws = socket;
    socket.onopen = onOpen;
    socket.onmessage = (event) => {
      let frame: unknown;
      try {
        frame = JSON.parse(String(event.data));
      } catch {
        return;
      }
      if (typeof frame === "object" && frame !== null) onFrame(frame as Record<string, unknown>);
    };
    socket.onerror = () => {}; // the close event follows
    socket.onclose = (event) => {
      if (ws !== socket) return;
      connected = false;
      subscribed = false;
      ws = null;
      // On any close but a server shutdown (1001) the server released our leases: jobs not yet
      // started will be redelivered, so drop them. After a shutdown the leases live on and the
      // tokens still ack once we are back, so keep working through them.
      if (event.code !== 1001) waiting.length = 0;
      if (stopped) return;
      const ceiling = Math.min(maxDelay, initialDelay * 2 ** failures++);
      reconnectTimer = setTimeout(connect, Math.random() * ceiling);
    };
  };

  connect();

  return {
    get running() {
      return active.size;
    },
    get connected() {
      return connected;
    },
    ready() {
      if (subscribed) return Promise.resolve();
      return new Promise((resolve) => readyWaiters.push(resolve));
    },
    async close(timeoutMs = 30_000) {
      if (closing) return;
      closing = true;
      sendRaw({ op: "unsubscribe", queue, ref: -2 });
      for (const job of waiting.splice(0)) {
        track(call({ op: "nack", id: job.id, token: job.lease.token, delay_ms: 0 }));
      }
      if (unsettled > 0) {
        let timer: ReturnType<typeof setTimeout> | undefined;
        await Promise.race([
          new Promise<void>((resolve) => idleWaiters.push(resolve)),
          new Promise((resolve) => timer = setTimeout(resolve, timeoutMs)),
        ]);
        clearTimeout(timer);
      }
      for (const job of active.values()) {
        job.done = true;
        job.abort(new TegamiError("unavailable", "The consumer closed before the job finished"));
      }
      stopped = true;
      clearTimeout(reconnectTimer);
      clearTimeout(extendTimer);
      for (const entry of pending.values()) {
        entry.reject(new TegamiError("unavailable", "The consumer closed"));
      }
      pending.clear();
      ws?.close(1000, "consumer closed");
      ws = null;
      connected = false;
    },
  };
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}
