/**
 * The targets of DESIGN.md §8 and of the performance work (docs/performance.md), checked against
 * the rows of one run: each answers the figure measured and whether it is met (`null` when the
 * rows it needs are missing). "tegami" is the raw protocol written by hand; "tegami via SDK" is
 * the client library, which the end-to-end and enqueue targets are about.
 *
 * @module
 */

import type { Measurement } from "./measurement.ts";
import type { Row } from "./report.ts";
import { PLACEMENTS } from "./workloads/scaling.ts";
import { FLOOR_NAME, FLOOR_SDK_NAME, pgName, SDK_NAME } from "./peers/tegami.ts";
import { PG_FLOOR_NAME } from "./peers/pg_floor.ts";
import { ON_NODE } from "./peers/node_target.ts";
import { SQS_NAME } from "./peers/sqs.ts";
import { cpuPerJob } from "./report.ts";

/** CPU µs per job of a row: its server's and its client's. */
type CpuPerJob = NonNullable<ReturnType<typeof cpuPerJob>>;

/** One target and how this run fares. */
export interface TargetCheck {
  /** The target, e.g. `W1 ≥ 2× RabbitMQ`. */
  target: string;
  /** What was measured, e.g. `0.45×`. */
  measured: string;
  /** Met, missed, or not measured in this run. */
  met: boolean | null;
}

const MB = 1024 * 1024;

/**
 * tegami's rows by exact name (they share a prefix); a peer's by the start of its name, and with
 * its clients on Node only when `system` ends with " on Node".
 */
function findRow(rows: readonly Row[], workload: string, system: string): Row | undefined {
  const onNode = system.endsWith(ON_NODE);
  const start = onNode ? system.slice(0, -ON_NODE.length) : system;
  const named = (name: string) =>
    system.startsWith("tegami")
      ? name === system
      : name.startsWith(start) && name.endsWith(ON_NODE) === onNode;
  return rows.find((r) => r.workload === workload && named(r.system));
}

function find(rows: readonly Row[], workload: string, system: string): Measurement | undefined {
  return findRow(rows, workload, system)?.measurement;
}

const KB = 1024;

const rate = (m: Measurement) => m.jobs / m.seconds;

/** Checks every target the rows allow. */
export function checkTargets(rows: readonly Row[]): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const ratio = (
    workload: string,
    peer: string,
    label: string,
    atLeast: number,
    system = "tegami",
  ) => {
    const ours = find(rows, workload, system);
    const theirs = find(rows, workload, peer);
    if (ours === undefined || theirs === undefined) {
      checks.push({ target: label, measured: "not measured", met: null });
      return;
    }
    const r = rate(ours) / rate(theirs);
    checks.push({ target: label, measured: `${r.toFixed(2)}×`, met: r >= atLeast });
  };
  /**
   * Says beside the last check what the runtime alone does with the same traffic: the floor
   * `floor` against `peer`, a ceiling on the ratio for any server on this runtime.
   */
  const withFloor = (workload: string, peer: string, floor: string) => {
    const theirs = find(rows, workload, peer);
    const bare = find(rows, workload, floor);
    const check = checks[checks.length - 1];
    if (check.met === null || theirs === undefined || bare === undefined) return;
    check.measured +=
      ` (the ${floor === FLOOR_SDK_NAME ? "runtime floor via SDK" : "runtime floor"}` +
      `, no storage: ${rate(bare).toFixed(0)} jobs/s = ${(rate(bare) / rate(theirs)).toFixed(2)}×)`;
  };
  ratio("W1 end to end", "RabbitMQ", "W1 through the SDK ≥ 2× RabbitMQ", 2, SDK_NAME);
  withFloor("W1 end to end", "RabbitMQ", FLOOR_SDK_NAME);
  ratio(
    "W1 end to end",
    "beanstalkd -f 50",
    "W1 through the SDK ≥ 1.3× beanstalkd (default fsync)",
    1.3,
    SDK_NAME,
  );
  ratio("W3 enqueue", "RabbitMQ", "W3 through the SDK ≥ 2× RabbitMQ", 2, SDK_NAME);
  withFloor("W3 enqueue", "RabbitMQ", FLOOR_SDK_NAME);
  ratio("W2 drain", "RabbitMQ", "W2 ≥ 1.5× RabbitMQ", 1.5);
  withFloor("W2 drain", "RabbitMQ", FLOOR_NAME);
  ratio("W2 drain", "RabbitMQ", "W2 through the SDK ≥ 1.5× RabbitMQ", 1.5, SDK_NAME);
  withFloor("W2 drain", "RabbitMQ", FLOOR_SDK_NAME);
  ratio("W1 end to end", FLOOR_NAME, "W1 with raw HTTP enqueue ≥ 0.8× the runtime floor", 0.8);

  // With every client on Node: the SDK against amqplib, throughput and client CPU.
  const sdkNode = SDK_NAME + ON_NODE;
  const rabbitNode = "RabbitMQ" + ON_NODE;
  ratio(
    "W1 end to end",
    rabbitNode,
    "W1 through the SDK on Node ≥ 1.5× RabbitMQ on Node",
    1.5,
    sdkNode,
  );
  ratio("W2 drain", rabbitNode, "W2 through the SDK on Node ≥ 1.2× RabbitMQ on Node", 1.2, sdkNode);
  ratio("W3 enqueue", rabbitNode, "W3 through the SDK on Node ≥ 2× RabbitMQ on Node", 2, sdkNode);
  {
    const ours = find(rows, "W1 end to end", sdkNode)?.latency;
    const theirs = find(rows, "W1 end to end", rabbitNode)?.latency;
    checks.push({
      target: "W1 p99 on Node at or below RabbitMQ's on Node",
      measured: ours === undefined || theirs === undefined
        ? "not measured"
        : `${ours.p99.toFixed(1)} vs ${theirs.p99.toFixed(1)} ms`,
      met: ours === undefined || theirs === undefined ? null : ours.p99 <= theirs.p99,
    });
  }
  /** A check of the CPU per job of `ours` against `theirs` in one workload (µs). */
  const cpuCheck = (
    workload: string,
    ours: string,
    theirs: string,
    target: string,
    measure: (a: CpuPerJob, b: CpuPerJob) => string,
    meets: (a: CpuPerJob, b: CpuPerJob) => boolean,
  ) => {
    const row = (system: string) => {
      const found = findRow(rows, workload, system);
      return found === undefined ? undefined : cpuPerJob(found);
    };
    const a = row(ours);
    const b = row(theirs);
    checks.push({
      target,
      measured: a === undefined || b === undefined ? "not measured" : measure(a, b),
      met: a === undefined || b === undefined ? null : meets(a, b),
    });
  };
  for (const workload of ["W1 end to end", "W2 drain", "W3 enqueue"]) {
    cpuCheck(
      workload,
      sdkNode,
      rabbitNode,
      `${workload.split(" ")[0]}: client CPU per job on Node ≤ amqplib's`,
      (a, b) =>
        `${a.client.toFixed(1)} vs ${b.client.toFixed(1)} µs (server ${a.server.toFixed(1)} vs ${
          b.server.toFixed(1)
        } µs)`,
      (a, b) => a.client <= b.client,
    );
  }
  cpuCheck(
    "W1 end to end",
    sdkNode,
    rabbitNode,
    "W1: server CPU per job on Node ≤ 0.6× RabbitMQ's",
    (a, b) =>
      `${(a.server / b.server).toFixed(2)}× (${a.server.toFixed(1)} vs ${b.server.toFixed(1)} µs)`,
    (a, b) => a.server <= 0.6 * b.server,
  );
  const w1Node = findRow(rows, "W1 end to end", sdkNode)?.measurement;
  checks.push({
    target: "W1: disk written per job on Node ≤ 1 KB",
    measured: w1Node?.diskBytes === undefined
      ? "not measured"
      : `${(w1Node.diskBytes / w1Node.jobs / KB).toFixed(2)} KB`,
    met: w1Node?.diskBytes === undefined ? null : w1Node.diskBytes / w1Node.jobs <= KB,
  });

  // The SQS door: what the server spends per job behind the SDK's batches, against its own API's.
  cpuCheck(
    "W7 batches of ten",
    "tegami",
    SQS_NAME,
    "W7 through the SQS SDK: server CPU per job ≤ 1.5× tegami's API",
    (a, b) =>
      `${(b.server / a.server).toFixed(2)}× (${b.server.toFixed(0)} vs ${a.server.toFixed(0)} µs)`,
    (a, b) => b.server / a.server <= 1.5,
  );

  // On PostgreSQL: against pg-boss, one instance against two, and the push across instances.
  ratio("W1 end to end", "pg-boss", "W1 on PostgreSQL ≥ 5× pg-boss", 5, pgName(1));
  ratio("W2 drain", "pg-boss", "W2 on PostgreSQL ≥ 5× pg-boss", 5, pgName(1));
  // What PostgreSQL alone does with the same two statements per job bounds the ratio.
  const boss = find(rows, "W2 drain", "pg-boss");
  const floor = find(rows, "W2 drain", PG_FLOOR_NAME);
  const w2Pg = checks[checks.length - 1];
  if (w2Pg.met !== null && boss !== undefined && floor !== undefined) {
    w2Pg.measured += ` (5× pg-boss = ${(5 * rate(boss)).toFixed(0)} jobs/s; the PostgreSQL ` +
      `floor, no server, ${rate(floor).toFixed(0)} jobs/s = ${
        (rate(floor) / rate(boss)).toFixed(2)
      }× pg-boss)`;
  }
  ratio(
    "W1 end to end",
    pgName(1),
    "W1 on PostgreSQL with 2 instances ≥ 1.3× one instance",
    1.3,
    pgName(2),
  );
  const cross = find(rows, "W5 idle push latency", pgName(2))?.latency;
  checks.push({
    target: "W5 across instances on PostgreSQL: p50 < 20 ms and p99 < 100 ms",
    measured: cross === undefined
      ? "not measured"
      : `${cross.p50.toFixed(2)} / ${cross.p99.toFixed(2)} ms`,
    met: cross === undefined ? null : cross.p50 < 20 && cross.p99 < 100,
  });

  for (const system of ["tegami", SDK_NAME]) {
    const w1 = find(rows, "W1 end to end", system);
    const label = `disk written per job in W1 ≤ 1.5 KB (${system})`;
    checks.push({
      target: label,
      measured: w1?.diskBytes === undefined
        ? "not measured"
        : `${(w1.diskBytes / w1.jobs / KB).toFixed(2)} KB (${
          w1.statements === undefined ? "?" : (w1.statements / w1.jobs).toFixed(1)
        } SQL statements per job)`,
      met: w1?.diskBytes === undefined ? null : w1.diskBytes / w1.jobs <= 1.5 * KB,
    });
  }

  // Groups and limits: spreading W1 over groups costs at most a fifth; a rate holds.
  const w1 = find(rows, "W1 end to end", "tegami");
  const w1g = find(rows, "W1g end to end over 1000 groups", "tegami");
  checks.push({
    target: "W1 over 1,000 groups (group_limit 1) ≥ 0.8× plain W1",
    measured: w1 === undefined || w1g === undefined
      ? "not measured"
      : `${(rate(w1g) / rate(w1)).toFixed(2)}× (${rate(w1g).toFixed(0)} vs ${
        rate(w1).toFixed(0)
      } jobs/s)`,
    met: w1 === undefined || w1g === undefined ? null : rate(w1g) / rate(w1) >= 0.8,
  });
  // Weights: the claim over weighted groups stays one indexed pass, and the shares hold.
  for (const system of ["tegami", pgName(1)]) {
    const plain = find(rows, "W1 end to end", system);
    const grouped = find(rows, "W1g end to end over 1000 groups", system);
    const weighted = find(rows, "W1w end to end over 1000 weighted groups", system);
    const store = system === "tegami" ? "" : " (PostgreSQL)";
    checks.push({
      target: `W1 over 1,000 groups with weights ≥ 0.8× plain W1${store}`,
      measured: plain === undefined || weighted === undefined
        ? "not measured"
        : `${(rate(weighted) / rate(plain)).toFixed(2)}× (${rate(weighted).toFixed(0)} vs ${
          rate(plain).toFixed(0)
        } jobs/s${grouped === undefined ? "" : `; W1g ${rate(grouped).toFixed(0)} jobs/s`})`,
      met: plain === undefined || weighted === undefined
        ? null
        : rate(weighted) / rate(plain) >= 0.8,
    });
    // At group_limit 1 a group's one slot, not its weight, caps it at one delivery per round
    // trip (docs/performance.md): the target is about groups that may hold more than one.
    const shares = find(rows, "W1w shares of weighted groups, group_limit 8", system)?.extra
      ?.share_ratio as number | undefined;
    checks.push({
      target: `groups of weight 5 get 5× the deliveries of weight 1 while all wait, ` +
        `group_limit 8 (±20 %)${store}`,
      measured: shares === undefined ? "not measured" : `${shares.toFixed(2)}×`,
      met: shares === undefined ? null : Math.abs(shares / 5 - 1) <= 0.2,
    });
  }
  const w6 = find(rows, "W6 rate 500/s for 10 s", "tegami");
  const off = w6 === undefined ? null : rate(w6) / 500 - 1;
  checks.push({
    target: "a rate of 500/s holds within 5 % over 10 s",
    measured: off === null
      ? "not measured"
      : `${rate(w6!).toFixed(1)} deliveries/s (${(off * 100).toFixed(2)} %)`,
    met: off === null ? null : Math.abs(off) <= 0.05,
  });

  const w4 = find(rows, "W4 batch enqueue", "tegami");
  checks.push({
    target: "W4 ≥ 50 000 jobs/s",
    measured: w4 === undefined ? "not measured" : `${rate(w4).toFixed(0)} jobs/s`,
    met: w4 === undefined ? null : rate(w4) >= 50_000,
  });

  const w5 = find(rows, "W5 idle push latency", "tegami")?.latency;
  checks.push({
    target: "W5 p50 < 1 ms and p99 < 5 ms",
    measured: w5 === undefined ? "not measured" : `${w5.p50.toFixed(2)} / ${w5.p99.toFixed(2)} ms`,
    met: w5 === undefined ? null : w5.p50 < 1 && w5.p99 < 5,
  });

  const w1Lag = find(rows, "W1 end to end", "tegami")?.extra?.lag as
    | { p99Ms: number | null; maxMs: number | null }
    | undefined;
  checks.push({
    target: "event-loop lag p99 < 20 ms under W1",
    measured: w1Lag?.p99Ms == null
      ? "not measured"
      : `p99 ≤ ${w1Lag.p99Ms} ms, max ≤ ${w1Lag.maxMs} ms (histogram bucket bounds)`,
    met: w1Lag?.p99Ms == null ? null : w1Lag.p99Ms < 20,
  });

  const w1Rabbit = find(rows, "W1 end to end", "RabbitMQ")?.latency;
  for (const system of ["tegami", SDK_NAME]) {
    const w1 = find(rows, "W1 end to end", system)?.latency;
    checks.push({
      target: `W1 p99 at or below RabbitMQ's (${system})`,
      measured: w1 === undefined || w1Rabbit === undefined
        ? "not measured"
        : `${w1.p99.toFixed(1)} vs ${w1Rabbit.p99.toFixed(1)} ms`,
      met: w1 === undefined || w1Rabbit === undefined ? null : w1.p99 <= w1Rabbit.p99,
    });
  }

  const rss = find(rows, "W2 drain", "tegami")?.rssBytes;
  const rssRabbit = find(rows, "W2 drain", "RabbitMQ")?.rssBytes;
  checks.push({
    target: "RSS with the W2 backlog below RabbitMQ's",
    measured: rss === undefined || rssRabbit === undefined
      ? "not measured"
      : `${(rss / MB).toFixed(0)} vs ${(rssRabbit / MB).toFixed(0)} MB`,
    met: rss === undefined || rssRabbit === undefined ? null : rss < rssRabbit,
  });

  // Scaling: every W1/W5 row with a backlog, against the empty server's.
  const empty1 = find(rows, "W1 · empty server", "tegami");
  const empty5 = find(rows, "W5 · empty server", "tegami")?.latency;
  const scaled = rows.filter((r) => PLACEMENTS.some((p) => r.workload.endsWith(p.label)));
  if (empty1 !== undefined && empty5 !== undefined && scaled.length > 0) {
    for (const placement of PLACEMENTS) {
      const failed = scaled.find((r) => r.workload.endsWith(placement.label) && r.failure);
      if (failed !== undefined) {
        checks.push({
          target: `W1 jobs/s and W5 p50 within ±20% of empty, ${placement.label}`,
          measured: failed.failure!,
          met: false,
        });
        continue;
      }
      let worst = 1;
      let worstAt = "";
      for (const row of scaled.filter((r) => r.workload.endsWith(placement.label))) {
        const m = row.measurement;
        if (m === undefined) continue;
        let off = 1;
        if (row.workload.startsWith("W1")) off = rate(m) / rate(empty1);
        else if (m.latency !== undefined) off = empty5.p50 / m.latency.p50;
        if (Math.abs(1 - off) > Math.abs(1 - worst)) {
          worst = off;
          worstAt = row.workload;
        }
      }
      checks.push({
        target: `W1 jobs/s and W5 p50 within ±20% of empty, ${placement.label}`,
        measured: worstAt === "" ? "all equal" : `worst ${worst.toFixed(2)}× (${worstAt})`,
        met: Math.abs(1 - worst) <= 0.2,
      });
    }
    const size = (row: Row) =>
      Number(row.workload.match(/(\d[\d ]*) (waiting|pending|delayed)/)?.[1].replaceAll(" ", ""));
    const largest = Math.max(...scaled.map(size).filter((n) => !Number.isNaN(n)));
    const atLargest = scaled.filter((r) => size(r) === largest);
    const mb = (rows: readonly Row[]) =>
      Math.max(...rows.map((r) => r.measurement?.rssBytes ?? 0)) / MB;
    const loaded = mb(atLargest.filter((r) => r.measurement?.rssBytes !== undefined));
    const restarted = mb(atLargest.filter((r) => r.workload.startsWith("startup")));
    const emptyLoaded = (empty1.rssBytes ?? NaN) / MB;
    checks.push({
      target: "RSS < 150 MB with the largest backlog waiting",
      measured: `${loaded.toFixed(0)} MB at most with ${largest} waiting, under W1/W5 (empty ` +
        `server after its W1: ${emptyLoaded.toFixed(0)} MB); ${restarted.toFixed(0)} MB just ` +
        `after a restart with them`,
      met: Number.isFinite(loaded) && loaded > 0 ? loaded < 150 : null,
    });
  }
  // A workload tegami failed is a target missed, not one left unmeasured.
  for (const row of rows) {
    if (row.system.startsWith("tegami") && row.failure !== undefined) {
      checks.push({
        target: `tegami completes ${row.workload}`,
        measured: row.failure,
        met: false,
      });
    }
  }
  return checks;
}

/** The checks this run measured, as lines: `✓` or `✗`, target, measured. */
export function describeTargets(checks: readonly TargetCheck[]): string {
  const measured = checks.filter((c) => c.met !== null);
  if (measured.length === 0) return "none measured in this run";
  return measured.map((c) => `${c.met ? "✓" : "✗"} ${c.target}: ${c.measured}`).join("\n");
}
