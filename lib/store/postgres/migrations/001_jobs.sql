-- The jobs table and what the queue needs beside it. Every hot query reads one partial index in
-- order, so claim, ack, expiry and promotion stay O(log n) with millions of rows.
--
-- fillfactor 80: a job row is updated in place four or five times in its life (leased, done,
-- ...); free room on each page lets most of those updates stay on the page (HOT), which keeps
-- the indexes that do not cover the changed columns from growing.

CREATE TABLE jobs (
  id               bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY, -- never reused
  queue            text    NOT NULL,
  state            text    NOT NULL,
  priority         integer NOT NULL DEFAULT 0,
  key              text,
  payload          text    NOT NULL, -- JSON text as received
  attempts         integer NOT NULL DEFAULT 0,
  max_attempts     integer NOT NULL,
  run_at           bigint  NOT NULL,
  lease_ms         bigint,
  backoff_base_ms  bigint,
  backoff_max_ms   bigint,
  created_at       bigint  NOT NULL,
  checkpoint       text,
  result           text,
  last_error       text,
  lease_token      text,
  lease_len_ms     bigint,
  lease_expires_at bigint,
  finished_at      bigint
) WITH (fillfactor = 80);

-- claim: next pending job of a queue, highest priority then oldest
CREATE INDEX jobs_pending ON jobs (queue, priority DESC, id) WHERE state = 'pending';
-- oldest pending age per queue
CREATE INDEX jobs_pending_age ON jobs (queue, run_at) WHERE state = 'pending';
-- promotion of due delayed jobs
CREATE INDEX jobs_delayed ON jobs (run_at) WHERE state = 'delayed';
-- lease expiry
CREATE INDEX jobs_leased ON jobs (lease_expires_at) WHERE state = 'leased';
-- retention sweep
CREATE INDEX jobs_finished ON jobs (finished_at) WHERE state IN ('done', 'cancelled');
-- dedup: (queue, key) unique among stored jobs
CREATE UNIQUE INDEX jobs_key ON jobs (queue, key) WHERE key IS NOT NULL;
-- stats (counts per queue and state), the job browser and the dead-letter listing: a queue's
-- jobs in one state, by id
CREATE INDEX jobs_browse ON jobs (queue, state, id);

CREATE TABLE queues (
  name   text    PRIMARY KEY,
  paused boolean NOT NULL DEFAULT false
);

-- The readiness probe's row: /readyz proves a write reaches the database.
CREATE TABLE probe (
  id integer PRIMARY KEY,
  at bigint  NOT NULL
);

-- Consumers per server and queue, refreshed by each server; rows not seen for a while are
-- ignored (their server is gone).
CREATE TABLE consumers (
  instance text    NOT NULL,
  queue    text    NOT NULL,
  n        integer NOT NULL,
  seen_at  bigint  NOT NULL,
  PRIMARY KEY (instance, queue)
);
