/**
 * The tegami client, for Deno, browsers and Node (tested on Node 20, 22 and 24): a producer over
 * HTTP ({@linkcode TegamiClient}) and a consumer over WebSocket ({@linkcode consume}). It needs
 * only the standard `fetch` and `WebSocket`; on Node (20.16 and later) it sends through
 * `node:http` and opens `ws://` consumers on `node:net` instead, which cost a worker less CPU per
 * job, so Node 20 needs `--experimental-websocket` only for `wss://`.
 *
 * ```ts
 * import { consume, TegamiClient } from "./lib/client/mod.ts";
 *
 * const client = new TegamiClient({ url: "http://127.0.0.1:7700" });
 * await client.enqueue("email", { to: "ada@example.com" });
 *
 * const worker = consume("email", async (payload, ctx) => {
 *   console.log(ctx.attempt, payload);
 *   return { sent: true }; // becomes the ack's result
 * });
 * ```
 *
 * @module
 */

export {
  consume,
  type ConsumeOptions,
  type Consumer,
  type Handler,
  type JobContext,
  JobFailure,
} from "./consumer.ts";
export {
  type BatchJob,
  type ClientOptions,
  type ConnectionOptions,
  type EnqueueResult,
  type FlowInput,
  type FlowNode,
  type GroupInfo,
  type GroupSettings,
  type JobInfo,
  type JobOptions,
  type QueueSettings,
  type QueueStats,
  TegamiClient,
} from "./producer.ts";
export { type MissedPolicy, type ScheduleDefinition, type ScheduleInfo } from "./schedules.ts";
export { type JobAttributes } from "./job_attributes.ts";
export {
  type OpenTelemetryApi,
  type OtelContext,
  type OtelPropagator,
  type OtelSpan,
  type OtelSpanContext,
  type OtelSpanOptions,
  type OtelTracer,
  type OtelTraceState,
} from "./otel_api.ts";
export { type TracingOptions } from "./tracing.ts";
export {
  type FlowCreated,
  type FlowInfo,
  type JobEnd,
  type OnFailure,
  type Prerequisite,
  type WatchOptions,
} from "./flows.ts";
export { type ErrorCode, TegamiError } from "../core/errors.ts";
