/**
 * What the client's tracing hooks cost per job, with no network: the `send`, `process` and `ack`
 * hooks of one job, first with no tracer provider registered (the hooks find nothing and do
 * nothing), then with a real OpenTelemetry SDK registered on the global API (a
 * `BasicTracerProvider` without processors, the `AsyncLocalStorage` context manager and the W3C
 * propagator) beside the same OpenTelemetry calls, with the same attributes, written by hand.
 * Medians of 10 rounds, the two interleaved so that both see the same machine.
 *
 * `npx --yes deno@2.9.6 run -A bench/client_tracing.ts`
 *
 * @module
 */

import * as otel from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider } from "@opentelemetry/sdk-trace-base";
import { Tracing } from "../lib/client/tracing.ts";

const tracing = new Tracing({}, "http://127.0.0.1:7700");
const job = {
  id: 1,
  queue: "q",
  attempt: 1,
  attributes: {
    traceparent: {
      type: "String",
      value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    },
  },
};

/** One job's hooks, as producer.ts and consumer.ts call them. */
function hooks(): void {
  tracing.sendOne("q", undefined)?.sent(1);
  const span = tracing.process(job);
  if (span === null) return;
  span.run(() => 0);
  span.end(false);
  span.settle("ack")();
}

/** The attributes the client's spans carry (messaging conventions). */
const ATTRIBUTES = {
  "messaging.system": "tegami",
  "messaging.destination.name": "q",
  "messaging.operation.type": "send",
  "messaging.operation.name": "send",
  "messaging.message.id": "1",
  "server.address": "127.0.0.1",
  "server.port": 7700,
};

/**
 * What the hooks do, written by hand against the API: three spans with the same attributes, an
 * inject, an extract and a `context.with`.
 */
function byHand(): void {
  const tracer = otel.trace.getTracer("bench");
  const send = tracer.startSpan("send q", {
    kind: otel.SpanKind.PRODUCER,
    attributes: ATTRIBUTES,
  });
  otel.propagation.inject(otel.trace.setSpan(otel.context.active(), send), {});
  send.end();
  const carrier = { traceparent: job.attributes.traceparent.value };
  const creation = otel.trace.getSpanContext(otel.propagation.extract(otel.ROOT_CONTEXT, carrier));
  const process = tracer.startSpan("process q", {
    kind: otel.SpanKind.CONSUMER,
    attributes: { ...ATTRIBUTES, "messaging.tegami.attempt": 1 },
    links: creation === undefined ? [] : [{ context: creation }],
  }, otel.ROOT_CONTEXT);
  const context = otel.trace.setSpan(otel.ROOT_CONTEXT, process);
  otel.context.with(context, () => 0);
  process.end();
  tracer.startSpan("ack q", { kind: otel.SpanKind.CLIENT, attributes: ATTRIBUTES }, context)
    .end();
}

/** The median ns per call of `fn` over 10 rounds of `n` (after a warm-up). */
function medians(fns: (() => void)[], n: number): number[] {
  for (const fn of fns) for (let i = 0; i < n; i++) fn();
  const rounds = fns.map(() => [] as number[]);
  for (let round = 0; round < 10; round++) {
    fns.forEach((fn, f) => {
      const start = performance.now();
      for (let i = 0; i < n; i++) fn();
      rounds[f].push((performance.now() - start) * 1e6 / n);
    });
  }
  return rounds.map((r) => r.sort((a, b) => a - b)[5]);
}

const [idle] = medians([hooks], 1_000_000);
console.log(`no tracer registered: ${idle.toFixed(0)} ns per job`);
otel.trace.setGlobalTracerProvider(new BasicTracerProvider());
otel.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
otel.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
const [traced, raw] = medians([hooks, byHand], 10_000);
console.log(
  `tracer registered: ${(traced / 1000).toFixed(1)} µs per job; ` +
    `the same OpenTelemetry calls by hand: ${(raw / 1000).toFixed(1)} µs`,
);
