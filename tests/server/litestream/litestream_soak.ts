/**
 * `deno task soak:litestream [ROUNDS] [LOAD_MS] [SYNC_INTERVAL]`: repeats the Litestream host
 * loss (host_loss.ts) and prints, for each round and in sum, how many acknowledged writes the
 * restore lacked and how far back before the loss they reach, against tegami's per-ack promise.
 * Then measures a graceful stop of tegami while Litestream runs. Needs
 * `npm ci --prefix tests/server/litestream/tools`.
 *
 * @module
 */

import { spawnServer } from "../../helpers/process_server.ts";
import { tempDir } from "../../helpers/temp_dir.ts";
import { hostLoss } from "./host_loss.ts";
import { requireLitestream, startReplication, writeLitestreamConfig } from "./litestream.ts";
import { runAckedWrites } from "./acked_writes.ts";

requireLitestream();
const rounds = Number(Deno.args[0] ?? 10);
const loadMs = Number(Deno.args[1] ?? 6000);
const syncInterval = Deno.args[2] ?? "1s";

const windows: number[] = [];
let lostSum = 0;
let ackedSum = 0;
console.log(
  `${rounds} host losses, ${loadMs} ms of load each, monitor-interval 1s, ` +
    `sync-interval ${syncInterval}`,
);
console.log(
  "round  acked   lost  loss window  newest kept  WAL peak  gens  checkpoints  ids again",
);
for (let round = 1; round <= rounds; round++) {
  await using dir = await tempDir("tegami-litestream-soak-");
  const result = await hostLoss({ dir: dir.path, loadMs, syncInterval, padding: 2048 });
  if (result.verify.code !== 0) throw new Error(`verify failed: ${result.verify.stderr}`);
  const checkpoints = [...result.litestreamLog.matchAll(/msg=checkpoint .*?mode=(\w+)/g)]
    .map((match) => match[1]).reduce<Record<string, number>>((count, mode) => {
      count[mode] = (count[mode] ?? 0) + 1;
      return count;
    }, {});
  const again = result.newId <= result.maxAckedId ? `${result.maxAckedId - result.newId + 1}` : "0";
  windows.push(result.lossWindowMs);
  lostSum += result.lost.length;
  ackedSum += result.acknowledged;
  console.log(
    [
      String(round).padStart(5),
      String(result.acknowledged).padStart(6),
      String(result.lost.length).padStart(6),
      `${result.lossWindowMs.toFixed(0)} ms`.padStart(12),
      `${result.newestKeptAgeMs.toFixed(0)} ms`.padStart(12),
      String(result.peakWalFrames).padStart(9),
      String(result.generations).padStart(5),
      Object.entries(checkpoints).map(([mode, n]) => `${mode}×${n}`).join(",").padStart(12),
      again.padStart(10),
    ].join(" "),
  );
}
windows.sort((a, b) => a - b);
console.log(
  `lost ${lostSum} of ${ackedSum} acknowledged writes; loss window min ` +
    `${windows[0].toFixed(0)} ms, median ${
      windows[Math.floor(windows.length / 2)].toFixed(0)
    } ms, ` +
    `max ${windows[windows.length - 1].toFixed(0)} ms`,
);

// A graceful stop while Litestream holds its read transaction.
{
  await using dir = await tempDir("tegami-litestream-stop-");
  const db = `${dir.path}/tegami.db`;
  const config = await writeLitestreamConfig(`${dir.path}/litestream.yml`, {
    db,
    replica: `${dir.path}/replica`,
  });
  const server = await spawnServer(["--db", db, "--sync", "full"]);
  await using replication = startReplication(config);
  await replication.started();
  const workload = runAckedWrites(server.url);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  workload.stop();
  await workload.done;
  const before = performance.now();
  server.kill("SIGTERM");
  const exit = await server.exited();
  console.log(
    `graceful stop under Litestream: exit ${exit.code} after ` +
      `${(performance.now() - before).toFixed(0)} ms; WAL left ${
        Deno.statSync(`${db}-wal`).size
      } ` +
      `bytes`,
  );
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const errors = replication.log().split("\n").filter((line) => line.includes("level=ERROR"));
  console.log(`Litestream errors: ${errors.length}\n${errors.join("\n")}`);
}
