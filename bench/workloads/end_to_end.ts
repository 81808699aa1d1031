/**
 * W1, end to end: producers and consumers at once. `producers` × `inflight` sends in flight,
 * `consumers` consumers with `prefetch` each acking every job as it arrives; throughput is jobs
 * received per second from the first send to the last receipt, latency is each job's
 * enqueue→receipt time (the stamp in its payload).
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { now, type Stamp, stampedPayload } from "../payload.ts";
import type { Producer, Target } from "../peers/peer.ts";
import { cpuMeter, totalRss } from "../proc.ts";
import { summarize } from "../stats.ts";

/** Shape of W1. */
export interface EndToEndOptions {
  /** Queue to use; fresh unless a backlog is wanted. */
  queue: string;
  /** Jobs to send. */
  jobs: number;
  /** Producers. @default 4 */
  producers?: number;
  /** Sends in flight per producer. @default 32 */
  inflight?: number;
  /** Consumers. @default 4 */
  consumers?: number;
  /** Unacked jobs per consumer. @default 32 */
  prefetch?: number;
  /** Makes each producer. @default the target's own */
  producer?: (queue: string) => Promise<Producer>;
}

/** Runs W1 against `target`; answers throughput, latency, CPU and the RSS at the end. */
export async function endToEnd(target: Target, options: EndToEndOptions): Promise<Measurement> {
  const { queue, jobs, producers = 4, inflight = 32, consumers = 4, prefetch = 32 } = options;
  const latencies = new Float64Array(jobs);
  const seen = new Uint8Array(jobs);
  let received = 0;
  let fillers = 0;
  let duplicates = 0;
  const { promise: allReceived, resolve } = Promise.withResolvers<void>();
  const onJob = (job: Stamp) => {
    if (job.n === undefined || job.t === undefined) {
      fillers++;
      return;
    }
    if (seen[job.n] === 1) {
      duplicates++;
      return;
    }
    seen[job.n] = 1;
    latencies[job.n] = now() - job.t;
    if (++received === jobs) resolve();
  };
  const subscribed = await Promise.all(
    range(consumers).map(() => target.consumer(queue, prefetch, onJob)),
  );
  const makeProducer = options.producer ?? ((q: string) => target.producer(q));
  const senders: Producer[] = await Promise.all(range(producers).map(() => makeProducer(queue)));
  try {
    let next = 0;
    let enqueued = 0;
    let deepest = 0;
    const stop = cpuMeter(target.pids, target.singleThreaded);
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((producer) =>
      range(inflight).map(async () => {
        while (next < jobs) {
          await producer.send(stampedPayload(next++));
          // Jobs acknowledged to a producer but not yet received by a consumer.
          if (++enqueued - received > deepest) deepest = enqueued - received;
        }
      })
    ));
    const sentAt = sending.then(() => performance.now(), () => NaN);
    await guarded(Promise.all([sending, allReceived]), () => next + received, "W1");
    const seconds = (performance.now() - startedAt) / 1000;
    const cpu = stop();
    const notes = [
      `sends done at ${((await sentAt - startedAt) / 1000).toFixed(1)} s of ${
        seconds.toFixed(1)
      } s, queue peaked at ${deepest} jobs`,
    ];
    if (fillers > 0) notes.push(`also drained ${fillers} backlog jobs`);
    if (duplicates > 0) notes.push(`${duplicates} redeliveries`);
    return {
      jobs,
      seconds,
      latency: summarize(latencies),
      cpu,
      rssBytes: totalRss(target.pids),
      notes,
      extra: { sends_done_s: (await sentAt - startedAt) / 1000, queue_peak: deepest },
    };
  } finally {
    await Promise.all([...senders, ...subscribed].map((c) => c.close()));
  }
}
