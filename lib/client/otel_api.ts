/**
 * The shape of OpenTelemetry's JavaScript API that the client traces through, and where it finds
 * it, without importing `@opentelemetry/api`.
 *
 * OpenTelemetry JS registers what an application sets up — its tracer provider, context manager
 * and propagator — on `globalThis[Symbol.for("opentelemetry.js.api.1")]`, where every copy of
 * `@opentelemetry/api` of major version 1 looks for them (`registerGlobal` in the API's
 * `internal/global-utils`); Deno's built-in OpenTelemetry (`OTEL_DENO=true`) registers there
 * too. The client reads that place, or an API module the application passes in. The types are
 * the part of the API's own that the client uses, so `import * as api from "@opentelemetry/api"`
 * fits {@linkcode OpenTelemetryApi}.
 *
 * @module
 */

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

/** Where OpenTelemetry JS registers its globals (major version 1 of the API). */
const GLOBAL_API = Symbol.for("opentelemetry.js.api.1");
/** The context key of the active span (the API's `createContextKey` is `Symbol.for`). */
export const SPAN_KEY: symbol = Symbol.for("OpenTelemetry Context Key SPAN");

/** The instrumentation scope the client's tracer is named after. */
const SCOPE = "tegami";

/** What is registered globally (each member only once set up). */
export interface GlobalApi {
  /** The tracer provider. */
  trace?: { getTracer(name: string, version?: string): OtelTracer };
  /** The context manager. */
  context?: { active(): OtelContext; with<T>(context: OtelContext, fn: () => T): T };
  /** The propagator. */
  propagation?: OtelPropagator;
}

/** The OpenTelemetry pieces the client traces with. */
export interface Otel {
  /** The client's tracer. */
  tracer: OtelTracer;
  /** The empty context. */
  root: OtelContext;
  /** The active context. */
  active(): OtelContext;
  /** Runs `fn` with `context` active. */
  with<T>(context: OtelContext, fn: () => T): T;
  /** The registered propagator, or null for none (then W3C is written by hand). */
  propagator(): OtelPropagator | null;
}

/** What is registered on the global API now, if anything. */
export function registeredApi(): GlobalApi | undefined {
  return (globalThis as Record<symbol, GlobalApi | undefined>)[GLOBAL_API];
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

/** The pieces of an API module given by the application. */
export function fromApi(api: OpenTelemetryApi): Otel {
  return {
    tracer: api.trace.getTracer(SCOPE),
    root: api.ROOT_CONTEXT,
    active: () => api.context.active(),
    with: (context, fn) => api.context.with(context, fn),
    propagator: () => api.propagation.fields().length > 0 ? api.propagation : null,
  };
}

/** The pieces registered globally; the context manager and propagator are read as they are now. */
export function fromRegistry(registry: GlobalApi, trace: NonNullable<GlobalApi["trace"]>): Otel {
  return {
    tracer: trace.getTracer(SCOPE),
    root: ROOT,
    active: () => registry.context?.active() ?? ROOT,
    with: (context, fn) =>
      registry.context !== undefined ? registry.context.with(context, fn) : fn(),
    propagator: () => registry.propagation ?? null,
  };
}
