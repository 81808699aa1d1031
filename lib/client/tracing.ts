/**
 * OpenTelemetry spans for the client, made through the application's own OpenTelemetry API, so
 * the client depends on no package: a `send {queue}` span (kind PRODUCER) per enqueue call or
 * batch, whose context goes into each job's `traceparent` and `tracestate` attributes; a
 * `process {queue}` span (CONSUMER) around each handler, linked to the context the job carries
 * (or its child, as an option); an `ack {queue}` or `nack {queue}` span (CLIENT, settle) from the
 * settlement's send to its reply. Names, kinds, links and attributes follow OpenTelemetry's
 * semantic conventions for messaging spans.
 *
 * It traces through what the application registered on OpenTelemetry's global API, or an API
 * module it passes in (see otel_api.ts); with nothing registered, each job costs one property
 * read: no span, no context, no attribute.
 *
 * A job's trace context is written by the registered propagator when there is one (so baggage,
 * say, travels too), else as W3C `traceparent` and `tracestate` (w3c_trace_context.ts).
 *
 * @module
 */

import {
  fromApi,
  fromRegistry,
  type GlobalApi,
  type OpenTelemetryApi,
  type Otel,
  type OtelContext,
  type OtelSpan,
  type OtelSpanContext,
  registeredApi,
  SPAN_KEY,
} from "./otel_api.ts";
import { type JobAttributes, MAX_ATTRIBUTES, MAX_ATTRIBUTES_BYTES } from "./job_attributes.ts";
import { parseTraceparent, remoteSpan, traceparentOf, valid } from "./w3c_trace_context.ts";

/** Tracing options of {@linkcode TegamiClient} and {@linkcode consume}. */
export interface TracingOptions {
  /**
   * The `@opentelemetry/api` module to trace through.
   * @default what is registered on `globalThis[Symbol.for("opentelemetry.js.api.1")]`, when a
   * tracer provider is
   */
  api?: OpenTelemetryApi;
  /**
   * How a `process` span relates to the context the job carries: `link` (a new trace, linked to
   * the producer's span) or `child` (in the producer's trace, and linked to it too).
   * @default "link"
   */
  process?: "link" | "child";
}

const CLIENT = 2;
const PRODUCER = 3;
const CONSUMER = 4;
const STATUS_ERROR = 2;

/** `messaging.system`: the client's spans are tegami's. */
const SYSTEM = "tegami";

const setter = {
  set(carrier: Record<string, string>, key: string, value: string) {
    carrier[key] = value;
  },
};
const getter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
};

/** The attribute values of a job's `String` attributes, by name: what a propagator reads. */
function carrierOf(attributes: JobAttributes | null | undefined): Record<string, string> {
  const carrier: Record<string, string> = {};
  if (attributes == null) return carrier;
  for (const name in attributes) {
    const attribute = attributes[name];
    if (attribute?.type?.startsWith("String")) carrier[name] = attribute.value;
  }
  return carrier;
}

/** The span a send started, and what it gives the jobs. */
export interface SendSpan {
  /** Each job's attributes, with the trace context added where it had none of its own. */
  attributes: (JobAttributes | undefined)[];
  /** Ends the span: the jobs were stored (`id` of a single job's). */
  sent(id?: number): void;
  /** Ends the span with the error. */
  failed(error: unknown): void;
}

/** The span around a handler. */
export interface ProcessSpan {
  /** Runs `fn` with this span active. */
  run<T>(fn: () => T): T;
  /** Ends it: the handler returned, or threw `error`. */
  end(failed: boolean, error?: unknown): void;
  /** Starts the `ack` or `nack` span; end it with the reply (an error when refused). */
  settle(op: "ack" | "nack"): (error?: unknown) => void;
}

/** A job as the consumer's spans describe it. */
export interface DeliveredJob {
  /** Its id. */
  id: number;
  /** Its queue. */
  queue: string;
  /** This delivery's number, 1-based. */
  attempt: number;
  /** Its attributes, where its trace context is. */
  attributes?: JobAttributes | null;
}

/** The client's tracing: spans when a tracer provider is registered (or an API was given). */
export class Tracing {
  readonly #api: OpenTelemetryApi | undefined;
  readonly #child: boolean;
  readonly #server: Record<string, string | number>;
  #fixed: Otel | null = null;
  #global: GlobalApi | undefined;
  #globalTrace: GlobalApi["trace"];
  #globalOtel: Otel | null = null;

  /** Tracing for a client of the server at `url` (its address goes on each span). */
  constructor(options: TracingOptions, url: string) {
    this.#api = options.api;
    this.#child = options.process === "child";
    this.#server = {};
    try {
      const parsed = new URL(url);
      this.#server["server.address"] = parsed.hostname.replace(/^\[|\]$/g, "");
      const port = parsed.port !== ""
        ? Number(parsed.port)
        : parsed.protocol === "https:"
        ? 443
        : 80;
      this.#server["server.port"] = port;
    } catch {
      // No address then; the spans go on without it.
    }
  }

  /**
   * The pieces in force now, or null when no tracer provider is registered: the common case,
   * and so one property read.
   */
  #otel(): Otel | null {
    if (this.#api !== undefined) return this.#fixed ??= fromApi(this.#api);
    const registry = registeredApi();
    const trace = registry?.trace;
    if (trace === undefined) return null;
    if (registry !== this.#global || trace !== this.#globalTrace) {
      this.#global = registry;
      this.#globalTrace = trace;
      this.#globalOtel = fromRegistry(registry!, trace);
    }
    return this.#globalOtel;
  }

  /**
   * Starts the `send {queue}` span of one enqueue call, or answers null when nothing traces. A
   * job that carries its own `traceparent` keeps it, and the span links to it; another gets the
   * span's context.
   */
  sendOne(queue: string, attributes: JobAttributes | undefined): SendSpan | null {
    const otel = this.#otel();
    return otel === null ? null : this.#send(otel, queue, [attributes]);
  }

  /** Starts the `send {queue}` span of a batch, as {@linkcode sendOne} does for one job. */
  sendBatch(queue: string, jobs: readonly { attributes?: JobAttributes }[]): SendSpan | null {
    const otel = this.#otel();
    return otel === null ? null : this.#send(otel, queue, jobs.map((job) => job.attributes));
  }

  #send(otel: Otel, queue: string, jobs: readonly (JobAttributes | undefined)[]): SendSpan {
    const parent = otel.active();
    const links: { context: OtelSpanContext }[] = [];
    for (const attributes of jobs) {
      const own = attributes?.traceparent;
      if (own === undefined) continue;
      const context = parseTraceparent(own.value, attributes?.tracestate?.value);
      if (context !== null) links.push({ context });
    }
    const attributes: Record<string, string | number | boolean> = {
      "messaging.system": SYSTEM,
      "messaging.destination.name": queue,
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
      ...this.#server,
    };
    if (jobs.length > 1) attributes["messaging.batch.message_count"] = jobs.length;
    const span = otel.tracer.startSpan(`send ${queue}`, {
      kind: PRODUCER,
      attributes,
      links,
    }, parent);
    const carrier = inject(otel, parent.setValue(SPAN_KEY, span), span);
    return {
      attributes: jobs.map((own) =>
        own?.traceparent !== undefined ? own : withCarrier(own, carrier)
      ),
      sent(id) {
        if (id !== undefined) span.setAttribute("messaging.message.id", String(id));
        span.end();
      },
      failed(error) {
        fail(span, error);
        span.end();
      },
    };
  }

  /**
   * Starts the `process {queue}` span of a delivered job, or answers null when nothing traces.
   * It links to the context the job carries, and starts a trace of its own; with
   * `process: "child"` it is also that context's child, in the producer's trace.
   */
  process(job: DeliveredJob): ProcessSpan | null {
    const otel = this.#otel();
    if (otel === null) return null;
    const extracted = extract(otel, job.attributes);
    const creation = (extracted?.getValue(SPAN_KEY) as OtelSpan | undefined)?.spanContext();
    const links: { context: OtelSpanContext }[] = [];
    // Not the context active now: a push arrives in whatever context the socket was opened in,
    // which has nothing to do with the job. The job's own context, less its span unless the
    // process span is its child: what else it carries (baggage) reaches the handler.
    let parent = extracted ?? otel.root;
    if (valid(creation)) {
      links.push({ context: creation });
      if (!this.#child) parent = parent.deleteValue(SPAN_KEY);
    }
    const span = otel.tracer.startSpan(`process ${job.queue}`, {
      kind: CONSUMER,
      attributes: {
        "messaging.system": SYSTEM,
        "messaging.destination.name": job.queue,
        "messaging.operation.type": "process",
        "messaging.operation.name": "process",
        "messaging.message.id": String(job.id),
        "messaging.tegami.attempt": job.attempt,
        ...this.#server,
      },
      links,
    }, parent);
    const context = parent.setValue(SPAN_KEY, span);
    const server = this.#server;
    return {
      run: (fn) => otel.with(context, fn),
      end(failed, error) {
        if (failed) fail(span, error);
        span.end();
      },
      settle(op) {
        const settle = otel.tracer.startSpan(`${op} ${job.queue}`, {
          kind: CLIENT,
          attributes: {
            "messaging.system": SYSTEM,
            "messaging.destination.name": job.queue,
            "messaging.operation.type": "settle",
            "messaging.operation.name": op,
            "messaging.message.id": String(job.id),
            ...server,
          },
        }, context);
        return (error) => {
          if (error !== undefined) fail(settle, error);
          settle.end();
        };
      },
    };
  }
}

/** Marks a span failed: status ERROR, `error.type` (a tegami error's code), the exception. */
function fail(span: OtelSpan, error: unknown): void {
  const code = (error as { code?: unknown } | null)?.code;
  const type = typeof code === "string" ? code : error instanceof Error ? error.name : "_OTHER";
  span.setAttribute("error.type", type);
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({
    code: STATUS_ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

/** The carrier a span's context writes: by the propagator, else as W3C by hand. */
function inject(otel: Otel, context: OtelContext, span: OtelSpan): Record<string, string> {
  const carrier: Record<string, string> = {};
  const propagator = otel.propagator();
  if (propagator !== null) {
    propagator.inject(context, carrier, setter);
    return carrier;
  }
  const own = span.spanContext();
  if (!valid(own)) return carrier;
  carrier.traceparent = traceparentOf(own);
  const state = own.traceState?.serialize();
  if (state !== undefined && state !== "") carrier.tracestate = state;
  return carrier;
}

/** The context a job's attributes carry (on the root), by the propagator or as W3C by hand. */
function extract(otel: Otel, attributes: JobAttributes | null | undefined): OtelContext | null {
  if (attributes == null) return null;
  const propagator = otel.propagator();
  if (propagator !== null) return propagator.extract(otel.root, carrierOf(attributes), getter);
  const traceparent = attributes.traceparent;
  if (traceparent === undefined) return null;
  const context = parseTraceparent(traceparent.value, attributes.tracestate?.value);
  return context === null ? null : otel.root.setValue(SPAN_KEY, remoteSpan(context));
}

/** Whether the server takes `name` as an attribute's (see docs/api.md, Attributes). */
function attributeName(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,256}$/.test(name) && !/^(aws|amazon)\./i.test(name) &&
    !name.includes("..") && !name.startsWith(".") && !name.endsWith(".");
}
/^(?!aws\.|amazon\.)(?!.*\.\.)[A-Za-z0-9_-][A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-]$|^[A-Za-z0-9_-]$/i;

/**
 * A job's attributes with the carrier's fields added as `String` attributes — `traceparent`
 * first, then `tracestate`, then the rest (baggage, say) — each only if the job has no attribute
 * of that name and it fits the server's limits: tracing never fails an enqueue.
 */
function withCarrier(
  attributes: JobAttributes | undefined,
  carrier: Record<string, string>,
): JobAttributes | undefined {
  const names = Object.keys(carrier);
  if (names.length === 0) return attributes;
  names.sort((a, b) => rank(a) - rank(b));
  const out: JobAttributes = { ...attributes };
  let count = 0;
  // An upper bound of the stored form's bytes (`{"name":{"type":"…","value":"…"},…}`, at most
  // three UTF-8 bytes per character); measured exactly only when it is near the limit.
  let bound = 2;
  for (const name in out) {
    count++;
    bound += size(name, out[name]);
  }
  let added = false;
  for (const name of names) {
    if (out[name] !== undefined || count >= MAX_ATTRIBUTES || !attributeName(name)) continue;
    const attribute = { type: "String", value: carrier[name] };
    const grown = bound + size(name, attribute);
    out[name] = attribute;
    if (
      grown > MAX_ATTRIBUTES_BYTES &&
      new TextEncoder().encode(JSON.stringify(out)).length > MAX_ATTRIBUTES_BYTES
    ) {
      delete out[name];
      continue;
    }
    count++;
    bound = grown;
    added = true;
  }
  return added ? out : attributes;
}

/** The order carrier fields are added in: the trace context before the rest. */
function rank(name: string): number {
  return name === "traceparent" ? 0 : name === "tracestate" ? 1 : 2;
}

/** An upper bound of one attribute's bytes as stored. */
function size(name: string, attribute: { type: string; value: string }): number {
  return 3 * (name.length + attribute.type.length + attribute.value.length) + 30;
}
