/**
 * The SQLite schema as numbered migrations, embedded in code so a compiled binary needs no
 * files. `PRAGMA user_version` records how many have run; each runs in its own transaction.
 *
 * Index design: every hot query reads one partial index in order, so claim, ack, expiry and
 * promotion stay O(log n) with millions of rows.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";

/** The migrations in order; index i brings the schema to version i + 1. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE jobs (
    id               INTEGER PRIMARY KEY AUTOINCREMENT, -- AUTOINCREMENT: ids are never reused
    queue            TEXT    NOT NULL,
    state            TEXT    NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    key              TEXT,
    payload          TEXT    NOT NULL,                  -- JSON text as received
    attempts         INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    run_at           INTEGER NOT NULL,
    lease_ms         INTEGER,
    backoff_base_ms  INTEGER,
    backoff_max_ms   INTEGER,
    created_at       INTEGER NOT NULL,
    checkpoint       TEXT,
    result           TEXT,
    last_error       TEXT,
    lease_token      TEXT,
    lease_len_ms     INTEGER,
    lease_expires_at INTEGER,
    finished_at      INTEGER
  );
  -- claim: next pending job of a queue, highest priority then oldest
  CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id) WHERE state = 'pending';
  -- oldest pending age per queue
  CREATE INDEX jobs_pending_age ON jobs (queue, run_at) WHERE state = 'pending';
  -- promotion of due delayed jobs
  CREATE INDEX jobs_delayed ON jobs (run_at) WHERE state = 'delayed';
  -- lease expiry
  CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'leased';
  -- dead-letter listing
  CREATE INDEX jobs_dead ON jobs (queue, id) WHERE state = 'dead';
  -- retention sweep
  CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'cancelled');
  -- dedup: (queue, key) unique among stored jobs
  CREATE UNIQUE INDEX jobs_key ON jobs (queue, key) WHERE key IS NOT NULL;

  CREATE TABLE queues (
    name   TEXT PRIMARY KEY,
    paused INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;

  CREATE TABLE probe (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL
  );
  `,
  // The job browser lists one queue's jobs of one state by id, either way. This index replaces
  // jobs_dead, which it covers.
  `
  CREATE INDEX jobs_browse ON jobs (queue, state, id);
  DROP INDEX jobs_dead;
  `,
  // Queue settings: one row per queue with settings (settings_row.ts); a queue without a row has
  // the defaults. Apart from \`queues\` (pause), which other features share.
  `
  CREATE TABLE queue_settings (
    name            TEXT    PRIMARY KEY,
    concurrency     INTEGER,
    rate_limit      INTEGER,
    rate_per_ms     INTEGER,
    group_limit     INTEGER NOT NULL DEFAULT 1,
    max_attempts    INTEGER,
    lease_ms        INTEGER,
    backoff_base_ms INTEGER,
    backoff_max_ms  INTEGER,
    retain_done_ms  INTEGER,
    retain_dead_ms  INTEGER,
    updated_at      INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // Dedup windows and progress. A job whose key window (key_expires_at) has passed gives its key
  // up to the next job with that key: the key moves to released_key, out of the unique index
  // jobs_key, and the job still shows it.
  `
  ALTER TABLE jobs ADD COLUMN key_expires_at INTEGER;
  ALTER TABLE jobs ADD COLUMN released_key TEXT;
  ALTER TABLE jobs ADD COLUMN progress TEXT;
  ALTER TABLE jobs ADD COLUMN progress_at INTEGER;
  `,
  // Schedules: recurring jobs. next_at is the next tick to enqueue; a tick's job is inserted in
  // the transaction that moves next_at past it, guarded by revision (see core/schedule.ts).
  `
  CREATE TABLE schedules (
    name            TEXT    PRIMARY KEY,
    queue           TEXT    NOT NULL,
    cron            TEXT    NOT NULL,
    timezone        TEXT    NOT NULL,
    payload         TEXT    NOT NULL,
    priority        INTEGER NOT NULL,
    max_attempts    INTEGER,
    lease_ms        INTEGER,
    backoff_base_ms INTEGER,
    backoff_max_ms  INTEGER,
    missed          TEXT    NOT NULL,
    paused          INTEGER NOT NULL DEFAULT 0,
    next_at         INTEGER,
    last_tick_at    INTEGER,
    last_job_id     INTEGER,
    revision        INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
  ) WITHOUT ROWID;
  -- the scheduler's next deadline and its due schedules
  CREATE INDEX schedules_due ON schedules (next_at) WHERE paused = 0 AND next_at IS NOT NULL;
  `,
];

/** Runs the migrations the database has not seen yet; answers the resulting version. */
export function migrate(db: DatabaseSync): number {
  const row = db.prepare("PRAGMA user_version").get() as { user_version: number };
  let version = row.user_version;
  if (version > MIGRATIONS.length) {
    throw new Error(
      `Cannot open the database: its schema version ${version} is newer than this program's ` +
        `(${MIGRATIONS.length}); upgrade tegami`,
    );
  }
  while (version < MIGRATIONS.length) {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(MIGRATIONS[version]);
      version++;
      db.exec(`PRAGMA user_version = ${version}`);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }
  return version;
}
