/**
 * A workload that records every write tegami acknowledged, with the moment the answer arrived,
 * and the check of a restored database against that record: which acknowledged writes it holds,
 * and how far back before a loss the missing ones reach.
 *
 * A write is an enqueue answered 201 (the job must exist) or an ack answered 200 (the job must be
 * done). Leases are writes too, but nobody is promised one survives.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";

/** One acknowledged write. */
export interface AckedWrite {
  kind: "enqueue" | "ack";
  /** The job's id. */
  id: number;
  /** `performance.now()` when the answer arrived. */
  at: number;
}

/** The fields of tegami's answers the workload reads. */
interface Answer {
  id: number;
  jobs?: { id: number; lease: { token: string } }[];
}

/** Options of {@linkcode runAckedWrites}. */
export interface WorkloadOptions {
  /** Concurrent producer-consumer loops. @default 4 */
  workers?: number;
  /** Bytes of padding in each payload, to write more WAL per job. @default 0 */
  padding?: number;
  /** The queue. @default "replicated" */
  queue?: string;
}

/** A running workload. */
export interface Workload {
  /** Every write acknowledged so far, in the order the answers arrived. */
  readonly writes: AckedWrite[];
  /** How long each answered request took, in ms. */
  readonly latencies: number[];
  /** Why each loop ended, if not by `stop()`, and when (`performance.now()`). */
  readonly failures: { at: number; message: string }[];
  /** Resolves when every loop has stopped (after `stop()` or once the server is gone). */
  readonly done: Promise<void>;
  /** Asks the loops to stop after their current request. */
  stop(): void;
}

/**
 * Starts loops that each enqueue a job, lease one, and ack it, over HTTP, until stopped or until
 * the server stops answering (a loop ends at its first failed request).
 */
export function runAckedWrites(url: string, options: WorkloadOptions = {}): Workload {
  const queue = options.queue ?? "replicated";
  const pad = "x".repeat(options.padding ?? 0);
  const writes: AckedWrite[] = [];
  const latencies: number[] = [];
  const failures: { at: number; message: string }[] = [];
  let stopped = false;
  const call = async (path: string, body: unknown): Promise<{ status: number; body: Answer }> => {
    const sent = performance.now();
    const response = await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const answer = { status: response.status, body: await response.json() };
    latencies.push(performance.now() - sent);
    return answer;
  };
  const loop = async (worker: number) => {
    for (let n = 0; !stopped; n++) {
      try {
        const enqueued = await call(`/v1/queues/${queue}/jobs`, { payload: { worker, n, pad } });
        if (enqueued.status !== 201) throw new Error(`enqueue answered ${enqueued.status}`);
        writes.push({ kind: "enqueue", id: enqueued.body.id, at: performance.now() });
        const leased = await call(`/v1/queues/${queue}/leases`, { max: 1 });
        const job = leased.body.jobs?.[0];
        if (job === undefined) continue;
        const acked = await call(`/v1/jobs/${job.id}/ack`, { token: job.lease.token });
        if (acked.status !== 200) throw new Error(`ack answered ${acked.status}`);
        writes.push({ kind: "ack", id: job.id, at: performance.now() });
      } catch (error) {
        // The server is gone, or refused: this loop is over.
        failures.push({ at: performance.now(), message: String(error) });
        return;
      }
    }
  };
  const done = Promise.all(
    Array.from({ length: options.workers ?? 4 }, (_, worker) => loop(worker)),
  ).then(() => {});
  return { writes, latencies, failures, done, stop: () => void (stopped = true) };
}

/** What a restored database holds of the acknowledged writes. */
export interface LossReport {
  /** Acknowledged writes in all. */
  acknowledged: number;
  /** Acknowledged writes the restored database lacks. */
  lost: AckedWrite[];
  /** How long before the loss the oldest lost write was acknowledged, in ms (0 if none lost). */
  lossWindowMs: number;
  /** How long before the loss the newest write it holds was acknowledged, in ms. */
  newestKeptAgeMs: number;
  /** Rows of `jobs` by state in the restored file. */
  states: Record<string, number>;
  /** The largest job id in the restored file. */
  maxId: number;
  /** Tables of the restored file. */
  tables: string[];
}

/** Checks the database at `path` (read-only) against `writes`, for a loss at `lossAt`. */
export function checkRestored(path: string, writes: AckedWrite[], lossAt: number): LossReport {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = db.prepare("SELECT id, state FROM jobs").all() as { id: number; state: string }[];
    const state = new Map(rows.map((row) => [row.id, row.state]));
    const states: Record<string, number> = {};
    for (const row of rows) states[row.state] = (states[row.state] ?? 0) + 1;
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as { name: string }[]).map((row) => row.name);
    const kept = (write: AckedWrite) =>
      write.kind === "enqueue" ? state.has(write.id) : state.get(write.id) === "done";
    const lost = writes.filter((write) => !kept(write));
    const newestKept = Math.max(...writes.filter(kept).map((write) => write.at));
    return {
      acknowledged: writes.length,
      lost,
      lossWindowMs: lost.length === 0 ? 0 : lossAt - Math.min(...lost.map((write) => write.at)),
      newestKeptAgeMs: lossAt - newestKept,
      states,
      maxId: rows.reduce((max, row) => Math.max(max, row.id), 0),
      tables,
    };
  } finally {
    db.close();
  }
}
