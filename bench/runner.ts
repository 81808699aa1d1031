/**
 * Runs one workload on fresh instances of each system, `repeat` times interleaved (tegami, peer,
 * peer…, tegami, peer…), so the noise of a shared machine falls on every system alike, and keeps
 * the median run of each as its row. Each fresh instance is warmed up first (a short W1 on its
 * own queue). A peer that cannot start is reported once and skipped after.
 *
 * @module
 */

import {
  commitDistribution,
  commitsBetween,
  describeCommits,
  describeFsyncs,
  describeHolds,
  latencyBounds,
} from "./commit_batches.ts";
import type { Measurement } from "./measurement.ts";
import { type Peer, PeerUnavailable, type Target } from "./peers/peer.ts";
import { TegamiTarget } from "./peers/tegami.ts";
import { NodeTarget } from "./peers/node_target.ts";
import { SqsTarget } from "./peers/sqs.ts";
import { writtenBytes } from "./proc.ts";
import type { Row } from "./report.ts";
import { describeWalPages, walPages } from "./wal_pages.ts";
import { warmUp } from "./workloads/warm_up.ts";

/** One workload, as the runner sees it. */
export interface Workload {
  /** Row label, e.g. `W1 end to end`. */
  label: string;
  /** Set-up on the fresh target before anything is measured (W2's fill). */
  prepare?: (target: Target) => Promise<void>;
  /** Runs it on a fresh target. */
  run: (target: Target) => Promise<Measurement>;
  /** Whether jobs/s is its figure of merit; else the p50 latency (or nothing) is. @default true */
  throughput?: boolean;
  /** Whether a warm-up runs on the fresh target before measuring. @default true */
  warm?: boolean;
}

type Outcome = { name: string; measurement: Measurement } | { name: string; failure: string };

/** Collects the rows of a bench run. */
export class Runner {
  /** Every row so far, in order. */
  readonly rows: Row[] = [];
  readonly #unavailable = new Set<Peer>();
  readonly #progress: (text: string) => void;
  readonly #warm: boolean;
  readonly #walPages: boolean;

  /**
   * A runner reporting progress through `progress`; `warm` runs warm-ups (see `warm_up.ts`);
   * `withWalPages` notes which pages tegami's commits wrote on SQLite (see `wal_pages.ts`).
   */
  constructor(progress: (text: string) => void, warm = true, withWalPages = false) {
    this.#progress = progress;
    this.#warm = warm;
    this.#walPages = withWalPages;
  }

  /** Runs `workload` `repeat` times on each of `peers`, interleaved; adds a row per peer. */
  async run(workload: Workload, peers: readonly Peer[], repeat = 1): Promise<void> {
    const outcomes = new Map<Peer, Outcome[]>();
    for (let round = 0; round < repeat; round++) {
      for (const peer of peers) {
        const outcome = await this.#once(workload, peer);
        if (outcome !== null) outcomes.set(peer, [...(outcomes.get(peer) ?? []), outcome]);
      }
    }
    for (const peer of peers) {
      const runs = outcomes.get(peer);
      if (runs !== undefined) this.rows.push(summarize(workload, runs));
    }
  }

  /** One run on a fresh instance; null when the peer is unavailable. */
  async #once(workload: Workload, peer: Peer): Promise<Outcome | null> {
    if (this.#unavailable.has(peer)) return null;
    let target: Target;
    try {
      target = await peer.start();
    } catch (error) {
      const reason = error instanceof PeerUnavailable
        ? `skipped: ${error.message}`
        : `skipped: cannot start: ${(error as Error).message.split("\n")[0]}`;
      this.#unavailable.add(peer);
      this.#progress(`${peer.name}: ${reason}`);
      this.rows.push({ workload: "—", system: peer.name, failure: reason });
      return null;
    }
    const { label } = workload;
    this.#progress(`${label} · ${target.name} …`);
    try {
      // A Node driver warms up in its own process, whose JIT needs it too (node_target.ts).
      if (this.#warm && workload.warm !== false && !(target instanceof NodeTarget)) {
        await warmUp(target);
      }
      await workload.prepare?.(target);
      const server = target instanceof NodeTarget || target instanceof SqsTarget
        ? target.inner
        : target;
      const tegami = server instanceof TegamiTarget ? server : null;
      const before = tegami === null ? null : await tegami.commitBatches();
      const consumersBefore = tegami === null ? null : await tegami.consumerCommitBatches();
      const writtenBefore = writtenBytes(target.pids);
      const m = await workload.run(target);
      const writtenAfter = writtenBytes(target.pids);
      const after = tegami === null ? null : await tegami.commitBatches();
      const consumersAfter = tegami === null ? null : await tegami.consumerCommitBatches();
      if (writtenBefore !== null && writtenAfter !== null && m.jobs > 0) {
        m.diskBytes = writtenAfter - writtenBefore;
      }
      if (before !== null && after !== null && after.statements > 0) {
        m.statements = after.statements - before.statements;
      }
      if (before !== null && after !== null && m.seconds > 0) {
        const batches = commitsBetween(before, after);
        m.notes.push(describeCommits(batches));
        const lag = latencyBounds(batches.lag);
        if (lag.p99Ms !== null) {
          m.notes.push(
            `event-loop lag p99 ≤ ${lag.p99Ms} ms, max ≤ ${lag.maxMs} ms (${lag.samples} samples)`,
          );
        }
        const fsyncs = latencyBounds(batches.fsyncs);
        const fsyncNote = describeFsyncs(fsyncs, batches.fsyncSeconds);
        if (fsyncNote !== null) m.notes.push(fsyncNote);
        const holds = latencyBounds(batches.holds);
        const holdNote = describeHolds(holds);
        if (holdNote !== null) m.notes.push(holdNote);
        m.extra = { ...m.extra, commit_batches: commitDistribution(batches), lag, fsyncs, holds };
      }
      if (consumersBefore !== null && consumersAfter !== null && m.seconds > 0) {
        const batches = commitsBetween(consumersBefore, consumersAfter);
        m.notes.push(`the consumers' server: ${describeCommits(batches)}`);
        m.extra = { ...m.extra, consumer_commit_batches: commitDistribution(batches) };
      }
      const database = tegami?.databasePath ?? null;
      if (this.#walPages && database !== null) {
        try {
          const pages = await walPages(database);
          m.notes.push(describeWalPages(pages));
          m.extra = { ...m.extra, wal_pages: pages };
        } catch (error) {
          m.notes.push(`WAL pages: cannot read them (${(error as Error).message.split("\n")[0]})`);
        }
      }
      this.#progress(`${label} · ${target.name}: ${headline(workload, m)}`);
      return { name: target.name, measurement: m };
    } catch (error) {
      const failure = `failed: ${(error as Error).message.split("\n")[0]}`;
      this.#progress(`${label} · ${target.name}: ${failure}`);
      return { name: target.name, failure };
    } finally {
      await target.stop().catch((error) =>
        this.#progress(`${target.name}: cannot stop cleanly: ${error.message}`)
      );
    }
  }
}

/** The figure a run is ranked by: jobs/s, or for latency workloads minus the p50. */
function merit(workload: Workload, m: Measurement): number {
  if (workload.throughput !== false) return m.jobs / m.seconds;
  return m.latency === undefined ? 0 : -m.latency.p50;
}

function headline(workload: Workload, m: Measurement): string {
  const parts = [];
  if (workload.throughput !== false) parts.push(`${Math.round(m.jobs / m.seconds)} jobs/s`);
  if (m.latency !== undefined) {
    parts.push(`p50 ${m.latency.p50.toFixed(2)} ms p99 ${m.latency.p99.toFixed(2)} ms`);
  }
  if (m.rssBytes !== undefined) parts.push(`RSS ${(m.rssBytes / 1024 / 1024).toFixed(0)} MB`);
  return `${parts.join(", ")} (${m.seconds.toFixed(1)} s)`;
}

/** The row of one peer: its median run, with the spread of the others in the notes. */
function summarize(workload: Workload, runs: Outcome[]): Row {
  const system = runs[0].name;
  const good = runs.flatMap((r) => "measurement" in r ? [r.measurement] : []);
  const failures = runs.flatMap((r) => "failure" in r ? [r.failure] : []);
  const row: Row = { workload: workload.label, system, throughput: workload.throughput };
  if (good.length === 0) {
    row.failure = failures[0];
    return row;
  }
  good.sort((a, b) => merit(workload, a) - merit(workload, b));
  const median = good[Math.floor((good.length - 1) / 2)];
  if (runs.length > 1) {
    const spread = workload.throughput === false
      ? `p50 ${(-merit(workload, good.at(-1)!)).toFixed(2)}–${
        (-merit(workload, good[0])).toFixed(2)
      } ms`
      : `${merit(workload, good[0]).toFixed(0)}–${merit(workload, good.at(-1)!).toFixed(0)} jobs/s`;
    median.notes.unshift(`median of ${good.length} runs (${spread})`);
    // The server's CPU per job of every run, in the order they ran: a paced workload's runs
    // have the same jobs/s, so its median run says nothing about their CPU.
    const cpuPerJob = runs.flatMap((r) =>
      "measurement" in r && r.measurement.cpu !== undefined && r.measurement.jobs > 0
        ? [r.measurement.cpu.server * r.measurement.seconds / r.measurement.jobs * 1e6]
        : []
    );
    if (workload.throughput !== false && cpuPerJob.length > 1) {
      median.notes.splice(
        1,
        0,
        `server CPU µs/job by run: ${cpuPerJob.map((us) => us.toFixed(0)).join(", ")}`,
      );
    }
    median.extra = {
      ...median.extra,
      runs: good.map((m) => ({
        jobs_per_s: m.jobs / m.seconds,
        latency_ms: m.latency ?? null,
        server_cpu_us_per_job: m.cpu === undefined || m.jobs === 0
          ? null
          : m.cpu.server * m.seconds / m.jobs * 1e6,
      })),
    };
  }
  if (failures.length > 0) median.notes.push(`${failures.length} run(s) ${failures[0]}`);
  row.measurement = median;
  return row;
}
