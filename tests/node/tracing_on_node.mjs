// The client SDK's OpenTelemetry spans on Node, with Node's own test runner: the SDK bundled to
// one ES module (TEGAMI_CLIENT) against a real tegami server (TEGAMI_URL), and a real
// OpenTelemetry SDK (the npm packages deno.json pins, from the repository's node_modules)
// registered on the global API as a Node application registers it. The SDK finds it there, with
// no import of its own: one trace from a producer's span to the consumer's process span.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as otel from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

const { consume, TegamiClient } = await import(process.env.TEGAMI_CLIENT);
const url = process.env.TEGAMI_URL;
const queue = `node.traced.${process.pid}`;

async function eventually(check, what, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail(`timed out waiting for ${what}`);
}

test("a job's trace runs from the producer's span to the consumer's process span on Node", async () => {
  const client = new TegamiClient({ url });
  const untraced = await client.enqueue(queue, 0);
  assert.equal((await client.get(untraced.id)).attributes, null, "nothing registered yet");
  await client.cancel(untraced.id);

  const exporter = new InMemorySpanExporter();
  otel.trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
  );
  otel.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  otel.propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  try {
    const worker = consume(queue, () => "done", { url, tracing: { process: "child" } });
    await worker.ready();
    const tracer = otel.trace.getTracer("app");
    const { id } = await tracer.startActiveSpan("produce", async (span) => {
      try {
        return await client.enqueue(queue, { n: 1 });
      } finally {
        span.end();
      }
    });
    await eventually(async () => (await client.get(id)).state === "done", "the job done");
    await worker.close();
    const spans = exporter.getFinishedSpans();
    const named = (name) => spans.find((s) => s.name === name);
    const produce = named("produce");
    const send = named(`send ${queue}`);
    const process = named(`process ${queue}`);
    const ack = named(`ack ${queue}`);
    assert.equal(send.kind, otel.SpanKind.PRODUCER);
    assert.equal(send.parentSpanContext.spanId, produce.spanContext().spanId);
    assert.equal(
      (await client.get(id)).attributes.traceparent.value,
      `00-${send.spanContext().traceId}-${send.spanContext().spanId}-01`,
    );
    assert.equal(process.kind, otel.SpanKind.CONSUMER);
    assert.equal(process.spanContext().traceId, produce.spanContext().traceId);
    assert.equal(process.parentSpanContext.spanId, send.spanContext().spanId);
    assert.equal(ack.parentSpanContext.spanId, process.spanContext().spanId);
  } finally {
    otel.trace.disable();
    otel.context.disable();
    otel.propagation.disable();
  }
});
