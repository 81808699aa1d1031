/**
 * The client's OpenTelemetry spans, recorded by a real OpenTelemetry SDK (`BasicTracerProvider`
 * with an `InMemorySpanExporter`) against a real server: one trace from a producer's span to
 * the consumer's `process` span through the job's `traceparent`, whichever door the job came in
 * by (the client over HTTP, a `traceparent` header, a WebSocket `enqueue` frame); the span
 * kinds, names, links and attributes of OpenTelemetry's messaging conventions; settle spans;
 * and nothing at all when no tracer provider is registered.
 */

import assert from "node:assert/strict";
import * as otel from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  CompositePropagator,
  W3CBaggagePropagator,
  W3CTraceContextPropagator,
} from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { consume, JobFailure, TegamiClient } from "../../lib/client/mod.ts";
import { startTestServer, type TestServer } from "../helpers/test_server.ts";
import { eventually, WsClient, wsUrl } from "../helpers/ws_client.ts";

/**
 * Registers a tracer provider (and, unless told not to, a context manager and the W3C
 * propagator) on the global OpenTelemetry API, as an application does; disposing unregisters.
 */
function registerTracing(options: { contextAndPropagator?: boolean; baggage?: boolean } = {}) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  assert.ok(otel.trace.setGlobalTracerProvider(provider));
  const contextManager = new AsyncLocalStorageContextManager();
  if (options.contextAndPropagator ?? true) {
    assert.ok(otel.context.setGlobalContextManager(contextManager.enable()));
    const propagator = options.baggage
      ? new CompositePropagator({
        propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
      })
      : new W3CTraceContextPropagator();
    assert.ok(otel.propagation.setGlobalPropagator(propagator));
  }
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    named: (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name),
    [Symbol.dispose]() {
      otel.trace.disable();
      otel.context.disable();
      otel.propagation.disable();
      contextManager.disable();
    },
  };
}

/** The W3C `traceparent` of a span. */
function traceparentOf(span: ReadableSpan): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return `00-${traceId}-${spanId}-0${traceFlags}`;
}

async function waitDone(server: TestServer, id: number): Promise<void> {
  await eventually(
    async () => (await server.request("GET", `/v1/jobs/${id}`)).body.state === "done",
    `job ${id} done`,
    5000,
  );
}

Deno.test("a job's trace runs from the producer's send span to the consumer's process span", async () => {
  using tracing = registerTracing();
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const tracer = otel.trace.getTracer("app");
  const handled: { traceId: string; spanId: string }[] = [];
  const worker = consume("mail", () => {
    // The handler runs inside the process span: the application's spans are its children.
    tracer.startActiveSpan("render", (span) => {
      handled.push(span.spanContext());
      span.end();
    });
    return "sent";
  }, { url: server.url });
  await worker.ready();
  const { id } = await tracer.startActiveSpan("checkout", async (span) => {
    try {
      return await client.enqueue("mail", { to: "ada@example.com" });
    } finally {
      span.end();
    }
  });
  await waitDone(server, id);
  await worker.close();

  const [checkout] = tracing.named("checkout");
  const [send] = tracing.named("send mail");
  assert.equal(send.kind, otel.SpanKind.PRODUCER);
  assert.equal(send.spanContext().traceId, checkout.spanContext().traceId);
  assert.equal(send.parentSpanContext?.spanId, checkout.spanContext().spanId);
  assert.deepEqual(send.attributes, {
    "messaging.system": "tegami",
    "messaging.destination.name": "mail",
    "messaging.operation.type": "send",
    "messaging.operation.name": "send",
    "messaging.message.id": String(id),
    "server.address": "127.0.0.1",
    "server.port": Number(new URL(server.url).port),
  });
  const job = await server.request("GET", `/v1/jobs/${id}`);
  assert.deepEqual(job.body.attributes, {
    traceparent: { type: "String", value: traceparentOf(send) },
  });

  // By default the process span starts a trace of its own, linked to the send span.
  const [process] = tracing.named("process mail");
  assert.equal(process.kind, otel.SpanKind.CONSUMER);
  assert.notEqual(process.spanContext().traceId, send.spanContext().traceId);
  assert.equal(process.parentSpanContext, undefined);
  assert.deepEqual(process.links.map((l) => [l.context.traceId, l.context.spanId]), [
    [send.spanContext().traceId, send.spanContext().spanId],
  ]);
  assert.equal(process.attributes["messaging.operation.type"], "process");
  assert.equal(process.attributes["messaging.message.id"], String(id));
  assert.equal(process.attributes["messaging.tegami.attempt"], 1);
  assert.equal(process.status.code, otel.SpanStatusCode.UNSET);
  assert.deepEqual(handled, [{
    ...handled[0],
    traceId: process.spanContext().traceId,
  }]);
  assert.equal(tracing.named("render")[0].parentSpanContext?.spanId, process.spanContext().spanId);

  const [ack] = tracing.named("ack mail");
  assert.equal(ack.kind, otel.SpanKind.CLIENT);
  assert.equal(ack.parentSpanContext?.spanId, process.spanContext().spanId);
  assert.equal(ack.attributes["messaging.operation.type"], "settle");
  assert.equal(ack.attributes["messaging.operation.name"], "ack");
});

Deno.test("consume() with process: child puts the process span in the producer's trace, with a nack span per failure", async () => {
  using tracing = registerTracing();
  await using server = await startTestServer({ realTime: true });
  // The API module passed in, rather than found on globalThis: the same spans.
  const client = new TegamiClient({ url: server.url, tracing: { api: otel } });
  const worker = consume("retry", (_payload, ctx) => {
    if (ctx.attempt === 1) throw new JobFailure("try again", { delayMs: 0 });
    return null;
  }, { url: server.url, tracing: { api: otel, process: "child" } });
  await worker.ready();
  const { id } = await client.enqueue("retry", 1);
  await waitDone(server, id);
  await worker.close();

  const [send] = tracing.named("send retry");
  const processes = tracing.named("process retry");
  assert.equal(processes.length, 2);
  for (const process of processes) {
    assert.equal(process.spanContext().traceId, send.spanContext().traceId, "one trace");
    assert.equal(process.parentSpanContext?.spanId, send.spanContext().spanId);
    assert.deepEqual(process.links.map((l) => l.context.spanId), [send.spanContext().spanId]);
  }
  const [failed, succeeded] = processes.sort((a, b) =>
    Number(a.attributes["messaging.tegami.attempt"]) -
    Number(b.attributes["messaging.tegami.attempt"])
  );
  assert.equal(failed.status.code, otel.SpanStatusCode.ERROR);
  assert.equal(failed.status.message, "try again");
  assert.equal(failed.attributes["error.type"], "JobFailure");
  assert.equal(failed.events[0].name, "exception");
  assert.equal(succeeded.status.code, otel.SpanStatusCode.UNSET);
  const [nack] = tracing.named("nack retry");
  assert.equal(nack.parentSpanContext?.spanId, failed.spanContext().spanId);
  assert.equal(nack.attributes["messaging.operation.type"], "settle");
  const [ack] = tracing.named("ack retry");
  assert.equal(ack.parentSpanContext?.spanId, succeeded.spanContext().spanId);
});

Deno.test("a traceparent header and a WebSocket enqueue frame carry the producer's context to the consumer", async () => {
  using tracing = registerTracing();
  await using server = await startTestServer({ realTime: true });
  const worker = consume("doors", () => null, {
    url: server.url,
    tracing: { process: "child" },
  });
  await worker.ready();
  const tracer = otel.trace.getTracer("app");
  await using ws = await WsClient.connect(wsUrl(server.url));
  const ids = await tracer.startActiveSpan("produce", async (span) => {
    const carrier: Record<string, string> = {};
    otel.propagation.inject(otel.context.active(), carrier);
    const http = await server.request("POST", "/v1/queues/doors/jobs", { payload: "http" }, {
      traceparent: carrier.traceparent,
    });
    const frame = await ws.ok({
      op: "enqueue",
      queue: "doors",
      payload: "ws",
      attributes: { traceparent: { type: "String", value: carrier.traceparent } },
    });
    span.end();
    return [http.body.id as number, frame.id as number];
  });
  for (const id of ids) await waitDone(server, id);
  await worker.close();

  const [produce] = tracing.named("produce");
  const processes = tracing.named("process doors");
  assert.equal(processes.length, 2);
  for (const process of processes) {
    assert.equal(process.spanContext().traceId, produce.spanContext().traceId);
    assert.equal(process.parentSpanContext?.spanId, produce.spanContext().spanId);
  }
  assert.deepEqual(
    processes.map((p) => p.attributes["messaging.message.id"]).sort(),
    ids.map(String).sort(),
  );
});

Deno.test("enqueueBatch() makes one send span for the batch; a job's own traceparent is kept and linked", async () => {
  using tracing = registerTracing();
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  const own = "00-11111111111111111111111111111111-2222222222222222-01";
  const [a, b] = await client.enqueueBatch("batch", [
    { payload: 1, attributes: { lang: { type: "String", value: "en" } } },
    { payload: 2, attributes: { traceparent: { type: "String", value: own } } },
  ]);
  const [send] = tracing.named("send batch");
  assert.equal(send.attributes["messaging.batch.message_count"], 2);
  assert.equal(send.attributes["messaging.message.id"], undefined);
  assert.deepEqual(send.links.map((l) => l.context.spanId), ["2222222222222222"]);
  assert.deepEqual((await client.get(a.id)).attributes, {
    lang: { type: "String", value: "en" },
    traceparent: { type: "String", value: traceparentOf(send) },
  });
  assert.deepEqual((await client.get(b.id)).attributes, {
    traceparent: { type: "String", value: own },
  });
});

Deno.test("a refused enqueue ends its send span in error, and a job with no room is sent untraced", async () => {
  using tracing = registerTracing();
  await using server = await startTestServer();
  const client = new TegamiClient({ url: server.url });
  await assert.rejects(client.enqueue("q", 1, { priority: 1.5 }), { code: "validation_failed" });
  const [send] = tracing.named("send q");
  assert.equal(send.status.code, otel.SpanStatusCode.ERROR);
  assert.equal(send.attributes["error.type"], "validation_failed");
  const ten = Object.fromEntries(
    Array.from({ length: 10 }, (_, i) => [`a${i}`, { type: "String", value: "x" }]),
  );
  const { id } = await client.enqueue("q", 2, { attributes: ten });
  assert.deepEqual((await client.get(id)).attributes, ten);
});

Deno.test("a registered baggage propagator's baggage travels with the job to the handler, if it fits", async () => {
  using tracing = registerTracing({ baggage: true });
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const seen: (string | undefined)[] = [];
  const worker = consume("bags", () => {
    seen.push(otel.propagation.getActiveBaggage()?.getEntry("tenant")?.value);
    return null;
  }, { url: server.url });
  await worker.ready();
  const withBaggage = (entries: Record<string, string>) =>
    otel.propagation.setBaggage(
      otel.context.active(),
      otel.propagation.createBaggage(
        Object.fromEntries(Object.entries(entries).map(([k, value]) => [k, { value }])),
      ),
    );
  const small = await otel.context.with(
    withBaggage({ tenant: "acme" }),
    () => client.enqueue("bags", 1),
  );
  // Baggage over the room a job's attributes leave is left out; the trace context still goes.
  const big = await otel.context.with(
    withBaggage({
      tenant: "acme",
      ...Object.fromEntries([1, 2, 3, 4].map((n) => [`blob${n}`, "x".repeat(1000)])),
    }),
    () => client.enqueue("bags", 2),
  );
  await waitDone(server, small.id);
  await waitDone(server, big.id);
  await worker.close();
  const smallJob = await client.get(small.id);
  assert.deepEqual(Object.keys(smallJob.attributes ?? {}), ["baggage", "traceparent"]);
  assert.equal(smallJob.attributes?.baggage.value, "tenant=acme");
  const bigJob = await client.get(big.id);
  assert.deepEqual(Object.keys(bigJob.attributes ?? {}), ["traceparent"]);
  assert.deepEqual(seen, ["acme", undefined]);
  assert.equal(tracing.named("process bags").length, 2);
});

Deno.test("without a context manager or propagator the client writes and reads W3C itself", async () => {
  using tracing = registerTracing({ contextAndPropagator: false });
  await using server = await startTestServer({ realTime: true });
  const client = new TegamiClient({ url: server.url });
  const worker = consume("bare", () => null, { url: server.url, tracing: { process: "child" } });
  await worker.ready();
  const { id } = await client.enqueue("bare", 1);
  await waitDone(server, id);
  await worker.close();
  const [send] = tracing.named("send bare");
  assert.equal(send.parentSpanContext, undefined);
  assert.equal(
    (await client.get(id)).attributes?.traceparent.value,
    traceparentOf(send),
  );
  const [process] = tracing.named("process bare");
  assert.equal(process.spanContext().traceId, send.spanContext().traceId);
  assert.equal(process.parentSpanContext?.spanId, send.spanContext().spanId);
  assert.equal(tracing.named("ack bare").length, 1);
});

Deno.test("with no tracer provider registered, or tracing: false, no span is made and nothing is injected", async () => {
  await using server = await startTestServer({ realTime: true });
  const registry = (globalThis as Record<symbol, { trace?: unknown } | undefined>)[
    Symbol.for("opentelemetry.js.api.1")
  ];
  assert.equal(registry?.trace, undefined, "nothing registered");
  const client = new TegamiClient({ url: server.url });
  const seen: unknown[] = [];
  const worker = consume("plain", (_payload, ctx) => {
    seen.push(ctx.attributes, otel.trace.getActiveSpan());
    return null;
  }, { url: server.url });
  await worker.ready();
  const { id } = await client.enqueue("plain", 1);
  const [batched] = await client.enqueueBatch("plain", [{ payload: 2 }]);
  await waitDone(server, id);
  await waitDone(server, batched.id);
  assert.equal((await client.get(id)).attributes, null);
  assert.equal((await client.get(batched.id)).attributes, null);
  assert.deepEqual(seen, [null, undefined, null, undefined]);

  using tracing = registerTracing();
  const off = new TegamiClient({ url: server.url, tracing: false });
  const quiet = await off.enqueue("plain", 3);
  await waitDone(server, quiet.id);
  assert.equal((await off.get(quiet.id)).attributes, null);
  await worker.close();
  // The consumer, made before the provider was registered, traces from then on: the registry is
  // read per job.
  assert.deepEqual(tracing.spans().map((s) => s.name).sort(), ["ack plain", "process plain"]);
});
