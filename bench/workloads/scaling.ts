/**
 * Scaling (tegami only, `--scale`): W1 and W5 on an empty server, then with N jobs already
 * waiting, for each N of `sizes`, each compared with the empty figures; then the server is
 * restarted to measure startup with the largest backlog on disk, and W5 again. Each placement of
 * the backlog gets its own server, warmed up first (see `warm_up.ts`) so that the empty figures
 * are not those of a cold JIT. The backlog is pre-filled over HTTP with batch enqueues of 1000.
 *
 * - In another queue: the workloads' queues are empty; the table and its indexes are not.
 * - Pending in the same queue at priority −1: the workloads' jobs (priority 0) are served first,
 *   so the claim walks an index holding the whole backlog but a job's latency is not its wait
 *   behind a million others. Consumers with credit to spare take backlog jobs (and ack them), as
 *   any consumer of a deep queue would; the notes say how many. So W5 here is not idle: its one
 *   consumer always holds a backlog job, and each sample also waits for that job's ack.
 * - Delayed in the same queue (due in a day): a queue full of scheduled jobs; nothing is
 *   deliverable but the workloads' own jobs, so W5 stays idle.
 *
 * @module
 */

import {
  commitsBetween,
  describeCommits,
  describeFsyncs,
  latencyBounds,
} from "../commit_batches.ts";
import type { Measurement } from "../measurement.ts";
import { fillerPayload } from "../payload.ts";
import type { TegamiPeer, TegamiTarget } from "../peers/tegami.ts";
import { totalRss } from "../proc.ts";
import type { Row } from "../report.ts";
import { endToEnd } from "./end_to_end.ts";
import { pushLatency } from "./push_latency.ts";
import { warmUp } from "./warm_up.ts";

/** Shape of the scaling runs. */
export interface ScalingOptions {
  /** Jobs of each W1 run. */
  jobs: number;
  /** Samples of each W5 run. */
  samples: number;
  /** Backlog sizes, ascending (the empty run comes first on its own). */
  sizes: readonly number[];
  /** Whether each fresh server is warmed up before its first measurement. @default true */
  warm?: boolean;
  /** Progress lines. */
  progress: (text: string) => void;
}

const count = (n: number) => n.toLocaleString("en-US").replaceAll(",", " ");

/** Where the backlog goes, and the words that name it in the rows. */
export const PLACEMENTS = [
  { label: "waiting in another queue", own: true, priority: 0, delayMs: 0 },
  { label: "pending in the same queue (priority −1)", own: false, priority: -1, delayMs: 0 },
  {
    label: "delayed in the same queue (due in 1 day)",
    own: false,
    priority: 0,
    delayMs: 86_400_000,
  },
] as const;

type Placement = typeof PLACEMENTS[number];

/** Runs the scaling series on fresh tegami servers; answers its rows. */
export async function scaling(
  tegami: TegamiPeer,
  options: ScalingOptions,
): Promise<Row[]> {
  const { jobs, samples, sizes, progress } = options;
  const rows: Row[] = [];
  let empty: { w1: Measurement; w5: Measurement } | null = null;

  const vsEmpty = (m: Measurement, kind: "w1" | "w5"): string => {
    if (empty === null) return "";
    if (kind === "w1") {
      const ratio = (m.jobs / m.seconds) / (empty.w1.jobs / empty.w1.seconds);
      return `jobs/s ${ratio.toFixed(2)}× empty`;
    }
    return `p50 ${(m.latency!.p50 / empty.w5.latency!.p50).toFixed(2)}×, p99 ${
      (m.latency!.p99 / empty.w5.latency!.p99).toFixed(2)
    }× empty`;
  };

  /** Runs W1 then W5 on `target`; answers their rows and measurements. */
  async function pair(target: TegamiTarget, where: string, w1Queue: string, w5Queue: string) {
    progress(`scale · W1 · ${where} …`);
    const before = await target.commitBatches();
    const w1 = await endToEnd(target, { queue: w1Queue, jobs });
    const after = await target.commitBatches();
    if (before !== null && after !== null) {
      const batches = commitsBetween(before, after);
      w1.notes.push(describeCommits(batches));
      const fsyncs = describeFsyncs(latencyBounds(batches.fsyncs), batches.fsyncSeconds);
      if (fsyncs !== null) w1.notes.push(fsyncs);
    }
    progress(`scale · W1 · ${where}: ${Math.round(w1.jobs / w1.seconds)} jobs/s`);
    progress(`scale · W5 · ${where} …`);
    const w5 = await pushLatency(target, { queue: w5Queue, samples });
    w5.rssBytes = totalRss(target.pids);
    progress(`scale · W5 · ${where}: p50 ${w5.latency!.p50.toFixed(2)} ms`);
    if (empty !== null) {
      w1.notes.unshift(vsEmpty(w1, "w1"));
      w5.notes.unshift(vsEmpty(w5, "w5"));
    }
    rows.push(
      { workload: `W1 · ${where}`, system: "tegami", measurement: w1 },
      { workload: `W5 · ${where}`, system: "tegami", measurement: w5, throughput: false },
    );
    return { w1, w5 };
  }

  async function fill(target: TegamiTarget, placement: Placement, n: number) {
    const startedAt = performance.now();
    const queue = placement.own ? "backlog" : "scale";
    await target.fill(queue, n, fillerPayload(), placement.priority, placement.delayMs);
    const seconds = (performance.now() - startedAt) / 1000;
    progress(`scale · filled ${count(n)} jobs in ${seconds.toFixed(1)} s`);
    return `fill ${Math.round(n / seconds)} jobs/s`;
  }

  for (const placement of PLACEMENTS) {
    const target = await tegami.start();
    try {
      // A full-size W1 first: the series compares runs on one server, so its first measured run
      // must not be the one that pays for the JIT and the first growth of the files.
      if (options.warm !== false) await warmUp(target, jobs);
      if (empty === null) {
        empty = await pair(target, "empty server", "w1-empty", "w5-empty");
        rows.at(-2)!.measurement!.notes.push(
          `startup on an empty db ${target.startupMs.toFixed(0)} ms`,
        );
      }
      let filled = 0;
      for (const size of sizes) {
        const note = await fill(target, placement, size - filled);
        filled = size;
        const where = `${count(size)} ${placement.label}`;
        const { w1 } = placement.own
          ? await pair(target, where, `w1-${size}`, `w5-${size}`)
          : await pair(target, where, "scale", "scale");
        w1.notes.push(note);
      }
      const restart = await target.restart();
      progress(`scale · restart with ${count(filled)} jobs: ${restart.startupMs.toFixed(0)} ms`);
      rows.push({
        workload: `startup · ${count(filled)} ${placement.label}`,
        system: "tegami",
        throughput: false,
        measurement: {
          jobs: 0,
          seconds: restart.startupMs / 1000,
          rssBytes: totalRss(target.pids),
          notes: [
            `startup ${restart.startupMs.toFixed(0)} ms (spawn to listening), shutdown ${
              restart.shutdownMs.toFixed(0)
            } ms; RSS just after startup`,
          ],
          extra: { startup_ms: restart.startupMs, shutdown_ms: restart.shutdownMs },
        },
      });
      // The first deliveries after a restart read a cold page cache.
      const where = `after restart, ${count(filled)} ${placement.label}`;
      progress(`scale · W5 · ${where} …`);
      const w5 = await pushLatency(target, {
        queue: placement.own ? "w5-restart" : "scale",
        samples,
      });
      w5.rssBytes = totalRss(target.pids);
      w5.notes.unshift(vsEmpty(w5, "w5"));
      rows.push({
        workload: `W5 · ${where}`,
        system: "tegami",
        measurement: w5,
        throughput: false,
      });
    } catch (error) {
      rows.push({
        workload: `scale · ${placement.label}`,
        system: "tegami",
        failure: `failed: ${(error as Error).message.split("\n")[0]}`,
      });
      progress(`scale · ${placement.label}: failed: ${(error as Error).message}`);
    } finally {
      await target.stop();
    }
  }
  return rows;
}
