/**
 * W3C Trace Context as the client reads it from a job when no propagator is registered: a
 * `traceparent` (`version-traceid-parentid-flags`, W3C Trace Context §3.2) and its `tracestate`
 * (§3.3) as a span context, and that span context as a parent span that records nothing.
 *
 * @module
 */

import type { OtelSpan, OtelSpanContext, OtelTraceState } from "./otel_api.ts";

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

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The span context a W3C `traceparent` (and `tracestate`) names, or null when not valid. */
export function parseTraceparent(value: string, state: string | undefined): OtelSpanContext | null {
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
export function valid(context: OtelSpanContext | undefined): context is OtelSpanContext {
  return context !== undefined && !/^0+$/.test(context.traceId) && !/^0+$/.test(context.spanId);
}

/** The W3C `traceparent` of a span context. */
export function traceparentOf(context: OtelSpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & 1}`;
}

/** A remote span context as a span, to be a parent: records nothing. */
export function remoteSpan(context: OtelSpanContext): OtelSpan & { isRecording(): boolean } {
  return {
    spanContext: () => context,
    setAttribute() {},
    setStatus() {},
    recordException() {},
    end() {},
    isRecording: () => false,
  };
}
