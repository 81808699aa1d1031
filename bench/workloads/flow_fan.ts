/**
 * WF, a flow's fan-out and fan-in: one flow of a root, `children` nodes that each depend on the
 * root, and one fan-in node that depends on every child (all `cancel` edges), created in one
 * `POST /v1/flows` and run by consumers of the client library (`consume`, protocol v2) that ack
 * every job as it arrives.
 *
 * What it measures, on the bench's clock (times a handler is called and returns; a handler
 * returns at once, and the client sends its ack in that tick):
 *
 * - the create: from sending the request to its answer (every node and edge in one commit);
 * - the fan-out: from the root's ack to each child's delivery, over the children. The children
 *   are released in the root's ack's commit, all at once; the later ones then wait their turn
 *   behind the consumers' prefetch, so the tail is the time to drain them;
 * - the fan-in: from the last child's ack to the fan-in node's delivery (released in that ack's
 *   commit, with its prerequisites' outcomes);
 * - jobs/s: every node, from sending the create to the fan-in node's delivery, and the CPU over
 *   the same time.
 *
 * @module
 */

import { consume, type Consumer } from "../../lib/client/mod.ts";
import { guarded, type Measurement, range } from "../measurement.ts";
import { padded } from "../payload.ts";
import type { TegamiTarget } from "../peers/tegami.ts";
import { cpuMeter, totalRss } from "../proc.ts";
import { summarize } from "../stats.ts";

/** Shape of WF. */
export interface FlowFanOptions {
  /** Queue of every node. */
  queue: string;
  /** Children between the root and the fan-in node. @default 10_000 */
  children?: number;
  /** Consumers. @default 4 */
  consumers?: number;
  /** Jobs each consumer holds and runs at once. @default 32 */
  prefetch?: number;
}

/** A node's payload: `r` says which node it is (`root`, `c` with its number `n`, or `all`). */
interface FanPayload {
  r: "root" | "c" | "all";
  n?: number;
}

/** The body of `POST /v1/flows` for a root, `children` children and a fan-in node. */
export function fanFlowBody(queue: string, children: number): string {
  const q = JSON.stringify(queue);
  const nodes = [`{"ref":"root","queue":${q},"payload":${padded(`{"r":"root"`)}}`];
  for (let i = 0; i < children; i++) {
    nodes.push(
      `{"ref":"c${i}","queue":${q},"payload":${padded(`{"r":"c","n":${i}`)},"depends_on":["root"]}`,
    );
  }
  const all = range(children).map((i) => `"c${i}"`).join(",");
  nodes.push(`{"ref":"all","queue":${q},"payload":${padded(`{"r":"all"`)},"depends_on":[${all}]}`);
  return `{"nodes":[${nodes.join(",")}]}`;
}

/** Runs WF against `target`. */
export async function flowFan(target: TegamiTarget, options: FlowFanOptions): Promise<Measurement> {
  const { queue, children = 10_000, consumers = 4, prefetch = 32 } = options;
  const body = fanFlowBody(queue, children);
  const deliveredAt = new Float64Array(children);
  const seen = new Uint8Array(children);
  let received = 0;
  let duplicates = 0;
  let rootAckAt = NaN;
  let lastChildAckAt = NaN;
  let allAt = NaN;
  const { promise: allDelivered, resolve } = Promise.withResolvers<void>();
  const handler = (payload: FanPayload) => {
    const at = performance.now();
    if (payload.r === "root") {
      rootAckAt = at;
    } else if (payload.r === "c" && payload.n !== undefined) {
      if (seen[payload.n] === 1) {
        duplicates++;
        return;
      }
      seen[payload.n] = 1;
      deliveredAt[payload.n] = at;
      received++;
      // The handler returns now, and its ack goes out in this tick.
      if (received === children) lastChildAckAt = performance.now();
    } else if (payload.r === "all") {
      allAt = at;
      resolve();
    }
  };
  const workers: Consumer[] = range(consumers).map(() =>
    consume<FanPayload>(queue, handler, {
      url: target.consumerUrl,
      prefetch,
      concurrency: prefetch,
    })
  );
  try {
    await Promise.all(workers.map((worker) => worker.ready()));
    const stop = cpuMeter(target.pids, target.singleThreaded);
    const startedAt = performance.now();
    const response = await fetch(`${target.url}/v1/flows`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    const answer = await response.json();
    const createdAt = performance.now();
    if (response.status !== 201) {
      throw new Error(`Cannot create the flow: ${response.status} ${JSON.stringify(answer)}`);
    }
    if (Object.keys(answer.jobs).length !== children + 2) {
      throw new Error(`The flow has ${Object.keys(answer.jobs).length} nodes, not ${children + 2}`);
    }
    await guarded(allDelivered, () => received + (Number.isNaN(allAt) ? 0 : 1), "WF");
    const seconds = (allAt - startedAt) / 1000;
    const cpu = stop();
    // The fan-in node's ack, answered before the consumers close.
    while (workers.some((worker) => worker.running > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const fanOut = summarize(Array.from(deliveredAt, (at) => at - rootAckAt));
    const firstChild = Math.min(...deliveredAt) - rootAckAt;
    const fanInMs = allAt - lastChildAckAt;
    const createMs = createdAt - startedAt;
    const notes = [
      `one flow of ${children + 2} nodes (root → ${children} → fan-in), created in ` +
      `${createMs.toFixed(0)} ms`,
      `fan-out (p50/p99 columns): root's ack → first child ${firstChild.toFixed(1)} ms, ` +
      `→ last ${fanOut.max.toFixed(0)} ms`,
      `fan-in: last child's ack → fan-in delivery ${fanInMs.toFixed(1)} ms`,
    ];
    if (duplicates > 0) notes.push(`${duplicates} redeliveries`);
    return {
      jobs: children + 2,
      seconds,
      latency: fanOut,
      cpu,
      rssBytes: totalRss(target.pids),
      notes,
      extra: {
        create_ms: createMs,
        fan_out_ms: fanOut,
        fan_out_first_ms: firstChild,
        fan_in_ms: fanInMs,
      },
    };
  } finally {
    await Promise.all(workers.map((worker) => worker.close()));
  }
}
