/**
 * The bench's table and targets for systems driven from Node: CPU per job of server and client,
 * ratios against the SDK on Node, and targets that never mix a Node row with a Deno one; and the
 * server's CPU per job behind the SQS SDK against tegami's own API.
 */

import assert from "node:assert/strict";
import type { Measurement } from "../../bench/measurement.ts";
import { ON_NODE } from "../../bench/peers/node_target.ts";
import { SQS_NAME, SQS_RAW_NAME } from "../../bench/peers/sqs.ts";
import { SDK_NAME } from "../../bench/peers/tegami.ts";
import { cpuPerJob, markdownTable, ratioOf, type Row } from "../../bench/report.ts";
import { checkTargets } from "../../bench/targets.ts";

/** A measured row: `jobs` in 1 s, with `server` and `driver` cores. */
function row(workload: string, system: string, jobs: number, server = 0.5, driver = 0.25): Row {
  const measurement: Measurement = {
    jobs,
    seconds: 1,
    cpu: {
      server,
      serverMain: NaN,
      serverMainWait: NaN,
      driver,
      driverMain: driver,
      driverMainWait: 0,
      machine: 1,
    },
    notes: [],
  };
  return { workload, system, measurement };
}

const rows: Row[] = [
  row("W1 end to end", "tegami", 8000),
  row("W1 end to end", SDK_NAME, 9000),
  row("W1 end to end", "RabbitMQ 3.10.8 (quorum)", 4000),
  row("W1 end to end", SDK_NAME + ON_NODE, 10_000, 0.5, 0.3),
  row("W1 end to end", "RabbitMQ 3.10.8 (quorum)" + ON_NODE, 5000, 0.5, 0.2),
];

Deno.test("cpuPerJob() divides the server's and the driver's cores by the jobs per second", () => {
  const { server, client } = cpuPerJob(rows[3])!;
  assert.deepEqual([Math.round(server * 1e6) / 1e6, Math.round(client * 1e6) / 1e6], [50, 30]);
  assert.equal(cpuPerJob({ ...rows[3], throughput: false }), undefined);
});

Deno.test("ratioOf() compares a row driven from Node with the SDK on Node, others with tegami", () => {
  assert.equal(ratioOf(rows, rows[2]), 2); // tegami 8000 ÷ RabbitMQ 4000
  assert.equal(ratioOf(rows, rows[4]), 2); // the SDK on Node 10 000 ÷ RabbitMQ on Node 5000
  assert.equal(ratioOf(rows, rows[3]), undefined);
});

Deno.test("markdownTable() shows CPU µs per job of server and client", () => {
  const line = markdownTable(rows).split("\n").find((l) => l.includes(SDK_NAME + ON_NODE))!;
  assert.match(line, /\| 50 \/ 30 \|/);
});

Deno.test("checkTargets() judges the Node targets on Node rows only", () => {
  const checks = checkTargets(rows);
  const w1 = checks.find((c) => c.target.startsWith("W1 through the SDK on Node"))!;
  assert.equal(w1.measured, "2.00×");
  assert.equal(w1.met, true);
  const cpu = checks.find((c) => c.target.startsWith("W1: client CPU per job on Node"))!;
  assert.equal(cpu.measured, "30.0 vs 40.0 µs (server 50.0 vs 100.0 µs)");
  assert.equal(cpu.met, true);
  // The Deno rows' target still compares the SDK with RabbitMQ driven from Deno.
  const deno = checks.find((c) => c.target === "W1 through the SDK ≥ 2× RabbitMQ")!;
  assert.equal(deno.measured, "2.25×");
});

Deno.test("checkTargets() compares the server's CPU per job in W7 behind the SQS SDK with tegami's", () => {
  const sqsTarget = (rows: Row[]) =>
    checkTargets(rows).find((c) => c.target.startsWith("W7 through the SQS SDK"))!;
  const w7 = "W7 batches of ten";
  const ours = row(w7, "tegami", 10_000, 0.5); // 50 µs a job
  // The lean client's row is not the SDK's: without the SDK's row the target is not measured.
  const raw = row(w7, SQS_RAW_NAME, 8000, 0.4);
  assert.equal(sqsTarget([ours, raw]).met, null);
  assert.equal(sqsTarget([row(w7, SQS_NAME, 5000, 0.4)]).met, null);
  const missed = sqsTarget([ours, raw, row(w7, SQS_NAME, 5000, 0.4)]); // 80 µs a job
  assert.deepEqual([missed.measured, missed.met], ["1.60× (80 vs 50 µs)", false]);
  const met = sqsTarget([ours, row(w7, SQS_NAME, 8000, 0.5)]); // 62.5 µs a job
  assert.deepEqual([met.measured, met.met], ["1.25× (63 vs 50 µs)", true]);
});

Deno.test("checkTargets() judges W1's server CPU and disk written per job on Node", () => {
  const target = (rows: Row[], start: string) =>
    checkTargets(rows).find((c) => c.target.startsWith(start))!;
  const cpu = target(rows, "W1: server CPU per job on Node");
  // 50 µs a job against RabbitMQ's 100: within 0.6×.
  assert.deepEqual([cpu.measured, cpu.met], ["0.50× (50.0 vs 100.0 µs)", true]);
  const dear = [...rows.slice(0, 3), row("W1 end to end", SDK_NAME + ON_NODE, 6000), rows[4]];
  assert.equal(target(dear, "W1: server CPU per job on Node").met, false); // 83 against 100 µs
  assert.equal(target(rows, "W1: disk written per job on Node").met, null, "no disk measured");
  const written = (kb: number): Row => {
    const r = row("W1 end to end", SDK_NAME + ON_NODE, 10_000);
    r.measurement!.diskBytes = kb * 1024 * 10_000;
    return r;
  };
  const over = target([written(1.52)], "W1: disk written per job on Node");
  assert.deepEqual([over.measured, over.met], ["1.52 KB", false]);
  assert.equal(target([written(0.98)], "W1: disk written per job on Node").met, true);
});
