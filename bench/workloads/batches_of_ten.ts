/**
 * W7, batches of ten: what SQS clients do, on any door that can do it. Producers send batches of
 * 10 jobs, one call each; consumers pull up to 10 jobs with a long poll, then settle (delete, ack)
 * all they got in one call, and pull again. Throughput is jobs settled per second from the first
 * send to the last settle; the server's CPU per job is the figure to compare between doors
 * (tegami's own API against its SQS API: docs/sqs.md, Speed).
 *
 * The workload sees a door only through {@linkcode BatchDoor}, so the same code drives each.
 *
 * @module
 */

import { guarded, type Measurement, range } from "../measurement.ts";
import { type Stamp, stampedPayload } from "../payload.ts";
import { cpuMeter, totalRss } from "../proc.ts";

/** The most jobs per call, SQS's batch limit. */
export const BATCH = 10;

/** Sends batches of jobs, one call each. */
export interface BatchSender {
  /** Enqueues every payload (JSON texts, at most 10) in one call. */
  send(payloads: readonly string[]): Promise<void>;
  /** Closes its connections. */
  close(): Promise<void>;
}

/** One received job: its payload and whatever settling it needs. */
export interface Received {
  /** The decoded payload. */
  payload: Stamp;
  /** The door's handle for settling it (a receipt handle, an id and token). */
  handle: unknown;
}

/** Pulls and settles batches of jobs, one call each. */
export interface BatchReceiver {
  /** Pulls up to 10 jobs, waiting up to `waitMs` for the first; answers what came. */
  receive(waitMs: number): Promise<Received[]>;
  /** Settles (deletes, acks) every job of `received` in one call. */
  settle(received: readonly Received[]): Promise<void>;
  /** Closes its connections. */
  close(): Promise<void>;
}

/** A door that can send, pull and settle batches: tegami's own API, or its SQS API. */
export interface BatchDoor {
  /** The server's processes, whose CPU is measured. */
  readonly pids: readonly number[];
  /** Whether the first pid's main thread does the server's work. */
  readonly singleThreaded: boolean;
  /** A sender on `queue`, with its own connections. */
  batchSender(queue: string): Promise<BatchSender>;
  /** A receiver of `queue`, with its own connections. */
  batchReceiver(queue: string): Promise<BatchReceiver>;
}

/** Shape of W7. */
export interface BatchesOfTenOptions {
  /** A fresh queue. */
  queue: string;
  /** Jobs in all (rounded up to a whole batch). */
  jobs: number;
  /** Producers. @default 4 */
  producers?: number;
  /** Batches in flight per producer. @default 2 */
  inflight?: number;
  /** Consumers, each pulling one batch at a time. @default 8 */
  consumers?: number;
  /**
   * Jobs sent per second, or null to send as fast as the door takes them. At one rate both
   * doors' commits gather alike, so their CPU per job differs by what the doors themselves
   * cost. @default null
   */
  rate?: number | null;
}

/** The long poll of each pull, ms: SQS's longest (20 s), so a pull waits rather than spins. */
const WAIT_MS = 20_000;

/** Runs W7 on `door`. */
export async function batchesOfTen(
  door: BatchDoor,
  options: BatchesOfTenOptions,
): Promise<Measurement> {
  const { queue, producers = 4, inflight = 2, consumers = 8, rate = null } = options;
  const jobs = Math.ceil(options.jobs / BATCH) * BATCH;
  const senders = await Promise.all(range(producers).map(() => door.batchSender(queue)));
  const receivers = await Promise.all(range(consumers).map(() => door.batchReceiver(queue)));
  let settled = 0;
  let next = 0;
  let duplicates = 0;
  let pulls = 0;
  let emptyPulls = 0;
  const seen = new Uint8Array(jobs);
  const done = new AbortController();
  try {
    const stop = cpuMeter(door.pids, door.singleThreaded);
    const startedAt = performance.now();
    const sending = Promise.all(senders.flatMap((sender) =>
      range(inflight).map(async () => {
        while (next < jobs) {
          if (rate !== null) {
            const due = startedAt + next / rate * 1000;
            const early = due - performance.now();
            if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
            if (next >= jobs) break;
          }
          const payloads = range(BATCH).map(() => stampedPayload(next++));
          await sender.send(payloads);
        }
      })
    ));
    const receiving = Promise.all(receivers.map(async (receiver) => {
      while (!done.signal.aborted) {
        const got = await receiver.receive(WAIT_MS);
        if (got.length === 0) {
          if (!done.signal.aborted) emptyPulls++;
          continue;
        }
        pulls++;
        await receiver.settle(got);
        for (const { payload } of got) {
          const n = payload.n;
          if (n === undefined) continue;
          if (seen[n] === 1) {
            duplicates++;
            continue;
          }
          seen[n] = 1;
          settled++;
        }
        if (settled === jobs) done.abort();
      }
    }));
    const allSettled = new Promise<void>((resolve) =>
      done.signal.addEventListener("abort", () => resolve())
    );
    // Receivers still waiting in a long poll are let go by closing them, below.
    receiving.catch(() => {});
    await guarded(Promise.all([sending, allSettled]), () => next + settled, "W7");
    const seconds = (performance.now() - startedAt) / 1000;
    const notes = [
      `batches of ${BATCH}: ${producers}×${inflight} sends in flight` +
      (rate === null ? "" : ` paced at ${rate} jobs/s`) +
      `, ${consumers} consumers pulling with a ${WAIT_MS / 1000} s long poll and settling each ` +
      "batch in one call",
    ];
    // A long poll answers as soon as anything is there, so pulls bring fewer jobs the emptier the
    // queue is kept: the jobs per pull say how many requests each job cost.
    notes.push(
      `${(settled / Math.max(1, pulls)).toFixed(1)} jobs per pull (${pulls} pulls, ` +
        `${emptyPulls} empty)`,
    );
    if (duplicates > 0) notes.push(`${duplicates} redeliveries`);
    return { jobs, seconds, cpu: stop(), rssBytes: totalRss(door.pids), notes };
  } finally {
    done.abort();
    await Promise.all([...senders, ...receivers].map((c) => c.close()));
  }
}
