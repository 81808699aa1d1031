/**
 * W2, drain: `backlog` jobs pre-filled with the system's fastest batch path, then `consumers`
 * consumers (prefetch each) drain and ack them; throughput from subscribing to the last receipt.
 * The RSS reported is the server's with the whole backlog waiting, before the drain.
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { fillerPayload } from "../payload.ts";
import type { Target } from "../peers/peer.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** Shape of W2. */
export interface DrainOptions {
  /** A fresh queue. */
  queue: string;
  /** Jobs pre-filled and drained. */
  backlog: number;
  /** Consumers. @default 4 */
  consumers?: number;
  /** Unacked jobs per consumer. @default 32 */
  prefetch?: number;
}

/** Runs W2 against `target`. */
export async function drain(target: Target, options: DrainOptions): Promise<Measurement> {
  const { queue, backlog, consumers = 4, prefetch = 32 } = options;
  const fillStartedAt = performance.now();
  await target.fill(queue, backlog, fillerPayload());
  const fillSeconds = (performance.now() - fillStartedAt) / 1000;
  // Let the fill's last writes settle (checkpoints, Erlang GC) before reading the RSS.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const rssBytes = totalRss(target.pids);

  let received = 0;
  const { promise: drained, resolve } = Promise.withResolvers<void>();
  const onJob = () => {
    if (++received === backlog) resolve();
  };
  const stop = cpuMeter(target.pids, target.singleThreaded);
  const startedAt = performance.now();
  const subscribed = await Promise.all(
    range(consumers).map(() => target.consumer(queue, prefetch, onJob)),
  );
  try {
    await guarded(drained, () => received, "W2");
    const seconds = (performance.now() - startedAt) / 1000;
    return {
      jobs: backlog,
      seconds,
      cpu: stop(),
      rssBytes,
      notes: [`fill ${Math.round(backlog / fillSeconds)} jobs/s`, "RSS with the backlog waiting"],
    };
  } finally {
    await Promise.all(subscribed.map((c) => c.close()));
  }
}
