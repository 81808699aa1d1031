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
import { TURN_UNIT } from "../../core/group_settings.ts";

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
  -- retention sweep (redefined below)
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
  // Ordering groups. A grouped job is claimed through its group (job_groups: how many of its
  // jobs are pending and leased, and when it was last served), never through jobs_pending,
  // which now holds only ungrouped jobs: a hot group's backlog is never scanned by a claim.
  // GROUP_TRACKING (below) keeps job_groups exact; the store creates it with the first grouped
  // job, so a database that never uses groups pays nothing for them.
  `
  ALTER TABLE jobs ADD COLUMN grp TEXT;
  DROP INDEX jobs_pending;
  CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id)
    WHERE state = 'pending' AND grp IS NULL;

  CREATE TABLE job_groups (
    queue   TEXT    NOT NULL,
    grp     TEXT    NOT NULL,
    pending INTEGER NOT NULL DEFAULT 0,
    leased  INTEGER NOT NULL DEFAULT 0,
    turn    INTEGER NOT NULL DEFAULT 0, -- round-robin: larger = served more recently
    PRIMARY KEY (queue, grp)
  ) WITHOUT ROWID;
  CREATE INDEX job_groups_turn ON job_groups (queue, turn);

  -- The token bucket of a queue with a rate (core/rate_bucket.ts), taken in the claim.
  CREATE TABLE queue_buckets (
    queue  TEXT    PRIMARY KEY,
    tokens REAL    NOT NULL,
    at     INTEGER NOT NULL
  ) WITHOUT ROWID;
  `,
  // The job browser's index leaves out the states every job passes through on each delivery:
  // an entry made and removed at enqueue, claim and ack would be a large share of SQLite's work
  // per job. Pending jobs are browsed through the claim's indexes (pending_page.ts), leased ones
  // through jobs_leased; a query that may use this index repeats its WHERE term word for word.
  `
  DROP INDEX jobs_browse;
  CREATE INDEX jobs_browse ON jobs (queue, state, id) WHERE state NOT IN ('pending', 'leased');
  `,
  // The retention sweeps read one queue's finished jobs of one state from the oldest finish and
  // stop at the cutoff. Keyed by finished_at alone, a sweep passed over every job that queues
  // keeping theirs longer still held, and read a queue's dead jobs whole through jobs_browse, at
  // every sweep, with the event loop stopped. finished_at is set
  // exactly while a job is done, cancelled or dead, and a query bounding it can use the index.
  `
  DROP INDEX jobs_finished;
  CREATE INDEX jobs_finished ON jobs (queue, state, finished_at) WHERE finished_at IS NOT NULL;
  `,
  // The readiness probe's row carries room: a write of 8 KiB, about what an enqueue or an ack
  // writes, rather than one small row. With 1 KiB pages a one-row commit still found room in the
  // log file on a full disk, so /readyz said ready while every job write was refused.
  `
  ALTER TABLE probe ADD COLUMN room BLOB;
  `,
  // A job's attributes (core/attributes.ts): JSON text, null for none.
  `
  ALTER TABLE jobs ADD COLUMN attributes TEXT;
  `,
  // How long a pending job waits for a consumer (queue_settings.ts, retain_pending_ms).
  `
  ALTER TABLE queue_settings ADD COLUMN retain_pending_ms INTEGER;
  `,
  // A queue's dead-letter queue, and on a job the queue it was moved from (dead_lettered_from).
  `
  ALTER TABLE queue_settings ADD COLUMN dead_letter_queue TEXT;
  ALTER TABLE jobs ADD COLUMN dead_lettered_from TEXT;
  `,
  // A queue's SQS-only attributes and its tags (queue_settings.ts, sqs_attributes and tags):
  // JSON text of an object of strings each, null for none.
  `
  ALTER TABLE queue_settings ADD COLUMN sqs_attributes TEXT;
  ALTER TABLE queue_settings ADD COLUMN tags TEXT;
  `,
  // Flows (core/flow.ts): a job's flow and ref, how many of its prerequisites' edges are not met
  // while it is blocked; the flows, with their dedup keys; the edges, read by prerequisite when
  // one ends and by dependent (in depends_on order) when one is delivered.
  `
  ALTER TABLE jobs ADD COLUMN flow_id INTEGER;
  ALTER TABLE jobs ADD COLUMN flow_ref TEXT;
  ALTER TABLE jobs ADD COLUMN waiting_on INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX jobs_flow ON jobs (flow_id, id) WHERE flow_id IS NOT NULL;
  CREATE INDEX jobs_flow_state ON jobs (flow_id, state) WHERE flow_id IS NOT NULL;
  CREATE TABLE flows (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    key        TEXT UNIQUE,
    created_at INTEGER NOT NULL
  );
  CREATE TABLE flow_edges (
    prereq_id  INTEGER NOT NULL,
    job_id     INTEGER NOT NULL,
    ord        INTEGER NOT NULL,
    on_failure TEXT    NOT NULL,
    met        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (prereq_id, job_id)
  ) WITHOUT ROWID;
  CREATE INDEX flow_edges_job ON flow_edges (job_id, ord);
  `,
  // Fair shares (core/group_settings.ts): a group's own weight (kept as the stride its turn
  // moves by per lease), concurrency and rate; the buckets of groups with a rate, with when a
  // group left without a token gets its next (the grouped claim skips it until then). Turns
  // become strides of TURN_UNIT: served groups keep their order, one unit apart; the claim
  // moves them now, so the update trigger is dropped for GROUP_TRACKING to make again without
  // (migrate()).
  `
  CREATE TABLE group_settings (
    queue       TEXT    NOT NULL,
    grp         TEXT    NOT NULL,
    weight      REAL    NOT NULL,
    stride      INTEGER NOT NULL,
    concurrency INTEGER,
    rate_limit  INTEGER,
    rate_per_ms INTEGER,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (queue, grp)
  ) WITHOUT ROWID;
  CREATE TABLE group_buckets (
    queue      TEXT    NOT NULL,
    grp        TEXT    NOT NULL,
    tokens     REAL    NOT NULL,
    at         INTEGER NOT NULL,
    held_until INTEGER,
    PRIMARY KEY (queue, grp)
  ) WITHOUT ROWID;
  UPDATE job_groups SET turn = r.k * ${TURN_UNIT}
    FROM (SELECT queue, grp, dense_rank() OVER (PARTITION BY queue ORDER BY turn) AS k
          FROM job_groups WHERE turn > 0) AS r
    WHERE job_groups.queue = r.queue AND job_groups.grp = r.grp;
  DROP TRIGGER IF EXISTS jobs_group_update;
  `,
];

/** The migration that remade the group update trigger (GROUP_TRACKING makes it again). */
const TURNS_MIGRATION = 15;

/**
 * What keeps ordering groups exact: the index the grouped claim reads, and the triggers that keep
 * `job_groups` (pending and leased counts per group) exact in the transaction of every change of
 * a grouped job's state, whichever statement makes it. Every trigger fires for every row of
 * `jobs` that an INSERT, a state UPDATE or a DELETE touches, grouped or not, and costs time even
 * when its WHEN clause is false (`bench/sqlite_cost.ts` measures it). So the SQLite store runs this (idempotent) in the
 * transaction of the first enqueue of a grouped job, before its insert: every grouped job is then
 * counted from its first row on, and a database without groups never carries the cost.
 */
export const GROUP_TRACKING: string = `
  CREATE INDEX IF NOT EXISTS jobs_group_pending ON jobs (queue, grp, priority DESC, id)
    WHERE state = 'pending' AND grp IS NOT NULL;

  CREATE TRIGGER IF NOT EXISTS jobs_group_insert AFTER INSERT ON jobs
  WHEN NEW.grp IS NOT NULL AND NEW.state IN ('pending', 'leased')
  BEGIN
    INSERT INTO job_groups (queue, grp, pending, leased)
      VALUES (NEW.queue, NEW.grp, NEW.state = 'pending', NEW.state = 'leased')
    ON CONFLICT (queue, grp) DO UPDATE SET pending = pending + excluded.pending,
      leased = leased + excluded.leased;
  END;

  CREATE TRIGGER IF NOT EXISTS jobs_group_update AFTER UPDATE OF state ON jobs
  WHEN NEW.grp IS NOT NULL AND OLD.state <> NEW.state
    AND (OLD.state IN ('pending', 'leased') OR NEW.state IN ('pending', 'leased'))
  BEGIN
    INSERT INTO job_groups (queue, grp, pending, leased)
      VALUES (NEW.queue, NEW.grp, (NEW.state = 'pending') - (OLD.state = 'pending'),
        (NEW.state = 'leased') - (OLD.state = 'leased'))
    ON CONFLICT (queue, grp) DO UPDATE SET pending = pending + excluded.pending,
      leased = leased + excluded.leased;
    -- The claim moves the turns of the groups it served (lib/store/claim_order.ts).
    -- A group with nothing pending or leased is forgotten (its name may never come again);
    -- only a job leaving pending and leased can make it so (a constant test, checked once).
    DELETE FROM job_groups
      WHERE NEW.state NOT IN ('pending', 'leased')
        AND queue = NEW.queue AND grp = NEW.grp AND pending = 0 AND leased = 0;
  END;

  CREATE TRIGGER IF NOT EXISTS jobs_group_delete AFTER DELETE ON jobs
  WHEN OLD.grp IS NOT NULL AND OLD.state IN ('pending', 'leased')
  BEGIN
    UPDATE job_groups SET pending = pending - (OLD.state = 'pending'),
      leased = leased - (OLD.state = 'leased')
      WHERE queue = OLD.queue AND grp = OLD.grp;
    DELETE FROM job_groups
      WHERE queue = OLD.queue AND grp = OLD.grp AND pending = 0 AND leased = 0;
  END;
`;

/** Whether the database counts its groups (GROUP_TRACKING ran in it). */
function hasGroupTracking(db: DatabaseSync): boolean {
  return db.prepare(
    "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_group_insert'",
  ).get() !== undefined;
}

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
      if (version === TURNS_MIGRATION && hasGroupTracking(db)) db.exec(GROUP_TRACKING);
      db.exec(`PRAGMA user_version = ${version}`);
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }
  return version;
}
