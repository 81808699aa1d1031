/**
 * `tegami backup --to FILE`: has the server write a checked, compacted snapshot of its SQLite
 * database to FILE (a file in the server's `--backup-dir` on its host, written by the server; a
 * relative FILE is taken inside that directory), shows its progress and
 * reports what it holds. `tegami backup --verify FILE` checks a copy offline, without a server.
 *
 * Exit codes: 0 done (or the copy is sound), 1 the backup failed or the copy fails a check, 2 a
 * usage error.
 *
 * @module
 */

import { resolve } from "node:path";
import { resolveClientConfig } from "../config/client_config.ts";
import { JOB_STATES } from "../core/job.ts";
import {
  type BackupStatus,
  CopyCheckError,
  type CopyReport,
  verifyCopy,
} from "../store/sqlite/sqlite_backup.ts";

/** What the command reads and writes: a part of the client commands' `CommandIO`. */
export interface BackupIO {
  /** Writes to standard output. */
  out(text: string): void;
  /** Writes to standard error. */
  err(text: string): void;
  /** True when stderr is a terminal (progress). */
  isTerminal: boolean;
  /** The environment. */
  env: Record<string, string | undefined>;
}

/** A mistake in the command's arguments (exit code 2). */
export class BackupUsageError extends Error {}

/** How often a running backup is asked for its progress (ms). */
const POLL_MS = 250;

/** Runs `tegami backup`; answers the exit code. */
export async function backupCommand(args: string[], io: BackupIO): Promise<number> {
  const { config, rest, values } = resolveClientConfig(args, io.env, {
    to: { type: "string" },
    verify: { type: "string" },
    json: { type: "boolean" },
  });
  if (rest.length > 0) throw new BackupUsageError(`unexpected argument "${rest[0]}"`);
  const to = values.to as string | undefined;
  const verify = values.verify as string | undefined;
  if ((to === undefined) === (verify === undefined)) {
    throw new BackupUsageError("expected --to FILE (take a backup) or --verify FILE (check one)");
  }
  if (verify !== undefined) {
    try {
      const report = await verifyCopy(resolve(verify));
      io.out(values.json === true ? JSON.stringify(report) + "\n" : reportLines("ok", report));
      return 0;
    } catch (error) {
      if (!(error instanceof CopyCheckError)) throw error;
      io.err(`tegami backup: ${verify} is not a sound tegami backup: ${error.message}\n`);
      return 1;
    }
  }
  // The server's path, resolved by the server inside its backup directory.
  const target = to!;
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (config.token !== null) headers.authorization = `Bearer ${config.token}`;
  const call = async (method: string, body?: unknown): Promise<BackupStatus> => {
    const response = await fetch(`${config.url}/v1/backup`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      const error = answer?.error;
      throw new BackupFailed(
        error === undefined ? `HTTP ${response.status}` : `${error.code}: ${String(error.message)}`,
      );
    }
    return answer as BackupStatus;
  };
  let status: BackupStatus;
  try {
    status = await call("POST", { path: target });
    while (status.state === "running") {
      if (io.isTerminal) io.err(`\r${progressLine(status)}`);
      await new Promise((done) => setTimeout(done, POLL_MS));
      status = await call("GET");
    }
  } catch (error) {
    if (io.isTerminal) io.err("\n");
    if (error instanceof BackupFailed) {
      io.err(`tegami backup: ${error.message}\n`);
      return 1;
    }
    io.err(`tegami backup: Cannot reach ${config.url}: ${(error as Error).message}\n`);
    return 1;
  }
  if (io.isTerminal) io.err(`\r${progressLine(status)}\n`);
  if (status.state === "failed" || status.report === null) {
    io.err(`tegami backup: Cannot back up to ${target}: ${status.error}\n`);
    return 1;
  }
  if (values.json === true) io.out(JSON.stringify(status) + "\n");
  else io.out(reportLines(`written in ${seconds(status.took_ms ?? 0)}`, status.report));
  return 0;
}

class BackupFailed extends Error {}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `backing up: 120.0 of 400.0 MiB (30%)`, for a terminal. */
function progressLine(status: BackupStatus): string {
  // The total is an estimate (the pages in use); a finished copy is its own total.
  const total = status.state === "done" ? status.bytes_written : status.bytes_total;
  const share = total === null || total === 0
    ? ""
    : ` (${Math.min(100, Math.floor((status.bytes_written / total) * 100))}%)`;
  const of = total === null ? "" : ` of ${megabytes(total)}`;
  return `backing up: ${megabytes(status.bytes_written)}${of}${share}   `;
}

/** A copy's report, one fact per line. */
function reportLines(verdict: string, report: CopyReport): string {
  const jobs = JOB_STATES.reduce((sum, state) => sum + report.counts[state], 0);
  const lines = [
    `${report.path}: ${verdict}`,
    `  size            ${megabytes(report.bytes)} (${report.bytes} bytes)`,
    `  schema version  ${report.schema_version}`,
    `  integrity       ok`,
    `  jobs            ${jobs}: ` +
    JOB_STATES.map((state) => `${state} ${report.counts[state]}`).join(", "),
  ];
  if (report.leased_until !== null) {
    lines.push(
      `  leases          ${report.counts.leased} held, the last ending ` +
        `${new Date(report.leased_until).toISOString()}; a server started on this copy ` +
        "returns each to pending when it ends",
    );
  }
  return lines.join("\n") + "\n";
}
