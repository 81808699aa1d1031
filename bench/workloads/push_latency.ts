/**
 * W5, idle push latency: one consumer (prefetch 1), one job at a time. Each sample is the time
 * from stamping a job's payload and sending it to the consumer receiving it; the next job is sent
 * only once that job's enqueue and ack are both answered, so the system is idle between samples.
 *
 * @module
 */

import { guarded, type Measurement } from "../measurement.ts";
import { now, type Stamp, stampedPayload } from "../payload.ts";
import type { Target } from "../peers/peer.ts";
import { cpuMeter } from "../proc.ts";
import { summarize } from "../stats.ts";

/** Shape of W5. */
export interface PushLatencyOptions {
  /** Queue to use. */
  queue: string;
  /** Samples kept. */
  samples: number;
  /** Samples taken first and thrown away. @default 20 */
  warmup?: number;
}

/** Runs W5 against `target`. */
export async function pushLatency(
  target: Target,
  options: PushLatencyOptions,
): Promise<Measurement> {
  const { queue, samples, warmup = 20 } = options;
  const latencies: number[] = [];
  let fillers = 0;
  let waiting: ((latency: number) => void) | null = null;
  const consumer = await target.consumer(queue, 1, (job: Stamp) => {
    if (job.t === undefined) {
      fillers++;
      return;
    }
    const latency = now() - job.t;
    waiting?.(latency);
    waiting = null;
  });
  const producer = await target.producer(queue);
  try {
    let stop = cpuMeter(target.pids, target.singleThreaded);
    let startedAt = performance.now();
    let taken = 0;
    const run = async () => {
      for (let i = 0; i < warmup + samples; i++) {
        if (i === warmup) {
          stop = cpuMeter(target.pids, target.singleThreaded);
          startedAt = performance.now();
        }
        const received = new Promise<number>((resolve) => waiting = resolve);
        const sent = producer.send(stampedPayload(i));
        sent.catch(() => {}); // awaited below; handled here in case a stall abandons it first
        const latency = await received;
        await sent;
        await consumer.acked();
        if (i >= warmup) latencies.push(latency);
        taken++;
      }
    };
    await guarded(run(), () => taken, "W5");
    const seconds = (performance.now() - startedAt) / 1000;
    const notes = [];
    if (fillers > 0) {
      notes.push(`consumer also drained ${fillers} backlog jobs (samples waited for their acks)`);
    }
    return { jobs: samples, seconds, latency: summarize(latencies), cpu: stop(), notes };
  } finally {
    await Promise.all([producer.close(), consumer.close()]);
  }
}
