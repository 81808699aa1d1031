/**
 * The one table the bench prints (markdown), and the same rows as JSON for machines.
 *
 * Ratios: on a peer's row, "tegami ÷ peer" is tegami's jobs/s on the same workload divided by
 * the peer's, so above 1 means tegami is faster.
 *
 * @module
 */

import type { Measurement } from "./measurement.ts";
import type { CpuUse } from "./proc.ts";
import { ON_NODE } from "./peers/node_target.ts";
import { SDK_NAME } from "./peers/tegami.ts";

/** One line of the table: a workload on a system, measured, skipped or failed. */
export interface Row {
  /** Workload label, e.g. `W1 end to end`. */
  workload: string;
  /** System label, e.g. `tegami`, `RabbitMQ 3.10.8 (quorum)`. */
  system: string;
  /** Whether jobs/s is the figure of merit (and so gets a ratio). @default true */
  throughput?: boolean;
  /** The result, when it ran. */
  measurement?: Measurement;
  /** Why it did not run or did not finish. */
  failure?: string;
}

const MB = 1024 * 1024;

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? "" : value.toFixed(digits);
}

function jobsPerSecond(m: Measurement | undefined): number | undefined {
  return m === undefined || m.seconds === 0 ? undefined : m.jobs / m.seconds;
}

/** The tegami row of the same workload, for ratios. */
function tegamiOf(rows: readonly Row[], row: Row): Row | undefined {
  return rows.find((r) => r.workload === row.workload && r.system === "tegami");
}

/** The tegami row a row is compared with: for a system driven from Node, the SDK on Node's. */
function baseOf(rows: readonly Row[], row: Row): Row | undefined {
  if (!row.system.endsWith(ON_NODE)) return tegamiOf(rows, row);
  return rows.find((r) => r.workload === row.workload && r.system === SDK_NAME + ON_NODE);
}

/**
 * tegami's jobs/s over this row's, for peer rows of throughput workloads (for a system driven from
 * Node, tegami's through the SDK on Node).
 */
export function ratioOf(rows: readonly Row[], row: Row): number | undefined {
  if (row.system.startsWith("tegami") || row.throughput === false) return undefined;
  const ours = jobsPerSecond(baseOf(rows, row)?.measurement);
  const theirs = jobsPerSecond(row.measurement);
  return ours === undefined || theirs === undefined ? undefined : ours / theirs;
}

/**
 * `server (main, waiting) / driver (main, waiting) / machine`; the server's main thread only
 * where it means something.
 */
function cpuCell(cpu: CpuUse): string {
  const main = Number.isFinite(cpu.serverMain)
    ? ` (${fixed(cpu.serverMain, 2)}, ${fixed(cpu.serverMainWait, 2)})`
    : "";
  const driver = `${fixed(cpu.driver, 2)} (${fixed(cpu.driverMain, 2)}, ${
    fixed(cpu.driverMainWait, 2)
  })`;
  return `${fixed(cpu.server, 2)}${main} / ${driver} / ${fixed(cpu.machine, 2)}`;
}

/** `total ÷ unit` per job of the run, or empty for a run without jobs or without the figure. */
function perJob(
  total: number | undefined,
  m: Measurement | undefined,
  unit: number,
  digits: number,
) {
  if (total === undefined || m === undefined || m.jobs === 0) return "";
  return fixed(total / unit / m.jobs, digits);
}

/**
 * CPU µs per job of the server and of the driver (the clients: the bench process, or the Node
 * process for a system driven from Node), for throughput workloads.
 */
export function cpuPerJob(
  row: Row,
): { server: number; client: number } | undefined {
  const m = row.measurement;
  const rate = jobsPerSecond(m);
  if (row.throughput === false || m?.cpu === undefined || rate === undefined || rate === 0) {
    return undefined;
  }
  return { server: m.cpu.server / rate * 1e6, client: m.cpu.driver / rate * 1e6 };
}

/** Renders the rows as one markdown table. */
export function markdownTable(rows: readonly Row[]): string {
  const header = [
    "workload",
    "system",
    "jobs/s",
    "p50 ms",
    "p99 ms",
    "tegami ÷ system",
    "CPU cores: server (main, waiting) / driver (main, waiting) / machine",
    "CPU µs/job: server / client",
    "server RSS MB",
    "disk KB/job",
    "SQL stmts/job",
    "notes",
  ];
  const lines = [
    `| ${header.join(" | ")} |`,
    `|${
      ["---", "---", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "--:", "---"].join("|")
    }|`,
  ];
  for (const row of rows) {
    const m = row.measurement;
    const ratio = ratioOf(rows, row);
    const perJobCpu = cpuPerJob(row);
    const cells = [
      row.workload,
      row.system,
      row.throughput === false ? "" : fixed(jobsPerSecond(m), 0),
      fixed(m?.latency?.p50, 2),
      fixed(m?.latency?.p99, 2),
      ratio === undefined ? "" : `${ratio.toFixed(2)}×`,
      m?.cpu === undefined ? "" : cpuCell(m.cpu),
      perJobCpu === undefined
        ? ""
        : `${perJobCpu.server.toFixed(0)} / ${perJobCpu.client.toFixed(0)}`,
      m?.rssBytes === undefined ? "" : fixed(m.rssBytes / MB, 0),
      perJob(m?.diskBytes, m, 1024, 2),
      perJob(m?.statements, m, 1, 1),
      row.failure ?? (m?.notes ?? []).join("; "),
    ];
    lines.push(`| ${cells.map((c) => c.replaceAll("|", "\\|")).join(" | ")} |`);
  }
  return lines.join("\n");
}

/** The rows as plain JSON objects, with the derived figures filled in. */
export function jsonRows(rows: readonly Row[]): Record<string, unknown>[] {
  return rows.map((row) => {
    const m = row.measurement;
    return {
      workload: row.workload,
      system: row.system,
      jobs: m?.jobs ?? null,
      seconds: m?.seconds ?? null,
      jobs_per_s: row.throughput === false ? null : jobsPerSecond(m) ?? null,
      latency_ms: m?.latency ?? null,
      tegami_ratio: ratioOf(rows, row) ?? null,
      cpu_cores: m?.cpu === undefined ? null : {
        server: m.cpu.server,
        server_main: Number.isFinite(m.cpu.serverMain) ? m.cpu.serverMain : null,
        server_main_waiting: Number.isFinite(m.cpu.serverMainWait) ? m.cpu.serverMainWait : null,
        driver: m.cpu.driver,
        driver_main: m.cpu.driverMain,
        driver_main_waiting: m.cpu.driverMainWait,
        machine: m.cpu.machine,
      },
      cpu_us_per_job: cpuPerJob(row) ?? null,
      rss_mb: m?.rssBytes === undefined ? null : m.rssBytes / MB,
      disk_bytes_per_job: m?.diskBytes === undefined || m.jobs === 0 ? null : m.diskBytes / m.jobs,
      statements_per_job: m?.statements === undefined || m.jobs === 0
        ? null
        : m.statements / m.jobs,
      notes: m?.notes ?? [],
      extra: m?.extra ?? null,
      failure: row.failure ?? null,
    };
  });
}
