/**
 * W3, enqueue only: `producers` × `inflight` sends in flight into a queue nobody consumes;
 * throughput from the first send to the last durable acknowledgement. W3b is the same with
 * tegami's WebSocket `enqueue` frames (pass its producer factory).
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { stampedPayload } from "../payload.ts";
import type { Producer, Target } from "../peers/peer.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** Shape of W3. */
export interface EnqueueOptions {
  /** A fresh queue. */
  queue: string;
  /** Jobs to send. */
  jobs: number;
  /** Producers. @default 4 */
  producers?: number;
  /** Sends in flight per producer. @default 32 */
  inflight?: number;
  /** Makes a producer; the target's usual one by default. */
  producer?: (queue: string) => Promise<Producer>;
}

/** Runs W3 (or W3b) against `target`. */
export async function enqueue(target: Target, options: EnqueueOptions): Promise<Measurement> {
  const { queue, jobs, producers = 4, inflight = 32 } = options;
  const make = options.producer ?? ((q: string) => target.producer(q));
  const senders = await Promise.all(range(producers).map(() => make(queue)));
  try {
    let next = 0;
    let acked = 0;
    const stop = cpuMeter(target.pids, target.singleThreaded);
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((producer) =>
      range(inflight).map(async () => {
        while (next < jobs) {
          await producer.send(stampedPayload(next++));
          acked++;
        }
      })
    ));
    await guarded(sending, () => acked, "W3");
    const seconds = (performance.now() - startedAt) / 1000;
    return { jobs, seconds, cpu: stop(), rssBytes: totalRss(target.pids), notes: [] };
  } finally {
    await Promise.all(senders.map((p) => p.close()));
  }
}
