/**
 * `deno task bench`: starts a tegami server as users run it (default `--sync full`), drives it
 * from this separate process, and prints one table. Absolute numbers on a shared machine are
 * noisy; compare runs made side by side.
 *
 * Workloads (all with 100-byte JSON payloads):
 * - enqueue: HTTP producers, `--producers` × `--inflight` requests in flight
 * - lease+ack: HTTP consumers leasing one job and acking it
 * - e2e ws: HTTP producers and WebSocket consumers (prefetch 32) at once; enqueue→receipt latency
 * - batch enqueue: 100 jobs per request
 *
 * @module
 */

import { parseArgs } from "node:util";
import { spawnServer } from "../tests/helpers/process_server.ts";

const args = parseArgs({
  options: {
    jobs: { type: "string", default: "20000" },
    producers: { type: "string", default: "4" },
    inflight: { type: "string", default: "32" },
    consumers: { type: "string", default: "4" },
    sync: { type: "string", default: "full" },
  },
});
const JOBS = Number(args.values.jobs);
const PRODUCERS = Number(args.values.producers);
const INFLIGHT = Number(args.values.inflight);
const CONSUMERS = Number(args.values.consumers);
const PAYLOAD = { kind: "bench", body: "x".repeat(60), n: 0 };

type Row = { workload: string; jobs: number; seconds: number; extra: string };
const rows: Row[] = [];

async function post(url: string, body: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** Runs `total` calls of `task` with `concurrency` in flight. */
async function pool(total: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) await task(next++);
  }));
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function batchSizes(base: string): Promise<string> {
  const text = await (await fetch(base + "/metrics")).text();
  const commits = Number(text.match(/^tegami_commit_batch_size_count (\S+)/m)?.[1] ?? 0);
  const ops = Number(text.match(/^tegami_commit_batch_size_sum (\S+)/m)?.[1] ?? 0);
  return `${(ops / Math.max(commits, 1)).toFixed(1)} ops/commit`;
}

const dir = await Deno.makeTempDir({ prefix: "tegami-bench-" });
try {
  await using server = await spawnServer([
    "--db",
    `${dir}/bench.db`,
    "--sync",
    String(args.values.sync),
  ]);
  const base = server.url;

  // enqueue over HTTP
  let started = performance.now();
  await pool(JOBS, PRODUCERS * INFLIGHT, async (i) => {
    await post(`${base}/v1/queues/enq/jobs`, { payload: { ...PAYLOAD, n: i } });
  });
  rows.push({
    workload: `enqueue HTTP (${PRODUCERS}×${INFLIGHT} in flight)`,
    jobs: JOBS,
    seconds: (performance.now() - started) / 1000,
    extra: await batchSizes(base),
  });

  // lease + ack over HTTP, draining what was enqueued
  started = performance.now();
  let drained = 0;
  await Promise.all(Array.from({ length: PRODUCERS * INFLIGHT }, async () => {
    for (;;) {
      const { jobs } = await post(`${base}/v1/queues/enq/leases`, { max: 1 }) as {
        jobs: { id: number; lease: { token: string } }[];
      };
      if (jobs.length === 0) return;
      await post(`${base}/v1/jobs/${jobs[0].id}/ack`, { token: jobs[0].lease.token });
      drained++;
    }
  }));
  rows.push({
    workload: `lease+ack HTTP (${PRODUCERS * INFLIGHT} consumers)`,
    jobs: drained,
    seconds: (performance.now() - started) / 1000,
    extra: await batchSizes(base),
  });

  // end to end: HTTP producers, WebSocket consumers
  const latencies: number[] = [];
  const sentAt = new Map<number, number>();
  let received = 0;
  const { promise: allReceived, resolve } = Promise.withResolvers<void>();
  const sockets = await Promise.all(Array.from({ length: CONSUMERS }, async () => {
    const ws = new WebSocket(base.replace("http", "ws") + "/v1/ws");
    await new Promise((r) => ws.onopen = r);
    ws.onmessage = (event) => {
      const frame = JSON.parse(event.data);
      if (frame.op !== "job") return;
      const at = sentAt.get(frame.payload.n);
      if (at !== undefined) latencies.push(performance.now() - at);
      ws.send(JSON.stringify({ op: "ack", id: frame.id, token: frame.lease.token }));
      if (++received === JOBS) resolve();
    };
    ws.send(JSON.stringify({ op: "subscribe", queue: "e2e", prefetch: 32 }));
    return ws;
  }));
  started = performance.now();
  await pool(JOBS, PRODUCERS * INFLIGHT, async (i) => {
    sentAt.set(i, performance.now());
    await post(`${base}/v1/queues/e2e/jobs`, { payload: { ...PAYLOAD, n: i } });
  });
  await allReceived;
  const e2eSeconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  rows.push({
    workload: `e2e: HTTP producers → ${CONSUMERS} WS consumers (prefetch 32)`,
    jobs: JOBS,
    seconds: e2eSeconds,
    extra: `p50 ${percentile(latencies, 0.5).toFixed(2)} ms, p99 ${
      percentile(latencies, 0.99).toFixed(2)
    } ms, ${await batchSizes(base)}`,
  });
  for (const ws of sockets) ws.close();

  // batch enqueue
  started = performance.now();
  const batches = Math.ceil(JOBS / 100);
  await pool(batches, PRODUCERS, async (b) => {
    await post(`${base}/v1/queues/batch/jobs`, {
      jobs: Array.from({ length: 100 }, (_, i) => ({ payload: { ...PAYLOAD, n: b * 100 + i } })),
    });
  });
  rows.push({
    workload: `batch enqueue HTTP (100/request, ${PRODUCERS} in flight)`,
    jobs: batches * 100,
    seconds: (performance.now() - started) / 1000,
    extra: "",
  });

  server.kill("SIGTERM");
  await server.exited();
} finally {
  await Deno.remove(dir, { recursive: true });
}

console.log(`\ntegami bench — sync ${args.values.sync}, ${JOBS} jobs per workload\n`);
console.log("| workload | jobs | seconds | jobs/s | notes |");
console.log("|---|---:|---:|---:|---|");
for (const row of rows) {
  console.log(
    `| ${row.workload} | ${row.jobs} | ${row.seconds.toFixed(2)} | ${
      Math.round(row.jobs / row.seconds)
    } | ${row.extra} |`,
  );
}
