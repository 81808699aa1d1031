/**
 * What SQLite alone costs per job on this machine: the statements tegami runs for a job's life
 * (insert; claim's select and lease update; ack's update; the share of a COMMIT), timed in one
 * process with no server, no I/O wait (`synchronous=NORMAL`, fsync left out) and batches of 32
 * jobs per transaction, the size group commit reaches under W1. Added to the runtime floor's
 * per-job CPU it bounds what a single-threaded server on SQLite can do.
 *
 *     deno run -A bench/sqlite_cost.ts [--jobs N] [--groups N] [--page-size N] [--payload-bytes N]
 *
 * `--groups N` spreads the jobs over N ordering groups (the group tracking on, as after a queue's
 * first grouped job), to show what a grouped job's upkeep costs in each step. `--page-size N` makes
 * the database with pages of N bytes instead of the server's default (`DEFAULT_PAGE_SIZE`);
 * `--payload-bytes N` sizes each job's payload (default 100).
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { GROUP_TRACKING, MIGRATIONS } from "../lib/store/sqlite/sqlite_schema.ts";
import { DEFAULT_PAGE_SIZE } from "../lib/store/sqlite/sqlite_store.ts";

const { values } = parseArgs({
  options: {
    jobs: { type: "string", default: "64000" },
    groups: { type: "string", default: "0" },
    "page-size": { type: "string", default: String(DEFAULT_PAGE_SIZE) },
    "payload-bytes": { type: "string", default: "100" },
  },
});
const jobs = Number(values.jobs);
const groups = Number(values.groups);
const BATCH = 32;
const dir = await Deno.makeTempDir({ prefix: "tegami-sqlite-cost-" });
const db = new DatabaseSync(`${dir}/cost.db`);
db.exec(`PRAGMA page_size = ${Number(values["page-size"])}`);
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA cache_size = -16384");
for (const migration of MIGRATIONS) db.exec(migration);
if (groups > 0) db.exec(GROUP_TRACKING);
const insert = db.prepare(
  `INSERT INTO jobs (queue, state, priority, key, grp, payload, max_attempts, run_at, lease_ms,
     backoff_base_ms, backoff_max_ms, created_at) VALUES (?, 'pending', 0, NULL, ?, ?, 5, ?, NULL,
     NULL, NULL, ?)`,
);
const select = db.prepare(
  `SELECT * FROM jobs WHERE queue = ? AND state = 'pending' AND grp ${
    groups > 0 ? "IS NOT NULL" : "IS NULL"
  } ORDER BY priority DESC, id LIMIT ?`,
);
let inserted = 0;
const groupOf = () => groups > 0 ? `g${inserted++ % groups}` : null;
const lease = db.prepare(
  `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = ?, lease_len_ms = ?,
     lease_expires_at = ? WHERE id = ?`,
);
const ack = db.prepare(
  `UPDATE jobs SET state = 'done', result = ?, finished_at = ?, lease_expires_at = NULL
     WHERE id = ? AND state = 'leased' AND lease_token = ? AND lease_expires_at > ?`,
);
const begin = db.prepare("BEGIN IMMEDIATE");
const commit = db.prepare("COMMIT");
const payload = JSON.stringify({
  n: 1,
  pad: "x".repeat(Math.max(0, Number(values["payload-bytes"]) - 20)),
});
const spent = { insert: 0, claim: 0, lease: 0, ack: 0, commit: 0 };
const time = (part: keyof typeof spent, work: () => void) => {
  const started = performance.now();
  work();
  spent[part] += performance.now() - started;
};
for (let done = 0; done < jobs; done += BATCH) {
  // One transaction per step, as W1 mostly commits them: enqueues, then claims, then acks.
  begin.run();
  time("insert", () => {
    for (let i = 0; i < BATCH; i++) insert.run("q", groupOf(), payload, 1, 1);
  });
  time("commit", () => commit.run());
  begin.run();
  let rows: { id: number }[] = [];
  time("claim", () => rows = select.all("q", BATCH) as { id: number }[]);
  time("lease", () => {
    for (const row of rows) lease.run(`token-${row.id}`, 30_000, 1e13, row.id);
  });
  time("commit", () => commit.run());
  begin.run();
  time("ack", () => {
    for (const row of rows) ack.run(null, 5, row.id, `token-${row.id}`, 2);
  });
  time("commit", () => commit.run());
}
db.close();
await Deno.remove(dir, { recursive: true });
const us = (ms: number) => (1000 * ms / jobs).toFixed(1);
const total = Object.values(spent).reduce((a, b) => a + b, 0);
console.log(
  `SQLite per job, µs (${jobs} jobs, ${BATCH} per transaction${
    groups > 0 ? `, over ${groups} groups` : ""
  }):`,
);
for (const [part, ms] of Object.entries(spent)) console.log(`  ${part.padEnd(7)} ${us(ms)}`);
console.log(`  total   ${us(total)}  (commit: three transactions per 32 jobs)`);
