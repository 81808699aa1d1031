/**
 * W2, drain: `backlog` jobs pre-filled with the system's fastest batch path, then `consumers`
 * consumers (prefetch each) drain and ack them; throughput from the first receipt to the last.
 * The RSS reported is the server's with the whole backlog waiting, before the drain.
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { fillerPayload } from "../payload.ts";
import type { Target } from "../peers/peer.ts";
import { cpuMeter, type CpuUse, totalRss } from "../proc.ts";

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

/** What the fill left for the drain to report. */
export interface Filled {
  /** Seconds the fill took. */
  fillSeconds: number;
  /** The server's RSS with the whole backlog waiting. */
  rssBytes: number;
}

/** W2's set-up, run before the bench's snapshots of the server: fills the backlog. */
export async function fillBacklog(target: Target, options: DrainOptions): Promise<Filled> {
  const fillStartedAt = performance.now();
  await target.fill(options.queue, options.backlog, fillerPayload());
  const fillSeconds = (performance.now() - fillStartedAt) / 1000;
  // Let the fill's last writes settle (checkpoints, Erlang GC) before reading the RSS.
  await new Promise((resolve) => setTimeout(resolve, 500));
  return { fillSeconds, rssBytes: totalRss(target.pids) };
}

/**
 * Runs W2 against `target`, whose backlog {@linkcode fillBacklog} made. The clock and the CPU
 * meter start at the first job received, so opening the consumers (one handshake for some
 * systems, a connection per credit for others) is not part of the drain.
 */
export async function drain(
  target: Target,
  options: DrainOptions,
  filled: Filled,
): Promise<Measurement> {
  const { queue, backlog, consumers = 4, prefetch = 32 } = options;
  let received = 0;
  let startedAt = 0;
  let stop: (() => CpuUse) | null = null;
  const { promise: drained, resolve } = Promise.withResolvers<void>();
  const onJob = () => {
    if (received === 0) {
      stop = cpuMeter(target.pids, target.singleThreaded);
      startedAt = performance.now();
    }
    if (++received === backlog) resolve();
  };
  const subscribed = await Promise.all(
    range(consumers).map(() => target.consumer(queue, prefetch, onJob)),
  );
  try {
    await guarded(drained, () => received, "W2");
    const seconds = (performance.now() - startedAt) / 1000;
    return {
      jobs: backlog,
      seconds,
      cpu: stop!(),
      rssBytes: filled.rssBytes,
      notes: [
        `fill ${Math.round(backlog / filled.fillSeconds)} jobs/s`,
        "RSS with the backlog waiting",
      ],
    };
  } finally {
    await Promise.all(subscribed.map((c) => c.close()));
  }
}
