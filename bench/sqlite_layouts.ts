/**
 * What a job costs on disk under W1's pipeline for other table layouts than the store's: how far
 * the layout alone can bring the bytes written per job, and what bounds them. Each layout is a
 * miniature of the `jobs` table (the store's columns that a W1 job fills, its indexes or fewer),
 * driven as `bench/sqlite_cost.ts` drives the store's own statements: every transaction inserts a
 * batch of jobs, leases as many of the oldest pending and settles the batch the previous one
 * leased, so each job passes through three commits; the log is `fdatasync`ed after each commit and
 * checkpointed as the store does. Bytes are `write_bytes` of `/proc/self/io`: the jobs' commits
 * and checkpoints, then, for a layout that keeps done jobs, the retention sweep deleting them all
 * and its checkpoint.
 *
 *     deno run -A bench/sqlite_layouts.ts [--jobs N] [--batch N[,N…]] [--page-size N[,N…]]
 *       [--layouts NAME,…]
 *
 * The layouts:
 *
 * - `store`: the store's indexes (`jobs_pending`, `jobs_pending_age`, `jobs_leased`,
 *   `jobs_finished`, `jobs_browse`) and `AUTOINCREMENT`; a lease and an ack each rewrite the row,
 *   the ack keeps it as done.
 * - `store-delete`: the same, but the ack deletes the row (nothing kept once done).
 * - `lean-keep`: the fewest structures that can keep done jobs and find the next pending one and
 *   the expired done ones: one pending index, one index of finished jobs, no `AUTOINCREMENT`.
 * - `no-lease-keep`: `lean-keep` with nothing written at lease time (leases held in memory).
 * - `lean-delete`: one pending index; the ack deletes the row.
 * - `floor`: no index; a job is inserted and deleted, nothing else.
 *
 * @module
 */

import type { DatabaseSync as Database } from "node:sqlite";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { configureDatabase } from "../lib/store/sqlite/sqlite_open.ts";

/** How one layout stores, leases and settles jobs. */
export interface Layout {
  /** The table and its indexes. */
  schema: string;
  /** Leases up to `?2` pending jobs at time `?1` (or after id `?1` when `readOnly`). */
  lease: string;
  /** Whether the lease writes nothing: its statement only reads the next ids. */
  readOnly: boolean;
  /** Settles job `?1` at time `?2`. */
  settle: string;
  /** Deletes up to 1 000 done jobs, oldest first, for a layout that keeps them. */
  sweep: string | null;
}

const COLUMNS = `queue TEXT NOT NULL, state TEXT NOT NULL, priority INTEGER NOT NULL DEFAULT 0,
  key TEXT, payload TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 5, run_at INTEGER NOT NULL, created_at INTEGER NOT NULL,
  lease_token TEXT, lease_len_ms INTEGER, lease_expires_at INTEGER, finished_at INTEGER`;

const STORE_INDEXES = `
  CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id) WHERE state = 'pending';
  CREATE INDEX jobs_pending_age ON jobs (queue, run_at) WHERE state = 'pending';
  CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'leased';
  CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
  CREATE INDEX jobs_browse ON jobs (queue, state, id) WHERE state NOT IN ('pending', 'leased');`;
const PENDING_INDEX =
  `CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id) WHERE state = 'pending';`;
const FINISHED_INDEX =
  `CREATE INDEX jobs_finished ON jobs (queue, finished_at) WHERE finished_at IS NOT NULL;`;

const LEASE = `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = 'token',
  lease_len_ms = 30000, lease_expires_at = ?1 + 30000
  WHERE id IN (SELECT id FROM jobs WHERE queue = 'q' AND state = 'pending'
    ORDER BY priority DESC, id LIMIT ?2) RETURNING id`;
const NEXT_IDS = `SELECT id FROM jobs WHERE queue = 'q' AND state = 'pending' AND id > ?1
  ORDER BY priority DESC, id LIMIT ?2`;
const ACK = `UPDATE jobs SET state = 'done', lease_token = NULL, lease_expires_at = NULL,
  finished_at = ?2 WHERE id = ?1 AND state = 'leased'`;
const DELETE = `DELETE FROM jobs WHERE id = ?1 AND ?2 IS NOT NULL`;
const SWEEP = `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs
  WHERE queue = 'q' AND finished_at IS NOT NULL ORDER BY finished_at LIMIT 1000)`;

/** The layouts by name. */
export const LAYOUTS: Record<string, Layout> = {
  "store": {
    schema:
      `CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, ${COLUMNS}); ${STORE_INDEXES}`,
    lease: LEASE,
    readOnly: false,
    settle: ACK,
    sweep: SWEEP,
  },
  "store-delete": {
    schema:
      `CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, ${COLUMNS}); ${STORE_INDEXES}`,
    lease: LEASE,
    readOnly: false,
    settle: DELETE,
    sweep: null,
  },
  "lean-keep": {
    schema:
      `CREATE TABLE jobs (id INTEGER PRIMARY KEY, ${COLUMNS}); ${PENDING_INDEX} ${FINISHED_INDEX}`,
    lease: LEASE,
    readOnly: false,
    settle: ACK,
    sweep: SWEEP,
  },
  "no-lease-keep": {
    schema:
      `CREATE TABLE jobs (id INTEGER PRIMARY KEY, ${COLUMNS}); ${PENDING_INDEX} ${FINISHED_INDEX}`,
    lease: NEXT_IDS,
    readOnly: true,
    settle:
      `UPDATE jobs SET state = 'done', attempts = attempts + 1, finished_at = ?2 WHERE id = ?1`,
    sweep: SWEEP,
  },
  "lean-delete": {
    schema: `CREATE TABLE jobs (id INTEGER PRIMARY KEY, ${COLUMNS}); ${PENDING_INDEX}`,
    lease: LEASE,
    readOnly: false,
    settle: DELETE,
    sweep: null,
  },
  "floor": {
    schema: `CREATE TABLE jobs (id INTEGER PRIMARY KEY, ${COLUMNS});`,
    lease: `SELECT id FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2`,
    readOnly: true,
    settle: DELETE,
    sweep: null,
  },
};

/** Bytes this process has caused to be written to storage so far. */
function writtenBytes(): number {
  const io = Deno.readTextFileSync("/proc/self/io");
  return Number(/^write_bytes: (\d+)$/m.exec(io)![1]);
}

/** Opens a database as the store does: its pragmas and checkpoint policy. */
function open(path: string, pageSize: number): Database {
  const db = new DatabaseSync(path);
  configureDatabase(db, path, pageSize);
  return db;
}

/** Bytes written per job by `layout`: by the jobs' commits (with checkpoints), by the sweep. */
export function measure(
  layout: Layout,
  jobs: number,
  batch: number,
  pageSize: number,
): { jobs: number; sweep: number } {
  const dir = Deno.makeTempDirSync({ prefix: "tegami-layouts-" });
  const db = open(`${dir}/jobs.db`, pageSize);
  try {
    db.exec(layout.schema);
    const wal = Deno.openSync(`${dir}/jobs.db-wal`, { read: true });
    const insert = db.prepare(
      "INSERT INTO jobs (queue, state, payload, run_at, created_at) VALUES ('q', 'pending', ?, ?, ?)",
    );
    const lease = db.prepare(layout.lease);
    const settle = db.prepare(layout.settle);
    const payload = JSON.stringify({ n: 1, pad: "x".repeat(80) });
    const commit = () => {
      db.exec("COMMIT");
      wal.syncDataSync();
    };
    let inserted = 0;
    let after = 0;
    let leased: number[] = [];
    let now = 1_700_000_000_000;
    const start = writtenBytes();
    while (inserted < jobs || leased.length > 0) {
      db.exec("BEGIN");
      for (let i = 0; i < batch && inserted < jobs; i++, inserted++) insert.run(payload, now, now);
      const rows = lease.all(layout.readOnly ? after : now, batch) as { id: number }[];
      const ids = rows.map((row) => Number(row.id));
      if (ids.length > 0) after = ids[ids.length - 1];
      for (const id of leased) settle.run(id, now);
      commit();
      leased = ids;
      now++;
    }
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const jobsBytes = writtenBytes() - start;
    let sweepBytes = 0;
    if (layout.sweep !== null) {
      const sweep = db.prepare(layout.sweep);
      const sweepStart = writtenBytes();
      for (let deleted = 1; deleted > 0;) {
        db.exec("BEGIN");
        deleted = Number(sweep.run().changes);
        commit();
      }
      db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      sweepBytes = writtenBytes() - sweepStart;
    }
    wal.close();
    return { jobs: jobsBytes / jobs, sweep: sweepBytes / jobs };
  } finally {
    db.close();
    Deno.removeSync(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      jobs: { type: "string", default: "32000" },
      batch: { type: "string", default: "40" },
      "page-size": { type: "string", default: "4096" },
      layouts: { type: "string", default: Object.keys(LAYOUTS).join(",") },
    },
  });
  const jobs = Number(values.jobs);
  const names = values.layouts.split(",");
  for (const name of names) {
    if (!Object.hasOwn(LAYOUTS, name)) {
      throw new Error(`No layout ${name}: ${Object.keys(LAYOUTS)}`);
    }
  }
  console.log("| layout | page size | jobs per commit | KB/job: commits | sweep | in all |");
  console.log("|---|--:|--:|--:|--:|--:|");
  for (const pageSize of values["page-size"].split(",").map(Number)) {
    for (const batch of values.batch.split(",").map(Number)) {
      for (const name of names) {
        const kb = measure(LAYOUTS[name], jobs, batch, pageSize);
        const cell = (bytes: number) => (bytes / 1024).toFixed(2);
        console.log(
          `| ${name} | ${pageSize} | ${batch} | ${cell(kb.jobs)} | ${cell(kb.sweep)} | ` +
            `${cell(kb.jobs + kb.sweep)} |`,
        );
      }
    }
  }
}
