/**
 * The SQLite store's statements, prepared once per database, and the helpers that stand beside
 * them: the SQL of an ack run, the file sizes, and forgetting an outside `ANALYZE`'s samples.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import { newLeaseToken } from "../../core/lease_token.ts";
import { SETTINGS_COLUMNS } from "../settings_row.ts";
import { CountedStatement, type StatementCount } from "./counted_statement.ts";
import { JobInsert } from "./job_insert.ts";
import { JobRowStatement } from "./job_row_statement.ts";
import { PendingPage } from "./pending_page.ts";
import { RowsStatement } from "./rows_statement.ts";

/** Bytes of a SQLite database file and its WAL (0 for a missing file); null for `:memory:`. */
export function sqliteFileSizes(path: string): { database: number; wal: number } | null {
  if (path === ":memory:") return null;
  const size = (file: string) => {
    try {
      return Deno.statSync(file).size;
    } catch {
      return 0;
    }
  };
  return { database: size(path), wal: size(`${path}-wal`) };
}

/**
 * Drops the value samples an `ANALYZE` left (`sqlite_stat4`), keeping its row counts
 * (`sqlite_stat1`), and has SQLite reload what remains. With samples, the planner estimates a
 * parameter compared with an indexed column (`queue = ?`) from its bound value, so every new
 * binding expires the statement and its next run compiles it again — the claim among them, at
 * every claim (see {@linkcode prepareStatements}). tegami never runs `ANALYZE`; this undoes one run
 * from outside (an `sqlite3` shell, a `PRAGMA optimize`) at the next start.
 */
export function forgetValueSamples(db: DatabaseSync): void {
  const stat4 = db.prepare(
    "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat4'",
  ).get();
  if (stat4 === undefined) return;
  db.exec("DELETE FROM sqlite_stat4; ANALYZE sqlite_schema");
}

/**
 * The statement that settles a run of acks (see AckRun): `rows` is its list of `(id, token,
 * result, now)`. Each job is looked up by id: the unary `+` keeps SQLite from walking a state or
 * lease index instead (after an `ANALYZE` of a near-empty table it chose `jobs_leased`: every
 * leased job read for each ack).
 */
export function ackRunSql(rows: string): string {
  return `WITH a(id, token, result, now) AS (VALUES ${rows})
    UPDATE jobs SET state = 'done', result = a.result, finished_at = a.now, lease_expires_at = NULL
    FROM a WHERE jobs.id = a.id AND +jobs.state = 'leased' AND jobs.lease_token = a.token
      AND +jobs.lease_expires_at > a.now`;
}

/**
 * The statement that deletes, at their ack, the jobs of a run of acks that are not to be kept
 * done (see core/lifecycle.ts's `deletedAtAck`): `rows` is its list of `(id, token, now)`. A job
 * of a flow stays, for the ack that follows to complete it.
 */
export function ackDeleteRunSql(rows: string): string {
  return `WITH a(id, token, now) AS (VALUES ${rows})
    DELETE FROM jobs WHERE id IN (SELECT id FROM a) AND +state = 'leased' AND flow_id IS NULL
      AND EXISTS (SELECT 1 FROM a WHERE a.id = jobs.id AND a.token = jobs.lease_token
        AND a.now < jobs.lease_expires_at)`;
}

/** True for a finished job `f` outside any flow, or whose flow has no node left to end. */
const FLOW_DONE = `(f.flow_id IS NULL OR NOT EXISTS (
  SELECT 1 FROM jobs u WHERE u.flow_id = f.flow_id
    AND u.state IN ('blocked', 'pending', 'delayed', 'leased')))`;

/**
 * Every statement the store runs, prepared once, each counting its runs into `count`.
 *
 * No bound value here is one SQLite could read into a plan. SQLite (3.53 here) reads the value
 * of a bare bound LIMIT, and of a parameter compared with a column a partial index is defined on
 * (`state = ?`), into the statement's plan; every new binding of it then marks the statement
 * expired, and its next run compiles it again from the SQL text. So a LIMIT is written
 * `LIMIT ? + 0` and such a comparison `state = CAST(? AS TEXT)`: the same value, not a bare
 * parameter: the other way, the claim (whose LIMIT is the consumers' credit, bound at every
 * run) would compile at every run. Tests count compilations (`compileChecks`) to keep it so.
 *
 * Internal to the SQLite store, so its many statements' types are inferred, not written out.
 * @ignore
 */
export function prepareStatements(db: DatabaseSync, count: StatementCount) {
  db.function("tegami_token", { deterministic: false, directOnly: true }, () => newLeaseToken());
  const p = (sql: string) => new CountedStatement(db.prepare(sql), count);
  const rows = (sql: string) => new JobRowStatement(p(sql));
  return {
    begin: p("BEGIN IMMEDIATE"),
    commit: p("COMMIT"),
    rollback: p("ROLLBACK"),
    savepoint: p("SAVEPOINT op"),
    releaseSavepoint: p("RELEASE op"),
    rollbackSavepoint: p("ROLLBACK TO op"),
    groupTracking: p(
      "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_group_insert'",
    ),
    countAll: p(
      "SELECT queue, state, count(*) AS n, count(grp) AS grouped FROM jobs GROUP BY queue, state",
    ),
    pausedQueues: p("SELECT name FROM queues WHERE paused = 1"),
    findByKey: p(
      "SELECT id, state, run_at, key_expires_at FROM jobs WHERE queue = ? AND key = ?",
    ),
    insertJobs: new JobInsert(p),
    releaseKey: p("UPDATE jobs SET released_key = key, key = NULL WHERE id = ?"),
    replaceJob: p(
      `UPDATE jobs SET state = ?, payload = ?, priority = ?, max_attempts = ?, run_at = ?,
         lease_ms = ?, backoff_base_ms = ?, backoff_max_ms = ?, key_expires_at = ?,
         attributes = ? WHERE id = ?`,
    ),
    extendJob: p("UPDATE jobs SET state = ?, run_at = ? WHERE id = ?"),
    selectPending: rows(
      `SELECT * FROM jobs WHERE queue = ? AND state = 'pending' AND grp IS NULL
       ORDER BY priority DESC, id LIMIT ? + 0`,
    ),
    // The candidates of a queue with groups (see claimOrder, lib/store/claim_order.ts): each
    // group with pending jobs and a free slot (fewer leased than its own concurrency, else ?3,
    // the queue's group_limit) and not held by its rate at ?5, served longest ago first, at most
    // ?2 of them, with its settings and bucket, and its first ?4 pending jobs by priority then
    // id. Ids and sort keys only: the lease returns the rows.
    groupCandidates: p(
      `WITH g AS (
         SELECT j.grp, j.turn, j.leased, s.weight, s.stride, s.concurrency, s.rate_limit,
           s.rate_per_ms, b.tokens, b.at
         FROM job_groups j
         LEFT JOIN group_settings s ON s.queue = j.queue AND s.grp = j.grp
         LEFT JOIN group_buckets b ON b.queue = j.queue AND b.grp = j.grp
         WHERE j.queue = ?1 AND j.pending > 0 AND j.leased < coalesce(s.concurrency, ?3)
           AND coalesce(b.held_until, 0) <= ?5
         ORDER BY j.turn LIMIT ?2 + 0
       )
       SELECT k.id, k.priority, g.* FROM g JOIN jobs k ON k.id IN (
         SELECT x.id FROM jobs x
         WHERE x.queue = ?1 AND x.state = 'pending' AND x.grp = g.grp
         ORDER BY x.priority DESC, x.id LIMIT ?4 + 0)
       ORDER BY g.turn, g.grp, k.priority DESC, k.id`,
    ),
    // The queue's front: its groups' largest turn.
    groupFront: p("SELECT coalesce(max(turn), 0) AS front FROM job_groups WHERE queue = ?"),
    ungroupedCandidates: p(
      `SELECT id, priority FROM jobs WHERE queue = ? AND state = 'pending' AND grp IS NULL
       ORDER BY priority DESC, id LIMIT ? + 0`,
    ),
    jobsByIds: rows("SELECT * FROM jobs WHERE id IN (SELECT value FROM json_each(?))"),
    // The claim of wants that share one lease length: claimLeaseMs (the want's, else the job's,
    // else the server's) in SQL, a fresh token per job from the store's CSPRNG pool.
    claimAll: rows(
      `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = tegami_token(),
         lease_len_ms = coalesce(?1, lease_ms, ?3),
         lease_expires_at = ?2 + coalesce(?1, lease_ms, ?3)
       WHERE id IN (SELECT id FROM jobs WHERE queue = ?4 AND state = 'pending' AND grp IS NULL
         ORDER BY priority DESC, id LIMIT ?5 + 0)
       RETURNING *`,
    ),
    // The grouped claim's lease of the candidates it chose (ids as a JSON array).
    claimIds: rows(
      `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = tegami_token(),
         lease_len_ms = coalesce(?1, lease_ms, ?3),
         lease_expires_at = ?2 + coalesce(?1, lease_ms, ?3)
       WHERE id IN (SELECT value FROM json_each(?4)) AND state = 'pending'
       RETURNING *`,
    ),
    lease: p(
      `UPDATE jobs SET state = 'leased', attempts = attempts + 1, lease_token = ?,
         lease_len_ms = ?, lease_expires_at = ? WHERE id = ?`,
    ),
    ack: p(
      `UPDATE jobs SET state = 'done', result = ?, finished_at = ?, lease_expires_at = NULL
       WHERE id = ? AND state = 'leased' AND lease_token = ? AND lease_expires_at > ?`,
    ),
    ackMany: new RowsStatement(p, 4, ackRunSql),
    ackDelete: p(
      `DELETE FROM jobs WHERE id = ? AND state = 'leased' AND lease_token = ?
         AND lease_expires_at > ? AND flow_id IS NULL`,
    ),
    ackDeleteMany: new RowsStatement(p, 3, ackDeleteRunSql),
    savepointAcks: p("SAVEPOINT acks"),
    rollbackAcks: p("ROLLBACK TO acks"),
    releaseAcks: p("RELEASE acks"),
    totalChanges: p("SELECT total_changes() AS n"),
    byId: rows("SELECT * FROM jobs WHERE id = ?"),
    queueById: p("SELECT queue FROM jobs WHERE id = ?"),
    storedIds: p("SELECT id FROM jobs WHERE id IN (SELECT value FROM json_each(?))"),
    moveWaiting: p(
      `UPDATE jobs SET queue = coalesce(?1, dead_lettered_from), run_at = ?2,
         dead_lettered_from = CASE WHEN ?1 IS NULL THEN NULL ELSE dead_lettered_from END,
         released_key = coalesce(key, released_key), key = NULL, key_expires_at = NULL
       WHERE id IN (
         SELECT id FROM jobs WHERE queue = ?3 AND state = 'pending' AND grp IS NULL
           AND (?1 IS NOT NULL OR dead_lettered_from IS NOT NULL)
         ORDER BY priority DESC, id LIMIT ?4 + 0)
       RETURNING queue`,
    ),
    deadLetter: p(
      `UPDATE jobs SET queue = ?1, state = 'pending', attempts = 0, run_at = ?2,
         finished_at = NULL, grp = NULL, released_key = coalesce(key, released_key), key = NULL,
         key_expires_at = NULL, dead_lettered_from = queue
       WHERE id = ?3`,
    ),
    toDead: p(
      `UPDATE jobs SET state = 'dead', last_error = ?, finished_at = ?, lease_expires_at = NULL
       WHERE id = ?`,
    ),
    toRetry: p(
      `UPDATE jobs SET state = ?, run_at = ?, last_error = ?, attempts = ?,
         lease_expires_at = NULL WHERE id = ?`,
    ),
    extend: p("UPDATE jobs SET lease_expires_at = ?, lease_len_ms = ? WHERE id = ?"),
    checkpoint: p("UPDATE jobs SET checkpoint = ? WHERE id = ?"),
    progress: p(
      `UPDATE jobs SET progress = ?, progress_at = ?
       WHERE id = ? AND state = 'leased' AND lease_token = ? AND lease_expires_at > ?`,
    ),
    remove: p("DELETE FROM jobs WHERE id = ?"),
    toCancelled: p(
      `UPDATE jobs SET state = 'cancelled', finished_at = ?, lease_expires_at = NULL
       WHERE id = ?`,
    ),
    setPaused: p(
      `INSERT INTO queues (name, paused) VALUES (?, ?)
       ON CONFLICT (name) DO UPDATE SET paused = excluded.paused`,
    ),
    oldestPending: p(
      "SELECT min(run_at) AS at FROM jobs WHERE queue = ? AND state = 'pending'",
    ),
    oldestPendingAll: p(
      "SELECT queue, min(run_at) AS at FROM jobs WHERE state = 'pending' GROUP BY queue",
    ),
    // The job browser. jobs_browse holds the states a job rests in; the term that defines it
    // is repeated word for word, which is how SQLite knows the partial index may serve.
    listOldest: rows(
      `SELECT * FROM jobs WHERE queue = ? AND state = CAST(? AS TEXT) AND id > ?
         AND state NOT IN ('pending', 'leased') ORDER BY id LIMIT ? + 0`,
    ),
    listNewest: rows(
      `SELECT * FROM jobs WHERE queue = ? AND state = CAST(? AS TEXT) AND id < ?
         AND state NOT IN ('pending', 'leased') ORDER BY id DESC LIMIT ? + 0`,
    ),
    // Leased jobs, few (at most the consumers' credit), by the expiry index.
    listLeasedOldest: rows(
      `SELECT * FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND queue = ? AND id > ?
       ORDER BY id LIMIT ? + 0`,
    ),
    listLeasedNewest: rows(
      `SELECT * FROM jobs INDEXED BY jobs_leased WHERE state = 'leased' AND queue = ? AND id < ?
       ORDER BY id DESC LIMIT ? + 0`,
    ),
    pendingPage: new PendingPage(p),
    // A bulk action's window (sqlite_find.ts): where it begins, then its rows of one queue, read
    // by primary key (the unary + keeps SQLite off the queue's indexes, which would read every
    // job of the queue in that state past the cursor rather than one window). The payload is
    // read only when ?4 asks for it: a CASE not taken never loads the column's overflow pages.
    findStart: p("SELECT min(id) AS id FROM jobs WHERE id > ?"),
    findWindow: p(
      `SELECT id, state, created_at, finished_at, last_error, grp AS "group", key,
         CASE WHEN ?4 = 1 THEN payload END AS payload
       FROM jobs WHERE id >= ?1 AND id <= ?2 AND +queue = ?3 ORDER BY id`,
    ),
    runNow: p("UPDATE jobs SET state = 'pending', run_at = ? WHERE id = ? AND state = 'delayed'"),
    requeueDeadAfter: p(
      `UPDATE jobs SET state = 'pending', attempts = 0, run_at = ?1, finished_at = NULL
       WHERE id IN (SELECT id FROM jobs WHERE queue = ?2 AND state = 'dead'
         AND state NOT IN ('pending', 'leased') AND id > ?3 ORDER BY id LIMIT ?4 + 0)
       RETURNING id`,
    ),
    requeueOneDead: p(
      `UPDATE jobs SET state = 'pending', attempts = 0, run_at = ?, finished_at = NULL
       WHERE id = ? AND queue = ? AND state = 'dead'`,
    ),
    promote: p(
      `UPDATE jobs SET state = 'pending' WHERE id IN (
         SELECT id FROM jobs WHERE state = 'delayed' AND run_at <= ? ORDER BY run_at LIMIT ? + 0)
       RETURNING queue`,
    ),
    dueLeases: rows(
      `SELECT * FROM jobs WHERE state = 'leased' AND lease_expires_at <= ?
       ORDER BY lease_expires_at LIMIT ? + 0`,
    ),
    nextDelayed: p("SELECT min(run_at) AS at FROM jobs WHERE state = 'delayed'"),
    nextExpiry: p("SELECT min(lease_expires_at) AS at FROM jobs WHERE state = 'leased'"),
    nextUpcomingExpiry: p(
      "SELECT min(lease_expires_at) AS at FROM jobs WHERE state = 'leased' AND lease_expires_at > ?",
    ),
    // The retention sweeps, one queue at a time: its done and cancelled jobs, or its dead ones,
    // finished before the cutoff, read as a range of jobs_finished (queue, state, finished_at).
    // A flow's jobs stay until its last node has ended (FLOW_DONE).
    sweepDone: p(
      `DELETE FROM jobs WHERE id IN (
         SELECT id FROM jobs f WHERE queue = ?1 AND state IN ('done', 'cancelled')
           AND finished_at < ?2 AND ${FLOW_DONE} LIMIT ?3 + 0)
       RETURNING state, id, flow_id`,
    ),
    sweepDead: p(
      `DELETE FROM jobs WHERE id IN (
         SELECT id FROM jobs f WHERE queue = ?1 AND state = 'dead' AND finished_at < ?2
           AND ${FLOW_DONE} LIMIT ?3 + 0)
       RETURNING state, id, flow_id`,
    ),
    // Pending jobs that have waited since before the cutoff, oldest first (jobs_pending_age); a
    // flow's jobs wait for as long as their flow runs.
    sweepPending: p(
      `DELETE FROM jobs WHERE id IN (
         SELECT id FROM jobs WHERE queue = ?1 AND state = 'pending' AND run_at < ?2
           AND flow_id IS NULL
         ORDER BY run_at LIMIT ?3 + 0)
       RETURNING state, id, flow_id`,
    ),
    allSettings: p("SELECT * FROM queue_settings"),
    putSettings: p(
      `INSERT OR REPLACE INTO queue_settings (name, ${SETTINGS_COLUMNS.join(", ")}, updated_at)
       VALUES (?, ${SETTINGS_COLUMNS.map(() => "?").join(", ")}, ?)`,
    ),
    deleteSettings: p("DELETE FROM queue_settings WHERE name = ?"),
    probe: p("INSERT OR REPLACE INTO probe (id, at, room) VALUES (1, ?, zeroblob(8192))"),
    readBucket: p("SELECT tokens, at FROM queue_buckets WHERE queue = ?"),
    writeBucket: p("INSERT OR REPLACE INTO queue_buckets (queue, tokens, at) VALUES (?, ?, ?)"),
  };
}

/**
 * The statements of one SQLite store.
 * @ignore
 */
export type SqliteStatements = ReturnType<typeof prepareStatements>;
