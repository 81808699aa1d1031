/**
 * `deno task soak:litestream [ROUNDS] [LOAD_MS] [INTERVAL]`: repeats the Litestream host
 * loss (host_loss.ts) and prints, for each round and in sum, how many acknowledged writes the
 * restore lacked and how far back before the loss they reach, against tegami's per-ack promise;
 * what Litestream's checkpoints did; and the requests' latency beside the same load without
 * Litestream. Then measures graceful stops of tegami while Litestream runs, and what tegami's own
 * checkpoints do while Litestream's are turned off. Needs
 * `npm ci --prefix tests/server/litestream/tools`.
 *
 * @module
 */

import { spawnServer } from "../../helpers/process_server.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { hostLoss } from "./host_loss.ts";
import {
  requireLitestream,
  startReplication,
  walIndex,
  writeLitestreamConfig,
} from "./litestream.ts";
import { runAckedWrites } from "./acked_writes.ts";

requireLitestream();
const rounds = Number(Deno.args[0] ?? 10);
const loadMs = Number(Deno.args[1] ?? 6000);
// Litestream's monitor-interval and sync-interval both.
const interval = Deno.args[2] ?? "1s";
const PADDING = 2048;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const ms = (value: number) => `${value.toFixed(0)} ms`;

// The same load without Litestream, for the latency it adds.
{
  await using dir = await tempDir("tegami-litestream-base-");
  await using server = await spawnServer(["--db", `${dir.path}/tegami.db`, "--sync", "full"]);
  const workload = runAckedWrites(server.url, { padding: PADDING });
  await sleep(loadMs);
  workload.stop();
  await workload.done;
  console.log(
    `without Litestream: ${workload.writes.length} writes in ${loadMs} ms; request p50 ` +
      `${quantile(workload.latencies, 0.5).toFixed(1)} ms, p99 ` +
      `${quantile(workload.latencies, 0.99).toFixed(1)} ms, max ` +
      `${Math.max(...workload.latencies).toFixed(1)} ms`,
  );
}

console.log(
  `${rounds} host losses, ${loadMs} ms of load each, monitor-interval and sync-interval ` +
    interval,
);
console.log(
  "round  acked  lost (enq/ack)  loss window  newest kept  WAL peak  gens  " +
    "checkpoints      p99    max  ids again",
);
const windows: number[] = [];
const latencies: number[] = [];
let lostSum = 0;
let ackedSum = 0;
for (let round = 1; round <= rounds; round++) {
  await using dir = await tempDir("tegami-litestream-soak-");
  const result = await hostLoss({
    dir: dir.path,
    loadMs,
    monitorInterval: interval,
    syncInterval: interval,
    padding: PADDING,
  });
  if (result.verify.code !== 0) throw new Error(`verify failed: ${result.verify.stderr}`);
  for (const line of [...result.failures, ...result.serverErrors]) console.log(`  ${line}`);
  for (const [state, n] of Object.entries(result.states)) {
    if (result.servedCounts[state] !== n) throw new Error(`the server counts ${state} otherwise`);
  }
  if (result.servedAcks.some((status) => status !== 200)) throw new Error("an ack was refused");
  const checkpoints = [...result.litestreamLog.matchAll(/msg=checkpoint .*?mode=(\w+)/g)]
    .map((match) => match[1]).reduce<Record<string, number>>((count, mode) => {
      count[mode] = (count[mode] ?? 0) + 1;
      return count;
    }, {});
  const again = result.newId <= result.maxAckedId ? result.maxAckedId - result.newId + 1 : 0;
  const lostEnqueues = result.lost.filter((write) => write.kind === "enqueue").length;
  windows.push(result.lossWindowMs);
  latencies.push(...result.latencies);
  lostSum += result.lost.length;
  ackedSum += result.acknowledged;
  console.log(
    [
      String(round).padStart(5),
      String(result.acknowledged).padStart(6),
      `${result.lost.length} (${lostEnqueues}/${result.lost.length - lostEnqueues})`.padStart(15),
      ms(result.lossWindowMs).padStart(12),
      ms(result.newestKeptAgeMs).padStart(12),
      String(result.peakWalFrames).padStart(9),
      String(result.generations).padStart(5),
      Object.entries(checkpoints).map(([mode, n]) => `${mode}×${n}`).join(",").padStart(12),
      quantile(result.latencies, 0.99).toFixed(0).padStart(8),
      Math.max(...result.latencies).toFixed(0).padStart(6),
      String(again).padStart(10),
    ].join(" "),
  );
}
console.log(
  `lost ${lostSum} of ${ackedSum} acknowledged writes; loss window min ` +
    `${ms(quantile(windows, 0))}, median ${ms(quantile(windows, 0.5))}, max ` +
    `${ms(Math.max(...windows))}; request p50 ${quantile(latencies, 0.5).toFixed(1)} ms, p99 ` +
    `${quantile(latencies, 0.99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms`,
);

// Graceful stops while Litestream holds its read transaction.
for (let stop = 1; stop <= 3; stop++) {
  await using dir = await tempDir("tegami-litestream-stop-");
  const db = `${dir.path}/tegami.db`;
  const config = await writeLitestreamConfig(`${dir.path}/litestream.yml`, {
    db,
    replica: `${dir.path}/replica`,
  });
  const server = await spawnServer(["--db", db, "--sync", "full"]);
  await using replication = startReplication(config);
  await replication.started();
  const workload = runAckedWrites(server.url, { padding: PADDING });
  await sleep(3000);
  workload.stop();
  await workload.done;
  const before = performance.now();
  server.kill("SIGTERM");
  const exit = await server.exited();
  console.log(
    `graceful stop under Litestream: exit ${exit.code} after ${ms(performance.now() - before)}; ` +
      `WAL left ${Deno.statSync(`${db}-wal`).size} bytes`,
  );
  await sleep(2500);
  const errors = replication.log().split("\n").filter((line) => line.includes("level=ERROR"));
  const generations = replication.log().split("\n").filter((line) =>
    line.includes(`msg="sync: new generation"`)
  );
  console.log(`Litestream after the stop: ${generations.length} generation(s), errors:`);
  for (const line of errors) console.log(`  ${line}`);
}

// tegami's own checkpoints while Litestream's read transaction is open and Litestream never
// checkpoints: the frames checkpointed stay where they were when Litestream began.
{
  await using dir = await tempDir("tegami-litestream-own-");
  const db = `${dir.path}/tegami.db`;
  const config = await writeLitestreamConfig(`${dir.path}/litestream.yml`, {
    db,
    replica: `${dir.path}/replica`,
    checkpoints: false,
  });
  await using server = await spawnServer(["--db", db, "--sync", "full"]);
  await using replication = startReplication(config);
  await replication.started();
  const first = walIndex(db);
  const workload = runAckedWrites(server.url, { padding: PADDING });
  await sleep(loadMs);
  workload.stop();
  await workload.done;
  const last = walIndex(db);
  console.log(
    `Litestream not checkpointing, ${workload.writes.length} writes in ${loadMs} ms: WAL frames ` +
      `${first?.frames} -> ${last?.frames}, frames checkpointed ${first?.backfilled} -> ` +
      `${last?.backfilled}`,
  );
}
