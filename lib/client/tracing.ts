/**
 * OpenTelemetry spans for the client, made through the application's own OpenTelemetry API, so
 * the client depends on no package: a `send {queue}` span (kind PRODUCER) per enqueue call or
 * batch, whose context goes into each job's `traceparent` and `tracestate` attributes; a
 * `process {queue}` span (CONSUMER) around each handler, linked to the context the job carries
 * (or its child, as an option); an `ack {queue}` or `nack {queue}` span (CLIENT, settle) from the
 * settlement's send to its reply. Names, kinds, links and attributes follow OpenTelemetry's
 * semantic conventions for messaging spans.
 *
 * Where the API comes from: OpenTelemetry JS registers what the application set up (its tracer
 * provider, context manager and propagator) on `globalThis[Symbol.for("opentelemetry.js.api.1")]`,
 * where every copy of `@opentelemetry/api` of major version 1 finds it — and so do Deno's and
 * Bun's built-in OpenTelemetry. The client reads the same place, so it traces whenever the
 * application registered a tracer provider, through any copy of the API or none. With nothing
 * registered, each job costs one property read: no span, no context, no attribute. An
 * application may instead pass the API module (`tracing: { api }`), or turn tracing off
 * (`tracing: false`).
 *
 * A job's trace context is written by the registered propagator when there is one (so baggage,
 * say, travels too), else as W3C `traceparent` and `tracestate` by this module.
 *
 * @module
 */

/** A job's attributes as the wire carries them. */
export type JobAttributes = Record<string, { type: string; value: string }>;

/** An OpenTelemetry context (the part of `Context` the client uses). */
export interface OtelContext {
  /** The value under `key`. */
  getValue(key: symbol): unknown;
  /** A copy with `key` set. */
  setValue(key: symbol, value: unknown): OtelContext;
  /** A copy without `key`. */
  deleteValue(key: symbol): OtelContext;
}

/** A span's identity (`SpanContext`). */
export interface OtelSpanContext {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** Bit 0: sampled. */
  traceFlags: number;
  /** True when it came from another process. */
  isRemote?: boolean;
  /** The vendors' trace state. */
  traceState?: OtelTraceState;
}

/** A W3C `tracestate` (`TraceState`). */
export interface OtelTraceState {
  /** A copy with `key` set, first. */
  set(key: string, value: string): OtelTraceState;
  /** A copy without `key`. */
  unset(key: string): OtelTraceState;
  /** The value of `key`. */
  get(key: string): string | undefined;
  /** As the `tracestate` header writes it. */
  serialize(): string;
}

/** A span (the part of `Span` the client uses). */
export interface OtelSpan {
  /** Its identity. */
  spanContext(): OtelSpanContext;
  /** Sets one attribute. */
  setAttribute(key: string, value: string | number | boolean): unknown;
  /** Sets the status: `{code: 2, message}` for an error. */
  setStatus(status: { code: number; message?: string }): unknown;
  /** Records an exception as an event. */
  recordException(exception: unknown): void;
  /** Ends it. */
  end(): void;
}

/** Options of a new span (`SpanOptions`). */
export interface OtelSpanOptions {
  /** `SpanKind`: 2 CLIENT, 3 PRODUCER, 4 CONSUMER. */
  kind?: number;
  /** Its attributes (the client sets strings, numbers and booleans). */
  attributes?: Record<string, unknown>;
  /** Its links. */
  links?: { context: OtelSpanContext }[];
}

/** A tracer (`Tracer`). */
export interface OtelTracer {
  /** Starts a span in `context` (its parent being the span there, if any). */
  startSpan(name: string, options?: OtelSpanOptions, context?: OtelContext): OtelSpan;
}

/** A propagator (`TextMapPropagator`), with a carrier of attribute values by name. */
export interface OtelPropagator {
  /** Writes `context` into `carrier`. */
  inject(
    context: OtelContext,
    carrier: Record<string, string>,
    setter: { set(carrier: Record<string, string>, key: string, value: string): void },
  ): void;
  /** Reads a context out of `carrier`, on top of `context`. */
  extract(
    context: OtelContext,
    carrier: Record<string, string>,
    getter: {
      get(carrier: Record<string, string>, key: string): string | undefined;
      keys(carrier: Record<string, string>): string[];
    },
  ): OtelContext;
  /** The carrier keys it writes (none for the API's no-op propagator). */
  fields(): string[];
}

/**
 * The part of the `@opentelemetry/api` module the client uses, typed by shape so the client
 * needs no import of it: `import * as api from "@opentelemetry/api"` fits.
 */
export interface OpenTelemetryApi {
  /** `trace`: tracers of the registered provider. */
  trace: { getTracer(name: string, version?: string): OtelTracer };
  /** `context`: the active context, and running code in one. */
  context: {
    active(): OtelContext;
    with<T>(context: OtelContext, fn: () => T): T;
  };
  /** `propagation`: the registered propagator. */
  propagation: OtelPropagator;
  /** The empty context. */
  ROOT_CONTEXT: OtelContext;
}

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

/** Where OpenTelemetry JS registers its globals (major version 1 of the API). */
const GLOBAL_API = Symbol.for("opentelemetry.js.api.1");
/** The context key of the active span (the API's `createContextKey` is `Symbol.for`). */
const SPAN_KEY = Symbol.for("OpenTelemetry Context Key SPAN");

const CLIENT = 2;
const PRODUCER = 3;
const CONSUMER = 4;
const STATUS_ERROR = 2;

/** The instrumentation scope's name. */
const SCOPE = "tegami";

/** What is registered globally (each member only once set up). */
interface GlobalApi {
  trace?: { getTracer(name: string, version?: string): OtelTracer };
  context?: { active(): OtelContext; with<T>(context: OtelContext, fn: () => T): T };
  propagation?: OtelPropagator;
}

/** The OpenTelemetry pieces in force. */
interface Otel {
  tracer: OtelTracer;
  root: OtelContext;
  active(): OtelContext;
  with<T>(context: OtelContext, fn: () => T): T;
  /** The registered propagator, or null for none (then W3C is written by hand). */
  propagator(): OtelPropagator | null;
}

/** An immutable context, for when no context manager is registered. */
class Context implements OtelContext {
  readonly #values: Map<symbol, unknown>;
  constructor(values = new Map<symbol, unknown>()) {
    this.#values = values;
  }
  getValue(key: symbol): unknown {
    return this.#values.get(key);
  }
  setValue(key: symbol, value: unknown): OtelContext {
    return new Context(new Map(this.#values).set(key, value));
  }
  deleteValue(key: symbol): OtelContext {
    const values = new Map(this.#values);
    values.delete(key);
    return new Context(values);
  }
}

const ROOT = new Context();

/** A `tracestate` read from a job, for a span context made from its `traceparent`. */
class TraceState implements OtelTraceState {
  readonly #members: [string, string][];
  constructor(members: [string, string][]) {
    this.#members = members;
  }
  static parse(text: string): TraceState {
    const members: [string, string][] = [];
    for (const member of text.split(",")) {
      const at = member.indexOf("=");
      if (at > 0) members.push([member.slice(0, at).trim(), member.slice(at + 1).trim()]);
    }
    return new TraceState(members.slice(0, 32));
  }
  set(key: string, value: string): OtelTraceState {
    return new TraceState([[key, value], ...this.#members.filter(([k]) => k !== key)]);
  }
  unset(key: string): OtelTraceState {
    return new TraceState(this.#members.filter(([k]) => k !== key));
  }
  get(key: string): string | undefined {
    return this.#members.find(([k]) => k === key)?.[1];
  }
  serialize(): string {
    return this.#members.map(([k, v]) => `${k}=${v}`).join(",");
  }
}

/** A remote span context as a span, to be a parent: records nothing. */
function remoteSpan(context: OtelSpanContext): OtelSpan & { isRecording(): boolean } {
  return {
    spanContext: () => context,
    setAttribute() {},
    setStatus() {},
    recordException() {},
    end() {},
    isRecording: () => false,
  };
}

const setter = {
  set(carrier: Record<string, string>, key: string, value: string) {
    carrier[key] = value;
  },
};
const getter = {
  get: (carrier: Record<string, string>, key: string) => carrier[key],
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
};

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context a W3C `traceparent` (and `tracestate`) names, or null when not valid. */
function parseTraceparent(value: string, state: string | undefined): OtelSpanContext | null {
  const parts = TRACEPARENT.exec(value);
  if (parts === null) return null;
  const [, version, traceId, spanId, flags, rest] = parts;
  if (version === "ff" || (version === "00" && rest !== undefined)) return null;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return null;
  const context: OtelSpanContext = {
    traceId,
    spanId,
    traceFlags: parseInt(flags, 16) & 1,
    isRemote: true,
  };
  if (state !== undefined && state !== "") context.traceState = TraceState.parse(state);
  return context;
}

/** Whether a span context names a real span (not the API's invalid one). */
function valid(context: OtelSpanContext | undefined): context is OtelSpanContext {
  return context !== undefined && !/^0+$/.test(context.traceId) && !/^0+$/.test(context.spanId);
}

/** The most attributes a job carries (the server's limit). */
const MAX_ATTRIBUTES = 10;
/** The most bytes of a job's attributes as JSON (the server's limit, 4096, less a margin). */
const MAX_ATTRIBUTES_BYTES = 4000;

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
    const registry = (globalThis as Record<symbol, GlobalApi | undefined>)[GLOBAL_API];
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
      "messaging.system": SCOPE,
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
   * It links to the context the job carries; with `process: "child"` it is also its child (and
   * links to the context that was active, if any).
   */
  process(job: DeliveredJob): ProcessSpan | null {
    const otel = this.#otel();
    if (otel === null) return null;
    const ambient = otel.active();
    const extracted = extract(otel, job.attributes);
    const creation = extracted?.getValue(SPAN_KEY) as OtelSpan | undefined;
    const creationContext = creation?.spanContext();
    const links: { context: OtelSpanContext }[] = [];
    let parent = ambient;
    if (valid(creationContext)) {
      links.push({ context: creationContext });
      if (this.#child) {
        const around = (ambient.getValue(SPAN_KEY) as OtelSpan | undefined)?.spanContext();
        if (valid(around)) links.push({ context: around });
        parent = extracted!;
      }
    }
    const span = otel.tracer.startSpan(`process ${job.queue}`, {
      kind: CONSUMER,
      attributes: {
        "messaging.system": SCOPE,
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
            "messaging.system": SCOPE,
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
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  if (!valid({ traceId, spanId, traceFlags })) return carrier;
  carrier.traceparent = `00-${traceId}-${spanId}-0${traceFlags & 1}`;
  const state = traceState?.serialize();
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

/**
 * A job's attributes with the carrier's fields added as `String` attributes, those it has kept;
 * unchanged when they would pass the server's limits (tracing never fails an enqueue).
 */
function withCarrier(
  attributes: JobAttributes | undefined,
  carrier: Record<string, string>,
): JobAttributes | undefined {
  const names = Object.keys(carrier);
  if (names.length === 0) return attributes;
  const out: JobAttributes = { ...attributes };
  for (const name of names) {
    if (out[name] === undefined) out[name] = { type: "String", value: carrier[name] };
  }
  let count = 0;
  // An upper bound of the stored form's bytes (`{"name":{"type":"…","value":"…"},…}`, at most
  // three UTF-8 bytes per character); measured exactly only when it is near the limit.
  let bound = 2;
  for (const name in out) {
    count++;
    const { type, value } = out[name];
    bound += 3 * (name.length + type.length + value.length) + 30;
  }
  if (count > MAX_ATTRIBUTES) return attributes;
  if (
    bound > MAX_ATTRIBUTES_BYTES &&
    new TextEncoder().encode(JSON.stringify(out)).length > MAX_ATTRIBUTES_BYTES
  ) return attributes;
  return out;
}

/** The pieces of an API module given by the application. */
function fromApi(api: OpenTelemetryApi): Otel {
  return {
    tracer: api.trace.getTracer(SCOPE),
    root: api.ROOT_CONTEXT,
    active: () => api.context.active(),
    with: (context, fn) => api.context.with(context, fn),
    propagator: () => api.propagation.fields().length > 0 ? api.propagation : null,
  };
}

/** The pieces registered globally; the context manager and propagator are read as they are now. */
function fromRegistry(registry: GlobalApi, trace: NonNullable<GlobalApi["trace"]>): Otel {
  return {
    tracer: trace.getTracer(SCOPE),
    root: ROOT,
    active: () => registry.context?.active() ?? ROOT,
    with: (context, fn) =>
      registry.context !== undefined ? registry.context.with(context, fn) : fn(),
    propagator: () => registry.propagation ?? null,
  };
}
