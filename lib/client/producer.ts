/**
 * The HTTP side of the client: enqueue (one or a batch), get, cancel, queue stats, dead letters,
 * pause/resume, queue settings. Uses the standard `fetch`, so it runs in Deno, browsers and Node 20
 * or later; on Node, unless given a `fetch`, it sends through `node:http`, which costs a Node
 * producer less CPU per request (see node_http.ts).
 * Server errors come back as {@linkcode TegamiError} carrying the server's code.
 *
 * `enqueue` calls made in the same tick go out together: one request per queue carrying them all
 * as a batch in which each job stands alone (`{"jobs": […], "atomic": false}`), so one invalid job
 * fails only its own call. Each call still resolves with its own answer, once the server has
 * committed its job (the server answers only after the fsync), or rejects with its own error. A
 * call alone in its tick is sent as a plain single-job request. There is no linger to configure:
 * nothing waits for more calls to arrive.
 *
 * @module
 */

import { errorFromWire, TegamiError } from "../core/errors.ts";
import { JobWatcher } from "./job_watcher.ts";
import { TickBatch } from "./tick_batch.ts";
import { fetchTransport, nodeTransport, type Transport } from "./node_http.ts";
import { scheduleBody, type ScheduleDefinition, type ScheduleInfo } from "./schedules.ts";
import type { JobAttributes } from "./job_attributes.ts";
import { Tracing, type TracingOptions } from "./tracing.ts";
import type { FlowCreated, FlowInfo, JobEnd, OnFailure, WatchOptions } from "./flows.ts";

/** Options of one job. */
export interface JobOptions {
  /**
   * Named, typed values stored with the job and given back with every delivery (at most 10,
   * 4096 bytes in all; see docs/api.md). With tracing on, the client adds the trace context as
   * `traceparent` and `tracestate` unless they already carry a `traceparent`.
   */
  attributes?: JobAttributes;
  /** Higher first. @default 0 */
  priority?: number;
  /** Dedup key: a second enqueue with the same key answers the stored job's id. */
  key?: string;
  /** How long after this enqueue the key blocks duplicates, ms. @default as long as stored */
  keyTtlMs?: number;
  /**
   * What this job does, as a duplicate, to a waiting job holding its key: `ignore` it,
   * `replace` its payload, time and options (debounce), or `extend` its `run_at` to this
   * job's. A leased or finished holder is never changed. @default "ignore"
   */
  onDuplicate?: "ignore" | "replace" | "extend";
  /**
   * Ordering group: at most the queue's `group_limit` (default 1) jobs of one group are leased
   * at once, in priority then FIFO order, while other groups' jobs flow.
   */
  group?: string;
  /** Run no sooner than this many ms from now (not with `runAt`). */
  delayMs?: number;
  /** Run no sooner than this time, ms since the epoch (not with `delayMs`). */
  runAt?: number;
  /** Deliveries allowed before the job is dead. @default 5 */
  maxAttempts?: number;
  /** The job's own lease length. @default the server's (30 s) */
  leaseMs?: number;
  /** The job's own retry backoff. @default the server's (1 s base, 1 h max) */
  backoff?: { baseMs: number; maxMs: number };
}

/** One node of a flow to create: a job with its ref, queue and prerequisites. */
export interface FlowNode<T = unknown> extends JobOptions {
  /** Its name in the flow, unique there (1 to 200 characters). */
  ref: string;
  /** Its job's queue. */
  queue: string;
  /** Its job's payload (any JSON value). */
  payload: T;
  /** Its prerequisites: refs, or `{ref, onFailure}` (default `cancel`). */
  dependsOn?: (string | { ref: string; onFailure: OnFailure })[];
}

/** A flow to create. */
export interface FlowInput {
  /** A dedup key: while a flow holding it is stored, creating another answers that one. */
  key?: string;
  /** Its nodes. */
  nodes: FlowNode[];
}

/** A flow node as the server takes it: a one-job enqueue's body plus `ref`, `queue`, edges. */
export function nodeBody(node: FlowNode): Record<string, unknown> {
  const { ref, queue, payload, dependsOn, ...options } = node;
  const body = jobBody(payload, options);
  body.ref = ref;
  body.queue = queue;
  if (dependsOn !== undefined && dependsOn.length > 0) {
    body.depends_on = dependsOn.map((edge) =>
      typeof edge === "string" ? edge : { ref: edge.ref, on_failure: edge.onFailure }
    );
  }
  return body;
}

/** The longest wait one request asks the server for (its `wait_ms` limit), ms. */
const MAX_WAIT_MS = 60_000;

/** Whether a job in `state` has ended. */
function ended(state: string): boolean {
  return state === "done" || state === "dead" || state === "cancelled";
}

/** A job of a batch: its payload and options. */
export interface BatchJob<T = unknown> extends JobOptions {
  /** The payload (any JSON value). */
  payload: T;
}

/** The answer to an enqueue. */
export interface EnqueueResult {
  /** The job's id (the stored one's when deduplicated). */
  id: number;
  /** True when a job with the same key was already stored and nothing was added. */
  deduplicated: boolean;
  /** For a duplicate, what it did to the stored job: `ignored`, `replaced` or `extended`. */
  duplicate: "ignored" | "replaced" | "extended" | null;
}

/** A stored job as the server shows it. */
export interface JobInfo<T = unknown> {
  /** Unique, increasing id. */
  id: number;
  /** Its queue. */
  queue: string;
  /** `pending`, `delayed`, `leased`, `done`, `dead` or `cancelled`. */
  state: string;
  /** The payload. */
  payload: T;
  /** Its attributes (trace context among them), or null for none. */
  attributes: JobAttributes | null;
  /** Priority. */
  priority: number;
  /** Dedup key or null. */
  key: string | null;
  /** When the key stops blocking duplicates, or null: as long as the job is stored. */
  key_expires_at: number | null;
  /** Ordering group or null. */
  group: string | null;
  /** Deliveries so far. */
  attempts: number;
  /** Deliveries allowed. */
  max_attempts: number;
  /** When due, ms since the epoch. */
  run_at: number;
  /** The job's own lease length or null. */
  lease_ms: number | null;
  /** The job's own backoff or null. */
  backoff: { base_ms: number; max_ms: number } | null;
  /** When enqueued. */
  created_at: number;
  /** The last checkpoint or null. */
  checkpoint: unknown;
  /** The last progress reported by a consumer, or null. */
  progress: unknown;
  /** When that progress was reported, or null. */
  progress_at: number | null;
  /** The ack's result or null. */
  result: unknown;
  /** The last error or null. */
  last_error: string | null;
  /** When the current lease ends, while leased. */
  lease_expires_at: number | null;
  /** When it finished (done, dead, cancelled). */
  finished_at: number | null;
  /** The queue it was moved from when it ran out of attempts there, or null. */
  dead_lettered_from: string | null;
}

/** A queue's numbers. */
export interface QueueStats {
  /** The queue. */
  name: string;
  /** Whether delivery is paused. */
  paused: boolean;
  /** Jobs by state (`blocked`: a flow's jobs waiting for their prerequisites). */
  counts: Record<
    "blocked" | "pending" | "delayed" | "leased" | "done" | "dead" | "cancelled",
    number
  >;
  /** Age of the oldest pending job, ms (0 if none). */
  oldest_pending_age_ms: number;
  /** Connected consumers. */
  consumers: number;
  /** The queue's settings. */
  settings: QueueSettings;
  /** Its ordering groups counted, with the held groups that have the most jobs pending. */
  groups: {
    /** Groups with jobs pending. */
    waiting: number;
    /** Groups with jobs leased. */
    leased: number;
    /** Groups with jobs pending and as many leased as they may. */
    full: number;
    /** Groups with jobs pending that their own rate holds back. */
    rate_held: number;
    /** Up to 5 held groups, most jobs pending first. */
    top_held: {
      group: string;
      held: "concurrency" | "rate";
      pending: number;
      leased: number;
      limit: number;
    }[];
  };
  /** What holds the queue's pending jobs back now, if anything. */
  held: "concurrency" | "rate" | null;
}

/**
 * An ordering group's own settings (fair shares, `PUT /v1/queues/{queue}/groups/{group}`): its
 * share of turns, its own limit in place of the queue's `group_limit`, its own rate.
 */
export interface GroupSettings {
  /** Its share of the turns among the queue's groups (0.01 to 1000). @default 1 */
  weight: number;
  /** Most of its jobs leased at once; null: the queue's `group_limit`. */
  concurrency: number | null;
  /** Its own rate, `LIMIT/INTERVAL` such as `"10/1s"`; null: none of its own. */
  rate: string | null;
}

/** An ordering group as the API shows it: its settings, its jobs, and what holds it back. */
export interface GroupInfo {
  /** The group's name. */
  group: string;
  /** Its settings (the defaults when it has none). */
  settings: GroupSettings;
  /** Whether it has settings of its own. */
  configured: boolean;
  /** Its jobs pending. */
  pending: number;
  /** Its jobs leased. */
  leased: number;
  /** Most of its jobs leased at once. */
  limit: number;
  /** Why its pending jobs wait: no free slot, no rate token, or nothing. */
  held: "concurrency" | "rate" | null;
  /** When held by its rate, when its next token comes (ms); else null. */
  held_until: number | null;
}

/**
 * A queue's settings as the API shows them (`GET /v1/queues/{queue}/settings`): null means not
 * set (no limit, or the server's value).
 */
export interface QueueSettings {
  /** Most leased jobs of the queue at once, across every consumer and server; null: no limit. */
  concurrency: number | null;
  /** Most deliveries per interval, `LIMIT/INTERVAL` such as `"100/1s"`; null: no limit. */
  rate: string | null;
  /** Most jobs of one ordering group leased at once. @default 1 */
  group_limit: number;
  /** Deliveries allowed to a job enqueued without its own; null: the server's (5). */
  max_attempts: number | null;
  /** Lease length of a job enqueued without its own, ms; null: the server's. */
  lease_ms: number | null;
  /** Retry backoff of a job enqueued without its own; null: the server's. */
  backoff: { base_ms: number; max_ms: number } | null;
  /** How long done and cancelled jobs are kept, ms; null: the server's `--retain-done`. */
  retain_done_ms: number | null;
  /** How long dead jobs are kept, ms; null: until requeued or removed. */
  retain_dead_ms: number | null;
  /**
   * How long a pending job waits for a consumer from when it became due, ms; past it the sweep
   * deletes it. null: until it is delivered.
   */
  retain_pending_ms: number | null;
  /** The queue a job that would be dead here moves to; null: it stays in the dead list. */
  dead_letter_queue: string | null;
  /**
   * What the SQS API keeps for the queue beside these (its delay, wait time, size limit, policy
   * and encryption attributes), by attribute name; absent when none.
   */
  sqs_attributes?: Record<string, string> | null;
  /** The queue's tags, key to value; absent when none. */
  tags?: Record<string, string> | null;
}

/** How to reach a server. */
export interface ConnectionOptions {
  /** Base URL. @default "http://127.0.0.1:7700" */
  url?: string;
  /** Bearer token, when the server uses `--tokens`. */
  token?: string;
  /** The `fetch` to use. @default globalThis.fetch (on Node, `node:http` unless one is given) */
  fetch?: typeof fetch;
}

/** Options of {@linkcode TegamiClient}. */
export interface ClientOptions extends ConnectionOptions {
  /**
   * Most `enqueue` calls of one tick carried by one request (more go in further requests);
   * 1 sends every call in its own request. Keep it within the server's `--max-batch`.
   * @default 1000
   */
  maxCoalesced?: number;
  /**
   * OpenTelemetry: a `send {queue}` span per `enqueue` call (and per `enqueueBatch`) whose
   * context each job carries, when the application registered a tracer provider; `false` turns
   * it off. See tracing.ts.
   * @default the OpenTelemetry API registered on globalThis, if any
   */
  tracing?: TracingOptions | false;
}

/** Most bytes of job bodies one coalesced request carries (far below the server's --max-body). */
const MAX_COALESCED_BYTES = 1 << 20;

/** An enqueue call waiting for this tick's request. */
interface Call {
  queue: string;
  body: string;
  resolve: (result: EnqueueResult) => void;
  reject: (error: unknown) => void;
}

/** The wire form of a job's options. */
export function jobBody(payload: unknown, options: JobOptions = {}): Record<string, unknown> {
  const body: Record<string, unknown> = { payload };
  if (options.attributes !== undefined) body.attributes = options.attributes;
  if (options.priority !== undefined) body.priority = options.priority;
  if (options.key !== undefined) body.key = options.key;
  if (options.keyTtlMs !== undefined) body.key_ttl_ms = options.keyTtlMs;
  if (options.onDuplicate !== undefined) body.on_duplicate = options.onDuplicate;
  if (options.group !== undefined) body.group = options.group;
  if (options.delayMs !== undefined) body.delay_ms = options.delayMs;
  if (options.runAt !== undefined) body.run_at = options.runAt;
  if (options.maxAttempts !== undefined) body.max_attempts = options.maxAttempts;
  if (options.leaseMs !== undefined) body.lease_ms = options.leaseMs;
  if (options.backoff !== undefined) {
    body.backoff = { base_ms: options.backoff.baseMs, max_ms: options.backoff.maxMs };
  }
  return body;
}

/** Where a client connects when given no URL. */
const DEFAULT_URL = "http://127.0.0.1:7700";

/** A client's base URL: the one given or the default, without a trailing slash. */
export function baseUrl(url: string | undefined): string {
  return (url ?? DEFAULT_URL).replace(/\/+$/, "");
}

/**
 * The path of one group of a queue. A group named `.` or `..` cannot be named in a path (URL
 * parsers read them as dot segments, even percent-encoded): refused with `validation_failed`.
 */
function groupPath(queue: string, group: string): string {
  if (group === "." || group === "..") {
    throw new TegamiError("validation_failed", `A group named "${group}" cannot be read by path`);
  }
  return `/v1/queues/${encodeURIComponent(queue)}/groups/${encodeURIComponent(group)}`;
}

/** Rebuilds a server error answer as a `TegamiError`. */
export function errorFromAnswer(status: number, body: unknown): TegamiError {
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
  if (error?.code !== undefined) return errorFromWire(error);
  return new TegamiError(
    status >= 500 ? "unavailable" : "internal",
    `The server answered ${status} without an error body`,
  );
}

/** One job's entry in the answer to an `atomic: false` batch. */
interface WireOutcome {
  id?: number;
  deduplicated?: boolean;
  duplicate?: EnqueueResult["duplicate"];
  error?: { code?: unknown; message?: unknown; id?: unknown };
}

/** The most entries one page of a list holds (the server's limit). */
const MAX_PAGE = 1000;

/** A list's query string for `limit` and the cursor `after` ("" when neither is set). */
function pageQuery(options: { limit?: number; after?: number | string }): string {
  const query = new URLSearchParams();
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  if (options.after !== undefined) query.set("after", String(options.after));
  return query.size > 0 ? `?${query}` : "";
}

/**
 * Every entry of a list sorted by name: `page` reads the one after a cursor (none for the first)
 * and answers its entries and the next cursor, null after the last.
 */
async function everyPage<T>(
  page: (after: string | undefined) => Promise<[entries: T[], next: string | null]>,
): Promise<T[]> {
  const all: T[] = [];
  let after: string | undefined;
  for (;;) {
    const [entries, next] = await page(after);
    all.push(...entries);
    if (next === null) return all;
    after = next;
  }
}

/** A client for the HTTP API. */
export class TegamiClient {
  /** The server's base URL, without a trailing slash. */
  readonly url: string;
  readonly #token: string | undefined;
  readonly #send: Transport;
  readonly #maxCoalesced: number;
  readonly #tracing: Tracing | null;
  readonly #calls = new TickBatch<Call>((calls) => this.#sendCalls(calls));
  #watcher: JobWatcher | null = null;

  /** Makes a client; nothing is sent until the first call. */
  constructor(options: ClientOptions = {}) {
    this.url = baseUrl(options.url);
    this.#token = options.token;
    this.#send = options.fetch !== undefined
      ? fetchTransport(options.fetch)
      : nodeTransport() ?? fetchTransport(globalThis.fetch.bind(globalThis));
    this.#maxCoalesced = Math.max(1, options.maxCoalesced ?? 1000);
    this.#tracing = options.tracing === false ? null : new Tracing(options.tracing ?? {}, this.url);
  }

  /** Sends one request; answers the parsed JSON or throws the server's error. */
  request<T>(method: string, path: string, body?: unknown): Promise<T> {
    return this.#requestText(method, path, body === undefined ? undefined : JSON.stringify(body));
  }

  async #requestText<T>(method: string, path: string, body: string | undefined): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    let status: number;
    let text: string;
    try {
      ({ status, text } = await this.#send(method, this.url + path, headers, body));
    } catch (cause) {
      throw new TegamiError("unavailable", `Cannot reach ${this.url}: ${String(cause)}`, {
        cause,
      });
    }
    let parsed: unknown = null;
    try {
      parsed = text === "" ? null : JSON.parse(text);
    } catch {
      parsed = null;
    }
    if (status < 200 || status > 299) throw errorFromAnswer(status, parsed);
    return parsed as T;
  }

  /**
   * Enqueues one job. Calls made in the same tick share one request (see the module doc); this
   * one resolves once its own job is committed, or rejects with its own error.
   */
  enqueue<T>(queue: string, payload: T, options?: JobOptions): Promise<EnqueueResult> {
    const span = this.#tracing?.sendOne(queue, options?.attributes) ?? null;
    if (span !== null) options = { ...options, attributes: span.attributes[0] };
    let body: string;
    try {
      body = JSON.stringify(jobBody(payload, options));
    } catch (error) {
      span?.failed(error);
      return Promise.reject(error);
    }
    if (body === undefined) {
      const error = new TegamiError("validation_failed", "Cannot enqueue: no payload");
      span?.failed(error);
      return Promise.reject(error);
    }
    if (span === null) {
      return new Promise((resolve, reject) => this.#calls.add({ queue, body, resolve, reject }));
    }
    return new Promise((resolve, reject) =>
      this.#calls.add({
        queue,
        body,
        resolve: (result) => {
          span.sent(result.id);
          resolve(result);
        },
        reject: (error) => {
          span.failed(error);
          reject(error);
        },
      })
    );
  }

  /** Sends one tick's enqueue calls: one request per queue (more past the size caps). */
  #sendCalls(calls: Call[]): void {
    const byQueue = new Map<string, Call[]>();
    for (const call of calls) {
      const list = byQueue.get(call.queue);
      if (list === undefined) byQueue.set(call.queue, [call]);
      else list.push(call);
    }
    for (const [queue, list] of byQueue) {
      let chunk: Call[] = [];
      let bytes = 0;
      for (const call of list) {
        if (
          chunk.length > 0 &&
          (chunk.length >= this.#maxCoalesced || bytes + call.body.length > MAX_COALESCED_BYTES)
        ) {
          this.#post(queue, chunk);
          chunk = [];
          bytes = 0;
        }
        chunk.push(call);
        bytes += call.body.length;
      }
      this.#post(queue, chunk);
    }
  }

  /** Posts calls of one queue: alone as a plain enqueue, else as a batch where each stands alone. */
  async #post(queue: string, calls: Call[]): Promise<void> {
    const path = `/v1/queues/${encodeURIComponent(queue)}/jobs`;
    try {
      if (calls.length === 1) {
        calls[0].resolve(await this.#requestText<EnqueueResult>("POST", path, calls[0].body));
        return;
      }
      const body = `{"jobs":[${calls.map((c) => c.body).join(",")}],"atomic":false}`;
      const answer = await this.#requestText<{ jobs: WireOutcome[] }>("POST", path, body);
      for (let i = 0; i < calls.length; i++) {
        const outcome = answer.jobs[i];
        if (outcome?.error !== undefined) calls[i].reject(errorFromWire(outcome.error));
        else if (outcome === undefined) {
          calls[i].reject(new TegamiError("internal", "The server answered fewer jobs than sent"));
        } else {
          calls[i].resolve({
            id: outcome.id!,
            deduplicated: outcome.deduplicated!,
            duplicate: outcome.duplicate ?? null,
          });
        }
      }
    } catch (error) {
      for (const call of calls) call.reject(error);
    }
  }

  /** Enqueues a batch, all or nothing (at most the server's `--max-batch`, 1000 by default). */
  async enqueueBatch<T>(queue: string, jobs: BatchJob<T>[]): Promise<EnqueueResult[]> {
    const span = this.#tracing?.sendBatch(queue, jobs) ?? null;
    const body = jobs.map(({ payload, ...options }, i) =>
      jobBody(payload, span === null ? options : { ...options, attributes: span.attributes[i] })
    );
    let answer: { jobs: EnqueueResult[] };
    try {
      answer = await this.request("POST", `/v1/queues/${encodeURIComponent(queue)}/jobs`, {
        jobs: body,
      });
    } catch (error) {
      span?.failed(error);
      throw error;
    }
    span?.sent(answer.jobs.length === 1 ? answer.jobs[0].id : undefined);
    return answer.jobs;
  }

  /** Reads a job; throws `not_found` if there is none. */
  get<T = unknown>(id: number): Promise<JobInfo<T>> {
    return this.request("GET", `/v1/jobs/${id}`);
  }

  /**
   * The job once it has ended (done, dead or cancelled), waiting up to `timeoutMs` (default 30
   * s) for that; after the wait, the job as it is then. The server answers from the commit that
   * ends the job (`GET /v1/jobs/{id}?wait_ms`), so nothing polls; waits past a minute take one
   * request a minute.
   */
  async waitFor<T = unknown>(
    id: number,
    options: { timeoutMs?: number } = {},
  ): Promise<JobInfo<T>> {
    const until = Date.now() + (options.timeoutMs ?? 30_000);
    for (;;) {
      const wait = Math.max(0, Math.min(MAX_WAIT_MS, until - Date.now()));
      const job = await this.request<JobInfo<T>>("GET", `/v1/jobs/${id}?wait_ms=${wait}`);
      if (ended(job.state) || Date.now() >= until) return job;
    }
  }

  /**
   * Enqueues one job and waits for its end in the same request (`POST …/jobs?wait_ms`), then as
   * {@linkcode TegamiClient.waitFor} does: answers the job once it has ended, or as it is when
   * `timeoutMs` (default 30 s) has passed.
   */
  async enqueueAndWait<T = unknown, R = unknown>(
    queue: string,
    payload: T,
    options: JobOptions & { timeoutMs?: number } = {},
  ): Promise<JobInfo<T> & { result: R }> {
    const { timeoutMs, ...jobOptions } = options;
    const until = Date.now() + (timeoutMs ?? 30_000);
    const span = this.#tracing?.sendOne(queue, jobOptions.attributes) ?? null;
    const body = jobBody(
      payload,
      span === null ? jobOptions : {
        ...jobOptions,
        attributes: span.attributes[0],
      },
    );
    const wait = Math.max(0, Math.min(MAX_WAIT_MS, until - Date.now()));
    let answer: EnqueueResult & { job: JobInfo<T> };
    try {
      answer = await this.request(
        "POST",
        `/v1/queues/${encodeURIComponent(queue)}/jobs?wait_ms=${wait}`,
        body,
      );
    } catch (error) {
      span?.failed(error);
      throw error;
    }
    span?.sent(answer.id);
    const job = answer.job;
    if (ended(job.state) || Date.now() >= until) return job as JobInfo<T> & { result: R };
    return await this.waitFor(answer.id, { timeoutMs: until - Date.now() }) as
      & JobInfo<T>
      & { result: R };
  }

  /**
   * Watches a job over a WebSocket: `onProgress` hears each progress report as it is made, and
   * the promise resolves with how the job ended (at once for one that has). Every watch of this
   * client shares its connections, up to 1000 jobs on each; a connection closes once it watches
   * nothing.
   */
  watch(id: number, options: WatchOptions = {}): Promise<JobEnd> {
    this.#watcher ??= new JobWatcher(this.url, this.#token);
    return this.#watcher.watch(id, options);
  }

  /** Creates a flow: its jobs wait for one another (docs/api.md, "Flows"). */
  createFlow(flow: FlowInput): Promise<FlowCreated> {
    const body: Record<string, unknown> = { nodes: flow.nodes.map(nodeBody) };
    if (flow.key !== undefined) body.key = flow.key;
    return this.request("POST", "/v1/flows", body);
  }

  /** Reads a flow with its nodes; throws `not_found` if there is none. */
  getFlow(id: number): Promise<FlowInfo> {
    return this.request("GET", `/v1/flows/${id}`);
  }

  /** Flows without their nodes: oldest first after `after`, or `newest` first. */
  async listFlows(
    options: { after?: number; limit?: number; newest?: boolean } = {},
  ): Promise<FlowInfo[]> {
    const query = new URLSearchParams();
    if (options.after !== undefined) query.set("after", String(options.after));
    if (options.limit !== undefined) query.set("limit", String(options.limit));
    if (options.newest === true) query.set("order", "newest");
    const answer = await this.request<{ flows: FlowInfo[] }>("GET", `/v1/flows?${query}`);
    return answer.flows;
  }

  /** Cancels every job of a flow that has not ended. */
  cancelFlow(id: number): Promise<{ id: number; cancelled: number }> {
    return this.request("DELETE", `/v1/flows/${id}`);
  }

  /** Cancels a waiting or leased job, or removes a finished one. */
  cancel(id: number): Promise<{ id: number; state: string; removed: boolean }> {
    return this.request("DELETE", `/v1/jobs/${id}`);
  }

  /** One queue's stats (zeros for an unknown queue). */
  stats(queue: string): Promise<QueueStats> {
    return this.request("GET", `/v1/queues/${encodeURIComponent(queue)}`);
  }

  /** Every queue's stats, by name (read 1 000 queues a request). */
  queues(): Promise<QueueStats[]> {
    return everyPage(async (after) => {
      const page = await this.listQueues({ limit: MAX_PAGE, after });
      return [page.queues, page.next_after];
    });
  }

  /**
   * Queues' stats by name, `limit` at a time (all without it) after the cursor `after`: pass a
   * page's `next_after` to read the next one.
   */
  listQueues(
    options: { limit?: number; after?: string } = {},
  ): Promise<{ queues: QueueStats[]; next_after: string | null }> {
    return this.request("GET", `/v1/queues${pageQuery(options)}`);
  }

  /** Dead jobs of a queue by id, `limit` at a time after the cursor `after`. */
  listDead<T = unknown>(
    queue: string,
    options: { limit?: number; after?: number } = {},
  ): Promise<{ jobs: JobInfo<T>[]; next_after: number | null }> {
    return this.request("GET", `/v1/queues/${encodeURIComponent(queue)}/dead${pageQuery(options)}`);
  }

  /** Makes dead jobs pending again (all of the queue's when `ids` is absent). */
  async requeueDead(queue: string, ids?: number[]): Promise<number> {
    const answer = await this.request<{ requeued: number }>(
      "POST",
      `/v1/queues/${encodeURIComponent(queue)}/dead/requeue`,
      ids === undefined ? {} : { ids },
    );
    return answer.requeued;
  }

  /** Stops delivery from a queue (enqueues are still accepted). */
  pause(queue: string): Promise<{ name: string; paused: boolean }> {
    return this.request("POST", `/v1/queues/${encodeURIComponent(queue)}/pause`);
  }

  /** Restarts delivery from a queue. */
  resume(queue: string): Promise<{ name: string; paused: boolean }> {
    return this.request("POST", `/v1/queues/${encodeURIComponent(queue)}/resume`);
  }

  /** A queue's settings (the defaults for a queue nobody configured). */
  settings(queue: string): Promise<QueueSettings> {
    return this.request("GET", `/v1/queues/${encodeURIComponent(queue)}/settings`);
  }

  /**
   * Replaces a queue's settings as a whole: what `settings` leaves out (or sets to null) takes its
   * default, so `{}` resets the queue. Answers the settings as stored. Needs the admin scope.
   */
  putSettings(queue: string, settings: Partial<QueueSettings>): Promise<QueueSettings> {
    return this.request("PUT", `/v1/queues/${encodeURIComponent(queue)}/settings`, settings);
  }

  /**
   * Changes some of a queue's settings and keeps the others: reads them, applies `changes`
   * (a member set to null goes back to its default) and writes the whole. Not atomic: a change
   * made by someone else between the read and the write is overwritten.
   */
  async updateSettings(queue: string, changes: Partial<QueueSettings>): Promise<QueueSettings> {
    const current = await this.settings(queue);
    return await this.putSettings(queue, { ...current, ...changes });
  }

  /** One ordering group of a queue (the defaults and zeros for a group nobody has seen). */
  async group(queue: string, group: string): Promise<GroupInfo> {
    return await this.request("GET", groupPath(queue, group));
  }

  /**
   * A queue's groups with settings of their own or jobs pending or leased, by name, `limit` at a
   * time after the cursor `after`.
   */
  groups(
    queue: string,
    options: { limit?: number; after?: string } = {},
  ): Promise<{ groups: GroupInfo[]; next_after: string | null }> {
    return this.request(
      "GET",
      `/v1/queues/${encodeURIComponent(queue)}/groups${pageQuery(options)}`,
    );
  }

  /**
   * Replaces a group's settings as a whole (what `settings` leaves out takes its default) and
   * answers the group. Needs the admin scope.
   */
  async putGroupSettings(
    queue: string,
    group: string,
    settings: Partial<GroupSettings>,
  ): Promise<GroupInfo> {
    return await this.request("PUT", groupPath(queue, group), settings);
  }

  /** Removes a group's settings (back to the defaults) and answers the group. Needs admin. */
  async resetGroup(queue: string, group: string): Promise<GroupInfo> {
    return await this.request("DELETE", groupPath(queue, group));
  }

  /**
   * Creates or replaces the schedule `name`: from the next tick of `definition.cron` on, each
   * tick enqueues one job. Throws `validation_failed` naming `cron` or `timezone` when wrong.
   */
  putSchedule<T>(name: string, definition: ScheduleDefinition<T>): Promise<ScheduleInfo<T>> {
    return this.request(
      "PUT",
      `/v1/schedules/${encodeURIComponent(name)}`,
      scheduleBody(definition),
    );
  }

  /** Reads a schedule, with its next and last tick; throws `not_found` if there is none. */
  getSchedule<T = unknown>(name: string): Promise<ScheduleInfo<T>> {
    return this.request("GET", `/v1/schedules/${encodeURIComponent(name)}`);
  }

  /** Every schedule, by name (read 1 000 schedules a request). */
  schedules(): Promise<ScheduleInfo[]> {
    return everyPage(async (after) => {
      const page = await this.listSchedules({ limit: MAX_PAGE, after });
      return [page.schedules, page.next_after];
    });
  }

  /**
   * Schedules by name, `limit` at a time (all without it) after the cursor `after`: pass a page's
   * `next_after` to read the next one.
   */
  listSchedules(
    options: { limit?: number; after?: string } = {},
  ): Promise<{ schedules: ScheduleInfo[]; next_after: string | null }> {
    return this.request("GET", `/v1/schedules${pageQuery(options)}`);
  }

  /** Deletes a schedule (the jobs it enqueued stay); throws `not_found` if there is none. */
  deleteSchedule(name: string): Promise<{ name: string; deleted: true }> {
    return this.request("DELETE", `/v1/schedules/${encodeURIComponent(name)}`);
  }

  /** Pauses a schedule: its ticks are skipped until it is resumed. */
  pauseSchedule(name: string): Promise<ScheduleInfo> {
    return this.request("POST", `/v1/schedules/${encodeURIComponent(name)}/pause`);
  }

  /** Resumes a schedule from its next tick after now (ticks missed while paused stay missed). */
  resumeSchedule(name: string): Promise<ScheduleInfo> {
    return this.request("POST", `/v1/schedules/${encodeURIComponent(name)}/resume`);
  }
}
