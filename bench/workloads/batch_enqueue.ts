/**
 * W4, batch enqueue (tegami only): `jobs` jobs in requests of `batch` jobs each, `producers` ×
 * `inflight` requests in flight over HTTP.
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { stampedPayload } from "../payload.ts";
import type { TegamiTarget } from "../peers/tegami.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** Shape of W4. */
export interface BatchEnqueueOptions {
  /** A fresh queue. */
  queue: string;
  /** Jobs in all. */
  jobs: number;
  /** Jobs per request. @default 100 */
  batch?: number;
  /** Producers. @default 4 */
  producers?: number;
  /** Requests in flight per producer. @default 4 */
  inflight?: number;
}

/** Runs W4 against a tegami server. */
export async function batchEnqueue(
  target: TegamiTarget,
  options: BatchEnqueueOptions,
): Promise<Measurement> {
  const { queue, jobs, batch = 100, producers = 4, inflight = 4 } = options;
  const senders = range(producers).map(() => target.batchProducer(queue));
  try {
    let next = 0;
    let acked = 0;
    const stop = cpuMeter(target.pids, target.singleThreaded);
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((producer) =>
      range(inflight).map(async () => {
        while (next < jobs) {
          const count = Math.min(batch, jobs - next);
          const payloads = range(count).map(() => stampedPayload(next++));
          await producer.send(payloads);
          acked += count;
        }
      })
    ));
    await guarded(sending, () => acked, "W4");
    const seconds = (performance.now() - startedAt) / 1000;
    return {
      jobs,
      seconds,
      cpu: stop(),
      rssBytes: totalRss(target.pids),
      notes: [`${batch} jobs/request, ${producers}×${inflight} requests in flight`],
    };
  } finally {
    await Promise.all(senders.map((p) => p.close()));
  }
}
