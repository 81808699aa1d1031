/**
 * W6, a rate limit holding: a queue set to `rate` deliveries per second, a backlog larger than
 * the rate can deliver in the run, and consumers with far more credit than the rate allows.
 * Counts the deliveries of `seconds` seconds: the figure is how far they are from
 * rate × seconds (the bucket's burst of a tenth of a second's tokens included).
 *
 * @module
 */

import { type Measurement, range } from "../measurement.ts";
import type { Stamp } from "../payload.ts";
import { fillerPayload } from "../payload.ts";
import type { TegamiTarget } from "../peers/tegami.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** Shape of W6. */
export interface RateLimitOptions {
  /** Queue to use. */
  queue: string;
  /** Deliveries allowed per second. @default 500 */
  rate?: number;
  /** How long to count, s. @default 10 */
  seconds?: number;
  /** Consumers. @default 4 */
  consumers?: number;
  /** Unacked jobs per consumer. @default 32 */
  prefetch?: number;
}

/** Runs W6 against tegami; answers the deliveries counted and how far off the rate they are. */
export async function rateLimit(
  target: TegamiTarget,
  options: RateLimitOptions,
): Promise<Measurement> {
  const { queue, rate = 500, seconds = 10, consumers = 4, prefetch = 32 } = options;
  await target.putSettings(queue, { rate: `${rate}/1s` });
  // Twice what the rate can deliver, so the backlog never runs dry.
  await target.fill(queue, Math.ceil(rate * seconds * 2), fillerPayload());
  let received = 0;
  let counting = false;
  const onJob = (_job: Stamp) => {
    if (counting) received++;
  };
  const stop = cpuMeter(target.pids, target.singleThreaded);
  const subscribed = await Promise.all(
    range(consumers).map(() => target.consumer(queue, prefetch, onJob)),
  );
  try {
    // Let the bucket's first burst pass, then count a steady stretch.
    await new Promise((resolve) => setTimeout(resolve, 500));
    counting = true;
    const startedAt = performance.now();
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    counting = false;
    const elapsed = (performance.now() - startedAt) / 1000;
    const expected = rate * elapsed;
    const off = (received - expected) / expected;
    return {
      jobs: received,
      seconds: elapsed,
      cpu: stop(),
      rssBytes: totalRss(target.pids),
      notes: [
        `${received} deliveries in ${elapsed.toFixed(2)} s at ${rate}/s: ` +
        `${(off * 100).toFixed(2)} % off the rate (within 5 %: ${Math.abs(off) <= 0.05})`,
      ],
      extra: { expected, off_rate: off },
    };
  } finally {
    await Promise.all(subscribed.map((c) => c.close()));
  }
}
