/**
 * A flood of delayed jobs coming due at the same moment, against a real server process on
 * loopback: `/healthz` latency while they are promoted, the delay until the first delivery, the
 * time until all are pending, and the server's peak RSS. Promotion runs in chunks that yield
 * to the event loop (broker tick), so `/healthz` stays fast and delivery starts at once.
 *
 * Bounded: a fixed number of jobs and a deadline; loopback only. `deno task soak:due` runs the
 * million-job version; tests/torture/due_flood_test.ts a small one in `deno task test`.
 *
 * @module
 */

import { spawnServer } from "../helpers/process_server.ts";

/** What one flood measured. */
export interface DueFloodFigures {
  /** Jobs enqueued, all due at one moment. */
  jobs: number;
  /** Time taken to enqueue them, ms. */
  enqueueMs: number;
  /** `/healthz` round trips sampled from the due moment until all were pending. */
  healthSamples: number;
  /** Their median and 99th percentile, ms. */
  healthP50: number;
  healthP99: number;
  /** The slowest, ms. */
  healthMax: number;
  /** From the due moment to the first delivery of a long-poll waiting for it, ms. */
  firstDeliveryMs: number;
  /** From the due moment until every job was pending (or delivered), ms. */
  allPendingMs: number;
  /** Peak RSS of the server while promoting, MiB. */
  peakRssMiB: number;
}

function rssMiB(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs one flood of `jobs` delayed jobs; throws if it cannot finish within `deadlineMs`. */
export async function runDueFlood(
  options: { jobs: number; deadlineMs: number; log?: (line: string) => void },
): Promise<DueFloodFigures> {
  const { jobs } = options;
  const log = options.log ?? (() => {});
  const deadline = Date.now() + options.deadlineMs;
  const dir = await Deno.makeTempDir({ prefix: "tegami-due-flood-" });
  // --sync normal: durability is not what is measured here, and it makes the setup quick.
  await using proc = await spawnServer(["--db", `${dir}/t.db`, "--sync", "normal"]);
  try {
    const pid = proc.child.pid;
    const batch = 1000;
    // Every job is due at one moment, after the enqueueing is surely over.
    const dueAt = Date.now() + 3000 + Math.ceil(jobs / batch) * 60;
    const started = performance.now();
    const body = JSON.stringify({
      jobs: Array.from({ length: batch }, (_, i) => ({ payload: i, run_at: dueAt })),
    });
    let next = 0;
    const batches = Math.ceil(jobs / batch);
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < batches) {
        next++;
        const response = await fetch(`${proc.url}/v1/queues/flood/jobs`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body,
        });
        if (response.status !== 201) throw new Error(`enqueue answered ${response.status}`);
        await response.body?.cancel();
      }
    }));
    const enqueueMs = performance.now() - started;
    log(`enqueued ${batches * batch} jobs in ${(enqueueMs / 1000).toFixed(1)} s`);
    if (Date.now() > dueAt - 500) throw new Error("The enqueueing ran past the due moment");
    // A consumer waiting for the first job, and /healthz sampled from just before the due moment.
    const poll = fetch(`${proc.url}/v1/queues/flood/leases`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ max: 1, wait_ms: 60_000 }),
    }).then(async (r) => {
      await r.body?.cancel();
      if (r.status !== 200) throw new Error(`The long-poll answered ${r.status}`);
      return Date.now();
    });
    poll.catch(() => {}); // awaited below; a failure is reported there
    await sleep(Math.max(0, dueAt - Date.now() - 200));
    const latencies: number[] = [];
    let peak = rssMiB(pid);
    let allPendingAt: number | null = null;
    let lastStats = 0;
    while (allPendingAt === null) {
      if (Date.now() > deadline) throw new Error("The flood did not finish within its deadline");
      const t = performance.now();
      const health = await fetch(`${proc.url}/healthz`);
      await health.body?.cancel();
      if (Date.now() >= dueAt) latencies.push(performance.now() - t);
      peak = Math.max(peak, rssMiB(pid));
      if (Date.now() >= dueAt && Date.now() - lastStats > 100) {
        lastStats = Date.now();
        const stats = await (await fetch(`${proc.url}/v1/queues/flood`)).json();
        if (stats.counts.delayed === 0) allPendingAt = Date.now();
      }
      await sleep(5);
    }
    let firstDeliveryAt: number;
    try {
      firstDeliveryAt = await poll;
    } catch (error) {
      proc.kill("SIGTERM");
      const { stderr } = await proc.exited();
      throw new Error(`The long-poll failed: ${error}; server stderr: ${stderr.slice(-1000)}`);
    }
    latencies.sort((a, b) => a - b);
    const at = (q: number) =>
      latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))];
    proc.kill("SIGTERM");
    const { code, stderr } = await proc.exited();
    if (code !== 0) throw new Error(`The server exited ${code}: ${stderr.slice(-500)}`);
    return {
      jobs: batches * batch,
      enqueueMs,
      healthSamples: latencies.length,
      healthP50: at(0.5),
      healthP99: at(0.99),
      healthMax: latencies.at(-1) ?? 0,
      firstDeliveryMs: Math.max(0, firstDeliveryAt - dueAt),
      allPendingMs: allPendingAt - dueAt,
      peakRssMiB: peak,
    };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** One line of figures. */
export function formatDueFlood(f: DueFloodFigures): string {
  return `${f.jobs} jobs due at once: /healthz p50 ${f.healthP50.toFixed(1)} ms, p99 ${
    f.healthP99.toFixed(1)
  } ms, max ${
    f.healthMax.toFixed(1)
  } ms (${f.healthSamples} samples); first delivery ${f.firstDeliveryMs} ms after due; all pending after ${f.allPendingMs} ms; peak RSS ${
    f.peakRssMiB.toFixed(0)
  } MiB`;
}

if (import.meta.main) {
  const jobs = Number(Deno.args[0] ?? 1_000_000);
  const minutes = Number(Deno.args[1] ?? 20);
  const figures = await runDueFlood({
    jobs,
    deadlineMs: minutes * 60_000,
    log: (line) => console.log(line),
  });
  console.log(formatDueFlood(figures));
  const ok = figures.healthP99 < 100 && figures.firstDeliveryMs < 1000;
  console.log(ok ? "PASS" : "FAIL: /healthz p99 must stay under 100 ms, first delivery within 1 s");
  Deno.exit(ok ? 0 : 1);
}
