/**
 * W1w, W1 over weighted ordering groups: the first `weighted` of `groups` groups (`g0`, `g1`, …)
 * get weight `weight` through `PUT /v1/queues/{queue}/groups/{group}` before anything is
 * measured, the rest keep weight 1. Two parts, each on a fresh server:
 *
 * - the run: W1 (bench/workloads/end_to_end.ts) with its jobs going round the groups in turn, to
 *   compare with plain W1 and with W1g (the same groups, no weights) in jobs/s and server CPU
 *   per job;
 * - the shares: every group gets a backlog of `backlog` jobs, then the W1 consumers drain it;
 *   the deliveries each group got are counted until the first group runs dry (so while every
 *   group still had jobs waiting), and the figure is the mean of a weighted group's over the
 *   mean of an unweighted group's, which should be close to `weight`. The rest of the backlog
 *   is left to the server, which stops after the run. `groupLimit` matters: a group holds at
 *   most that many jobs leased at once, so at `group_limit` 1 a weighted group, first in line
 *   by its turn, still gets at most one delivery per round trip (lease, delivery, ack, commit).
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { padded, type Stamp } from "../payload.ts";
import type { TegamiTarget } from "../peers/tegami.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** Shape of W1w. */
export interface WeightedGroupsOptions {
  /** Queue to use. */
  queue: string;
  /** Ordering groups the jobs go round. @default 1000 */
  groups?: number;
  /** How many of them (the first) get the weight. @default 100 */
  weighted?: number;
  /** Their weight; the others keep 1. @default 5 */
  weight?: number;
  /** The queue's `group_limit`, when not the default (1). */
  groupLimit?: number;
}

/** Shape of W1w's shares part. */
export interface WeightSharesOptions extends WeightedGroupsOptions {
  /** Jobs waiting in each group before the consumers start. @default 100 */
  backlog?: number;
  /** Consumers. @default 4 */
  consumers?: number;
  /** Unacked jobs per consumer. @default 32 */
  prefetch?: number;
}

/** The longest the shares part counts, ms: a slow claim must not hold the bench for long. */
const SHARES_MAX_MS = 60_000;
/** Jobs per request while filling the backlog. */
const FILL_BATCH = 500;
/** Fill requests in flight. */
const FILL_IN_FLIGHT = 4;

/** Gives the first `weighted` groups of `queue` weight `weight` (not measured). */
export async function putWeights(
  target: TegamiTarget,
  options: WeightedGroupsOptions,
): Promise<void> {
  const { queue, weighted = 100, weight = 5, groupLimit } = options;
  if (groupLimit !== undefined) await target.putSettings(queue, { group_limit: groupLimit });
  for (const i of range(weighted)) {
    const response = await fetch(`${target.url}/v1/queues/${queue}/groups/g${i}`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ weight }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`Cannot set the weight of group g${i}: ${text}`);
  }
}

/**
 * Fills every group of `queue` with `backlog` jobs, then drains them with W1's consumers,
 * counting each group's deliveries until the first group has had all of its jobs.
 */
export async function weightShares(
  target: TegamiTarget,
  options: WeightSharesOptions,
): Promise<Measurement> {
  const {
    queue,
    groups = 1000,
    weighted = 100,
    weight = 5,
    backlog = 100,
    consumers = 4,
    prefetch = 32,
    groupLimit = 1,
  } = options;
  await putWeights(target, options);
  const total = groups * backlog;
  await fillGroups(target, queue, groups, total);

  // Job n is the (n / groups)th job of group n % groups.
  const got = new Uint32Array(groups);
  let received = 0;
  let window = 0;
  let windowSeconds = 0;
  let startedAt = 0;
  const { promise: dry, resolve: ranDry } = Promise.withResolvers<void>();
  const counted = new Uint32Array(groups);
  const onJob = (job: Stamp) => {
    if (job.n === undefined) return;
    received++;
    if (window === 0) {
      const g = job.n % groups;
      if (++got[g] === backlog) {
        window = received;
        windowSeconds = (performance.now() - startedAt) / 1000;
        counted.set(got);
        ranDry();
      }
    }
  };
  const stop = cpuMeter(target.pids, target.singleThreaded);
  startedAt = performance.now();
  const subscribed = await Promise.all(
    range(consumers).map(() => target.consumer(queue, prefetch, onJob)),
  );
  try {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<void>((resolve) => timer = setTimeout(resolve, SHARES_MAX_MS));
    await guarded(Promise.race([dry, late]), () => received, "W1w shares");
    clearTimeout(timer);
    const cpu = stop();
    const cut = window === 0;
    if (cut) {
      window = received;
      windowSeconds = (performance.now() - startedAt) / 1000;
      counted.set(got);
    }
    const mean = (from: number, to: number) => {
      let sum = 0;
      for (let g = from; g < to; g++) sum += counted[g];
      return sum / (to - from);
    };
    const heavy = mean(0, weighted);
    const light = mean(weighted, groups);
    const ratio = heavy / light;
    return {
      jobs: window,
      seconds: windowSeconds,
      cpu,
      rssBytes: totalRss(target.pids),
      notes: [
        `${groups} groups of ${backlog} jobs, ${weighted} of weight ${weight}, group_limit ` +
        `${groupLimit}: ${
          cut
            ? `stopped after ${SHARES_MAX_MS / 1000} s with no group dry`
            : "until the first group ran dry"
        } (${window} deliveries), a weight-${weight} group got ${
          heavy.toFixed(2)
        } and a weight-1 group ${light.toFixed(2)} on average: ${ratio.toFixed(2)}×`,
      ],
      extra: {
        share_ratio: ratio,
        weighted_mean: heavy,
        unweighted_mean: light,
        window,
        group_limit: groupLimit,
      },
    };
  } finally {
    await Promise.all(subscribed.map((c) => c.close()));
  }
}

/** Enqueues jobs 0 … total-1 of `queue`, job n in group `g{n % groups}`, in batches. */
async function fillGroups(
  target: TegamiTarget,
  queue: string,
  groups: number,
  total: number,
): Promise<void> {
  let next = 0;
  await Promise.all(
    range(FILL_IN_FLIGHT).map(async () => {
      while (next < total) {
        const from = next;
        const to = Math.min(total, from + FILL_BATCH);
        next = to;
        const jobs = range(to - from).map((i) =>
          `{"payload":${padded(`{"n":${from + i},"t":0`)},"group":"g${(from + i) % groups}"}`
        );
        const response = await fetch(`${target.url}/v1/queues/${queue}/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: `{"jobs":[${jobs.join(",")}]}`,
        });
        const text = await response.text();
        if (!response.ok) throw new Error(`Cannot fill the groups of "${queue}": ${text}`);
      }
    }),
  );
}
