/**
 * One host loss under Litestream, end to end: a real `tegami serve --sync full` on a temp file,
 * `litestream replicate` beside it to a `file://` replica, a workload recording every
 * acknowledged write, then SIGKILL to both and the database files deleted (the host is gone), a
 * `litestream restore` where the database was, `tegami backup --verify` of the result, and a new
 * server started on it; optionally Litestream too, and a second loss and restore after it. The
 * Litestream test and the soak (`deno task soak:litestream`) both run it.
 *
 * @module
 */

import { runProgram, spawnServer } from "../../helpers/process_server.ts";
import { type AckedWrite, checkRestored, type LossReport, runAckedWrites } from "./acked_writes.ts";
import { restoreReplica, startReplication, walIndex, writeLitestreamConfig } from "./litestream.ts";

/** tegami's auto-checkpoint threshold in 4 KiB pages: 15 000 KiB of WAL (sqlite_open.ts). */
export const CHECKPOINT_PAGES = Math.ceil(15_000 * 1024 / 4096);

/** Options of {@linkcode hostLoss}. */
export interface HostLossOptions {
  /** A directory of its own, removed by the caller. */
  dir: string;
  /** How long the workload runs before the loss, in ms. */
  loadMs: number;
  /**
   * Frames the WAL must have held before the loss: the load goes on past `loadMs` until it has,
   * for up to four times `loadMs`, so a slow machine still writes that much WAL. @default 0
   */
  minWalFrames?: number;
  /** Litestream's monitor-interval. @default "1s" */
  monitorInterval?: string;
  /** The replica's sync-interval. @default "1s" */
  syncInterval?: string;
  /** Concurrent producer-consumer loops. @default 4 */
  workers?: number;
  /** Bytes of padding in each payload. @default 0 */
  padding?: number;
  /**
   * Milliseconds to replicate the restored database before losing that host too, and restoring
   * again: Litestream restarted on the restore, as after a real one. @default 0 (not done)
   */
  resume?: number;
}

/** What one host loss showed. */
export interface HostLossResult extends LossReport {
  /** Every acknowledged write, times relative to the loss (negative: before it). */
  writes: AckedWrite[];
  /** How long each request of the workload took before the loss, in ms. */
  latencies: number[];
  /** Requests that failed before the loss (none should). */
  failures: string[];
  /** Lines the first server logged at warn or error level. */
  serverErrors: string[];
  /** The most frames the WAL held at once during the load (sampled every 20 ms). */
  peakWalFrames: number;
  /** What `tegami backup --verify` printed of the restored file, and its exit code. */
  verify: { code: number; stdout: string; stderr: string };
  /** The jobs the new server counts for the queue, by state. */
  servedCounts: Record<string, number>;
  /** The statuses of the acks of every job the new server leased after the restore. */
  servedAcks: number[];
  /** The id the new server gives a new job. */
  newId: number;
  /** The largest id an acknowledged enqueue was answered with before the loss. */
  maxAckedId: number;
  /** Litestream generations the replica holds (one unless it had to start over). */
  generations: number;
  /** Litestream's log. */
  litestreamLog: string;
  /**
   * With `resume`: the writes acknowledged by the server on the restore, how many of them a
   * second restore lacked after that host was lost too, and the generations then.
   */
  resumed: { writes: number; lost: number; generations: number } | null;
}

/** Runs one host loss and answers what the restored database holds. */
export async function hostLoss(options: HostLossOptions): Promise<HostLossResult> {
  const data = `${options.dir}/host`;
  await Deno.mkdir(data);
  const db = `${data}/tegami.db`;
  const replica = `${options.dir}/replica`;
  const config = await writeLitestreamConfig(`${options.dir}/litestream.yml`, {
    db,
    replica,
    monitorInterval: options.monitorInterval,
    syncInterval: options.syncInterval,
  });
  let writes: AckedWrite[];
  let latencies: number[];
  let failures: string[];
  let serverErrors: string[];
  let lossAt: number;
  let peakWalFrames = 0;
  let litestreamLog: string;
  {
    await using server = await spawnServer(["--db", db, "--sync", "full"]);
    await using replication = startReplication(config);
    await replication.started();
    const workload = runAckedWrites(server.url, {
      workers: options.workers,
      padding: options.padding,
    });
    const started = performance.now();
    const minWalFrames = options.minWalFrames ?? 0;
    for (;;) {
      const elapsed = performance.now() - started;
      if (elapsed >= options.loadMs && peakWalFrames > minWalFrames) break;
      if (elapsed >= 4 * options.loadMs) break;
      peakWalFrames = Math.max(peakWalFrames, walIndex(db)?.frames ?? 0);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    // The host is lost: both processes at once, mid-load, and then its disk.
    lossAt = performance.now();
    latencies = [...workload.latencies];
    server.kill("SIGKILL");
    await replication.kill();
    serverErrors = (await server.exited()).stderr.split("\n").filter((line) =>
      / (WARN|ERROR) /.test(line)
    );
    await workload.done;
    failures = workload.failures.filter((failure) => failure.at < lossAt).map((f) => f.message);
    writes = workload.writes;
    litestreamLog = replication.log();
  }
  await Deno.remove(data, { recursive: true });

  // The new host: the database restored where it was, as docs/operations.md does it.
  await Deno.mkdir(data);
  await restoreReplica(config, db, db);
  const verify = await runProgram(["backup", "--verify", db]);
  const report = checkRestored(db, writes, lossAt);
  const generations = [...Deno.readDirSync(`${replica}/generations`)].length;

  const post = (url: string, body: unknown) =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const afterRestore: AckedWrite[] = [];
  const servedAcks: number[] = [];
  let stats: { counts: Record<string, number> };
  let enqueued: { id: number };
  let secondLossAt = 0;
  {
    await using served = await spawnServer(["--db", db, "--sync", "full"]);
    await using replication = options.resume ? startReplication(config) : null;
    await replication?.started();
    stats = await fetch(`${served.url}/v1/queues/replicated`).then((r) => r.json());
    enqueued = await post(`${served.url}/v1/queues/replicated/jobs`, {
      payload: "after the restore",
    }).then((r) => r.json());
    afterRestore.push({ kind: "enqueue", id: enqueued.id, at: performance.now() });
    // Everything pending in the restore, the new job included, is leased and acked.
    const leased = await post(`${served.url}/v1/queues/replicated/leases`, { max: 100 })
      .then((r) => r.json()) as { jobs: { id: number; lease: { token: string } }[] };
    for (const job of leased.jobs) {
      const acked = await post(`${served.url}/v1/jobs/${job.id}/ack`, { token: job.lease.token });
      await acked.body?.cancel();
      servedAcks.push(acked.status);
      if (acked.status === 200) {
        afterRestore.push({ kind: "ack", id: job.id, at: performance.now() });
      }
    }
    if (replication !== null) {
      // Past both intervals and a margin, the restored host is lost in turn.
      await new Promise((resolve) => setTimeout(resolve, options.resume));
      secondLossAt = performance.now();
      served.kill("SIGKILL");
      await replication.kill();
    }
  }
  let resumed: HostLossResult["resumed"] = null;
  if (options.resume) {
    await Deno.remove(data, { recursive: true });
    const again = `${options.dir}/again.db`;
    await restoreReplica(config, db, again);
    resumed = {
      writes: afterRestore.length,
      lost: checkRestored(again, afterRestore, secondLossAt).lost.length,
      generations: [...Deno.readDirSync(`${replica}/generations`)].length,
    };
  }
  const maxAckedId = Math.max(...writes.filter((w) => w.kind === "enqueue").map((w) => w.id));
  return {
    ...report,
    lost: report.lost.map((write) => ({ ...write, at: write.at - lossAt })),
    writes: writes.map((write) => ({ ...write, at: write.at - lossAt })),
    latencies,
    failures,
    serverErrors,
    peakWalFrames,
    verify,
    servedCounts: stats.counts,
    newId: enqueued.id,
    servedAcks,
    maxAckedId,
    generations,
    litestreamLog,
    resumed,
  };
}

/** The writes acknowledged in the last `ms` before the loss. */
export function lastWindow(writes: AckedWrite[], ms: number): AckedWrite[] {
  return writes.filter((write) => write.at > -ms);
}
